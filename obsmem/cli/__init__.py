"""The ``om`` command line: a thin adapter over the library."""

from obsmem.cli.main import cli, main
from obsmem.cli import commands  # noqa: F401, I001 - registers the subcommands on `cli`

__all__ = ["cli", "main"]

"""The ``om`` command line: a thin adapter over the library."""

from obsmem.cli import commands, observe  # noqa: F401 - registers the subcommands on `cli`
from obsmem.cli.main import cli, main

__all__ = ["cli", "main"]

"""The ``om`` command line: a thin adapter over the library.

Nothing is imported eagerly: ``om context`` enters through ``obsmem.cli.entry`` and must not pay
for click. ``cli`` and ``main`` load the full command line (and register every subcommand) on
first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Any

__all__ = ["cli", "main"]

#: Modules whose import registers subcommands on ``cli``.
COMMAND_MODULES = ("commands", "observe", "reflect", "recall", "install", "forget", "ui")


def load() -> Any:
    """The click group with every subcommand registered."""
    import importlib

    from obsmem.cli.main import cli

    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"obsmem.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"obsmem.cli.{name}":
                raise
    return cli


def __getattr__(name: str) -> Any:
    if name == "cli":
        return load()
    if name == "main":
        from obsmem.cli.main import main

        return main
    raise AttributeError(f"module 'obsmem.cli' has no attribute {name!r}")

"""The ``om`` command: a thin adapter over the library. Parse, call one function, format.

Errors om raises on purpose (``OmError``) print one line and exit 2, and so do the ``OSError``
and ``sqlite3`` errors that reach here (a folder that cannot be read, a file where a folder
should be, a full disk): ``obsmem.errors.explain`` says what failed and how to fix it. Anything
else is a bug and prints one line too (the traceback only with ``OM_DEBUG=1``), exiting 70.
Output into a pipe whose reader went away ends quietly, status 0.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import click

from obsmem import __version__
from obsmem.cli.entry import EXIT_BUG, EXIT_ERROR, report, silence_stdout
from obsmem.memory.store import MemoryStore
from obsmem.settings import Settings, load_settings

__all__ = ["EXIT_BUG", "EXIT_ERROR", "App", "cli", "main"]


class App:
    """What every command needs, built on first use so ``om --version`` stays instant."""

    @cached_property
    def settings(self) -> Settings:
        """Validated settings (environment, then the settings file, then defaults)."""
        return load_settings()

    @cached_property
    def store(self) -> MemoryStore:
        """The memory directory, created if missing."""
        return MemoryStore(lock_timeout=self.settings.lock_timeout_seconds).ensure()


class OmGroup(click.Group):
    """A click group that turns exceptions into one-line messages."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            # Output piped into `head` and the like: not an error worth a message.
            silence_stdout()
            ctx.exit(0)
        except (KeyboardInterrupt, Exception) as exc:
            ctx.exit(report(exc))


@click.group(cls=OmGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "-V", "--version", prog_name="om", message="%(prog)s %(version)s"
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """om: observational memory for coding agents.

    Memory lives as markdown in $OM_HOME (default ~/.local/share/observational-memory);
    the search index beside it is derived and rebuilt when needed.
    """
    ctx.obj = App()


def main() -> None:
    """Console-script entry point for ``om`` and ``obsmem``."""
    from obsmem.cli import load

    load()(prog_name="om")

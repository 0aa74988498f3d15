"""The console-script entry point. ``om context`` runs at every agent session start and ``om hook``
at every prompt, so both are dispatched here before click (or anything else heavy) is imported;
so is ``om worker``, the background process hooks start."""

from __future__ import annotations

import os
import sys

__all__ = ["main", "silence_stdout"]


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader went away (``om context | head -c1``), so
    nothing written later, nor the flush at exit, fails again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main() -> None:
    """Run ``om``: the fast path for ``om context``, the full command line for everything else.

    Output piped into a reader that stops early (``head``) ends the command quietly with status
    0, as ``cat`` or ``grep`` would end: no message, no traceback.
    """
    try:
        try:
            _run(sys.argv[1:])
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        sys.exit(0)


def _run(argv: list[str]) -> None:
    if argv and argv[0] == "context":
        from obsmem.context.startup import fast_main

        status = fast_main(argv[1:])
        if status is not None:
            sys.exit(status)
    if argv and argv[0] == "hook":
        from obsmem.integrations.hooks import fast_main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv and argv[0] == "worker" and len(argv) == 1:
        from obsmem.integrations.worker import worker_main

        sys.exit(worker_main())
    from obsmem.cli.main import main as full

    full()

"""The console-script entry point. ``om context`` runs at every agent session start, so it is
dispatched here before click (or anything else heavy) is imported."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Run ``om``: the fast path for ``om context``, the full command line for everything else."""
    argv = sys.argv[1:]
    if argv and argv[0] == "context":
        from obsmem.context.startup import fast_main

        status = fast_main(argv[1:])
        if status is not None:
            sys.exit(status)
    from obsmem.cli.main import main as full

    full()

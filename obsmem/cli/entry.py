"""The console-script entry point. ``om context`` runs at every agent session start and ``om hook``
at every prompt, so both are dispatched here before click (or anything else heavy) is imported;
so is ``om worker``, the background process hooks start."""

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
    if argv and argv[0] == "hook":
        from obsmem.integrations.hooks import fast_main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv and argv[0] == "worker" and len(argv) == 1:
        from obsmem.integrations.worker import worker_main

        sys.exit(worker_main())
    from obsmem.cli.main import main as full

    full()

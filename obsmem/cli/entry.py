"""The console-script entry point. ``om context`` runs at every agent session start and ``om hook``
at every prompt, so both are dispatched here before click (or anything else heavy) is imported;
so are ``om worker``, the background process hooks start, and ``om search`` (``cli/quick.py``),
which agents run from a cold process for each question.

``failure`` is the one place that turns an exception into the command line's one-line message
and exit status, and ``report`` the one place that prints it, for the click commands and the
fast paths alike."""

from __future__ import annotations

import os
import sys

__all__ = [
    "EXIT_BUG",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "failure",
    "main",
    "report",
    "silence_stdout",
]

EXIT_ERROR = 2
EXIT_BUG = 70
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def failure(exc: Exception) -> tuple[str, int]:
    """The line to print on stderr for ``exc`` and the exit status.

    Errors om raises on purpose, and the ``OSError`` and ``sqlite3`` errors the system raises,
    give ``om: error: ...`` and status 2 (``errors.explain``); anything else is a bug: one line
    too, status 70 (the caller re-raises it when ``OM_DEBUG`` is set).
    """
    from obsmem.errors import explain

    known = explain(exc)
    if known is not None:
        return f"om: error: {' '.join(str(known).split())}", EXIT_ERROR
    return (
        f"om: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
        "(set OM_DEBUG=1 to see the traceback, and please report it)",
        EXIT_BUG,
    )


def report(exc: BaseException) -> int:
    """Print what ended a command on stderr, in one line, and return the exit status.

    Ctrl-C gives ``om: interrupted`` and 130; any other exception ``failure``'s line and status.
    A bug is raised again instead when ``OM_DEBUG`` is set, for its traceback.
    """
    if isinstance(exc, KeyboardInterrupt):
        print("om: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not isinstance(exc, Exception):
        raise exc  # SystemExit and the like are not failures
    message, status = failure(exc)
    if status == EXIT_BUG and os.environ.get("OM_DEBUG"):
        raise exc
    print(message, file=sys.stderr)
    return status


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
            # ``om mcp`` over stdio: the SDK closes stdout once the client has left.
            if not sys.stdout.closed:
                sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        sys.exit(0)


def _run(argv: list[str]) -> None:
    if argv and argv[0] == "context":
        # What was rendered ahead needs nothing but ``os``; anything else loads the full path.
        from obsmem.context.rendered import fast_main as context_main

        status = context_main(argv[1:])
        if status is not None:
            sys.exit(status)
    if argv and argv[0] == "hook":
        from obsmem.integrations.hooks import fast_main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv and argv[0] == "search":
        from obsmem.cli.quick import search_main

        status = search_main(argv[1:])
        if status is not None:
            sys.exit(status)
    if argv and argv[0] == "worker" and len(argv) == 1:
        from obsmem.integrations.worker import worker_main

        sys.exit(worker_main())
    from obsmem.cli.main import main as full

    full()

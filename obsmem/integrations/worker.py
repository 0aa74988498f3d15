"""The one background worker that does what hooks hand over.

Hooks never observe in the agent's foreground. They queue a job and call :func:`start_worker`,
which starts ``om worker`` in its own session only when no worker holds the worker lock; the
worker takes every queued job, observes each transcript once, and loops until the queue is empty.
However many sessions end together, at most one worker observes at a time (and a hook that races
another one starts a second process that sees the lock and leaves at once).

The worker is bounded: it stops taking jobs after ``OM_WORKER_MAX_SECONDS`` (what is left stays
queued for the next worker or the scheduled backstop), an alarm ends it if one job overruns by
far, and its address space is capped by ``OM_WORKER_MAX_MEMORY_MB``. Killing it at any point is
safe: cursors move only after observations are written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from obsmem.integrations.queue import Job, pending, take
from obsmem.memory.atomic import ensure_dir
from obsmem.paths import logs_dir, state_dir

__all__ = ["WorkerReport", "run_worker", "start_worker", "worker_running"]

#: Extra time a job may overrun the worker's budget before the alarm ends the process.
_GRACE_SECONDS = 120


def _lock_file(environ: Mapping[str, str] | None) -> Path:
    return state_dir(environ) / "worker.lock"


@contextlib.contextmanager
def _worker_lock(environ: Mapping[str, str] | None) -> Iterator[bool]:
    path = _lock_file(environ)
    ensure_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def worker_running(environ: Mapping[str, str] | None = None) -> bool:
    """True when a worker holds the worker lock right now."""
    with _worker_lock(environ) as got:
        return not got


@dataclass
class WorkerReport:
    """What one worker run did."""

    observed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    left: int = 0
    busy: bool = False


Observer = Callable[[Job], None]


def _observe_job(environ: Mapping[str, str] | None) -> Observer:
    def observe(job: Job) -> None:
        from obsmem.memory.store import MemoryStore
        from obsmem.observe.run import run_observe
        from obsmem.settings import load_settings

        settings = load_settings(environ)
        store = MemoryStore(lock_timeout=settings.lock_timeout_seconds).ensure()
        run_observe(
            store, settings, transcript=Path(job.transcript), flush=job.flush, environ=environ
        )

    return observe


def run_worker(
    environ: Mapping[str, str] | None = None,
    *,
    max_seconds: float | None = None,
    observe: Observer | None = None,
    log: Callable[[str], None] | None = None,
) -> WorkerReport:
    """Take queued jobs until the queue is empty or the time budget is spent.

    Returns at once (``busy``) when another worker holds the lock. A job that fails is logged
    and dropped: its transcript's cursor did not move, so the next checkpoint or the scheduled
    backstop observes it again.
    """
    from obsmem.redact.paths import redact_path  # log lines name transcripts as memory does

    report = WorkerReport()
    if max_seconds is None:
        from obsmem.settings import load_settings

        max_seconds = load_settings(environ).worker_max_seconds
    deadline = time.monotonic() + max_seconds
    run = observe or _observe_job(environ)
    say = log or (lambda line: None)
    while True:
        with _worker_lock(environ) as got:
            if not got:
                report.busy = True
                return report
            while time.monotonic() < deadline:
                batch = take(environ)
                if not batch.jobs and not batch.files:
                    break
                for job in batch.jobs:
                    try:
                        run(job)
                    except Exception as exc:  # one bad transcript must not stop the others
                        report.failed.append(job.transcript)
                        say(f"failed {redact_path(job.transcript)}: {type(exc).__name__}: {exc}")
                    else:
                        report.observed.append(job.transcript)
                        flush = " (flush)" if job.flush else ""
                        say(f"observed {redact_path(job.transcript)}{flush}")
                batch.done()
        # A hook may have queued a job after the last look and before the lock was released,
        # seeing the lock still held: look once more so that job is not stranded.
        report.left = len(pending(environ))
        if not report.left or time.monotonic() >= deadline:
            return report


def _cap_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    import resource

    limit = megabytes * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def worker_main(environ: Mapping[str, str] | None = None) -> int:
    """``om worker``: apply the bounds, then run; log lines go to stderr (the worker log)."""
    from obsmem.settings import load_settings

    settings = load_settings(environ)
    _cap_memory(settings.worker_max_memory_mb)
    if hasattr(signal, "alarm"):
        signal.alarm(int(settings.worker_max_seconds + _GRACE_SECONDS))

    def log(line: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{stamp} om worker[{os.getpid()}]: {line}", file=sys.stderr, flush=True)

    report = run_worker(environ, max_seconds=settings.worker_max_seconds, log=log)
    if report.left:
        log(f"time budget spent; {report.left} job(s) left for the next run")
    return 1 if report.failed else 0


def start_worker(environ: Mapping[str, str] | None = None) -> bool:
    """Start a background worker unless one is running; True when one was started.

    The worker runs in its own session with no terminal, so the hook (and the agent) can exit
    without waiting; its output goes to ``worker.log`` in the logs folder.
    """
    if worker_running(environ):
        return False
    ensure_dir(logs_dir(environ))  # private, as om's other folders
    from obsmem.integrations.logs import start_detached

    return start_detached("obsmem", "worker.log", environ, "worker")

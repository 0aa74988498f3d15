"""``om observe --watch``: observe the agents' sessions as they grow, from file-system events.

The watcher is the scheduled ``om observe`` driven by events instead of a clock. It watches each
agent's transcript folders (``~/.claude/projects``, ``~/.codex/sessions``, Hermes's ``sessions``
and ``profiles``, OpenClaw's ``agents``) with ``watchfiles`` (inotify, FSEvents: the kernel wakes
it, it never polls the files) and, for every agent whose files changed, runs the very call a
scheduled run makes, :func:`obsmem.observe.run.run_observe` with that agent as the source. So the
cursors, leases and the memory lock are the ones every other run takes: a watcher, a hook's worker
and a scheduled job running at once never observe the same bytes twice.

- **Debounce.** Changes are gathered for ``OM_WATCH_DEBOUNCE_SECONDS`` (default 5) before a
  batch is observed: an agent appending line after line costs one observe per batch, not one per
  line. The size threshold of scheduled runs applies too, so a growing session is read in
  meaningful chunks.
- **Idle sessions.** An agent whose files have not changed for ``OM_IDLE_FLUSH_MINUTES`` is
  observed once more, and the scan's idle rule (the scheduled runs' rule) reads each idle session
  to its end.
- **Reflection.** Every batch ends as any ``om observe`` does: the daily reflection runs if it was
  missed. The daily ``reflect`` job stays on its timer (``om install --scheduler watch`` keeps it),
  so reflection happens at 04:00 whether or not an agent was used that day.
- **Folders that appear later** (an agent installed after om): a folder that is missing is looked
  for again on a slow timer (at most every minute); once it exists it is watched, and what it
  already holds is observed.
- **Searches.** While it runs, the watcher serves the search daemon's socket
  (``search.resident``): a cold ``om search`` is answered with its loaded model, and what each
  batch writes is embedded there, in the background.
- **Stopping.** SIGTERM or SIGINT stops the watcher once the current batch is done (a batch ends
  with memory and cursors consistent); a second signal abandons the batch at once, which is safe
  too (cursors move only after observations are written). Either way it exits 0.

Log lines go to stderr as ``<time> om watch[<pid>]: ...``, like the worker's. Installed as a
service its output is appended to ``<logs dir>/watch.log``; a long-running process keeps that file
open, so when the watcher rotates the log it also reopens it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from obsmem import paths
from obsmem.errors import OmError, UsageError
from obsmem.integrations.logs import job_log, rotate_all
from obsmem.settings import load_settings
from obsmem.sources.registry import AGENTS

__all__ = [
    "CLAUDE_MEMORY",
    "Root",
    "WatchReport",
    "load_watchfiles",
    "run_watch",
    "source_of",
    "watch_main",
    "watch_roots",
]

#: The source name of Claude Code's auto-memory files (``<project>/memory/*.md``).
CLAUDE_MEMORY = "claude-memory"
#: Where under each agent's home its transcripts are (what each reader's ``find_files`` walks).
_TRANSCRIPT_DIRS: dict[str, tuple[str, ...]] = {
    "claude": ("projects",),
    "codex": ("sessions",),
    "hermes": ("sessions", "profiles"),
    "openclaw": ("agents",),
}
_TRANSCRIPT_SUFFIXES = (".jsonl", ".json")
#: Longest wait between two looks for missing folders and idle sessions.
_TICK_SECONDS = 60.0
_INSTALL_HINT = "pip install 'obsmem[watch]' (or: pipx inject obsmem watchfiles)"


class _Abandon(BaseException):
    """A second stop signal: leave the current batch now (BaseException: nothing catches it)."""


@dataclass(frozen=True)
class Root:
    """A folder holding an agent's transcripts."""

    agent: str
    path: Path


@dataclass
class WatchReport:
    """What a watcher did before it stopped."""

    batches: int = 0
    written: int = 0
    failures: int = 0
    abandoned: bool = False
    roots: list[str] = field(default_factory=list)


def load_watchfiles() -> ModuleType:
    """The ``watchfiles`` module, or a one-line ``UsageError`` saying how to install it."""
    try:
        import watchfiles
    except ImportError:
        raise UsageError(
            "om observe --watch needs the watchfiles package, which is not installed",
            _INSTALL_HINT,
        ) from None
    return watchfiles


def watch_roots(
    environ: Mapping[str, str] | None = None, sources: Iterable[str] = AGENTS
) -> list[Root]:
    """The transcript folders of ``sources`` (agents, or ``claude-memory``), existing or not."""
    out: list[Root] = []
    for agent in AGENTS:
        wanted = agent in sources or (agent == "claude" and CLAUDE_MEMORY in sources)
        if wanted:
            home = paths.agent_home(agent, environ)
            out += [Root(agent, home / sub) for sub in _TRANSCRIPT_DIRS[agent]]
    return out


def source_of(path: str, roots: Iterable[Root]) -> str | None:
    """The source a changed file belongs to: an agent, ``claude-memory``, or None (not ours)."""
    for root in roots:
        prefix = str(root.path) + os.sep
        if not path.startswith(prefix):
            continue
        if path.endswith(_TRANSCRIPT_SUFFIXES):
            return root.agent
        if root.agent == "claude" and path.endswith(".md") and Path(path).parent.name == "memory":
            return CLAUDE_MEMORY
        return None
    return None


def _tick(idle_after: float) -> float:
    """How long the watcher may sleep without events: short enough to flush idle sessions on
    time, never more than a minute (missing folders are looked for as often)."""
    if idle_after <= 0:
        return _TICK_SECONDS
    return max(1.0, min(_TICK_SECONDS, idle_after / 4))


Observe = Callable[[str], Any]


def _observe_source(environ: Mapping[str, str] | None) -> Observe:
    def observe(source: str) -> Any:
        from obsmem.memory.store import MemoryStore
        from obsmem.observe.run import run_observe

        # Read again for every batch: a value changed in the settings file applies at once.
        settings = load_settings(environ)
        store = MemoryStore(environ=environ, lock_timeout=settings.lock_timeout_seconds).ensure()
        return run_observe(store, settings, source=source, environ=environ)

    return observe


def _present(roots: list[Root]) -> list[Root]:
    return [root for root in roots if root.path.is_dir()]


def run_watch(
    environ: Mapping[str, str] | None = None,
    *,
    sources: Iterable[str] = (*AGENTS, CLAUDE_MEMORY),
    stop: threading.Event | None = None,
    observe: Observe | None = None,
    log: Callable[[str], None] | None = None,
    report: WatchReport | None = None,
) -> WatchReport:
    """Watch the transcript folders of ``sources`` and observe what changes until ``stop`` is set.

    ``observe(source)`` observes one source (default: ``run_observe`` with that source, as a
    scheduled run does); a batch that fails is logged and the watcher goes on (the cursor did not
    move, so the next batch or run takes those bytes). Starts with one observe of every source,
    for what changed while no watcher ran.
    """
    watchfiles = load_watchfiles()
    settings = load_settings(environ)
    wanted = tuple(sources)
    stop = stop or threading.Event()
    run = observe or _observe_source(environ)
    say = log or (lambda line: None)
    report = report if report is not None else WatchReport()
    debounce_ms = max(1, round(settings.watch_debounce_seconds * 1000))
    idle_after = settings.idle_flush_minutes * 60
    tick_ms = round(_tick(idle_after) * 1000)
    roots = watch_roots(environ, wanted)
    touched: dict[str, float] = {}  # source -> when its files last changed (time.time())
    watched: list[Root] | None = None  # None: the first round, when everything is "new"
    while not stop.is_set():
        present = _present(roots)
        appeared = [root for root in present if watched is None or root not in watched]
        if present != watched:
            say(_watching_line(roots, present, tick_ms // 1000))
            report.roots = [str(root.path) for root in present]
        watched = present
        first = {root.agent for root in appeared}
        if "claude" in first and CLAUDE_MEMORY in wanted:
            first.add(CLAUDE_MEMORY)
        first = {s for s in first if s in wanted}
        _batch(sorted(first), run, say, report, environ)
        if not present:
            stop.wait(tick_ms / 1000)
            continue
        changes = watchfiles.watch(
            *(str(root.path) for root in present),
            watch_filter=_filter(present),
            debounce=debounce_ms,
            # One step of quiet ends a batch: a file growing line by line is one batch per step.
            step=debounce_ms,
            stop_event=stop,
            rust_timeout=tick_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
            ignore_permission_denied=True,
        )
        try:
            for batch in changes:
                # The first look after the folders are watched takes the appeared sources again:
                # what was written between the look above and the watch's start sent no event.
                changed = {source_of(path, present) or "" for _, path in batch} | first
                first = set()
                due = _due(changed, wanted, touched, idle_after)
                _batch(due, run, say, report, environ)
                if stop.is_set() or _present(roots) != present:
                    break  # stopped, or a folder appeared or went: watch the new set
        except (OSError, RuntimeError) as exc:
            # The watch itself failed (a watched folder removed, the inotify limit reached):
            # say so, wait a tick, and watch whatever exists then.
            say(f"watching stopped: {type(exc).__name__}: {exc}; trying again")
            stop.wait(tick_ms / 1000)
        finally:
            changes.close()  # the kernel's watches go now, not when the generator is collected
    return report


def _due(
    changed: set[str], wanted: tuple[str, ...], touched: dict[str, float], idle_after: float
) -> list[str]:
    """The sources to observe now: those that changed, and those idle for ``idle_after``
    seconds since their last change (observed once more: the scan reads idle sessions whole).
    ``touched`` (source: time of its last change) is updated in place."""
    now = time.time()
    changed = {source for source in changed if source in wanted}
    for source in changed:
        touched[source] = now
    idle = {s for s, at in touched.items() if idle_after > 0 and now - at >= idle_after}
    for source in idle:
        del touched[source]
    if idle_after <= 0:
        touched.clear()  # nothing is ever flushed for being idle: keep no times
    return sorted(changed | idle)


def _watching_line(roots: list[Root], present: list[Root], every: int) -> str:
    """The log line saying which folders are watched, and which are looked for."""
    line = f"watching {', '.join(str(root.path) for root in present) or 'nothing yet'}"
    missing = [str(root.path) for root in roots if root not in present]
    return line + (f"; looking every {every}s for {', '.join(missing)}" if missing else "")


def _filter(roots: list[Root]) -> Callable[[Any, str], bool]:
    """The watchfiles filter: only transcripts and auto-memory files wake the watcher."""

    def wanted(_change: Any, path: str) -> bool:
        return source_of(path, roots) is not None

    return wanted


def _batch(
    sources: list[str],
    run: Observe,
    say: Callable[[str], None],
    report: WatchReport,
    environ: Mapping[str, str] | None,
) -> None:
    """Observe each source once; a failure is logged, never raised."""
    if not sources:
        return
    from obsmem.redact.paths import redact_path

    rotate_all(environ)
    _reopen_log(environ)
    report.batches += 1
    for source in sources:
        try:
            done = run(source)
        except OmError as exc:
            report.failures += 1
            say(f"{source}: not observed: {exc}")
            continue
        except Exception as exc:  # one bad batch must not end the watcher
            report.failures += 1
            say(f"{source}: not observed: {type(exc).__name__}: {exc}")
            continue
        written = int(getattr(done, "written", 0) or 0)
        report.written += written
        read = int(getattr(done, "files_read", 0) or 0)
        if read or written:
            say(f"{source}: {read} file(s) read, {written} observation(s) written")
        for problem in getattr(done, "problems", []) or []:
            say(f"{source}: {redact_path(str(problem))}")


def _reopen_log(environ: Mapping[str, str] | None = None) -> None:
    """Point stdout and stderr at a fresh ``watch.log`` once it was rotated away under us.

    A service's output goes to ``watch.log`` through the shell's ``>>``; after a rotation that
    descriptor writes to ``watch.log.1`` for as long as the watcher lives, so the watcher opens
    the new file itself (with ``O_APPEND``, as ``>>`` did).
    """
    log = job_log("watch", environ)
    try:
        held = os.fstat(2)
        current = log.stat() if log.exists() else None
        rotated = log.with_name(log.name + ".1").stat()
    except OSError:
        return
    if (held.st_dev, held.st_ino) != (rotated.st_dev, rotated.st_ino):
        return
    if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
        return
    old = os.umask(0o077)
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    finally:
        os.umask(old)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


@contextlib.contextmanager
def stop_signals(stop: threading.Event, say: Callable[[str], None]) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` (the current batch finishes); a second one abandons it."""

    def handle(number: int, _frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        again = stop.is_set()
        stop.set()
        # The signal may land while stderr is being written: a reentrant write is refused.
        with contextlib.suppress(RuntimeError):
            say(
                f"{name} again: leaving the current batch"
                if again
                else f"{name}: stopping after the current batch"
            )
        if again:
            raise _Abandon

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _serve_searches(environ: Mapping[str, str] | None) -> Any:
    """A ``search.resident.Resident`` answering the cold ``om search`` from this process, which
    also embeds what each batch wrote (so ``om observe`` leaves it to the watcher); None when
    the settings cannot be read (the first batch reports them)."""
    from obsmem.memory.store import MemoryStore
    from obsmem.search.resident import Resident

    try:
        store = MemoryStore(environ=environ)
    except OmError:
        return None
    return Resident(store, host="watcher", environ=environ).start()


def watch_main(
    environ: Mapping[str, str] | None = None, sources: Iterable[str] = (*AGENTS, CLAUDE_MEMORY)
) -> int:
    """``om observe --watch``: run until SIGTERM or SIGINT, logging to stderr; returns 0."""
    load_watchfiles()  # before any log line: a missing extra is one error line

    def log(line: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{stamp} om watch[{os.getpid()}]: {line}", file=sys.stderr, flush=True)

    stop = threading.Event()
    report = WatchReport()
    resident = _serve_searches(environ)
    try:
        with stop_signals(stop, log):
            try:
                run_watch(environ, sources=sources, stop=stop, log=log, report=report)
            except _Abandon:
                report.abandoned = True
    finally:
        if resident is not None:
            resident.close()
    log(
        f"stopped: {report.batches} batch(es), {report.written} observation(s) written"
        + (", last batch abandoned" if report.abandoned else "")
    )
    return 0

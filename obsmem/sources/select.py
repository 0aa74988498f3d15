"""Choosing what to capture (``--source``, ``--transcript``, ``--since``) and reporting on sources.

These are the library calls behind ``om observe``, ``om backfill`` and the sources part of
``om status``; the commands only parse options and format what comes back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from obsmem import paths
from obsmem.errors import UsageError
from obsmem.memory.ledger import ForgottenTurns
from obsmem.memory.store import MemoryStore
from obsmem.redact.paths import redact_path
from obsmem.settings import load_settings
from obsmem.sources.capture import (
    Pending,
    ScanReport,
    plan_file,
    plan_transcript,
    read_pending,
    resolve_sources,
    scan,
)
from obsmem.sources.model import ReadResult
from obsmem.sources.registry import AGENTS, check_transcript, reader_for
from obsmem.sources.state import CaptureState

__all__ = [
    "SourceStatus",
    "open_state",
    "preview",
    "select",
    "source_status",
    "transcript_format",
    "would_observe",
]


def open_state(store: MemoryStore) -> CaptureState:
    """The capture state (cursors, leases) of a memory directory."""
    store.ensure()
    return CaptureState(store.state_db_path)


def select(
    state: CaptureState,
    *,
    source: str = "all",
    transcript: Path | None = None,
    environ: Mapping[str, str] | None = None,
    min_new: int | None = None,
    flush: bool = False,
    since: date | None = None,
    idle_minutes: float | None = None,
) -> ScanReport:
    """The files with bytes to read: one ``--transcript`` (format detected unless ``source`` names
    one), or every transcript of the ``--source`` agents; ``since`` keeps files modified on or
    after that day.

    A file untouched for ``idle_minutes`` (default: ``OM_IDLE_FLUSH_MINUTES``) is taken to its
    end whatever ``min_new`` and ``flush`` say: its session is over.
    """
    if idle_minutes is None:
        idle_minutes = load_settings(environ).idle_flush_minutes
    idle_after = idle_minutes * 60
    if transcript is not None:
        report = ScanReport(files=1)
        forced = None if source == "all" else source
        if transcript.is_file():
            forced = transcript_format(transcript, forced)
        pending, why = plan_transcript(
            state, transcript, source=forced, min_new=min_new, flush=flush, idle_after=idle_after
        )
        if pending is not None:
            report.pending.append(pending)
        elif why == "below threshold":
            report.below_threshold = 1
        else:
            report.unchanged = 1
        return report
    report = scan(
        state,
        resolve_sources(source),
        environ=environ,
        min_new=min_new,
        flush=flush,
        idle_after=idle_after,
    )
    if since is not None:
        cutoff = datetime(since.year, since.month, since.day, tzinfo=UTC).timestamp()
        report.pending = [p for p in report.pending if p.st.st_mtime >= cutoff]
    return report


def transcript_format(path: Path, source: str | None) -> str:
    """The format ``path`` is read as (``source`` None or ``all``: detected); a file that is no
    transcript is refused with a ``UsageError`` before any read."""
    source = None if source == "all" else source
    try:
        return check_transcript(path, source)
    except OSError as exc:
        raise UsageError(
            f"cannot read {redact_path(str(path))}: {exc.strerror or exc}",
            "check that the file is readable",
        ) from None


def preview(
    report: ScanReport, *, flush: bool = False, forgotten: ForgottenTurns | None = None
) -> Iterator[tuple[Pending, ReadResult]]:
    """Read each pending file's new turns without claiming it or moving its cursor (without the
    turns ``forgotten`` says were forgotten)."""
    for pending in report.pending:
        yield pending, read_pending(pending, flush=flush, forgotten=forgotten)


@contextmanager
def would_observe(
    store: MemoryStore,
    *,
    source: str = "all",
    transcript: Path | None = None,
    min_new: int | None = None,
    flush: bool = False,
    since: date | None = None,
) -> Iterator[tuple[ScanReport, Iterator[tuple[Pending, ReadResult]]]]:
    """What ``om observe`` (or ``om backfill``) would read, read without claiming a file or
    moving a cursor: the files chosen as ``select`` chooses them, and each one's new turns
    (the forgotten ones left out) as the iterator is consumed, one file at a time.

    The capture state stays open until the block ends, so consume the turns inside it.
    """
    with open_state(store) as state:
        found = select(
            state, source=source, transcript=transcript, min_new=min_new, flush=flush, since=since
        )
        yield found, preview(found, flush=flush, forgotten=store.forgotten_turns())


@dataclass
class SourceStatus:
    """One agent's transcripts as ``om status`` shows them."""

    agent: str
    home: str
    files: int
    pending_files: int
    pending_bytes: int
    last_turn_at: str | None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def source_status(
    state: CaptureState, environ: Mapping[str, str] | None = None
) -> list[SourceStatus]:
    """Per agent: the transcript files found, the bytes not read yet, the last turn read."""
    cursors = state.cursors()
    out: list[SourceStatus] = []
    for agent in AGENTS:
        home = paths.agent_home(agent, environ)
        files = reader_for(agent).find_files(home)
        pending = [
            p
            for p in (plan_file(f, agent, cursors.get(str(f)), min_new=0)[0] for f in files)
            if p is not None
        ]
        seen = [cursors[str(f)] for f in files if str(f) in cursors]
        out.append(
            SourceStatus(
                agent=agent,
                home=str(home),
                files=len(files),
                pending_files=len(pending),
                pending_bytes=sum(p.new_bytes for p in pending),
                last_turn_at=max((c.last_turn_at for c in seen if c.last_turn_at), default=None),
            )
        )
    return out

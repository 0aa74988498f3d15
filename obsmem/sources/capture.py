"""The capture stage as a whole: find transcripts, work out what is new, read it, redact it.

``scan`` decides which files have new bytes (one ``stat`` per unchanged file, no read);
``read_pending`` reads those bytes through the file's reader and passes every turn through
redaction before anything else can see it, the transcript's own path included (a folder can be
named after a working directory that holds a secret); ``CaptureRun`` claims files so that
concurrent runs never take the same bytes, keeps the turns it reads (``OM_RAW_TURNS``, for
``om search --raw``) before it hands them on, and moves a file's cursor only when its caller says
the turns are durably handed on.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from obsmem import paths
from obsmem.errors import OmError, UsageError
from obsmem.redact import redact, redact_all
from obsmem.redact.paths import redact_path
from obsmem.sources.model import ReadResult
from obsmem.sources.normalise import clip
from obsmem.sources.registry import AGENTS, detect_format, reader_for
from obsmem.sources.state import CaptureState, Cursor, new_owner, same_transcript

if TYPE_CHECKING:
    from obsmem.index.turns import TurnStore
    from obsmem.memory.ledger import ForgottenTurns

__all__ = [
    "CaptureRun",
    "Pending",
    "ScanReport",
    "min_new_bytes",
    "read_pending",
    "resolve_sources",
    "scan",
]

#: Longest text a single turn may carry after redaction (a pasted log is not worth more).
MAX_TURN_CHARS = 20_000


def min_new_bytes(size: int) -> int:
    """How many new bytes a file needs before it is taken without ``--flush``.

    A twentieth of the file, between 2 KiB and 64 KiB: a busy session is read in meaningful
    chunks rather than a line at a time, and a short one still gets read before it ends.
    """
    return max(2048, min(64 * 1024, size // 20))


@dataclass
class Pending:
    """A transcript file with bytes not yet read, and where reading starts."""

    path: Path
    agent: str
    st: os.stat_result
    start_offset: int
    start_line: int
    reason: str  # "new", "grown" or "replaced"
    #: Untouched for the idle time: the session is over, read it to its end as ``--flush`` does.
    idle: bool = False

    @cached_property
    def shown(self) -> str:
        """The path as om stores and prints it (redacted); ``path`` is the one to open."""
        return redact_path(str(self.path))

    @property
    def new_bytes(self) -> int:
        """Bytes between the cursor and the end of the file."""
        return max(0, self.st.st_size - self.start_offset)


@dataclass
class ScanReport:
    """What a scan found: pending files, and counts of the rest by reason."""

    pending: list[Pending] = field(default_factory=list)
    files: int = 0
    unchanged: int = 0
    below_threshold: int = 0
    unreadable: list[str] = field(default_factory=list)

    @property
    def pending_bytes(self) -> int:
        """New bytes across all pending files."""
        return sum(p.new_bytes for p in self.pending)


def resolve_sources(source: str) -> list[str]:
    """The agents a ``--source`` value names (``all`` is every agent)."""
    if source == "all":
        return list(AGENTS)
    if source not in AGENTS:
        raise UsageError(f"unknown source {source!r}", f"use one of: {', '.join((*AGENTS, 'all'))}")
    return [source]


def _start(path: Path, st: os.stat_result, cursor: Cursor | None) -> tuple[int, int, str]:
    if cursor is None:
        return 0, 0, "new"
    if not same_transcript(path, st, cursor):
        return 0, 0, "replaced"
    return cursor.offset, cursor.line, "grown"


def plan_file(
    path: Path,
    agent: str,
    cursor: Cursor | None,
    *,
    min_new: int | None = None,
    flush: bool = False,
    idle_after: float | None = None,
) -> tuple[Pending | None, str]:
    """Whether one file has bytes to read; the second value says why not when it has none.

    A file not modified for ``idle_after`` seconds is taken whole, as with ``flush``: its
    session is over, so neither the threshold nor an unfinished last line may hold back its end.
    """
    try:
        st = path.stat()
    except OSError:
        return None, "unreadable"
    idle = idle_after is not None and idle_after > 0 and time.time() - st.st_mtime >= idle_after
    whole = flush or idle
    if cursor is not None and cursor.unchanged(st) and (not whole or cursor.offset >= st.st_size):
        return None, "unchanged"
    offset, line, reason = _start(path, st, cursor)
    pending = Pending(path, agent, st, offset, line, reason, idle=idle)
    if pending.new_bytes == 0:
        if cursor is not None and (st.st_ino, st.st_dev) != (cursor.ino, cursor.dev):
            return None, "same content"  # replaced by the same bytes: scan rebinds the cursor
        return None, "unchanged"
    threshold = min_new if min_new is not None else min_new_bytes(st.st_size)
    if not whole and pending.new_bytes < threshold:
        return None, "below threshold"
    return pending, ""


def scan(
    state: CaptureState,
    agents: Iterable[str],
    *,
    environ: Mapping[str, str] | None = None,
    min_new: int | None = None,
    flush: bool = False,
    idle_after: float | None = None,
) -> ScanReport:
    """Find every transcript of ``agents`` and the ones with new bytes to read."""
    report = ScanReport()
    cursors = state.cursors()
    for agent in agents:
        home = paths.agent_home(agent, environ)
        for path in reader_for(agent).find_files(home):
            report.files += 1
            pending, why = plan_file(
                path,
                agent,
                cursors.get(str(path)),
                min_new=min_new,
                flush=flush,
                idle_after=idle_after,
            )
            if pending is not None:
                report.pending.append(pending)
            elif why in ("unchanged", "same content"):
                report.unchanged += 1
                cursor = cursors.get(str(path))
                if why == "same content" and cursor is not None:
                    with contextlib.suppress(OSError):
                        state.rebind(cursor, path.stat())
            elif why == "below threshold":
                report.below_threshold += 1
            else:
                report.unreadable.append(str(path))
    return report


def plan_transcript(
    state: CaptureState,
    path: Path,
    *,
    source: str | None = None,
    min_new: int | None = None,
    flush: bool = False,
    idle_after: float | None = None,
) -> tuple[Pending | None, str]:
    """Plan one explicitly given transcript (``--transcript``), detecting its format if needed."""
    if not path.is_file():
        raise UsageError(f"no such transcript file: {redact_path(str(path))}", "check the path")
    agent = source or detect_format(path)
    reader_for(agent)  # validates the name
    cursor = state.cursor(str(path))
    return plan_file(path, agent, cursor, min_new=min_new, flush=flush, idle_after=idle_after)


def read_pending(
    pending: Pending, *, flush: bool = False, forgotten: ForgottenTurns | None = None
) -> ReadResult:
    """Read a pending file's new turns, every one redacted and bounded before it is returned.

    A turn's ``source_path`` is the file's redacted path (``Pending.shown``): everything built
    from turns (provenance, the index, the turn store) keeps that one. A file that cannot be
    opened gives an empty result with the reason counted in ``skipped``. With ``forgotten``, a
    turn whose text ``om forget`` removed is dropped here (counted as ``forgotten``), before the
    observer, the turn store or a preview can see it, whatever file it is read from.
    """
    reader = reader_for(pending.agent)
    try:
        result = reader.read(
            pending.path,
            start_offset=pending.start_offset,
            start_line=pending.start_line,
            flush=flush or pending.idle,
        )
    except OSError as exc:
        return ReadResult(
            turns=[],
            start_offset=pending.start_offset,
            end_offset=pending.start_offset,
            end_line=pending.start_line,
            skipped=Counter({f"unreadable: {exc.strerror or exc}": 1}),
        )
    names: dict[str, str] = {}
    shown = {str(pending.path): pending.shown}
    # All texts at once: what redaction looks for first is looked for in all of them together.
    for turn, text in zip(
        result.turns, redact_all([turn.text for turn in result.turns]), strict=True
    ):
        turn.text = clip(text, MAX_TURN_CHARS)
        if turn.source_path not in shown:
            shown[turn.source_path] = redact_path(turn.source_path)
        turn.source_path = shown[turn.source_path]
        # Names come from the transcript too (a folder, a session id): sent and written as well.
        if turn.project:
            turn.project = names.get(turn.project) or names.setdefault(
                turn.project, redact(turn.project)
            )
        if turn.session:
            turn.session = names.get(turn.session) or names.setdefault(
                turn.session, redact(turn.session)
            )
    result.turns = [turn for turn in result.turns if turn.text.strip()]
    if forgotten is not None and result.turns:
        keep = forgotten.keep([turn.text for turn in result.turns])
        if not all(keep):
            result.skipped["forgotten"] += keep.count(False)
            result.turns = [turn for turn, kept in zip(result.turns, keep, strict=True) if kept]
    return result


class CaptureRun:
    """One capture run's claim on files: take a file, read it, hand on its turns, advance.

    With a ``turns`` store, every turn ``read`` returns is stored there first (idempotently), so
    by the time any cursor can move past a turn it is kept. With ``forgotten``, turns whose text
    was forgotten are dropped as they are read (``read_pending``). Use as a context manager;
    every lease still held is released at the end, even on error.
    """

    def __init__(
        self,
        state: CaptureState,
        owner: str | None = None,
        *,
        turns: TurnStore | None = None,
        forgotten: ForgottenTurns | None = None,
    ) -> None:
        self.state = state
        self.owner = owner or new_owner()
        self.turns = turns
        self.forgotten = forgotten

    def __enter__(self) -> CaptureRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.state.release_all(self.owner)
        except OmError:
            if exc is None:
                raise
            # The error that ended the run is the one to report (a full disk makes this fail
            # too); the leases expire on their own.

    def claim(
        self,
        pending: Pending,
        *,
        flush: bool = False,
        durable: Callable[[list[str]], bool] | None = None,
    ) -> Pending | None:
        """Take the file's lease and re-plan it from the cursor as of now; None if taken or done.

        Re-planning matters: another run may have finished with the file between the scan and
        the claim, and its cursor must be the starting point, or those bytes would be read twice.
        With ``durable`` (are these observation ids in memory?), a cursor move that a killed run
        left recorded by ``intend`` is settled first.
        """
        taken, cursor = self.state.claim(self.owner, pending.path)
        if not taken:
            return None
        if durable is not None:
            cursor = self.state.settle(self.owner, pending.path, durable)
        whole = flush or pending.idle
        fresh, _ = plan_file(pending.path, pending.agent, cursor, min_new=0, flush=whole)
        if fresh is None:
            self.state.release(self.owner, pending.path)
        else:
            fresh.idle = pending.idle
        return fresh

    def read(self, pending: Pending, *, flush: bool = False) -> ReadResult:
        """Read a claimed file's new turns (redacted, bounded) and keep them in the turn store.

        A file read again because it was replaced has its old turns dropped first, so stored
        line numbers always point into the file as it now is.
        """
        result = read_pending(pending, flush=flush, forgotten=self.forgotten)
        if self.turns is not None:
            replaced = pending.shown if pending.reason == "replaced" else None
            self.turns.add(result.turns, replaced=replaced)
        return result

    def advance(
        self,
        pending: Pending,
        offset: int,
        line: int,
        last_turn_at: str | None = None,
        *,
        final: bool = False,
    ) -> None:
        """Record that the file is durably handed on up to ``offset`` (just after line ``line``).

        The lease is kept, so a long file can be checkpointed chunk by chunk. Until the ``final``
        move (the end of what was read), the cursor records the file as ending at ``offset``: a
        run killed between two chunks must leave the rest looking new, not unchanged.
        """
        if offset == pending.start_offset and pending.reason != "replaced":
            return
        self.state.advance(
            self.owner,
            pending.path,
            agent=pending.agent,
            offset=offset,
            line=line,
            st=pending.st,
            last_turn_at=last_turn_at,
            size=None if final else offset,
        )

    def intend(
        self,
        pending: Pending,
        offset: int,
        line: int,
        last_turn_at: str | None,
        ids: list[str],
    ) -> None:
        """Record, before ``ids`` are written to memory, the ``advance`` that will follow."""
        self.state.intend(
            self.owner,
            pending.path,
            agent=pending.agent,
            offset=offset,
            line=line,
            st=pending.st,
            last_turn_at=last_turn_at,
            ids=ids,
        )

    def finish(self, pending: Pending, result: ReadResult) -> None:
        """Advance to the end of what ``result`` read, and release the file."""
        last = max((t.timestamp for t in result.turns if t.timestamp), default=None)
        self.advance(pending, result.end_offset, result.end_line, last, final=True)
        self.release(pending)

    def release(self, pending: Pending) -> None:
        """Give the file back without moving its cursor (what was not handed on stays pending)."""
        self.state.release(self.owner, pending.path)

    def iter_claimed(
        self, pendings: Iterable[Pending], *, flush: bool = False
    ) -> Iterator[tuple[Pending, ReadResult]]:
        """Claim, read and yield each file in turn; the caller calls ``advance`` when durable."""
        for pending in pendings:
            claimed = self.claim(pending, flush=flush)
            if claimed is None:
                continue
            yield claimed, self.read(claimed, flush=flush)

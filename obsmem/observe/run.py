"""``om observe`` as one library call: capture what is new, observe it, write it, move cursors.

The protocol that makes capture lose nothing and repeat nothing:

1. scan: which transcripts have new bytes (a ``stat`` each when nothing changed);
2. claim a file (a lease: no other run takes the same bytes) and read its new turns, redacted,
   keeping them for ``om search --raw`` (unless ``OM_RAW_TURNS=off``) before anything else;
3. observe them chunk by chunk; after each chunk, record where the cursor will move, write its
   observations (one atomic write, ids de-duplicated), then move the file's cursor to the end of
   that chunk's lines (a run killed before the move leaves the record: the next claim makes the
   move if the observations are in memory, so the chunk is not observed twice);
4. at the end of the file, move the cursor past whatever was skipped too, and release it.

When the provider fails or the daily budget is spent, what was written stays; the rest of the
file is observed by the rules (``OM_FALLBACK=rules``) or stays pending for a later run
(``OM_FALLBACK=defer``), and the report says which.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from obsmem.errors import OmError, UsageError
from obsmem.index.turns import TurnStore
from obsmem.memory.ledger import forgotten_ids
from obsmem.memory.store import MemoryStore
from obsmem.observe.draft import local_date_time
from obsmem.observe.observer import chunk_turns, continuity, observe_chunk, overlap
from obsmem.observe.scoring import Deduper, without_near_duplicates
from obsmem.settings import Settings
from obsmem.sources.capture import CaptureRun, Pending, ScanReport
from obsmem.sources.claude_memory import AutoMemoryReport, scan_auto_memory
from obsmem.sources.model import ReadResult, Turn
from obsmem.sources.select import open_state, select, transcript_format

__all__ = ["ObserveReport", "run_observe"]


@dataclass
class ObserveReport:
    """What one ``om observe`` run did."""

    files_seen: int = 0
    files_read: int = 0
    turns: int = 0
    written: int = 0
    duplicates: int = 0
    chunks_llm: int = 0
    chunks_rules: int = 0
    deferred: list[str] = field(default_factory=list)
    busy: int = 0  # files another run was working on
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    provider: str = "none"
    auto_memory: AutoMemoryReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = dict(self.__dict__)
        out["skipped"] = dict(self.skipped)
        out["auto_memory"] = self.auto_memory.to_dict() if self.auto_memory else None
        return out


def _provider(settings: Settings, store: MemoryStore, environ: Mapping[str, str] | None) -> Any:
    """The metered observer provider, or None for the rules. Imported lazily: the rules path
    must not load any SDK."""
    if settings.effective_provider() == "none":
        return None
    from obsmem.llm import get_provider
    from obsmem.llm.usage import MeteredProvider

    provider = get_provider(settings, "observer", environ=environ)
    if provider is None:
        return None
    return MeteredProvider(provider, store.usage_path, settings)


def run_observe(
    store: MemoryStore,
    settings: Settings,
    *,
    source: str = "all",
    transcript: Path | None = None,
    min_new: int | None = None,
    flush: bool = False,
    environ: Mapping[str, str] | None = None,
    provider: Any = ...,
    since: date | None = None,
    progress: Callable[[int, int, Pending], None] | None = None,
    reflect_new: bool = False,
) -> ObserveReport:
    """Observe what is new in the chosen transcripts and write it to memory.

    ``provider`` overrides the configured one (None forces the rules); by default it comes from
    ``settings``. Claude Code's auto-memory is scanned too when ``source`` is ``all`` or
    ``claude-memory`` and no single transcript is given. ``since`` keeps transcripts modified on
    or after that day (backfill); ``progress(done, total, file)`` is called before each file.
    ``reflect_new`` reflects at the end whenever something was written, instead of only when the
    daily reflection is due (a backfill: history belongs in long-term memory at once).
    """
    report = ObserveReport()
    if transcript is None and source in ("all", "claude-memory"):
        report.auto_memory = scan_auto_memory(store, environ)
        if source == "claude-memory":
            return report
    elif source == "claude-memory":
        raise UsageError("--transcript cannot be combined with --source claude-memory")
    if transcript is not None and transcript.is_file():
        # Refused before anything is opened, so a file that is no transcript leaves no trace.
        transcript_format(transcript, source)
    llm = _provider(settings, store, environ) if provider is ... else provider
    report.provider = getattr(llm, "name", "rules") if llm is not None else "rules"
    deduper = Deduper(store.recent_observations())
    with open_state(store) as state, TurnStore(store.turns_path) as turns:
        found: ScanReport = select(
            state,
            source=source,
            transcript=transcript,
            environ=environ,
            min_new=min_new,
            flush=flush,
            since=since,
        )
        report.files_seen = found.files
        keep = turns if settings.raw_turns == "on" else None  # opened only when a turn is kept
        # A turn whose text was forgotten is dropped as it is read, from whatever file (a copy of
        # a forgotten session): neither kept, nor observed, nor in a day's Current Context.
        with CaptureRun(state, turns=keep, forgotten=store.forgotten_turns()) as run:
            for number, pending in enumerate(found.pending):
                if progress is not None:
                    progress(number, len(found.pending), pending)
                if report.deferred:
                    # The provider is down and the user chose to wait: leave the rest pending.
                    report.deferred.append(pending.shown)
                    continue
                claimed = run.claim(
                    pending, flush=flush, durable=lambda ids: _in_memory(store, ids)
                )
                if claimed is None:
                    report.busy += 1
                    continue
                result = run.read(claimed, flush=flush)
                report.files_read += 1
                report.turns += len(result.turns)
                report.skipped.update(result.skipped)
                # Read to its end with --flush or once idle: the session is over.
                ended = flush or claimed.idle
                llm = _observe_file(
                    store, run, claimed, result, llm, settings, deduper, report, ended=ended
                )
    reflected = _catch_up(store, settings, report, now=reflect_new and report.written > 0)
    if report.written or (reflected is not None and (reflected.written or reflected.archive.days)):
        _after_writing(store, report)
    return report


def _catch_up(
    store: MemoryStore, settings: Settings, report: ObserveReport, *, now: bool = False
) -> Any:
    """Run the daily reflection if it was missed (at most once a day; otherwise one small read),
    or at once with ``now``."""
    from obsmem.reflect.offline import catch_up, reflect

    try:
        return reflect(store, settings) if now else catch_up(store, settings)
    except OmError as exc:
        report.problems.append(f"daily reflection not run: {exc}")
        return None


def _observe_file(
    store: MemoryStore,
    run: CaptureRun,
    pending: Pending,
    result: ReadResult,
    llm: Any,
    settings: Settings,
    deduper: Deduper,
    report: ObserveReport,
    *,
    ended: bool = False,
) -> Any:
    """Observe one file's turns chunk by chunk; returns the provider to use for the next file
    (None once the provider failed and the rules took over). ``ended``: the session is over."""
    project = result.turns[0].project if result.turns else None
    carried = continuity(store, project, settings.observer_max_input_tokens)
    seen: list[Turn] = []  # the previous chunk's last turns, sent again as already observed
    for chunk in chunk_turns(result.turns, settings.observer_max_input_tokens):
        recent, before = carried.recent, carried.context
        final = ended and chunk[-1].byte_end == result.turns[-1].byte_end
        try:
            done = observe_chunk(
                chunk,
                provider=llm,
                recent=recent,
                deduper=deduper,
                previous_context=before,
                ended=final,
                seen=seen,
            )
        except OmError as exc:
            if llm is None:
                raise
            report.problems.append(str(exc))
            if settings.fallback == "defer":
                report.deferred.append(pending.shown)
                run.release(pending)  # the cursor stays after the last chunk written
                return llm
            llm = None  # the rules observe the rest of this run
            done = observe_chunk(chunk, provider=None, recent=recent, deduper=deduper, ended=final)
        if done.by == "llm":
            report.chunks_llm += 1
        else:
            report.chunks_rules += 1
        context: dict[str, dict[str, str]] = {}
        pairs = done.context.as_lines()
        if pairs:
            day, _ = local_date_time(chunk[-1].timestamp)
            context[day] = pairs
        last = chunk[-1]
        # Recorded first: killed after the write but before the advance, the next run moves
        # the cursor instead of observing these lines again.
        ids = [o.id for o in done.observations]
        run.intend(pending, last.byte_end, last.line_end, last.timestamp, ids)
        # Under the lock, against memory as it is then: ids in memory, the archive or the
        # ledger (written or forgotten: what the user forgot is not written back), and near
        # duplicates, whatever other runs wrote meanwhile.
        added = store.add_observations(
            done.observations, context=context, near=without_near_duplicates
        )
        report.written += len(added)
        report.duplicates += done.dropped_duplicates + len(done.observations) - len(added)
        carried = carried.after(added, pairs)
        seen = overlap(chunk, settings.observer_overlap_turns, settings.observer_max_input_tokens)
        run.advance(pending, last.byte_end, last.line_end, last.timestamp)
    run.finish(pending, result)
    return llm


def _in_memory(store: MemoryStore, ids: list[str]) -> bool:
    """True when every id is in ``observations.md`` or the archive (a killed run wrote them)."""
    from obsmem.reflect.archive import archived_ids

    wanted = set(ids) - set(forgotten_ids(store.ledger_path))
    present = store.read_observations().ids()
    return wanted <= present or wanted <= present | archived_ids(store)


def _after_writing(store: MemoryStore, report: ObserveReport) -> None:
    """Bring the startup context, the vault and the index up to date with what was written."""
    from obsmem.derived import update_derived

    report.problems.extend(update_derived(store))

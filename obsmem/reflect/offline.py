"""The offline reflector: observations -> ``reflections.md``, by fixed rules, with no LLM.

Incremental by id: it looks at the observations it has not looked at before (the reflector's
state, ``obsmem.reflect.clock``), wherever they are (``observations.md``, or an archive month
that changed), whatever their date, skipping ids some reflection already cites. So history
imported after live capture is reflected as if it had come first. The rules
(``obsmem.reflect.rules``), for each new observation in date order:

1. the same fact as one of om's reflection lines: the line gains the citation (up to
   ``MAX_CITES``, in date order), its ``seen`` date, and the higher priority; a Dormant or
   archived line seen again goes back to its section;
2. the same fact as a line written by hand (or by the original tool): nothing (already known);
3. promoted when one sighting is enough (``rules.durable``: importance 0.8 or 🔴; a preference,
   constraint, decision, fact or working-style note of 0.6 or more; a project's stack, layout
   or rules; what the user is learning), or when the same fact was observed on two days
   within ``LOOKBACK_DAYS`` of each other: a new line in the section it maps to
   (``facts.home_for``) citing every observation of that fact. A decision or preference on the
   same subject as a line of its section (``facts.subject_overlap`` of 0.6 or more) supersedes
   it: the earlier fact is kept in ``## Archive`` as ``~~old~~ → replaced by new (date)``.

Then ageing on the memory's clock: in Active Projects and Recent Themes, a line unseen for 14
days before its project's last activity moves to ``## Dormant`` (its project kept as a
``###``), and after 30 days to ``## Archive`` (🔴 lines never leave for ``## Archive`` by age).
Then the cap (``OM_REFLECTIONS_MAX_LINES``): the least important, oldest lines move to
``## Archive``, which keeps at most a tenth of the cap of om's lines; its oldest move to
``archive/reflections/YYYY-MM.md``. Lines written by hand never move; om's lines are kept in a
stable order in each section (last seen, then id). ``Last reflected`` becomes yesterday and
``Last updated`` the time of a run that changed something.
"""

from __future__ import annotations

import difflib
import gc
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from obsmem.memory.atomic import atomic_write
from obsmem.memory.markdown import body, decode, encode, newline_of, split_lines
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore
from obsmem.paths import REFLECTIONS_FILE
from obsmem.reflect.archive import (
    OBSERVATIONS_ARCHIVE,
    ArchiveReport,
    MonthFile,
    archive_observations,
    archive_path,
)
from obsmem.reflect.clock import Clock, ReflectorState, load_state, save_state
from obsmem.reflect.facts import project_name
from obsmem.reflect.reflections import OmLine, ReflectionsDoc, parse_om_line
from obsmem.reflect.rules import (
    DEMOTE_AFTER_DAYS,
    LOOKBACK_DAYS,
    MAX_CITES,
    RETIRE_AFTER_DAYS,
    Rules,
)
from obsmem.settings import Settings

__all__ = [
    "DEMOTE_AFTER_DAYS",
    "LOOKBACK_DAYS",
    "MAX_CITES",
    "RETIRE_AFTER_DAYS",
    "ReflectReport",
    "catch_up",
    "reflect",
]

REFLECTIONS_ARCHIVE = "reflections"
_ANY_ID = re.compile(r"\^([0-9a-z]{6,16})\b")


@dataclass
class ReflectReport:
    """What one ``om reflect`` did (or, with ``dry_run``, would do)."""

    today: str
    dry_run: bool = False
    last_reflected_before: str | None = None
    last_reflected: str | None = None
    considered: int = 0  # new observations looked at
    promoted: int = 0  # new reflection lines
    merged: int = 0  # observations folded into an existing line
    replaced: int = 0  # lines rewritten to a newer, contradicting fact
    covered: int = 0  # observations a hand-written line already states
    revived: int = 0  # Dormant or archived lines seen again
    demoted: int = 0  # moved to Dormant
    retired: int = 0  # moved to ## Archive (by age or by the cap)
    moved: int = 0  # moved to another section by the LLM reflector
    moved_out: int = 0  # moved from ## Archive to archive/reflections/
    lines_before: int = 0
    lines_after: int = 0
    max_lines: int = 0
    over_cap: bool = False  # hand-written lines alone pass the cap
    changed: bool = False
    written: bool = False
    diff: str = ""
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    llm_sections: int = 0  # sections the LLM reflector answered for
    llm_applied: int = 0  # its operations applied
    llm_rejected: int = 0  # its operations rejected by validation
    llm_failed: int = 0  # requests that failed: offline rules or deferred (OM_FALLBACK)
    archive: ArchiveReport = field(default_factory=ArchiveReport)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = dict(self.__dict__)
        out["archive"] = self.archive.to_dict()
        return out


def reflect(
    store: MemoryStore,
    settings: Settings,
    *,
    today: date | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    provider: Any = ...,
) -> ReflectReport:
    """Fold new observations into ``reflections.md``, then archive old observation days.

    ``today`` is the local date the rules measure ages from (default: today); ``now`` stamps
    ``Last updated`` (default: the current time, UTC). With ``dry_run`` nothing is written: the
    report's ``diff`` shows what would change in ``reflections.md`` and ``archive.days`` the days
    that would move to the archive.

    With an LLM provider configured (or ``provider`` given; None forces the offline rules), new
    observations go to the LLM reflector first, section by section (``obsmem.reflect.llm``); the
    offline rules then consider those it did not place, and age and cap the file as always.
    """
    with _collector_paused():
        return _run(store, settings, today or date.today(), dry_run, now or datetime.now(UTC),
                    provider)  # fmt: skip


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while reflecting: a run builds a few hundred thousand
    objects (observations, shapes, index entries) that live until it ends, and the collector
    walked them all again every few thousand allocations (a tenth of a first run's time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _run(
    store: MemoryStore,
    settings: Settings,
    today: date,
    dry_run: bool,
    now: datetime,
    provider: Any,
) -> ReflectReport:
    report = ReflectReport(today=today.isoformat(), dry_run=dry_run)
    report.max_lines = settings.reflections_max_lines
    llm = _llm_provider(store, settings, report) if provider is ... else provider
    if dry_run:
        _reflect(store, settings, today, now, report, write=False, llm=llm)
        report.archive = archive_observations(store, settings, today=today, dry_run=True)
        return report
    with store.lock():
        _reflect(store, settings, today, now, report, write=True, llm=llm)
        report.archive = archive_observations(store, settings, today=today)
    if report.written or report.archive.days:
        from obsmem.derived import update_derived

        report.notes.extend(update_derived(store))
    return report


def _llm_provider(store: MemoryStore, settings: Settings, report: ReflectReport) -> Any:
    """The metered reflector provider, or None for the offline rules. Imported lazily: the
    offline path must not load any SDK."""
    if settings.effective_provider() == "none":
        return None
    from obsmem.errors import ProviderError
    from obsmem.llm import get_provider
    from obsmem.llm.usage import MeteredProvider

    try:
        provider = get_provider(settings, "reflector")
    except ProviderError as exc:  # its SDK is not installed: the rules still work
        report.notes.append(f"LLM reflector unavailable ({exc}): used the offline rules")
        return None
    if provider is None:
        return None
    return MeteredProvider(provider, store.usage_path, settings)


def catch_up(
    store: MemoryStore, settings: Settings, today: date | None = None
) -> ReflectReport | None:
    """Run a missed daily reflection: when ``Last reflected`` is before yesterday (or missing
    while there are observations). Returns None, having read one small file, when it is not due.
    """
    today = today or date.today()
    last = store.read_sections(REFLECTIONS_FILE).last_reflected
    if last is not None and last >= (today - timedelta(days=1)).isoformat():
        return None
    if (
        last is None
        and not store.read_observations(shared=True).days
        and not (store.archive_dir / OBSERVATIONS_ARCHIVE).is_dir()
    ):
        return None  # nothing was ever observed: nothing to reflect
    return reflect(store, settings, today=today)


def _reflect(
    store: MemoryStore,
    settings: Settings,
    today: date,
    now: datetime,
    report: ReflectReport,
    *,
    write: bool,
    llm: Any = None,
) -> None:
    path = store.home / REFLECTIONS_FILE
    before = store.read_bytes(path)
    doc = ReflectionsDoc(before)
    report.lines_before = doc.line_count()
    last = _date_of(doc.stamp("Last reflected"))
    report.last_reflected_before = last
    state = load_state(store)
    ledger = store.provenance()
    pool = _gather(store, state, ledger)
    cited, moved = _already_reflected(store, before)
    for place in list(doc.places()):
        if place.line.rid in moved:
            # A run was interrupted after writing this line to archive/reflections/ and before
            # rewriting reflections.md: finish the move instead of keeping it twice. By id: that
            # run may have merged a citation into the line before moving it, so the copy left
            # here can differ from the archived one. A line that left never comes back under
            # its id (its observations count as reflected).
            found = doc.find(place.line.rid)
            if found is not None:
                doc.remove(found)
    # New is a question of ids, not of dates: an old day written by a late backfill is new.
    new = [o for o in pool if o.id not in state.reflected and o.id not in cited]
    deferred: set[str] = set()
    # Without a state (a memory from before it existed), the model is sent only what is dated
    # after Last reflected, as it was then; the rules, cheap and deterministic, see everything.
    asked = new if state.known or last is None else [o for o in new if o.date > last]
    if llm is not None and asked:
        from obsmem.reflect.llm import reflect_with_llm

        # The model goes first; what it did not place (or what its failed sections held, with
        # OM_FALLBACK=rules) is still considered by the rules below, so skipping loses nothing.
        deferred = reflect_with_llm(
            doc, asked, ledger, cited, llm, report, fallback=settings.fallback
        )
    rules = Rules(doc, pool, ledger, cited, report, Clock.from_activity(state.activity, today))
    for obs in new:
        if obs.id not in deferred:
            rules.consider(obs)
    if llm is not None:
        report.considered = len(asked)
    rules.age()
    # Deferred observations stay new for the next run (OM_FALLBACK=defer).
    state.reflected |= {o.id for o in pool} - deferred
    yesterday = (today - timedelta(days=1)).isoformat()
    report.last_reflected = max(last, yesterday) if last else yesterday
    stamp = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    # Both stamps exist before the cap counts lines; Last updated keeps its old value until we
    # know something changed, so a run that changes nothing writes nothing.
    doc.set_stamps(doc.stamp("Last updated") or stamp, report.last_reflected)
    moved_out = rules.cap(settings.reflections_max_lines)
    doc.prune()
    doc.sort()
    if doc.render() == before:
        report.lines_after = report.lines_before
        if write:
            save_state(store, state)
        return
    report.changed = True
    doc.set_stamps(stamp, report.last_reflected)
    after = doc.render()
    report.lines_after = doc.line_count()
    if not write:
        report.diff = _diff(before, after)
        return
    # Lines leaving reflections.md are written to their archive month first: a crash in between
    # leaves them in both places, and the month file is checked by id before adding them again.
    for month, data in _reflection_months(store, moved_out, newline_of(doc.all_lines())).items():
        atomic_write(month, data)
        report.files.append(store.relative(month))
    atomic_write(path, after)
    report.written = True
    # After reflections.md: a crash in between only means these observations are looked at
    # again, and those the rules placed are recognised by their citations.
    save_state(store, state)


def _date_of(value: str | None) -> str | None:
    match = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", value or "")
    if match is None:
        return None
    try:
        return date.fromisoformat(match.group(1)).isoformat()
    except ValueError:
        return None


def _gather(
    store: MemoryStore, state: ReflectorState, ledger: dict[str, Provenance]
) -> list[Observation]:
    """Every observation of ``observations.md``, of the archive months that changed since the
    last run (all of them when there is no state), and of the months within ``LOOKBACK_DAYS``
    of those, so a second sighting is found; oldest first, each id once (a crash mid-archive
    leaves a day in both places). The state's clock moves to what was read."""
    folder = store.archive_dir / OBSERVATIONS_ARCHIVE
    months = sorted(folder.glob("*.md")) if folder.is_dir() else []
    read = [p for p in months if not state.known or state.month_changed(p)]
    docs = {p: store.read_observations(p, shared=True) for p in read}
    current = store.read_observations(shared=True)
    unseen = [o for doc in (current, *docs.values()) for o in doc.observations
              if o.id not in state.reflected]  # fmt: skip
    wanted = _months_around(o.date for o in unseen)
    for path in months:
        if path not in docs and path.stem in wanted:
            docs[path] = store.read_observations(path, shared=True)
    for path in read:
        state.read_month(path)
    seen: set[str] = set()
    out: list[Observation] = []
    for doc in (*docs.values(), current):
        for obs in doc.observations:
            if obs.id in seen:
                continue
            seen.add(obs.id)
            out.append(obs)
            prov = ledger.get(obs.id)
            state.saw(project_name(prov.project) if prov and prov.project else None, obs.date)
    out.sort(key=lambda o: o.date)  # stable: file order within a day
    return out


def _months_around(days: Iterable[str]) -> set[str]:
    """The ``YYYY-MM`` of every day within ``LOOKBACK_DAYS`` of one of ``days``."""
    out: set[str] = set()
    for day in set(days):
        try:
            mid = date.fromisoformat(day)
        except ValueError:
            continue
        step = mid - timedelta(days=LOOKBACK_DAYS)
        while step <= mid + timedelta(days=LOOKBACK_DAYS):
            out.add(step.isoformat()[:7])
            step += timedelta(days=28)
        out.add((mid + timedelta(days=LOOKBACK_DAYS)).isoformat()[:7])
    return out


def _already_reflected(store: MemoryStore, reflections: bytes) -> tuple[set[str], set[str]]:
    """Every ``^id`` in ``reflections.md`` and ``archive/reflections/`` (observations already part
    of long-term memory: om's citations, or lines copied there by hand), and the ids of om's
    lines in ``archive/reflections/`` (lines that left reflections.md for good)."""
    texts = [decode(reflections)[0]]
    moved: set[str] = set()
    folder = store.archive_dir / REFLECTIONS_ARCHIVE
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            text = decode(store.read_bytes(path))[0]
            texts.append(text)
            lines = (parse_om_line(body(x)) for x in split_lines(text) if x.startswith("- "))
            moved.update(line.rid for line in lines if line is not None)
    return {match for text in texts for match in _ANY_ID.findall(text)}, moved


def _reflection_months(store: MemoryStore, lines: list[OmLine], nl: str) -> dict[Path, bytes]:
    """New bytes of the ``archive/reflections/YYYY-MM.md`` files that receive ``lines``: a day
    section per ``seen`` date, lines whose id the month already holds left out."""
    by_month: dict[str, dict[str, list[OmLine]]] = {}
    for line in lines:
        by_month.setdefault(line.seen[:7], {}).setdefault(line.seen, []).append(line)
    out: dict[Path, bytes] = {}
    for month, days in sorted(by_month.items()):
        path = archive_path(store, REFLECTIONS_ARCHIVE, month)
        doc = store.read_observations(path, shared=True)
        there = doc.ids()
        target = MonthFile(doc.lines, newline_of(doc.lines) if doc.lines else nl,
                           f"# Reflections — archive {month}")  # fmt: skip
        for day, items in sorted(days.items()):
            fresh = [x.render() + target.nl for x in items if x.rid not in there]
            if fresh:
                target.merge(day, [f"## {day}{target.nl}", target.nl, *fresh])
        if target.changed:
            out[path] = encode("".join(target.lines))
    return out


def _diff(before: bytes, after: bytes) -> str:
    def shown(data: bytes) -> list[str]:
        text = decode(data)[0].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return [line if line.endswith("\n") else line + "\n" for line in split_lines(text)]

    return "".join(
        difflib.unified_diff(
            shown(before), shown(after), "a/reflections.md", "b/reflections.md", n=1
        )
    )

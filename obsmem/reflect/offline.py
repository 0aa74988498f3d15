"""The offline reflector: observations -> ``reflections.md``, by fixed rules, with no LLM.

Incremental: it looks at the observations of the days after ``Last reflected`` (in
``observations.md`` or, when runs were missed, already in ``archive/observations/``), skipping
ids some reflection already cites. For each, in date order:

1. the same fact as one of om's reflection lines: the line gains the citation (up to
   ``MAX_CITES``), its ``seen`` date, and the higher priority; a Dormant or archived line seen
   again goes back to its section;
2. the same fact as a line written by hand (or by the original tool): nothing (already known);
3. promoted when its importance is 0.8 or more, it is 🔴, or the same fact was observed on two
   days or more within ``LOOKBACK_DAYS``: a new line in the section its type maps to
   (``facts.home_for``) citing every observation of that fact, unless it is a decision or
   preference on the same subject as an existing line (``facts.subject_overlap`` of 0.6 or more):
   then that line is rewritten to the newer fact, "... (replacing <older>)".

Then ageing, on om's lines only: in Active Projects and Recent Themes, a line unseen for 14 days
moves to ``## Dormant`` (its project kept as a ``###``), and after 30 days to ``## Archive``
(🔴 lines never leave for ``## Archive`` by age). Then the cap (``OM_REFLECTIONS_MAX_LINES``): the
least important, oldest lines move to ``## Archive``, which keeps at most a tenth of the cap of
om's lines; its oldest move to ``archive/reflections/YYYY-MM.md``. Lines written by hand never
move. ``Last reflected`` becomes yesterday (the last complete day; today's observations are looked
at again by the next run) and ``Last updated`` the time of a run that changed something.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from obsmem.memory.atomic import atomic_write
from obsmem.memory.lines import parse_observation
from obsmem.memory.markdown import BULLET, body, decode, encode, newline_of, split_lines
from obsmem.memory.model import Observation, Provenance, make_id, priority_for
from obsmem.memory.store import MemoryStore
from obsmem.paths import REFLECTIONS_FILE
from obsmem.reflect.archive import (
    OBSERVATIONS_ARCHIVE,
    ArchiveReport,
    MonthFile,
    archive_observations,
    archive_path,
)
from obsmem.reflect.facts import (
    ACTIVE_PROJECTS,
    ARCHIVE,
    DORMANT,
    RECENT_THEMES,
    FactIndex,
    Home,
    home_for,
    subject_overlap,
)
from obsmem.reflect.reflections import RANK as _RANK
from obsmem.reflect.reflections import (
    Container,
    OmLine,
    ReflectionsDoc,
    name_key,
    parse_om_line,
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

DEMOTE_AFTER_DAYS = 14
RETIRE_AFTER_DAYS = (
    30  # unseen this long: from Active Projects / Recent Themes / Dormant to Archive
)
LOOKBACK_DAYS = 30  # how far back "seen on two days" looks
PROMOTE_IMPORTANCE = 0.8
CONTRADICTION_OVERLAP = 0.6
MAX_CITES = 8  # a line cites its first eight observations; later ones only move its seen date
REFLECTIONS_ARCHIVE = "reflections"

_AGEING = (ACTIVE_PROJECTS, RECENT_THEMES)
_CONTRADICTING = frozenset({"decision", "preference"})
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
    today = today or date.today()
    now = now or datetime.now(UTC)
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
    from obsmem.observe.providers import get_provider
    from obsmem.observe.usage import MeteredProvider

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
        and not store.read_observations().days
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
    pool = _pool(store, last, today)
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
    ledger = store.provenance()
    new = [o for o in pool if (last is None or o.date > last) and o.id not in cited]
    deferred: set[str] = set()
    if llm is not None and new:
        from obsmem.reflect.llm import reflect_with_llm

        # The model goes first; what it did not place (or what its failed sections held, with
        # OM_FALLBACK=rules) is still considered by the rules below, so skipping loses nothing.
        deferred = reflect_with_llm(
            doc, new, ledger, cited, llm, report, fallback=settings.fallback
        )
    reflector = _Reflector(doc, pool, ledger, cited, report, today)
    # Observations dated on or before Last reflected but not cited: written since by a backfill
    # or a late observe, or not worth promoting last time (a second sighting may have come since).
    # The rules are deterministic and cheap, so they look at them again; the model does not.
    late = [o for o in pool if last is not None and o.date <= last and o.id not in cited]
    for obs in [*new, *late]:
        if obs.id not in deferred:
            reflector.consider(obs)
    if llm is not None:
        report.considered = len(new)
    reflector.age()
    yesterday = (today - timedelta(days=1)).isoformat()
    if deferred:
        # Deferred observations must be after Last reflected for the next run to see them.
        first = min(o.date for o in new if o.id in deferred)
        yesterday = min(yesterday, (date.fromisoformat(first) - timedelta(days=1)).isoformat())
    report.last_reflected = max(last, yesterday) if last else yesterday
    stamp = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    # Both stamps exist before the cap counts lines; Last updated keeps its old value until we
    # know something changed, so a run that changes nothing writes nothing.
    doc.set_stamps(doc.stamp("Last updated") or stamp, report.last_reflected)
    moved_out = reflector.cap(settings.reflections_max_lines)
    doc.prune()
    if doc.render() == before:
        report.lines_after = report.lines_before
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


class _Reflector:
    """The rules, applied to one ``ReflectionsDoc`` (see the module docstring)."""

    def __init__(
        self,
        doc: ReflectionsDoc,
        pool: list[Observation],
        ledger: dict[str, Provenance],
        cited: set[str],
        report: ReflectReport,
        today: date,
    ) -> None:
        self.doc = doc
        self.pool = pool
        self.ledger = ledger
        self.cited = cited  # ids cited in reflections.md and archive/reflections/ (grows)
        self.report = report
        self.today = today
        self.lines: FactIndex[str] = FactIndex((p.line.rid, p.line.core) for p in doc.places())
        self.hand: FactIndex[int] = FactIndex(
            enumerate(_hand_text(raw) for _, raw in doc.hand_lines())
        )
        self.facts: FactIndex[int] = FactIndex((i, o.text) for i, o in enumerate(pool))

    def _home(self, obs: Observation) -> Home:
        prov = self.ledger.get(obs.id)
        return home_for(obs, prov.project if prov is not None else None)

    def _age_of(self, day: str) -> int:
        return (self.today - date.fromisoformat(day)).days

    def consider(self, obs: Observation) -> None:
        """Apply the rules to one new observation."""
        if obs.id in self.cited:
            return
        self.report.considered += 1
        matched = self.lines.matches(obs.text)
        if matched:
            self._merge(matched[0], obs)
            return
        if self.hand.matches(obs.text):
            self.report.covered += 1
            return
        twins = [
            self.pool[i]
            for i in self.facts.matches(obs.text)
            if self.pool[i].id != obs.id and self.pool[i].id not in self.cited
        ]
        days = {obs.date, *(t.date for t in twins)}
        important = obs.importance >= PROMOTE_IMPORTANCE or obs.priority == "🔴"
        if not important and len(days) < 2:
            return
        chosen = [obs, *twins]
        home = self._home(obs)
        if obs.type in _CONTRADICTING and self._contradict(obs, chosen, home):
            return
        line = OmLine(
            rid=make_id("reflection", obs.id),
            text=obs.text,
            seen=max(m.date for m in chosen),
            cites=[m.id for m in chosen][:MAX_CITES],
            emoji=_emoji(chosen),
        )
        self.doc.append(line, home.section, home.sub)
        self.lines.add(line.rid, line.core)
        self.cited.update(line.cites)
        self.report.promoted += 1

    def _merge(self, rid: str, obs: Observation) -> None:
        place = self.doc.find(rid)
        assert place is not None  # every key of self.lines is a line of the document
        old = place.line
        line = replace(old, cites=list(old.cites), seen=max(old.seen, obs.date))
        if obs.id not in line.cites and len(line.cites) < MAX_CITES:
            line.cites.append(obs.id)
        line.emoji = _higher(line.emoji, _emoji([obs]))
        if line == old:
            return  # a full line seen again on a day it already counts: nothing to do
        self.report.merged += 1
        self.cited.update(line.cites)
        home = self._home(obs)
        if _named(place.section, DORMANT, ARCHIVE) and self._age_of(line.seen) < DEMOTE_AFTER_DAYS:
            # Seen again: back where it belongs. Only when fresh, so ageing does not send it
            # straight back (which would reorder lines on every run).
            self.doc.remove(place)
            self.doc.append(line, home.section, home.sub)
            self.report.revived += 1
        else:
            self.doc.replace(place, line)

    def _contradict(self, obs: Observation, chosen: list[Observation], home: Home) -> bool:
        """Rewrite a line on the same subject to ``obs`` (noting the old fact); True if done."""
        for place in self.doc.places(home.section, home.sub):
            old = place.line
            if subject_overlap(obs.text, old.core) < CONTRADICTION_OVERLAP:
                continue
            cites = list(dict.fromkeys([*old.cites, *(m.id for m in chosen)]))[:MAX_CITES]
            if obs.date < old.seen:
                line = replace(old, cites=cites)  # the line already states something newer
            else:
                text = f"{obs.text} (replacing {old.core})"
                seen = max(old.seen, *(m.date for m in chosen))
                emoji = _higher(old.emoji, _emoji(chosen))
                line = replace(old, text=text, seen=seen, cites=cites, emoji=emoji)
                self.report.replaced += 1
            self.doc.replace(place, line)
            self.lines.add(line.rid, line.core)
            self.cited.update(line.cites)
            return True
        return False

    def age(self) -> None:
        """Demote lines unseen for 14 days to Dormant; retire them after 30 (not 🔴)."""
        moves: list[tuple[str, str, str | None]] = []
        for place in self.doc.places():
            if not _named(place.section, *_AGEING, DORMANT):
                continue
            try:
                age = self._age_of(place.line.seen)
            except ValueError:
                continue  # a date edited into something that is not one: leave the line alone
            if age >= RETIRE_AFTER_DAYS and place.line.emoji != "🔴":
                moves.append((place.line.rid, ARCHIVE, None))
                self.report.retired += 1
            elif age >= DEMOTE_AFTER_DAYS and _named(place.section, *_AGEING):
                # A project line keeps its project as a ### under Dormant.
                sub = place.sub.name if place.sub is not None else None
                projects = _named(place.section, ACTIVE_PROJECTS)
                moves.append((place.line.rid, DORMANT, sub if projects else None))
                self.report.demoted += 1
        for rid, section, sub in moves:
            found = self.doc.find(rid)
            assert found is not None
            self.doc.remove(found)
            self.doc.append(found.line, section, sub)

    def cap(self, max_lines: int) -> list[OmLine]:
        """Keep the file within ``max_lines``; return the lines moved out of it.

        ``## Archive`` keeps at most a tenth of the cap (ten at least) of om's lines, its oldest
        leaving the file first; past the cap, om's least important, oldest lines elsewhere move
        into it. Lines are chosen once from sorted lists, not by rescanning the file per move.
        """
        keep = max(10, max_lines // 10)
        kept: list[tuple[str, int, OmLine]] = []  # ## Archive, oldest first
        live: list[tuple[int, str, int, OmLine]] = []  # elsewhere, the first to move first
        for order, place in enumerate(self.doc.places()):
            line = place.line
            if _named(place.section, ARCHIVE):
                kept.append((line.seen, order, line))
            else:
                live.append((line.rank, line.seen, order, line))
        kept.sort(key=lambda x: x[:2])
        live.sort(key=lambda x: x[:3], reverse=True)  # popped from the end
        order = len(kept) + len(live)
        out: list[OmLine] = []
        while True:
            self.doc.prune()
            over = self.doc.line_count() > max_lines
            if len(kept) > keep or (over and kept and not live):
                line = kept.pop(0)[2]
                self._take(line)
                out.append(line)
                self.report.moved_out += 1
            elif over and live:
                line = live.pop()[3]
                self._take(line)
                self.doc.append(line, ARCHIVE)
                order += 1
                bisect.insort(kept, (line.seen, order, line), key=lambda x: x[:2])
                self.report.retired += 1
            else:
                self.report.over_cap = over
                return out

    def _take(self, line: OmLine) -> None:
        place = self.doc.find(line.rid)
        assert place is not None  # the lists hold lines of the document
        self.doc.remove(place)


def _named(container: Container, *names: str) -> bool:
    return container.key in {name_key(n) for n in names}


def _higher(a: str, b: str) -> str:
    return a if _RANK.get(a, 1) >= _RANK.get(b, 1) else b


def _emoji(observations: list[Observation]) -> str:
    if any(o.priority == "🔴" for o in observations):
        return "🔴"
    return priority_for(max(o.importance for o in observations))


def _hand_text(raw: str) -> str:
    match = BULLET.match(raw)
    rest = match.group("rest") if match else raw
    return parse_observation(rest, date="", depth=0, line=0, raw=raw)[0].text


def _date_of(value: str | None) -> str | None:
    match = re.search(r"\b(\d{4}-\d{2}-\d{2})\b", value or "")
    if match is None:
        return None
    try:
        return date.fromisoformat(match.group(1)).isoformat()
    except ValueError:
        return None


def _pool(store: MemoryStore, last: str | None, today: date) -> list[Observation]:
    """Observations that are new (after ``last``) or recent enough to count as a second
    sighting, from the archive months that may hold them and ``observations.md``, oldest first,
    each id once (a crash mid-archive leaves a day in both places)."""
    start: str | None = (today - timedelta(days=LOOKBACK_DAYS)).isoformat()
    if last is None:
        start = None
    elif start is not None and last < start:
        start = (date.fromisoformat(last) + timedelta(days=1)).isoformat()
    folder = store.archive_dir / OBSERVATIONS_ARCHIVE
    paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
    if start is not None:
        paths = [p for p in paths if p.stem >= start[:7]]
    seen: set[str] = set()
    out: list[Observation] = []
    for path in [*paths, store.observations_path]:
        for obs in store.read_observations(path).observations:
            if obs.id in seen or (start is not None and obs.date < start):
                continue
            seen.add(obs.id)
            out.append(obs)
    out.sort(key=lambda o: o.date)  # stable: file order within a day
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
        doc = store.read_observations(path)
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

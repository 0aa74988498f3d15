"""The offline reflector's rules, applied to one ``ReflectionsDoc``: promote, merge, supersede,
age and cap (``obsmem.reflect.offline`` runs them; docs/reflection.md explains them).

A reflection line is built the same way whatever order its observations arrived in: founded on
the earliest observation of its fact (its id and wording), ``seen`` the latest, citing the
earliest eight in date order. So a backfill of old sessions after live capture writes the same
lines as the backfill before it.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING

from obsmem.memory.lines import parse_observation
from obsmem.memory.markdown import BULLET
from obsmem.memory.model import Observation, Provenance, make_id, priority_for
from obsmem.reflect.clock import Clock
from obsmem.reflect.facts import (
    ACTIVE_PROJECTS,
    ARCHIVE,
    DORMANT,
    RECENT_THEMES,
    FactIndex,
    Home,
    SubjectIndex,
    home_for,
    is_learning,
    learning_fact,
    project_name,
    subject_overlap,
)
from obsmem.reflect.project_facts import is_project_fact, passing_test_command, tests_run_with
from obsmem.reflect.reflections import RANK, Container, OmLine, ReflectionsDoc, name_key

if TYPE_CHECKING:
    from obsmem.reflect.offline import ReflectReport

__all__ = [
    "CONTRADICTION_OVERLAP",
    "DEMOTE_AFTER_DAYS",
    "DURABLE_IMPORTANCE",
    "DURABLE_TYPES",
    "LOOKBACK_DAYS",
    "MAX_CITES",
    "PROMOTE_IMPORTANCE",
    "RETIRE_AFTER_DAYS",
    "Rules",
    "durable",
]

DEMOTE_AFTER_DAYS = 14
RETIRE_AFTER_DAYS = 30  # unseen this long: to Archive (from the ageing sections and Dormant)
LOOKBACK_DAYS = 30  # how far apart two sightings of one fact may be to count as "seen twice"
PROMOTE_IMPORTANCE = 0.8
#: A preference, constraint, decision or fact stated once is enough from this importance on.
DURABLE_IMPORTANCE = 0.6
DURABLE_TYPES = frozenset({"preference", "decision", "fact", "relationship"})
#: What an observer is unsure of is not a durable fact on one sighting.
DURABLE_CONFIDENCE = 0.6
#: A project's stack or layout, whatever its type, from this importance on.
PROJECT_FACT_IMPORTANCE = 0.4
CONTRADICTION_OVERLAP = 0.6
MAX_CITES = 8  # a line cites its first eight observations; later ones only move its seen date

_AGEING = (ACTIVE_PROJECTS, RECENT_THEMES)
_CONTRADICTING = frozenset({"decision", "preference"})


def durable(obs: Observation) -> bool:
    """True when one sighting of ``obs`` is enough for long-term memory: it is important (0.8
    or 🔴), or it is a preference, constraint, decision, fact or working-style note of 0.6 or
    more that the observer is fairly sure of, or it states a project's stack or layout."""
    if obs.importance >= PROMOTE_IMPORTANCE or obs.priority == "🔴":
        return True
    if obs.completed or (obs.confidence is not None and obs.confidence < DURABLE_CONFIDENCE):
        return False
    if obs.type in DURABLE_TYPES and obs.importance >= DURABLE_IMPORTANCE:
        return True
    if is_learning(obs.text):
        return True  # what the user is learning is about them, whatever the observer typed
    return obs.importance >= PROJECT_FACT_IMPORTANCE and is_project_fact(obs.text)


class Rules:
    """The rules over one document, the observations around the new ones, and the clock."""

    def __init__(
        self,
        doc: ReflectionsDoc,
        pool: list[Observation],
        ledger: dict[str, Provenance],
        cited: set[str],
        report: ReflectReport,
        clock: Clock,
    ) -> None:
        self.doc = doc
        self.pool = pool
        self.by_id = {o.id: o for o in pool}
        # The pool is in date order, file order within a day: the position breaks ties of day
        # and minute, so of two lines written in one minute the later in the file is the later
        # fact (ids are hashes: ordering by them would pick one at random).
        self._position = {o.id: i for i, o in enumerate(pool)}
        self.ledger = ledger
        self.cited = cited  # ids cited in reflections.md and archive/reflections/ (grows)
        self.report = report
        self.clock = clock
        places = [p for p in doc.places() if not p.line.replaced]
        self.lines: FactIndex[str] = FactIndex((p.line.rid, p.line.core) for p in places)
        self.hand: FactIndex[int] = FactIndex(
            enumerate(_hand_text(raw) for _, raw in doc.hand_lines())
        )
        self.facts: FactIndex[int] = FactIndex((i, o.text) for i, o in enumerate(pool))
        self._subjects: dict[Home, SubjectIndex[str]] = {}

    # -- where things belong and how old they are ---------------------------------------------
    def _project(self, obs_id: str) -> str | None:
        prov = self.ledger.get(obs_id)
        return project_name(prov.project) if prov is not None and prov.project else None

    def _home(self, obs: Observation) -> Home:
        prov = self.ledger.get(obs.id)
        project = prov.project if prov is not None else None
        if project and self._tested_with(obs) is not None:
            return Home(ACTIVE_PROJECTS, project_name(project))
        return home_for(obs, project)

    def _tested_with(self, obs: Observation) -> str | None:
        """The project fact a passing test run states ("Tests run with `npm test`"), when its
        project is known; None for any other observation."""
        command = passing_test_command(obs.text)
        if command is None or self._project(obs.id) is None:
            return None
        return tests_run_with(command)

    def _derived(self, obs: Observation) -> str | None:
        """The durable fact ``obs`` states in other words than its own: what the user is
        learning ("User is new to Django", out of a request that stays an observation) or how
        the project's tests are run; None for any other observation."""
        return learning_fact(obs.text) or self._tested_with(obs)

    def _states(self, obs: Observation) -> str:
        """What the reflection of ``obs`` says: its text, or the fact it states (``_derived``)."""
        return self._derived(obs) or obs.text

    def _line_project(self, line: OmLine, sub: Container | None) -> str | None:
        """The project a line ages with: its ``###`` under Active Projects or Dormant, else the
        project of the observation that founded it."""
        if sub is not None:
            return sub.name
        return self._project(line.cites[0]) if line.cites else None

    def _order(self, obs: Observation) -> tuple[str, str, int]:
        """When ``obs`` was made: its day, its minute, then its place in the file."""
        return (obs.date, obs.time or "", self._position.get(obs.id, -1))

    def _founding(self, line: OmLine) -> tuple[str, str, int]:
        """When the observation a line rests on first was made (its ``seen`` day if unknown)."""
        first = self.by_id.get(line.cites[0]) if line.cites else None
        return self._order(first) if first is not None else (line.seen, "", -1)

    def _subject_index(self, home: Home) -> SubjectIndex[str]:
        index = self._subjects.get(home)
        if index is None:
            index = SubjectIndex()
            for place in self.doc.places(home.section, home.sub):
                if not place.line.replaced:
                    index.add(place.line.rid, place.line.core)
            self._subjects[home] = index
        return index

    def _placed(self, line: OmLine, home: Home) -> None:
        """Note a line now in ``home`` (for the same-fact and same-subject look-ups)."""
        self.lines.add(line.rid, line.core)
        self.cited.update(line.cites)
        if home in self._subjects:
            self._subjects[home].add(line.rid, line.core)

    def _forget(self, rid: str) -> None:
        self.lines.remove(rid)
        for index in self._subjects.values():
            index.remove(rid)

    # -- the rules -----------------------------------------------------------------------------
    def consider(self, obs: Observation) -> None:
        """Apply the rules to one new observation."""
        if obs.id in self.cited:
            return
        self.report.considered += 1
        derived = self._derived(obs)
        states = derived or obs.text
        matched = self.lines.matches(states)
        if matched:
            self._merge(matched[0], obs)
            return
        if self.hand.matches(states):
            self.report.covered += 1
            return
        # A derived fact rests on one sighting; later runs of its command merge into its line.
        twins = [] if derived else [
            self.pool[i]
            for i in self.facts.matches(obs.text)
            if self.pool[i].id != obs.id
            and self.pool[i].id not in self.cited
            and abs((date.fromisoformat(self.pool[i].date) - date.fromisoformat(obs.date)).days)
            <= LOOKBACK_DAYS
        ]  # fmt: skip
        days = {obs.date, *(t.date for t in twins)}
        if derived is None and not durable(obs) and len(days) < 2:
            return
        chosen = sorted([obs, *twins], key=self._order)
        first = chosen[0]
        home = self._home(first)
        line = OmLine(
            rid=make_id("reflection", first.id),
            text=self._states(first),
            seen=max(m.date for m in chosen),
            cites=[m.id for m in chosen][:MAX_CITES],
            emoji=_emoji(chosen),
        )
        if self.doc.find(line.rid) is not None:
            line = replace(line, rid=make_id("reflection", first.id, first.text))
        if first.type in _CONTRADICTING:
            line = self._supersede(line, first, home)
        if line.replaced:
            self.doc.append(line, ARCHIVE)
            self.cited.update(line.cites)
        else:
            self.doc.append(line, home.section, home.sub)
            self._placed(line, home)
        self.report.promoted += 1

    def _merge(self, rid: str, obs: Observation) -> None:
        place = self.doc.find(rid)
        assert place is not None  # every key of self.lines is a line of the document
        old = place.line
        cites = list(old.cites)
        if obs.id not in cites:
            # Date order, earliest first (ids whose day is unknown are older than the window).
            dates = [self.by_id[c].date if c in self.by_id else "" for c in cites]
            cites.insert(bisect.bisect_right(dates, obs.date), obs.id)
        line = replace(old, cites=cites[:MAX_CITES], seen=max(old.seen, obs.date))
        first = self.by_id.get(old.cites[0]) if old.cites else None
        if (
            first is not None
            and self._order(obs) < self._order(first)
            and old.text == self._states(first)
        ):
            # An earlier sighting arrived late (a backfill): the line is founded on it, as it
            # would have been had it come first. A text edited by hand is kept.
            line = replace(line, rid=make_id("reflection", obs.id), text=self._states(obs))
        line.emoji = _higher(line.emoji, _emoji([obs]))
        if line == old:
            return  # a full line seen again on a day it already counts: nothing to do
        self.report.merged += 1
        if line.rid != old.rid:
            self._forget(old.rid)
        home = self._home(first or obs)
        if _named(place.section, DORMANT, ARCHIVE) and (
            self.clock.age(line.seen, self._line_project(line, place.sub)) < DEMOTE_AFTER_DAYS
        ):
            # Seen again: back where it belongs. Only when fresh, so ageing does not send it
            # straight back (which would reorder lines on every run).
            self.doc.remove(place)
            self.doc.append(line, home.section, home.sub)
            self.report.revived += 1
        else:
            self.doc.replace(place, line)
        self._placed(line, home)

    def _supersede(self, line: OmLine, first: Observation, home: Home) -> OmLine:
        """Settle a decision or preference on the same subject as a line of its section: the
        later fact stands, the earlier is kept as ``~~old~~ → replaced by new (date)`` in
        ``## Archive``. Returns ``line``, marked as replaced when it is the earlier one."""
        index = self._subject_index(home)
        for rid in sorted(index.candidates(first.text, CONTRADICTION_OVERLAP)):
            place = self.doc.find(rid)
            if place is None or place.line.replaced:
                continue
            old = place.line
            if subject_overlap(first.text, old.core) < CONTRADICTION_OVERLAP:
                continue
            self.report.replaced += 1
            if self._founding(old) > self._order(first):
                return line.superseded(old.core, self._founding(old)[0])
            self._forget(old.rid)
            self.doc.remove(place)
            self.doc.append(old.superseded(line.core, first.date), ARCHIVE)
            return line
        return line

    def age(self) -> None:
        """Demote lines unseen for 14 days of their project's activity to Dormant; retire them
        after 30 (not 🔴). Ages run on the memory's clock (``obsmem.reflect.clock``)."""
        moves: list[tuple[str, str, str | None]] = []
        for place in self.doc.places():
            if not _named(place.section, *_AGEING, DORMANT):
                continue
            try:
                age = self.clock.age(place.line.seen, self._line_project(place.line, place.sub))
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
        kept: list[tuple[str, str, OmLine]] = []  # ## Archive, oldest first
        live: list[tuple[int, str, str, OmLine]] = []  # elsewhere, the first to move first
        for place in self.doc.places():
            line = place.line
            if _named(place.section, ARCHIVE):
                kept.append((line.seen, line.rid, line))
            else:
                live.append((line.rank, line.seen, line.rid, line))
        # By id after the date, not by position: which lines leave must not depend on the
        # order they were written in.
        kept.sort(key=lambda x: x[:2])
        live.sort(key=lambda x: x[:3], reverse=True)  # popped from the end
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
                bisect.insort(kept, (line.seen, line.rid, line), key=lambda x: x[:2])
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
    return a if RANK.get(a, 1) >= RANK.get(b, 1) else b


def _emoji(observations: list[Observation]) -> str:
    if any(o.priority == "🔴" for o in observations):
        return "🔴"
    return priority_for(max(o.importance for o in observations))


def _hand_text(raw: str) -> str:
    match = BULLET.match(raw)
    rest = match.group("rest") if match else raw
    return parse_observation(rest, date="", depth=0, line=0, raw=raw)[0].text

"""``observations.md``: day sections of observations, parsed without loss and edited line by line.

Layout (the original tool's, which om keeps)::

    # Observations

    ## 2026-02-10

    ### Current Context

    - **Active task:** Setting up FastAPI project

    ### Observations

    - 🔴 14:00 User is building a task management REST API with FastAPI
      - 🟡 14:10 Changed mind from SQLAlchemy to Tortoise ORM

    ---

    ## 2026-02-11
    ...

Bullets under a day (outside ``### Current Context``) are observations; indented bullets nest
under the one before. Indented text that is not a bullet continues the observation above it.
Lines om cannot place (text before the first day, headings it does not know) are kept verbatim
and reported as issues. Archive months (``archive/observations/YYYY-MM.md``) use the same layout.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from obsmem.memory.lines import parse_observation, render_observation
from obsmem.memory.markdown import BULLET, body, decode, encode, heading, newline_of, split_lines
from obsmem.memory.model import Observation, ParseIssue, make_id, normalise_text

__all__ = ["Day", "ObservationsDoc", "parse_observations", "parse_shared"]

_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})\b")
_CONTEXT = re.compile(r"^\*\*(?P<key>[^*]+?):?\*\*:?\s*(?P<value>.*)$")
TITLE = "# Observations"


@dataclass
class Day:
    """One ``## YYYY-MM-DD`` section; line numbers are 0-based indexes into ``.lines``."""

    date: str
    start: int
    end: int  # one past the last line of the section
    context: dict[str, str] = field(default_factory=dict)
    context_start: int | None = None
    context_end: int | None = None
    observations_heading: int | None = None
    observations: list[Observation] = field(default_factory=list)


@dataclass
class ObservationsDoc:
    """A parsed observations file: raw lines, the days found in them, what was not understood."""

    lines: list[str]
    days: list[Day]
    issues: list[ParseIssue]

    @property
    def observations(self) -> list[Observation]:
        """Every observation, in file order."""
        return [obs for day in self.days for obs in day.observations]

    def ids(self) -> set[str]:
        """The id of every observation in the file."""
        return {obs.id for day in self.days for obs in day.observations}

    def render(self) -> bytes:
        """The file's bytes: exactly what was read, plus any lines inserted since."""
        return encode("".join(self.lines))

    def day(self, date: str) -> Day | None:
        """The section for ``date``, or None."""
        for candidate in self.days:
            if candidate.date == date:
                return candidate
        return None

    def with_added(self, new: Iterable[Observation]) -> tuple[ObservationsDoc, list[Observation]]:
        """A new document with ``new`` merged into their day sections, and the ones really added.

        Observations whose id is already in the file are skipped. Within a day, a top-level
        observation goes before the first top-level one with a later time, else at the end of the
        day's observations; a day that does not exist yet is created in date order. No existing
        line changes, except that a last line without a line ending gains one.
        """
        lines, added = self.merged(new)
        if not added:
            return self, []
        return parse_observations(encode("".join(lines))), added

    def with_context(self, date: str, pairs: dict[str, str]) -> ObservationsDoc:
        """A new document whose day ``date`` has ``pairs`` as its Current Context.

        The day's existing context bullets are replaced (the context describes the latest state);
        a day without a context block gets one right under its heading; a missing day is created.
        Nothing outside that block changes. Empty ``pairs`` change nothing.
        """
        if not pairs:
            return self
        lines, _ = self.merged((), {date: pairs})
        return parse_observations(encode("".join(lines)))

    def merged(
        self,
        new: Iterable[Observation],
        context: Mapping[str, Mapping[str, str]] | None = None,
    ) -> tuple[list[str], list[Observation]]:
        """The lines of this document with ``new`` observations and ``context`` merged in, and
        the observations really added: what ``with_added`` then ``with_context`` give, in one pass.

        Every edit is planned against this one parse and the lines are assembled once, so a batch
        costs one parse and one copy of the file however many days it touches (a parse per day
        made writing 30,000 observations in batches take minutes). Returns ``self.lines`` itself
        when nothing changes.
        """
        seen = self.ids()
        added: list[Observation] = []
        by_date: dict[str, list[Observation]] = {}
        for obs in new:
            if obs.id in seen:
                continue
            seen.add(obs.id)
            by_date.setdefault(obs.date, []).append(obs)
            added.append(obs)
        contexts = {day: dict(pairs) for day, pairs in (context or {}).items() if pairs}
        if not added and not contexts:
            return self.lines, []
        lines = list(self.lines)
        nl = newline_of(lines)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += nl
        plan = _Plan(lines)
        days: dict[str, Day] = {}
        for day in self.days:
            days.setdefault(day.date, day)  # a date found twice: the first section, like day()
        missing: dict[str, list[Observation]] = {}
        for date in sorted(set(by_date) | set(contexts)):
            found = days.get(date)
            if found is None:
                missing[date] = by_date.get(date, [])
                continue
            if date in by_date:
                _plan_into_day(plan, lines, found, by_date[date], nl)
            if date in contexts:
                _plan_context(plan, lines, found, contexts[date], nl)
        if missing:
            _plan_new_days(plan, self, lines, missing, contexts, nl)
        out = plan.apply()
        return (self.lines if out == self.lines else out), added


class _Plan:
    """Edits against one parse's lines, applied in one pass: insertions before an original line
    index (several at one index in the order of their keys) and replacements of line ranges."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.inserts: list[tuple[int, tuple[str, int, int], list[str]]] = []
        self.replaces: dict[int, tuple[int, list[str]]] = {}

    def insert(self, at: int, key: tuple[str, int, int], block: list[str]) -> None:
        # Keys order blocks at one index: by date, then a context block before observations
        # (both can land right under a bare day heading), then the given order.
        self.inserts.append((at, key, block))

    def replace(self, start: int, end: int, block: list[str]) -> None:
        self.replaces[start] = (end, block)

    def apply(self) -> list[str]:
        """The new lines: unchanged runs copied as slices, the edits between them."""
        by_index: dict[int, list[tuple[tuple[str, int, int], list[str]]]] = {}
        for at, key, block in self.inserts:
            by_index.setdefault(at, []).append((key, block))
        out: list[str] = []
        copied = 0
        for at in sorted(set(by_index) | set(self.replaces)):
            out.extend(self.lines[copied:at])
            copied = max(copied, at)
            for _, block in sorted(by_index.get(at, []), key=lambda item: item[0]):
                out.extend(block)
            if at in self.replaces:
                end, block = self.replaces[at]
                out.extend(block)
                copied = end
        out.extend(self.lines[copied:])
        return out


_CONTEXT_RANK, _OBSERVATIONS_RANK, _NEW_DAY_RANK = 0, 1, 2
#: A context block placed after a day's loose lines comes after observations added there too.
_LATE_CONTEXT_RANK = 3


def _in_time_order(items: list[Observation]) -> list[Observation]:
    """``items`` by time (untimed last, ties in given order): new blocks were left unsorted."""
    return sorted(items, key=lambda o: o.time or "99:99")


def _plan_into_day(
    plan: _Plan, lines: list[str], day: Day, items: list[Observation], nl: str
) -> None:
    ordered = _in_time_order(items)
    if day.observations_heading is None and not day.observations:
        # A day with only a Current Context: give it an Observations subsection at its end.
        at = _last_content(lines, day.start, day.end) + 1
        block = [nl, "### Observations" + nl, nl]
        block += [render_observation(o) + nl for o in ordered]
        plan.insert(at, (day.date, _OBSERVATIONS_RANK, 0), block)
        return
    for seq, obs in enumerate(ordered):
        at = _position_in_day(lines, day, obs)
        plan.insert(at, (day.date, _OBSERVATIONS_RANK, seq), [render_observation(obs) + nl])


def _context_bullets(pairs: Mapping[str, str], nl: str) -> list[str]:
    return [f"- **{key}:** {value}" + nl for key, value in pairs.items()]


def _plan_context(
    plan: _Plan, lines: list[str], day: Day, pairs: Mapping[str, str], nl: str
) -> None:
    bullets = _context_bullets(pairs, nl)
    if day.context_start is None:
        block = [nl, "### Current Context" + nl, nl, *bullets]
        loose = _loose_end(lines, day)
        if loose is None:
            plan.insert(day.start + 1, (day.date, _CONTEXT_RANK, 0), block)
        else:
            # Lines right under the day heading: a context block above them would take them in
            # (and the next context update would replace them), so it goes after them.
            plan.insert(loose, (day.date, _LATE_CONTEXT_RANK, 0), block)
        return
    end = day.context_end if day.context_end is not None else day.end
    first = day.context_start + 1
    # Only the context bullets are om's to replace: anything else in the block (an observation
    # or a note written there by hand) stays where it is.
    old = [index for index in range(first, end) if _is_context_bullet(lines[index])]
    if not old:
        # An empty block: keep one blank line between the heading and the bullets.
        plan.insert(first, (day.date, _CONTEXT_RANK, 0), [nl, *bullets])
        return
    plan.replace(old[0], old[0] + 1, bullets)
    for index in old[1:]:
        plan.replace(index, index + 1, [])


def _is_context_bullet(line: str) -> bool:
    bullet = BULLET.match(body(line))
    return bool(bullet and _CONTEXT.match(bullet.group("rest").strip()))


def _loose_end(lines: list[str], day: Day) -> int | None:
    """The index after the last line written right under ``day``'s heading, before any
    subsection; None when there is none."""
    end = day.end
    for index in range(day.start + 1, day.end):
        if heading(body(lines[index])) is not None:
            end = index
            break
    last = _last_content(lines, day.start, end)
    return None if last == day.start else last + 1


def _position_in_day(lines: list[str], day: Day, obs: Observation) -> int:
    tops = [o for o in day.observations if o.depth == 0]
    if obs.time is not None:
        for top in tops:
            if top.time is not None and top.time > obs.time and top.line is not None:
                return top.line - 1
    if day.observations:
        last = day.observations[-1]
        assert last.line_end is not None
        return last.line_end  # line numbers are 1-based: this is the index after it
    assert day.observations_heading is not None
    at = day.observations_heading + 1
    if at < len(lines) and not body(lines[at]).strip():
        at += 1  # keep the blank line under the heading
    return at


def _last_content(lines: list[str], start: int, end: int) -> int:
    at = end - 1
    while at > start and (not body(lines[at]).strip() or body(lines[at]).strip() == "---"):
        at -= 1
    return at


def _uses_separators(doc: ObservationsDoc) -> bool:
    return any(body(line).strip() == "---" for line in doc.lines)


def _section(
    date: str, items: list[Observation], pairs: Mapping[str, str] | None, nl: str
) -> list[str]:
    """A new day: its heading, its Current Context when given, its observations in time order."""
    section = [f"## {date}" + nl, nl]
    if pairs:
        section += ["### Current Context" + nl, nl, *_context_bullets(pairs, nl), nl]
    section += ["### Observations" + nl, nl]
    return section + [render_observation(o) + nl for o in _in_time_order(items)]


def _plan_new_days(
    plan: _Plan,
    doc: ObservationsDoc,
    lines: list[str],
    missing: Mapping[str, list[Observation]],
    contexts: Mapping[str, Mapping[str, str]],
    nl: str,
) -> None:
    """Sections for days the file lacks: each goes before the first day in the file with a later
    date, else at the end, with the separator the file uses (``---`` or a blank line)."""
    separated = _uses_separators(doc)
    tail = [nl, "---" + nl, nl] if separated else [nl]
    at_end: list[str] = []
    for date in sorted(missing):
        later = next((d for d in doc.days if d.date > date), None)
        if later is None:
            at_end.append(date)
            continue
        section = _section(date, missing[date], contexts.get(date), nl)
        plan.insert(later.start, (date, _NEW_DAY_RANK, 0), section + _after(section, tail))
    if not at_end:
        return
    blocks: list[str] = []
    for date in at_end:
        blocks += _after(blocks, tail) + _section(date, missing[date], contexts.get(date), nl)
    prefix = _end_prefix(lines, nl, separated=separated and bool(doc.days))
    plan.insert(len(lines), (at_end[0], _NEW_DAY_RANK, 0), prefix + blocks)


def _after(block: list[str], tail: list[str]) -> list[str]:
    """The separator to put after ``block``: none after nothing, one blank line less after a
    block that already ends with one (a day with only a Current Context)."""
    if not block:
        return []
    return tail[1:] if not body(block[-1]).strip() else tail


def _end_prefix(lines: list[str], nl: str, *, separated: bool) -> list[str]:
    """What goes between the file's last line and a day added after it (``separated``: the file
    has days and puts ``---`` between them)."""
    if not lines:
        return [TITLE + nl, nl]
    # Trailing blank lines stay (no existing line changes) and stand for the blank line before
    # the new section; they used to be dropped.
    prefix: list[str] = [] if not body(lines[-1]).strip() else [nl]
    last = next((text for text in (body(line).strip() for line in reversed(lines)) if text), "")
    if separated and last and last != "---":
        prefix += ["---" + nl, nl]
    return prefix


def parse_observations(
    data: bytes | str, *, default_importance: float | None = None
) -> ObservationsDoc:
    """Parse an observations (or archive) file. Never raises: what it cannot read is an issue."""
    if isinstance(data, bytes):
        text, issues = decode(data)
    else:
        text, issues = data, []
    lines = split_lines(text)
    days: list[Day] = []
    current: Day | None = None
    sub: str | None = None  # "context", "observations" or None (directly under the day)
    parents: list[Observation] = []
    last: Observation | None = None
    counts: dict[str, int] = {}
    for index, line in enumerate(lines):
        number = index + 1
        text_line = body(line)
        stripped = text_line.strip()
        head = heading(text_line)
        if head is not None:
            last = None
            if head.level == 2 and (m := _DATE.match(head.text)):
                if current is not None:
                    current.end = index
                current = Day(date=m.group(1), start=index, end=len(lines))
                days.append(current)
                sub, parents = None, []
            elif current is not None and head.level >= 3:
                name = head.text.strip().lower()
                if current.context_start is not None and current.context_end is None:
                    current.context_end = index
                if name == "current context":
                    sub = "context"
                    current.context_start = index
                    current.context_end = None  # a second block: the one edits go to
                elif name == "observations":
                    sub = "observations"
                    current.observations_heading = index
                else:
                    sub = "other"
                    issues.append(ParseIssue(number, f"unknown subsection {head.text!r} (kept)"))
            elif head.level == 1 and current is None:
                pass
            else:
                if current is not None:
                    current.end = index
                current, sub = None, None
                issues.append(ParseIssue(number, f"heading {head.text!r} is not a day (kept)"))
            continue
        if not stripped or stripped == "---":
            if stripped == "---":
                last = None
            continue
        if current is None:
            issues.append(ParseIssue(number, "text outside any day section (kept)"))
            continue
        bullet = BULLET.match(text_line)
        if sub == "context":
            if bullet and (m := _CONTEXT.match(bullet.group("rest").strip())):
                current.context[m.group("key").strip()] = m.group("value").strip()
            continue
        if sub == "other":
            continue
        if bullet is None:
            if last is not None and text_line[:1] in (" ", "\t"):
                last.text = f"{last.text} {stripped}"
                last.line_end = number
            else:
                issues.append(ParseIssue(number, "text that is not an observation bullet (kept)"))
                last = None  # indented text after this line continues it, not the bullet above
            continue
        indent = len(bullet.group("indent").expandtabs(4))
        while parents and _indent_of(parents[-1]) >= indent:
            parents.pop()
        obs, found = parse_observation(
            bullet.group("rest"),
            date=current.date,
            depth=len(parents),
            line=number,
            raw=text_line,
            default_importance=default_importance,
        )
        issues.extend(found)
        if not obs.block_id:
            # Identical untagged lines on one day still need distinct ids.
            key = obs.id
            counts[key] = counts.get(key, 0) + 1
            if counts[key] > 1:
                obs.id = make_id("obs", obs.date, normalise_text(obs.text), str(counts[key]))
        current.observations.append(obs)
        parents.append(obs)
        last = obs
    for day in days:
        if day.context_start is not None and day.context_end is None:
            # No heading followed the context in its day (an Observations heading after it
            # would have ended it above), so it runs to the day's end.
            day.context_end = day.end
    return ObservationsDoc(lines=lines, days=days, issues=issues)


# bytes -> their parse, newest last: the files one process parsed most recently.
_SHARED: dict[bytes, ObservationsDoc] = {}
_SHARED_BYTES = 64 * 1024 * 1024  # about ten times a large memory's observations and archive
_SHARED_LOCK = threading.Lock()


def parse_shared(data: bytes) -> ObservationsDoc:
    """``parse_observations(data)``, the same document for the same bytes within a process.

    One ``om reflect`` reads observations.md and the archive months in several steps (what is
    new, what moves to the archive, the vault, the index), and parsing is the larger part of
    each. The document is shared: callers read it and never change it, its lines or its
    observations (``merged`` and ``with_added`` build new ones).
    """
    with _SHARED_LOCK:
        doc = _SHARED.pop(data, None)
    if doc is None:
        doc = parse_observations(data)
    with _SHARED_LOCK:  # a server's threads share the memo
        _SHARED.pop(data, None)
        while _SHARED and len(data) + sum(map(len, _SHARED)) > _SHARED_BYTES:
            del _SHARED[next(iter(_SHARED))]  # the least recently used first
        _SHARED[data] = doc
    return doc


def _indent_of(obs: Observation) -> int:
    raw = obs.raw or ""
    match = BULLET.match(raw)
    return len(match.group("indent").expandtabs(4)) if match else 0

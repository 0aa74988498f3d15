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
from collections.abc import Iterable
from dataclasses import dataclass, field

from obsmem.memory.lines import parse_observation, render_observation
from obsmem.memory.markdown import BULLET, body, decode, encode, heading, newline_of, split_lines
from obsmem.memory.model import Observation, ParseIssue, make_id, normalise_text

__all__ = ["Day", "ObservationsDoc", "parse_observations"]

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
        lines = list(self.lines)
        nl = newline_of(lines)
        seen = self.ids()
        added: list[Observation] = []
        by_date: dict[str, list[Observation]] = {}
        for obs in new:
            if obs.id in seen:
                continue
            seen.add(obs.id)
            by_date.setdefault(obs.date, []).append(obs)
            added.append(obs)
        if not added:
            return self, []
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += nl
        # Each date is placed against a fresh parse of the lines so far: reusing the first
        # parse put two new days after the last one in reverse order, and misplaced lines in
        # files whose days are not in date order (their line indexes had moved).
        doc = self
        for date in sorted(by_date, reverse=True):
            items = by_date[date]
            day = doc.day(date)
            if day is None:
                lines = _insert_day(doc, lines, date, items, nl)
            else:
                lines = _insert_into_day(lines, day, items, nl)
            doc = parse_observations("".join(lines))
        return parse_observations(encode("".join(lines))), added

    def with_context(self, date: str, pairs: dict[str, str]) -> ObservationsDoc:
        """A new document whose day ``date`` has ``pairs`` as its Current Context.

        The day's existing context bullets are replaced (the context describes the latest state);
        a day without a context block gets one right under its heading; a missing day is created.
        Nothing outside that block changes. Empty ``pairs`` change nothing.
        """
        if not pairs:
            return self
        lines = list(self.lines)
        nl = newline_of(lines)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += nl
        bullets = [f"- **{key}:** {value}" + nl for key, value in pairs.items()]
        day = self.day(date)
        if day is None:
            lines = _insert_day(self, lines, date, [], nl)
            day = parse_observations("".join(lines)).day(date)
            assert day is not None
        if day.context_start is None:
            block = [nl, "### Current Context" + nl, nl, *bullets]
            lines = lines[: day.start + 1] + block + lines[day.start + 1 :]
        else:
            end = day.context_end if day.context_end is not None else day.end
            first = day.context_start + 1
            last = first
            for index in range(first, end):
                stripped = body(lines[index]).strip()
                if stripped and stripped != "---":
                    last = index + 1
            if last == first:
                # An empty block: keep one blank line between the heading and the bullets.
                lines = [*lines[:first], nl, *bullets, *lines[first:]]
            else:
                start = first
                while start < last and not body(lines[start]).strip():
                    start += 1
                lines = lines[:start] + bullets + lines[last:]
        return parse_observations(encode("".join(lines)))


def _in_time_order(items: list[Observation]) -> list[Observation]:
    """``items`` by time (untimed last, ties in given order): new blocks were left unsorted."""
    return sorted(items, key=lambda o: o.time or "99:99")


def _insert_into_day(lines: list[str], day: Day, items: list[Observation], nl: str) -> list[str]:
    if day.observations_heading is None and not day.observations:
        # A day with only a Current Context: give it an Observations subsection at its end.
        at = _last_content(lines, day.start, day.end) + 1
        block = [nl, "### Observations" + nl, nl]
        block += [render_observation(o) + nl for o in _in_time_order(items)]
        return lines[:at] + block + lines[at:]
    # In reverse of the final order, so that each insertion lands above the ones after it.
    for obs in reversed(_in_time_order(items)):
        at = _position_in_day(lines, day, obs)
        lines = [*lines[:at], render_observation(obs) + nl, *lines[at:]]
    return lines


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


def _insert_day(
    doc: ObservationsDoc, lines: list[str], date: str, items: list[Observation], nl: str
) -> list[str]:
    section = [f"## {date}" + nl, nl, "### Observations" + nl, nl]
    section += [render_observation(o) + nl for o in _in_time_order(items)]
    sep = _uses_separators(doc) or not doc.days
    later = [d for d in doc.days if d.date > date]
    if later:
        # Before the first later day: the new section, a blank line (and separator), then it.
        at = later[0].start
        tail = [nl, "---" + nl, nl] if sep else [nl]
        return lines[:at] + section + tail + lines[at:]
    if not lines:
        return [TITLE + nl, nl, *section]
    # Trailing blank lines stay (no existing line changes) and stand for the blank line before
    # the new section; they used to be dropped.
    content = [text for text in (body(line).strip() for line in lines) if text]
    prefix: list[str] = [] if not body(lines[-1]).strip() else [nl]
    if doc.days and sep and content and content[-1] != "---":
        prefix += ["---" + nl, nl]
    return lines + prefix + section


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


def _indent_of(obs: Observation) -> int:
    raw = obs.raw or ""
    match = BULLET.match(raw)
    return len(match.group("indent").expandtabs(4)) if match else 0

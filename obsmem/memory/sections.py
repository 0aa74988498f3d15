"""``reflections.md``, ``profile.md``, ``active.md`` and vault pages: headed sections of entries.

These files are prose organised under ``##`` and ``###`` headings. Each bullet or paragraph line
under a heading is an ``Entry`` (what the index stores and search returns), named by its heading
path. ``reflections.md`` also carries two stamps under its title, which code (never a model)
writes::

    # Reflections — Long-Term Memory

    _Last updated: 2026-02-10 04:00 UTC_
    _Last reflected: 2026-02-10_

Both ``_..._`` and ``*...*`` spellings are read. Parsing never raises and keeps every line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from obsmem.memory.lines import parse_observation
from obsmem.memory.markdown import BULLET, body, decode, encode, heading, split_lines
from obsmem.memory.model import Entry, ParseIssue, make_id, normalise_text

__all__ = ["SectionsDoc", "parse_sections"]

# Greedy value, right-stripped in code: a lazy ``(.*?)\s*[_*]$`` is quadratic on long spaces.
_STAMP = re.compile(r"^[_*]\s*(Last (?:updated|reflected))\s*:\s*(.*)[_*]$", re.IGNORECASE)
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_BLOCK_ID = re.compile(r"\s\^([0-9a-z]{6,16})\s*$")
_CITES = re.compile(r"\^([0-9a-z]{10})\b")


@dataclass
class SectionsDoc:
    """A parsed sectioned file: raw lines, title, stamps, entries and issues."""

    lines: list[str]
    title: str | None
    stamps: dict[str, str]
    entries: list[Entry]
    issues: list[ParseIssue]

    @property
    def last_updated(self) -> str | None:
        """The ``Last updated`` stamp as written, if any."""
        return self.stamps.get("last updated")

    @property
    def last_reflected(self) -> str | None:
        """The ``Last reflected`` date (YYYY-MM-DD), if any."""
        value = self.stamps.get("last reflected")
        match = _DATE.search(value or "")
        return match.group(1) if match else None

    def sections(self) -> list[str]:
        """The heading paths that hold entries, in file order, without repeats."""
        seen: dict[str, None] = {}
        for entry in self.entries:
            seen.setdefault(entry.section, None)
        return list(seen)

    def render(self) -> bytes:
        """The file's bytes, exactly as read."""
        return encode("".join(self.lines))


def parse_sections(data: bytes | str, *, kind: str = "reflections") -> SectionsDoc:
    """Parse a sectioned memory file; ``kind`` seeds entry ids so files never share an id."""
    if isinstance(data, bytes):
        text, issues = decode(data)
    else:
        text, issues = data, []
    lines = split_lines(text)
    title: str | None = None
    stamps: dict[str, str] = {}
    path: list[tuple[int, str]] = []
    entries: list[Entry] = []
    counts: dict[str, int] = {}
    default_date: str | None = None
    for index, line in enumerate(lines):
        number = index + 1
        text_line = body(line)
        stripped = text_line.strip()
        if not stripped or stripped == "---":
            continue
        head = heading(text_line)
        if head is not None:
            if head.level == 1 and title is None:
                title = head.text
                continue
            while path and path[-1][0] >= head.level:
                path.pop()
            path.append((head.level, head.text))
            continue
        if (stamp := _STAMP.match(stripped)) is not None:
            value = stamp.group(2).rstrip()
            stamps[stamp.group(1).lower()] = value
            if default_date is None and (d := _DATE.search(value)):
                default_date = d.group(1)
            continue
        if stripped.startswith("<!--") and stripped.endswith("-->"):
            continue  # a comment line (om's generated-block markers among them) is not content
        if not path:
            if stripped.startswith(("<!--", ">")):
                continue
            issues.append(ParseIssue(number, "text before the first section heading (kept)"))
        section = " / ".join(name for _, name in path)
        bullet = BULLET.match(text_line)
        depth = 0
        content = stripped
        importance = priority = obs_type = None
        if bullet is not None:
            depth = len(bullet.group("indent").expandtabs(4)) // 2
            content = bullet.group("rest").strip()
            # Reflection lines may carry the same emoji and tags as observations.
            obs, _ = parse_observation(content, date="", depth=depth, line=number, raw=text_line)
            if obs.tagged or obs.priority:
                importance, priority, obs_type = obs.importance, obs.priority, obs.type
        block = _BLOCK_ID.search(content)
        if block is not None:
            entry_id = block.group(1)
            content = content[: block.start()].rstrip()
        else:
            entry_id = make_id(kind, section, normalise_text(content))
            counts[entry_id] = counts.get(entry_id, 0) + 1
            if counts[entry_id] > 1:
                entry_id = make_id(kind, section, normalise_text(content), str(counts[entry_id]))
        date_match = _DATE.search(content)
        entries.append(
            Entry(
                id=entry_id,
                text=content,
                section=section,
                line=number,
                depth=depth,
                date=date_match.group(1) if date_match else default_date,
                importance=importance,
                priority=priority,
                type=obs_type,
                raw=text_line,
                cites=[c for c in _CITES.findall(content) if c != entry_id],
            )
        )
    return SectionsDoc(lines=lines, title=title, stamps=stamps, entries=entries, issues=issues)

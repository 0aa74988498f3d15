"""``reflections.md`` as an editable document that keeps every byte om does not deliberately change.

The file is split into a preamble (title, stamps, anything before the first ``##``), ``##``
sections, and the ``###`` subsections inside them; each holds its raw lines, endings included, so
rendering an unedited document gives back the exact bytes. Edits work on whole lines: om's own
lines are appended, replaced, or moved between sections; every other line stays where it is.

om's own reflection lines are recognised by their shape, never by their place::

    - 🔴 Chose PostgreSQL (seen 2026-03-02; ^k3v9q2m7xa, ^m2n3b4v5c6) ^r7t8y9u0i1

a top-level bullet, a priority emoji, the text, ``(seen <date>; <cited observation ids>)`` and a
trailing block id of its own. Lines people write by hand lack the citation group, so om never
moves or rewrites them. The citations sit in parentheses (not at the end), so ``parse_sections``
reads them as ``Entry.cites`` and takes only the trailing id as the line's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from obsmem.memory.markdown import BULLET, body, decode, encode, heading, newline_of, split_lines
from obsmem.memory.model import LEGACY_IMPORTANCE
from obsmem.reflect.facts import DORMANT, SECTION_ORDER

__all__ = [
    "RANK",
    "SUPERSEDED",
    "TITLE",
    "Container",
    "OmLine",
    "Place",
    "ReflectionsDoc",
    "name_key",
    "parse_om_line",
]

TITLE = "# Reflections — Long-Term Memory"

_ID = r"[0-9a-z]{6,16}"
_OM_LINE = re.compile(
    r"^- (?:(?P<emoji>🔴|🟡|🟢|✅)\ufe0f? )?(?P<text>\S.*?) "
    rf"\(seen (?P<seen>\d{{4}}-\d{{2}}-\d{{2}}); (?P<cites>\^{_ID}(?:, \^{_ID})*)\) "
    rf"\^(?P<rid>{_ID})\s*$"
)
_STAMP = re.compile(r"^(?P<mark>[_*])\s*(?P<name>Last (?:updated|reflected))\s*:", re.IGNORECASE)
_REPLACING = " (replacing "
#: A superseded fact: ``~~old~~ → replaced by new (YYYY-MM-DD)``.
_REPLACED = re.compile(r"^~~(?P<old>.+?)~~ → replaced by (?P<new>.+) \(\d{4}-\d{2}-\d{2}\)$")
#: A superseded fact wherever it stands in a line of the file (a bullet, a hand-written "->"):
#: what readers of reflections.md skip as no longer held.
SUPERSEDED = re.compile(r"~~.*~~\s*(?:→|->)\s*replaced by\b")
#: Priority emoji in increasing order of importance, for comparing two lines.
RANK: dict[str, int] = {"🟢": 0, "🟡": 1, "🔴": 2}


@dataclass
class OmLine:
    """One of om's reflection lines: text, last day its fact was seen, cited ids, own id."""

    rid: str
    text: str
    seen: str
    cites: list[str]
    emoji: str = "🟡"

    @property
    def importance(self) -> float:
        """The importance its emoji stands for (🔴 0.9, 🟡 0.6, 🟢 0.2)."""
        return LEGACY_IMPORTANCE.get(self.emoji, 0.6)

    @property
    def rank(self) -> int:
        """0 for 🟢, 1 for 🟡, 2 for 🔴: for comparing priorities."""
        return RANK.get(self.emoji, 1)

    @property
    def core(self) -> str:
        """The text without its ``(replacing ...)`` note: what the line states now."""
        cut = self.text.find(_REPLACING)
        return self.text if cut <= 0 else self.text[:cut]

    @property
    def replaced(self) -> bool:
        """True for a superseded fact (``~~old~~ → replaced by new (date)``): it states nothing
        any more, so it is never merged into, contradicted or revived."""
        return self.text.startswith("~~") and _REPLACED.match(self.text) is not None

    def superseded(self, new: str, day: str) -> OmLine:
        """This line marked as replaced by the fact ``new`` on ``day`` (citations kept)."""
        return OmLine(
            rid=self.rid,
            text=f"~~{self.core}~~ → replaced by {new} ({day})",
            seen=self.seen,
            cites=list(self.cites),
            emoji=self.emoji,
        )

    def render(self) -> str:
        """The markdown line, without line ending."""
        text = " ".join(self.text.split())
        cites = ", ".join(f"^{c}" for c in self.cites)
        return f"- {self.emoji} {text} (seen {self.seen}; {cites}) ^{self.rid}"


def parse_om_line(raw: str) -> OmLine | None:
    """The om reflection line in ``raw`` (a line without its ending), or None for any other."""
    found = _parse(raw)
    if found is None:
        return None
    rid, text, seen, cites, emoji = found
    return OmLine(rid=rid, text=text, seen=seen, cites=list(cites), emoji=emoji)


@lru_cache(maxsize=65536)
def _parse(raw: str) -> tuple[str, str, str, tuple[str, ...], str] | None:
    # Cached: the reflector looks every line up again after each edit.
    match = _OM_LINE.match(raw)
    if match is None:
        return None
    cites = tuple(c.strip().lstrip("^") for c in match.group("cites").split(","))
    return (
        match.group("rid"),
        match.group("text"),
        match.group("seen"),
        cites,
        match.group("emoji") or "🟡",
    )


@lru_cache(maxsize=1024)
def name_key(name: str) -> str:
    """A section name as compared when looking it up (case, spacing and ``and``/``&`` ignored)."""
    return " ".join(name.replace(" and ", " & ").split()).casefold()


def _is_content(line: str) -> bool:
    text = body(line).strip()
    return bool(text) and text != "---"


@dataclass
class Container:
    """A ``##`` section or a ``###`` subsection: its heading line and the lines under it."""

    name: str
    heading: str  # raw heading line, with its ending
    lines: list[str] = field(default_factory=list)
    subs: list[Container] = field(default_factory=list)
    touched: bool = False  # om moved a line out of it: dropped at the end if left empty

    @property
    def key(self) -> str:
        """The name compared when looking a section up (case and ``and``/``&`` insensitive)."""
        return name_key(self.name)

    def empty(self) -> bool:
        """True when it holds no line of content (and no subsection)."""
        return not self.subs and not any(_is_content(line) for line in self.lines)


@dataclass(frozen=True)
class Place:
    """Where an om line sits: its section, its subsection (or None), its index in the lines."""

    section: Container
    sub: Container | None
    index: int
    line: OmLine

    @property
    def container(self) -> Container:
        """The container whose ``lines`` hold it."""
        return self.sub if self.sub is not None else self.section


class ReflectionsDoc:
    """A parsed ``reflections.md`` that om can edit line by line."""

    def __init__(self, data: bytes | str = b"") -> None:
        text = decode(data)[0] if isinstance(data, bytes) else data
        lines = split_lines(text)
        self.nl = newline_of(lines)
        self.preamble: list[str] = []
        self.sections: list[Container] = []
        for line in lines:
            head = heading(body(line))
            if head is not None and head.level == 2:
                self.sections.append(Container(head.text, line))
            elif head is not None and head.level == 3 and self.sections:
                self.sections[-1].subs.append(Container(head.text, line))
            elif self.sections:
                section = self.sections[-1]
                (section.subs[-1] if section.subs else section).lines.append(line)
            else:
                self.preamble.append(line)
        # Where each om line is, by id: the reflector looks lines up after every edit, and a
        # scan of the whole file each time made a first run over 10,000 observations quadratic.
        self._where: dict[str, tuple[Container, Container | None, str]] = {}
        self._emptied: list[Container] = []  # sections ``remove`` took lines from (``prune``)
        for section in self.sections:
            for sub in (None, *section.subs):
                self._index(section, sub)

    def _index(self, section: Container, sub: Container | None) -> None:
        for raw in (sub or section).lines:
            if raw.startswith("- ") and (parsed := parse_om_line(body(raw))) is not None:
                self._where[parsed.rid] = (section, sub, raw)

    # -- reading -------------------------------------------------------------------------------
    def all_lines(self) -> list[str]:
        """Every raw line, in file order."""
        out = list(self.preamble)
        for section in self.sections:
            out.append(section.heading)
            out.extend(section.lines)
            for sub in section.subs:
                out.append(sub.heading)
                out.extend(sub.lines)
        return out

    def render(self) -> bytes:
        """The file's bytes."""
        return encode("".join(self.all_lines()))

    def line_count(self) -> int:
        """How many lines the file has."""
        count = len(self.preamble)
        for section in self.sections:
            count += 1 + len(section.lines) + sum(1 + len(sub.lines) for sub in section.subs)
        return count

    def places(self, section: str | None = None, sub: str | None = None) -> Iterator[Place]:
        """Every om line with where it sits, in file order; only those directly under
        ``section`` (and its ``###`` ``sub``) when given."""
        if section is None:
            sections = self.sections
        else:
            only = self.section(section)
            sections = [only] if only is not None else []
        for found in sections:
            subs: list[Container | None] = [None, *found.subs]
            if section is not None:
                wanted = name_key(sub) if sub is not None else None
                subs = [c for c in subs if (c.key if c is not None else None) == wanted]
            for container in subs:
                lines = (container or found).lines
                for index, raw in enumerate(lines):
                    parsed = parse_om_line(body(raw))
                    if parsed is not None:
                        yield Place(found, container, index, parsed)

    def find(self, rid: str) -> Place | None:
        """Where the om line with block id ``rid`` is, or None."""
        known = self._where.get(rid)
        if known is None:
            return None  # every om line is in the map from the parse or the edit that wrote it
        if known is not None:
            section, sub, raw = known
            lines = (sub or section).lines
            try:
                index = lines.index(raw)
            except ValueError:
                index = -1
            parsed = parse_om_line(body(raw)) if index >= 0 else None
            if parsed is not None and parsed.rid == rid:
                return Place(section, sub, index, parsed)
        # Not where it was left (a line edited outside these methods): look everywhere.
        tail = f"^{rid}"
        for section in self.sections:
            for sub in (None, *section.subs):
                for index, raw in enumerate((sub or section).lines):
                    if tail in raw and (parsed := parse_om_line(body(raw))) and parsed.rid == rid:
                        self._where[rid] = (section, sub, raw)
                        return Place(section, sub, index, parsed)
        return None

    def hand_lines(self) -> Iterator[tuple[str, str]]:
        """``(section name, raw line)`` of every bullet that is not one of om's lines."""
        for section in self.sections:
            for container in (section, *section.subs):
                for raw in container.lines:
                    text = body(raw)
                    if BULLET.match(text) and parse_om_line(text) is None:
                        yield section.name, text

    def section(self, name: str) -> Container | None:
        """The ``##`` section called ``name`` (compared loosely), or None."""
        key = name_key(name)
        return next((s for s in self.sections if s.key == key), None)

    def stamp(self, name: str) -> str | None:
        """The value of the ``Last updated`` / ``Last reflected`` stamp, as written."""
        for raw in self.all_lines():
            match = _STAMP.match(body(raw).strip())
            if match and match.group("name").casefold() == name.casefold():
                return body(raw).strip()[match.end() :].strip().strip("_*").strip()
        return None

    # -- editing -------------------------------------------------------------------------------
    def _terminate(self) -> None:
        # A last line without a line ending would be glued to the line inserted after it.
        if self.sections:
            section = self.sections[-1]
            last = section.subs[-1] if section.subs else section
            if last.lines:
                if not last.lines[-1].endswith("\n"):
                    last.lines[-1] += self.nl
            elif not last.heading.endswith("\n"):
                last.heading += self.nl
        elif self.preamble and not self.preamble[-1].endswith("\n"):
            self.preamble[-1] += self.nl

    def replace(self, place: Place, line: OmLine) -> None:
        """Rewrite the om line at ``place`` (keeping its position and line ending)."""
        raw = place.container.lines[place.index]
        ending = raw[len(raw.rstrip("\r\n")) :] or self.nl
        new = line.render() + ending
        place.container.lines[place.index] = new
        if self._where.get(place.line.rid, (None, None, raw))[2] == raw:
            self._where.pop(place.line.rid, None)
        self._where[line.rid] = (place.section, place.sub, new)

    def remove(self, place: Place) -> None:
        """Take the om line at ``place`` out of its container."""
        raw = place.container.lines.pop(place.index)
        if self._where.get(place.line.rid, (None, None, None))[2] == raw:
            del self._where[place.line.rid]
        place.container.touched = True
        place.section.touched = True
        self._emptied.append(place.section)

    def append(self, line: OmLine, section: str, sub: str | None = None) -> None:
        """Add ``line`` at the end of ``section`` (or of its ``sub``), creating them if missing."""
        self._terminate()
        target = top = self._ensure_section(section)
        if sub is not None:
            found = next((s for s in target.subs if name_key(s.name) == name_key(sub)), None)
            if found is None:
                self._end_with_blank(target.subs[-1].lines if target.subs else target.lines)
                found = Container(sub, f"### {sub}{self.nl}", [self.nl])
                target.subs.append(found)
            target = found
        raw = line.render() + self.nl
        _insert(target.lines, raw, self.nl)
        if target.lines[-1] is raw and not self._is_last(target):
            target.lines.append(self.nl)  # a blank line before the heading that follows
        self._where[line.rid] = (top, target if target is not top else None, raw)

    def sort(self) -> None:
        """Put om's lines of every container in order of their last sighting (a stable sort:
        lines seen on the same day keep their order), each in one of the places om's lines
        held, so the file follows what memory holds rather than the order observations arrived
        in. Every other line keeps its place."""
        for section in self.sections:
            for sub in (None, *section.subs):
                container = sub or section
                slots = [
                    (i, parsed)
                    for i, raw in enumerate(container.lines)
                    if raw.startswith("- ") and (parsed := parse_om_line(body(raw))) is not None
                ]
                ordered = sorted((p for _, p in slots), key=lambda x: x.seen)
                if [p for _, p in slots] == ordered:
                    continue
                raws = {p.rid: container.lines[i] for i, p in slots}
                for (i, _), line in zip(slots, ordered, strict=True):
                    raw = container.lines[i]
                    ending = raw[len(raw.rstrip("\r\n")) :] or self.nl
                    container.lines[i] = body(raws[line.rid]) + ending
                self._index(section, sub)

    def _is_last(self, container: Container) -> bool:
        last = self.sections[-1]
        return container is (last.subs[-1] if last.subs else last)

    def _end_with_blank(self, lines: list[str]) -> None:
        if lines and _is_content(lines[-1]):
            lines.append(self.nl)

    def _ensure_section(self, name: str) -> Container:
        found = self.section(name)
        if found is not None:
            return found
        order = {name_key(n): i for i, n in enumerate(SECTION_ORDER)}
        rank = order.get(name_key(name), len(order))
        at = len(self.sections)
        for i, existing in enumerate(self.sections):
            if order.get(existing.key, -1) > rank:
                at = i
                break
        before = self.preamble
        if at > 0:
            prev = self.sections[at - 1]
            before = prev.subs[-1].lines if prev.subs else prev.lines
        if not self.preamble and not self.sections:
            self.preamble.extend([TITLE + self.nl, self.nl])
        self._end_with_blank(before)
        created = Container(name, f"## {name}{self.nl}", [self.nl])
        self.sections.insert(at, created)
        return created

    def prune(self) -> None:
        """Drop the subsections (and the Dormant section) that om emptied in this edit.

        Only ``remove`` takes lines away, so only the sections it took them from since the last
        prune can have become empty: the cap prunes after every line it moves.
        """
        sections = {id(s): s for s in self._emptied}.values()
        self._emptied = []
        for section in sections:
            section.subs = [s for s in section.subs if not (s.touched and s.empty())]
        if any(s.key == name_key(DORMANT) and s.empty() for s in sections):
            self.sections = [
                s
                for s in self.sections
                if not (s.key == name_key(DORMANT) and s.touched and s.empty())
            ]

    def set_stamps(self, updated: str | None, reflected: str) -> None:
        """Write ``Last updated`` (when given) and ``Last reflected``, in place when present."""
        self._terminate()
        wanted = {"last updated": updated, "last reflected": reflected}
        done: set[str] = set()
        containers = [c for s in self.sections for c in (s, *s.subs)]
        for lines in (self.preamble, *(c.lines for c in containers)):
            for i, raw in enumerate(lines):
                match = _STAMP.match(body(raw).strip())
                if match is None:
                    continue
                name = match.group("name").casefold()
                value = wanted.get(name)
                done.add(name)
                if value is None:
                    continue
                label = "Last updated" if name == "last updated" else "Last reflected"
                mark = match.group("mark")
                ending = raw[len(raw.rstrip("\r\n")) :]
                lines[i] = f"{mark}{label}: {value}{mark}{ending}"
        missing = [
            f"_{label}: {wanted[label.casefold()]}_{self.nl}"
            for label in ("Last updated", "Last reflected")
            if label.casefold() not in done and wanted[label.casefold()] is not None
        ]
        if missing:
            self._insert_stamps(missing)

    def _insert_stamps(self, stamps: list[str]) -> None:
        pre = self.preamble
        if not pre and not self.sections:
            pre.extend([TITLE + self.nl, self.nl])
        existing = [i for i, raw in enumerate(pre) if _STAMP.match(body(raw).strip())]
        if existing:
            at = existing[-1] + 1
            pre[at:at] = stamps
            return
        title = next((i for i, raw in enumerate(pre) if body(raw).startswith("# ")), None)
        at = 0 if title is None else title + 1
        block = list(stamps)
        if title is not None:
            if at < len(pre) and not _is_content(pre[at]):
                at += 1  # keep the blank line under the title
            else:
                block.insert(0, self.nl)
        if at >= len(pre) or _is_content(pre[at]):
            block.append(self.nl)
        pre[at:at] = block


def _insert(lines: list[str], new: str, nl: str) -> None:
    """Put ``new`` in ``lines`` after their last line of content (before trailing blank lines)."""
    # From the end: only the trailing blank lines are looked at, however long the section.
    last = next((i for i in range(len(lines) - 1, -1, -1) if _is_content(lines[i])), None)
    if last is None:
        # An empty container: one blank line under its heading, then the new line (and any
        # blank lines that separate it from the next heading).
        if not lines:
            lines.append(nl)
        lines.insert(1, new)
        return
    lines.insert(last + 1, new)

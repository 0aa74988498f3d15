"""Plain text and markdown conversations given with ``om observe --transcript PATH``.

The fallback for a file that is not JSON Lines of a known agent. Speaker markers split it into
turns by role when present: ``User:`` / ``Assistant:`` / ``Human:`` / ``AI:`` (also bold,
``**User:**``, and with a leading ISO time, ``[2026-03-08 14:30] User:``), and markdown headings
``## User`` / ``### Assistant``. Text before the first marker, and files without markers, become
``user`` turns, one per paragraph. Quoted blocks (``> ...``) stay text. Every turn is bounded
(:data:`MAX_TURN_CHARS`): a longer one is cut at line boundaries into several turns.

Incremental like the JSONL readers: complete lines only, byte offsets, and when a read starts
mid-file the speaker in force there is found by looking back for the last marker line.
Timestamps: the marker line's leading ISO date/time (on a heading, one anywhere on it), else the
file's modification time. The session id is the file's stem; no project is known.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.redact import redact
from obsmem.sources.jsonl import Line, Records, lines_before
from obsmem.sources.model import ReadResult, Turn
from obsmem.sources.normalise import file_time, iso_utc

__all__ = ["AGENT", "MAX_TURN_CHARS", "detect", "find_files", "read"]

AGENT = "text"

#: No turn is longer than this (characters); longer speeches are cut at line boundaries.
MAX_TURN_CHARS = 2000
_LOOKBACK = 1024 * 1024  # how far back a read starting mid-file looks for the current speaker

_ROLES = {
    "user": "user", "human": "user", "me": "user", "you": "user",
    "assistant": "assistant", "ai": "assistant", "bot": "assistant", "model": "assistant",
    "agent": "assistant", "claude": "assistant", "chatgpt": "assistant", "gpt": "assistant",
    "gemini": "assistant", "copilot": "assistant",
    "system": "system",
}  # fmt: skip
_NAMES = "|".join(sorted(_ROLES, key=len, reverse=True))
_STAMP = (
    r"(?P<ts>\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
    r"(?:[ ]?(?:Z|UTC|[+-]\d{2}:?\d{2}))?)?)"
)
# [2026-03-08 14:30] User: text | **User:** text | **User**: text | ## Assistant (…)
_MARKER = re.compile(
    rf"^[ \t]*(?:\[?(?:{_STAMP}|\d{{1,2}}:\d{{2}}(?::\d{{2}})?)\]?[ \t]*(?:[-–|][ \t]*)?)?"
    rf"(?:(?P<hashes>\#{{1,6}})[ \t]+(?:\*\*)?(?P<heading>{_NAMES})(?:\*\*)?:?"
    rf"(?P<after>[ \t]*(?:[(\[—–-].*)?)$"
    rf"|(?P<bold>\*\*|__)?(?P<name>{_NAMES})(?:\*\*|__)?[ \t]*:(?:\*\*|__)?[ \t]*(?P<rest>.*))$",
    re.IGNORECASE,
)
_ANY_STAMP = re.compile(_STAMP)
_RULER = re.compile(r"^[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)")
# Names taken as speakers even in lower case ("user: ..." logs); the others ("me:", "model:",
# "system:") only capitalised, bold or as headings, since running text starts lines with them.
_LOWER_OK = frozenset({"user", "assistant", "human"})


@dataclass
class _Reader:
    """Turn assembly state: the speaker in force and the lines gathered for the current turn."""

    path: Path
    role: str | None = None  # None: no marker yet (paragraph mode, user turns)
    stamp: str | None = None
    fenced: bool = False  # inside a ``` code block, where "User:" is not a marker
    lines: list[str] = field(default_factory=list)
    size: int = 0
    first: Line | None = None
    last: Line | None = None
    turns: list[Turn] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    _mtime: str | None = None
    _mtime_read: bool = False

    def file_stamp(self) -> str | None:
        if not self._mtime_read:
            self._mtime, self._mtime_read = file_time(self.path), True
        return self._mtime

    def emit(self) -> None:
        """Close the current turn (if it has words)."""
        text = "\n".join(self.lines).strip()
        first, last = self.first, self.last
        self.lines, self.size, self.first, self.last = [], 0, None, None
        if not text or first is None or last is None:
            return
        if self.role == "system":
            self.skipped["system message"] += 1
            return
        self.turns.append(
            Turn(
                role=self.role or "user",
                text=text,
                timestamp=self.stamp or self.file_stamp(),
                session=self.path.stem,
                agent=AGENT,
                project=None,
                source_path=str(self.path),
                line_start=first.number,
                line_end=last.number,
                byte_start=first.start,
                byte_end=last.end,
            )
        )

    def add(self, text: str, line: Line) -> None:
        """Append a line of words to the current turn, closing it first if it would be too long."""
        if len(text) > MAX_TURN_CHARS:
            # Redacted before it is cut: a secret cut in two would pass redaction in halves.
            text = redact(text)
        while len(text) > MAX_TURN_CHARS:  # one huge line: cut it, each piece its own turn
            self.emit()
            self._append(text[:MAX_TURN_CHARS], line)
            text = text[MAX_TURN_CHARS:]
        if self.size + len(text) > MAX_TURN_CHARS:
            self.emit()
        self._append(text, line)

    def _append(self, text: str, line: Line) -> None:
        if not self.lines and not text.strip():
            return  # a turn starts at its first words
        if self.first is None:
            self.first = line
        self.lines.append(text)
        self.size += len(text) + 1
        if text.strip():
            self.last = line

    def line(self, text: str, line: Line) -> None:
        """Take one decoded line of the file."""
        if ("```" in text or "~~~" in text) and _FENCE.match(text):
            self.fenced = not self.fenced
        match = None if self.fenced else _marker(text)
        if match is not None:
            self.marker(match, line)
        elif not text.strip() or (
            text.lstrip()[:1] in ("-", "*", "_") and _RULER.match(text) and not self.fenced
        ):
            if self.role is None and not self.fenced:
                self.emit()  # paragraph mode: a blank line ends the turn
            elif self.lines:
                self.lines.append("")
        else:
            self.add(text.rstrip(), line)

    def marker(self, match: re.Match[str], line: Line) -> None:
        """A speaker marker: close the current turn and start one for the new speaker."""
        self.emit()
        self.role, self.stamp = _speaker(match)
        self.first = line  # the turn covers its marker line
        rest = match.group("rest")
        if rest and rest.strip():
            self.add(rest, line)


def _speaker(match: re.Match[str]) -> tuple[str, str | None]:
    """The role a marker names and the time it carries (leading, or anywhere on a heading)."""
    name = (match.group("heading") or match.group("name")).lower()
    stamp = match.group("ts")
    if stamp is None and match.group("after"):
        found = _ANY_STAMP.search(match.group("after"))
        stamp = found.group("ts") if found else None
    return _ROLES[name], iso_utc(stamp) if stamp else None


def _marker(text: str) -> re.Match[str] | None:
    """The speaker marker on this line, if it is one (a cheap test first: most lines are not)."""
    if ":" not in text and "#" not in text:
        return None
    match = _MARKER.match(text)
    if match is None:
        return None
    name = match.group("name")
    if name and not match.group("bold") and name.islower() and name not in _LOWER_OK:
        return None
    return match


def read(
    path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
) -> ReadResult:
    """Turns from the complete lines of the text file ``path`` after ``start_offset``."""
    reader = _Reader(path)
    if start_offset > 0:
        reader.role, reader.stamp, reader.fenced = _state_before(path, start_offset)
    lines = Records(
        path,
        start_offset=start_offset,
        start_line=start_line,
        flush=flush,
        skipped=reader.skipped,
    )
    for line in lines.lines():
        reader.line(line.data.decode("utf-8", errors="replace").replace("\x00", ""), line)
    reader.emit()
    return ReadResult(reader.turns, start_offset, lines.end_offset, lines.end_line, reader.skipped)


def _state_before(path: Path, offset: int) -> tuple[str | None, str | None, bool]:
    """Speaker, marker time and code-fence state in force at ``offset``.

    Replays the marker and fence logic over the lines before it (up to :data:`_LOOKBACK`
    bytes), so a read in two steps sees the same speakers as one read.
    """
    try:
        pieces = lines_before(path, offset, _LOOKBACK)
    except OSError:
        return None, None, False
    role: str | None = None
    stamp: str | None = None
    fenced = False
    for raw in pieces:
        text = raw.rstrip(b"\r").decode("utf-8", errors="replace")
        if _FENCE.match(text):
            fenced = not fenced
        elif not fenced:
            match = _marker(text)
            if match is not None:
                role, stamp = _speaker(match)
    return role, stamp, fenced


def detect(records: list[dict[str, Any]]) -> bool:
    """Always False: text is the fallback for files no JSONL reader claims, never detected."""
    return False


def find_files(home: Path) -> list[Path]:
    """Always empty: text transcripts are only read when given explicitly."""
    return []

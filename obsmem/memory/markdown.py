"""Line-level handling shared by every memory file: bytes in, the same bytes out.

Memory files are edited by people and by other tools, so om never re-renders a whole file from a
model. Files are kept as a list of raw lines (each with its own line ending); parsers read them,
and writers insert or replace whole lines. Rendering an unchanged parse is ``"".join(lines)``,
which gives back the exact bytes, whatever the line endings, stray text or broken UTF-8 (decoded
with ``surrogateescape`` so invalid bytes survive the round trip).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from obsmem.memory.model import ParseIssue

__all__ = [
    "BULLET",
    "HEADING",
    "Heading",
    "blank_generated",
    "body",
    "decode",
    "encode",
    "heading",
    "newline_of",
    "split_lines",
]

# The closing ``#`` sequence is stripped in ``heading()``: a lazy ``(.*?)`` followed by
# ``[ \t]*#*[ \t]*$`` backtracks in cubic time on long runs of spaces (seconds for one line).
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*)$")
BULLET = re.compile(r"^(?P<indent>[ \t]*)(?P<mark>[-*+])[ \t]+(?P<rest>.*)$")


def decode(data: bytes) -> tuple[str, list[ParseIssue]]:
    """Decode file bytes losslessly; report each line holding bytes that are not UTF-8."""
    issues: list[ParseIssue] = []
    try:
        # The common case, and far faster than scanning every character for surrogates.
        return data.decode("utf-8"), issues
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="surrogateescape")
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        for number, line in enumerate(split_lines(text), start=1):
            if any("\udc80" <= ch <= "\udcff" for ch in line):
                issues.append(
                    ParseIssue(number, "bytes that are not valid UTF-8 (kept as they are)")
                )
    return text, issues


def encode(text: str) -> bytes:
    """Encode text produced by ``decode`` (or new text) back to bytes."""
    return text.encode("utf-8", errors="surrogateescape")


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only, keeping each line's ending (``str.splitlines`` also splits on
    form feeds and Unicode separators, which would not round-trip)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def body(line: str) -> str:
    """A line without its ending (``\\n`` or ``\\r\\n``) and without a leading byte-order mark."""
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line.lstrip("\ufeff")


def newline_of(lines: list[str]) -> str:
    """The line ending a file uses (its first line's), ``\\n`` for a new or one-line file."""
    for line in lines:
        if line.endswith("\r\n"):
            return "\r\n"
        if line.endswith("\n"):
            return "\n"
    return "\n"


@dataclass(frozen=True)
class Heading:
    """A markdown ATX heading: its level (1 to 6) and its text."""

    level: int
    text: str


def heading(text: str) -> Heading | None:
    """The heading on this line (without its ending), or None."""
    match = HEADING.match(text)
    if match is None:
        return None
    # Trailing spaces, then a closing run of ``#``, then the spaces before it.
    text = match.group(2).rstrip(" \t").rstrip("#")
    return Heading(len(match.group(1)), text.strip())


def blank_generated(data: bytes) -> bytes:
    """The file with om's generated block (``<!-- om:begin`` ... ``<!-- om:end``) blanked, line
    numbers kept: to read what people wrote, or to index a file without its derived copy."""
    text, _ = decode(data)
    out, inside = [], False
    for line in split_lines(text):
        stripped = body(line).strip()
        if stripped.startswith("<!-- om:begin"):
            inside = True
        out.append("\n" if inside else line)
        if stripped.startswith("<!-- om:end"):
            inside = False
    return encode("".join(out))

"""The transcript lines an observation came from, bounded and with every secret redacted.

``om show`` and the MCP ``get``/``show`` paths quote the source of a memory so a person (or an
agent) can check what was really said. Transcripts are the one place where raw secrets may still
sit on disk, so nothing read here leaves this module without passing through ``redact``, and a
secret is always redacted *before* a line is cut: cutting first could leave half a key that the
patterns no longer recognise.

The excerpt is bounded whatever the provenance says (``MAX_LINES`` lines, ``MAX_BYTES`` of text,
``MAX_LINE_CHARS`` per line), and reading is bounded too (``MAX_RAW_LINE`` bytes of one line), so
a pathological transcript with a 50 MB line costs a bounded read, not the whole file.

A transcript that is gone, unreadable, or no longer matches what was observed (it shrank, was
rewritten, or its lines moved) yields a ``note`` instead of lines: a changed file would otherwise
quote text that is not the source of the memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.redact import redact

__all__ = [
    "MAX_BYTES",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "MAX_RAW_LINE",
    "Excerpt",
    "read_excerpt",
    "redact_line",
]

MAX_LINES = 40
MAX_BYTES = 8 * 1024
MAX_LINE_CHARS = 600
#: Bytes read of one transcript line at most; the rest is skipped (only its start is ever shown).
MAX_RAW_LINE = 256 * 1024


@dataclass
class Excerpt:
    """Source lines of an entry: ``lines`` as ``(line number, text)``, or a ``note`` saying why not.

    ``truncated`` is True when the recorded range held more than could be shown.
    """

    path: str | None
    line_start: int | None
    line_end: int | None
    lines: list[tuple[int, str]] = field(default_factory=list)
    truncated: bool = False
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (lines as ``{"line": n, "text": ...}`` objects)."""
        return {
            "path": self.path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "lines": [{"line": n, "text": text} for n, text in self.lines],
            "truncated": self.truncated,
            "note": self.note,
        }


def _redact_json(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _redact_json(item) for key, item in value.items()}
    return value


def redact_line(raw: str) -> str:
    """One transcript line with its secrets redacted.

    The raw line is redacted first (that sees ``"password": "..."`` pairs whole); a JSON line is
    then decoded and each string redacted again, because JSON escapes (``\\"``, ``\\n``,
    ``\\u...``) can hide a secret's shape from patterns run over the encoded text.
    """
    once = redact(raw)
    stripped = once.strip()
    if not stripped.startswith(("{", "[")):
        return once
    try:
        decoded = json.loads(stripped)
    except (ValueError, RecursionError):
        return once
    return json.dumps(_redact_json(decoded), ensure_ascii=False, separators=(",", ":"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _read_line(handle: Any) -> tuple[bytes, bool]:
    """The next line (without its newline), bounded, and whether the file had one."""
    chunk: bytes = handle.readline(MAX_RAW_LINE)
    if not chunk:
        return b"", False
    if chunk.endswith(b"\n"):
        return chunk[:-1], True
    # Longer than the bound: skip the rest of the line without keeping it.
    while True:
        rest: bytes = handle.readline(MAX_RAW_LINE)
        if not rest or rest.endswith(b"\n"):
            return chunk, True


def _seek_to_line(handle: Any, line_start: int, byte_start: int | None) -> str | None:
    """Position ``handle`` at the start of ``line_start``; a note when the file does not match."""
    if byte_start is not None:
        # Fast path, and a check: the recorded offset must still begin a line.
        if byte_start > 0:
            handle.seek(byte_start - 1)
            if handle.read(1) != b"\n":
                return "the transcript changed since this was observed; lines are not shown"
        else:
            handle.seek(0)
        return None
    for _ in range(line_start - 1):
        _, found = _read_line(handle)
        if not found:
            return "the transcript is shorter than when this was observed; lines are not shown"
    return None


def read_excerpt(
    path: str | None,
    line_start: int | None,
    line_end: int | None,
    *,
    byte_start: int | None = None,
    byte_end: int | None = None,
    real_path: str | None = None,
) -> Excerpt:
    """The redacted lines ``line_start..line_end`` of the transcript at ``path`` (1-based).

    Never raises for a missing, unreadable or changed file: the ``note`` says what happened.
    ``byte_start``/``byte_end`` (from the provenance ledger) let the read jump to the lines and
    detect a transcript that was rewritten since. ``real_path`` is the file to open when
    ``path`` is the redacted one provenance keeps; only ``path`` is ever shown.
    """
    excerpt = Excerpt(path or None, line_start, line_end)
    if not path:
        excerpt.note = "added explicitly, not from a transcript"
        return excerpt
    if line_start is None or line_start < 1:
        excerpt.note = "no line range was recorded for this entry"
        return excerpt
    end = line_end if line_end is not None and line_end >= line_start else line_start
    file = Path(real_path or path)
    try:
        size = file.stat().st_size
        if byte_end is not None and size < byte_end:
            excerpt.note = "the transcript is shorter than when this was observed (rotated?)"
            return excerpt
        with file.open("rb") as handle:
            excerpt.note = _seek_to_line(handle, line_start, byte_start)
            if excerpt.note is None:
                _collect(handle, excerpt, line_start, end)
    except FileNotFoundError:
        excerpt.note = f"the transcript {path} no longer exists"
    except IsADirectoryError:
        excerpt.note = f"{path} is a directory, not a transcript"
    except OSError as exc:
        excerpt.note = f"cannot read the transcript {path}: {exc.strerror}"
    return excerpt


def _collect(handle: Any, excerpt: Excerpt, line_start: int, end: int) -> None:
    used = 0
    for number in range(line_start, end + 1):
        if len(excerpt.lines) >= MAX_LINES or used >= MAX_BYTES:
            excerpt.truncated = True
            return
        raw, found = _read_line(handle)
        if not found:
            if not excerpt.lines:
                excerpt.note = "the transcript is shorter than when this was observed"
            else:
                excerpt.truncated = True
            return
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        shown = _cut(redact_line(text), min(MAX_LINE_CHARS, MAX_BYTES - used))
        used += len(shown.encode("utf-8"))
        excerpt.lines.append((number, shown))

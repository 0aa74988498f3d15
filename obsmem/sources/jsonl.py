"""Complete lines of a growing file, with their numbers and byte ranges, and JSON decoding.

Transcripts are appended to while the agent runs, so the last line may be half-written: only
lines ending in ``\\n`` are taken (``flush=True`` also takes a final line without one, at session
end). Lines are read as bytes so offsets are exact; a line longer than ``max_line`` is skipped
without holding it in memory twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "HEAD_BYTES",
    "MAX_LINE_BYTES",
    "Line",
    "Records",
    "decode_object",
    "head_records",
    "iter_lines",
    "lines_before",
]

MAX_LINE_BYTES = 16 * 1024 * 1024
#: A read that starts mid-file looks for the session's header in lines starting this early.
HEAD_BYTES = 1024 * 1024

# A decoder made once, fed str: skips json.loads's per-call checks and encoding sniffing.
_decode = json.JSONDecoder().decode


@dataclass(frozen=True)
class Line:
    """One complete line: its 1-based number, byte range (end exclusive) and bytes (no newline)."""

    number: int
    start: int
    end: int
    data: bytes
    too_long: bool = False


def iter_lines(
    handle: BinaryIO,
    *,
    start_offset: int = 0,
    start_line: int = 0,
    flush: bool = False,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[Line]:
    """Yield complete lines from ``start_offset`` (which must be at a line start).

    ``start_line`` is the number of lines before ``start_offset``. Lines over ``max_line`` bytes
    come back with ``too_long`` set and no data, so callers skip them and still advance past them.
    """
    handle.seek(start_offset)
    offset = start_offset
    number = start_line
    while True:
        chunk = handle.readline(max_line + 1)
        if not chunk:
            return
        if len(chunk) > max_line and not chunk.endswith(b"\n"):
            # Too long: skip to the end of this line without keeping it.
            size = len(chunk)
            while True:
                more = handle.readline(1024 * 1024)
                size += len(more)
                if not more or more.endswith(b"\n"):
                    break
            if not more and not flush:
                return  # the huge line is still being written
            number += 1
            yield Line(number, offset, offset + size, b"", too_long=True)
            offset += size
            continue
        if not chunk.endswith(b"\n") and not flush:
            return  # incomplete last line: leave it for the next run
        number += 1
        end = offset + len(chunk)
        yield Line(number, offset, end, chunk.rstrip(b"\r\n"))
        offset = end


def _loads(data: bytes) -> Any:
    """``json.loads(data)``, the same values and the same errors, faster for the usual line.

    A line opening with ``{`` and no NUL second byte has neither a BOM nor UTF-16/32 text, so
    json.loads would decode it as UTF-8 with ``surrogatepass``: done here directly.
    """
    if data[:1] == b"{" and data[1:2] != b"\x00":
        return _decode(data.decode("utf-8", "surrogatepass"))
    return json.loads(data)


def decode_object(data: bytes) -> dict[str, Any] | None:
    """The JSON object ``data`` holds, or None when it is blank, broken or another JSON value."""
    try:
        value = _loads(data) if data.strip() else None
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return value if isinstance(value, dict) else None


class Records:
    """One read of a JSON Lines transcript: its objects from ``start_offset`` to the last line.

    Iterating (once) yields ``(line, record)`` for every line holding a JSON object. The lines
    that do not are counted in ``skipped`` (``line too long``, ``broken json``, ``not an
    object``) and blank lines are passed over uncounted. ``end_offset`` and ``end_line`` move
    past every line consumed, blank and skipped ones too: otherwise a file ending in such lines
    would look unread forever. ``skipped`` may be the reader's own Counter, so that its counts
    and these keep the order they happened in.
    """

    def __init__(
        self,
        path: Path,
        *,
        start_offset: int = 0,
        start_line: int = 0,
        flush: bool = False,
        skipped: Counter[str] | None = None,
    ) -> None:
        self.path = path
        self.start_offset = start_offset
        self.start_line = start_line
        self.flush = flush
        self.end_offset = start_offset
        self.end_line = start_line
        self.skipped: Counter[str] = Counter() if skipped is None else skipped

    def skip(self, line: Line, reason: str) -> None:
        """Count ``line`` as passed over for ``reason`` (a subclass may keep which line it was)."""
        self.skipped[reason] += 1

    def lines(self) -> Iterator[Line]:
        """The complete lines themselves, blank ones included; a line too long is only counted.

        For a reader that looks at a line before (or instead of) decoding it: it calls
        :meth:`decode` on the lines it wants as records.
        """
        with self.path.open("rb") as handle:
            for line in iter_lines(
                handle, start_offset=self.start_offset, start_line=self.start_line, flush=self.flush
            ):
                self.end_offset, self.end_line = line.end, line.number
                if line.too_long:
                    self.skip(line, "line too long")
                    continue
                yield line

    def decode(self, line: Line) -> dict[str, Any] | None:
        """The JSON object on ``line``, or None: counted why, unless the line is blank."""
        data = line.data
        if not data or data.isspace():
            return None
        try:
            record = _loads(data)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            self.skip(line, "broken json")
            return None
        if not isinstance(record, dict):
            self.skip(line, "not an object")
            return None
        return record

    def __iter__(self) -> Iterator[tuple[Line, dict[str, Any]]]:
        for line in self.lines():
            record = self.decode(line)
            if record is not None:
                yield line, record


def head_records(
    path: Path, before: int, *, lines: int, max_bytes: int = HEAD_BYTES
) -> Iterator[dict[str, Any]]:
    """The JSON objects on the first ``lines`` lines that start before ``before`` and ``max_bytes``.

    A read that starts mid-file still needs what the session's first records say (its id, start
    time, working directory). Lines that hold no object are passed over silently: the read that
    covers them counts them.
    """
    limit = min(before, max_bytes)
    with path.open("rb") as handle:
        for line in iter_lines(handle):
            if line.start >= limit or line.number > lines:
                return
            record = decode_object(line.data)
            if record is not None:
                yield record


def lines_before(path: Path, offset: int, lookback: int) -> list[bytes]:
    """The lines in the last ``lookback`` bytes before ``offset`` (a line start), oldest first.

    For a read that starts mid-file and needs the state in force there (the speaker, the noise
    run, the working directory): it looks back this far instead of rereading the whole file. A
    first piece that may be the tail of an earlier line is left out; as ``offset`` starts a line,
    the last piece is empty.
    """
    low = max(0, offset - lookback)
    with path.open("rb") as handle:
        handle.seek(low)
        data = handle.read(offset - low)
    pieces = data.split(b"\n")
    return pieces[1:] if low > 0 else pieces

"""Complete lines of a growing file, with their numbers and byte ranges, and JSON decoding.

Transcripts are appended to while the agent runs, so the last line may be half-written: only
lines ending in ``\\n`` are taken (``flush=True`` also takes a final line without one, at session
end). Lines are read as bytes so offsets are exact; a line longer than ``max_line`` is skipped
without holding it in memory twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["MAX_LINE_BYTES", "Line", "iter_lines", "iter_records"]

MAX_LINE_BYTES = 16 * 1024 * 1024


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


def iter_records(
    path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
) -> Iterator[tuple[Line, dict[str, Any] | None, str | None]]:
    """Yield ``(line, record, problem)``: the decoded JSON object, or None and why not
    (None and None for a blank line: nothing to count, but consumed)."""
    with path.open("rb") as handle:
        for line in iter_lines(
            handle, start_offset=start_offset, start_line=start_line, flush=flush
        ):
            if line.too_long:
                yield line, None, "line too long"
                continue
            if not line.data.strip():
                # Yielded (not skipped) so the caller's end offset moves past blank lines;
                # otherwise a file ending in blank lines would look unread forever.
                yield line, None, None
                continue
            try:
                value = json.loads(line.data)
            except (ValueError, RecursionError):
                yield line, None, "broken json"
                continue
            if not isinstance(value, dict):
                yield line, None, "not an object"
                continue
            yield line, value, None

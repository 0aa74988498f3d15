"""Complete lines of a growing file, with their numbers and byte ranges, and JSON decoding.

Transcripts are appended to while the agent runs, so the last line may be half-written: only
lines ending in ``\\n`` are taken (``flush=True`` also takes a final line without one, at session
end). Lines are read as bytes so offsets are exact; a line longer than ``max_line`` is skipped
without holding it in memory twice.

Every reader reads through :class:`Records` (one read: its records, where it ended, what it
skipped); one that starts mid-file learns what it cannot see from :func:`head_records` (the
session's first records) and :func:`lines_before` (the state in force at its start).
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, cast

__all__ = [
    "HEAD_BYTES",
    "MAX_LINE_BYTES",
    "Line",
    "Needles",
    "Records",
    "decode_object",
    "head_records",
    "iter_lines",
    "lines_before",
    "loads_text",
    "paused_gc",
]

MAX_LINE_BYTES = 16 * 1024 * 1024
#: A read that starts mid-file looks for the session's header in lines starting this early.
HEAD_BYTES = 1024 * 1024

# A decoder made once, fed str: skips json.loads's per-call checks and encoding sniffing.
_decode_str = json.JSONDecoder().decode

_fast_loads: Callable[[bytes | str], Any] | None
try:  # orjson, when installed, parses several times faster; anything it refuses goes to json
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - the stdlib path is the same, only slower
    _fast_loads = None


class Line(NamedTuple):
    """One complete line: its 1-based number, byte range (end exclusive) and bytes (no newline)."""

    number: int
    start: int
    end: int
    data: bytes
    too_long: bool = False


# A tuple, so that the record loop makes one per line in C (``tuple.__new__``), without the
# Python frame a dataclass's or a NamedTuple's own constructor runs for each. Its fields read
# through C descriptors, as fast as slots; nothing sets a Line's fields after it is made.
_new_line = cast(Callable[[type[Line], tuple[int, int, int, bytes, bool]], Line], tuple.__new__)


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
            size = _skip_long(handle, len(chunk), flush)
            if size is None:
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


def _skip_long(handle: BinaryIO, size: int, flush: bool) -> int | None:
    """Read to the end of a too long line without keeping it: its full size, or None when the
    file ends first and ``flush`` is off (the line is still being written)."""
    while True:
        more = handle.readline(1024 * 1024)
        size += len(more)
        if not more or more.endswith(b"\n"):
            break
    if not more and not flush:
        return None
    return size


def _decode_utf8(data: bytes) -> Any:
    """The stdlib decoder on the line as UTF-8 text."""
    return _decode_str(data.decode())


#: The first decoder a line meets: orjson when installed, else the stdlib on UTF-8 text. What it
#: refuses (NaN, lone surrogates, a BOM, UTF-16...) goes to json.loads, which decides as it
#: always did. A stdlib try on UTF-8 text in between would add nothing: plain UTF-8 that parses
#: is what json.loads sniffs as UTF-8 too (a BOM or a NUL among the first bytes never parses).
#: One difference stays, by choice: orjson reads an integer beyond 64 bits (outside a string) as
#: the nearest float, without an error. Sending such lines to json.loads needs a look for long
#: digit runs on every line, which cost 8 to 22% of the parsing throughput (Hermes fell below
#: 50 MB/s); no field om reads is such a number, and one inside tool input is only shown.
_decode: Callable[[bytes], Any] = _fast_loads if _fast_loads is not None else _decode_utf8


#: What :func:`_second_try` gives for a line neither decoder reads.
_BROKEN = object()
#: The characters a JSON value (as json.loads reads it: NaN and Infinity too) can start with.
_VALUE_STARTS = frozenset('{["-0123456789ntfNI')


def _second_try(data: bytes, error: BaseException) -> Any:
    """``json.loads(data)`` for a line the first decoder refused with ``error``, or ``_BROKEN``.

    A line orjson ran out of in the middle of a value (cut short: the usual broken line) is not
    tried again: all orjson read up to its end is plain JSON, which json.loads reads alike up to
    the same end, where it fails too, only slower.
    """
    doc = getattr(error, "doc", None)
    if (
        getattr(error, "msg", None) == "unexpected end of data"
        and isinstance(doc, str)
        and getattr(error, "pos", None) == len(doc)
    ):
        return _BROKEN
    # json.loads decodes the bytes (UTF-8, -16 or -32 by their first bytes) and then wants a
    # value after any whitespace: a line whose text starts otherwise (binary garbage, a log
    # line) fails there, told here without the decoder's error made and raised (a tenth of a
    # short-turned transcript's reading where a garbage line comes every few dozen).
    try:
        text = data.decode(json.detect_encoding(data), "surrogatepass")
    except UnicodeDecodeError:
        return _BROKEN
    if text.lstrip(" \t\n\r")[:1] not in _VALUE_STARTS:
        return _BROKEN
    try:
        return _decode_str(text)  # what json.loads(data) does with the text
    except (ValueError, RecursionError):
        return _BROKEN


def _loads(data: bytes) -> Any:
    """``json.loads(data)``: the same value or error, faster for the usual line."""
    try:
        return _decode(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return json.loads(data)


def loads_text(text: str) -> Any:
    """``json.loads(text)`` for a JSON string inside a record (tool arguments, tool output).

    orjson takes str as well; whatever it refuses goes to json.loads for the same value or error.
    """
    if _fast_loads is not None:
        try:
            return _fast_loads(text)
        except ValueError:
            pass
    return json.loads(text)


def decode_object(data: bytes) -> dict[str, Any] | None:
    """The JSON object ``data`` holds, or None when it is blank, broken or another JSON value."""
    try:
        value = _loads(data) if data.strip() else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class Records:
    """One read of a JSON Lines transcript: its objects from ``start_offset`` to the last line.

    Iterating (once) yields ``(line, record)`` per JSON object; other lines are counted in
    ``skipped`` (``line too long``, ``broken json``, ``not an object``, blank ones not at all).
    ``end_offset`` and ``end_line`` move past every line consumed, blank and skipped ones too,
    or a file ending in such lines would look unread forever. ``skipped`` may be the reader's
    own Counter, so that all counts keep the order they happened in. ``pass_over`` may name a
    reason to skip a line from its bytes, for a reader that knows its bulky routine lines.
    """

    def __init__(
        self,
        path: Path,
        *,
        start_offset: int = 0,
        start_line: int = 0,
        flush: bool = False,
        skipped: Counter[str] | None = None,
        pass_over: Callable[[bytes], str | None] | None = None,
    ) -> None:
        self.path = path
        self.start_offset = start_offset
        self.start_line = start_line
        self.flush = flush
        self.end_offset = start_offset
        self.end_line = start_line
        self.skipped: Counter[str] = Counter() if skipped is None else skipped
        self.pass_over = pass_over

    def skip(self, line: Line, reason: str) -> None:
        """Count ``line`` as passed over for ``reason`` (a subclass may keep which line it was)."""
        self.skipped[reason] += 1

    def _lines(self, handle: BinaryIO) -> Iterator[Line]:
        return iter_lines(
            handle, start_offset=self.start_offset, start_line=self.start_line, flush=self.flush
        )

    def lines(self) -> Iterator[Line]:
        """The lines themselves, blank ones included (a too long one only counted): for text."""
        with self.path.open("rb") as handle:
            for line in self._lines(handle):
                self.end_offset, self.end_line = line.end, line.number
                if line.too_long:
                    self.skip(line, "line too long")
                else:
                    yield line

    def __iter__(self) -> Iterator[tuple[Line, dict[str, Any]]]:
        pass_over = self.pass_over
        decode = _decode
        flush = self.flush
        max_line = MAX_LINE_BYTES
        # Neither built on lines() nor on iter_lines(), and decoding as _loads does inline: a
        # generator or a call more per line shows in the parsing figures. Same lines as
        # iter_lines() yields.
        new_line = _new_line
        with self.path.open("rb") as handle:
            handle.seek(self.start_offset)
            readline = handle.readline
            offset = self.start_offset
            number = self.start_line
            while True:
                chunk = readline(max_line + 1)
                if not chunk:
                    return
                number += 1
                if chunk[-1:] == b"\n" or (flush and len(chunk) <= max_line):
                    end = offset + len(chunk)
                    data = chunk.rstrip(b"\r\n")
                elif len(chunk) > max_line:
                    size = _skip_long(handle, len(chunk), flush)
                    if size is None:
                        return
                    line = Line(number, offset, offset + size, b"", too_long=True)
                    offset = self.end_offset = line.end
                    self.end_line = number
                    self.skip(line, "line too long")
                    continue
                else:
                    return  # incomplete last line: leave it for the next run
                line = new_line(Line, (number, offset, end, data, False))
                offset = self.end_offset = end
                self.end_line = number
                if not data or data.isspace():
                    continue
                if pass_over is not None:
                    reason = pass_over(data)
                    if reason is not None:
                        self.skip(line, reason)
                        continue
                try:
                    record = decode(data)
                except (ValueError, RecursionError) as error:
                    record = _second_try(data, error)
                    if record is _BROKEN:
                        self.skip(line, "broken json")
                        continue
                if not isinstance(record, dict):
                    self.skip(line, "not an object")
                    continue
                yield line, record


class Needles:
    """Several byte strings looked for in a raw line at once: ``found(data)`` is the index in
    ``needles`` and the end of every occurrence of each (overlapping ones too), in no set order.

    One pass of an Aho-Corasick automaton (``ahocorasick_rs``, a compiled dependency, when it is
    installed) instead of one ``in`` test per string: a substring search costs several
    instructions a byte when the string's first byte is common (``"``, ``p``, ``f``), so ten of
    them over a tool result cost several times the automaton's one pass. Without the automaton,
    ``bytes.find`` for each string finds the same occurrences.
    """

    def __init__(self, needles: Sequence[bytes]) -> None:
        self.needles = tuple(needles)
        try:
            from ahocorasick_rs import BytesAhoCorasick
        except ImportError:  # pragma: no cover - the finds below give the same occurrences
            self._find = None
        else:
            self._find = BytesAhoCorasick(list(self.needles)).find_matches_as_indexes

    def found(self, data: bytes) -> list[tuple[int, int]]:
        """``(index, end)`` of every occurrence of every needle in ``data``."""
        if self._find is not None:
            return [(index, end) for index, _, end in self._find(data, True)]  # overlapping
        return self.found_by_find(data)

    def found_by_find(self, data: bytes) -> list[tuple[int, int]]:
        """What :meth:`found` gives, by ``bytes.find`` (the fallback, and what tests hold the
        automaton to)."""
        out: list[tuple[int, int]] = []
        for index, needle in enumerate(self.needles):
            at = data.find(needle)
            while at != -1:
                out.append((index, at + len(needle)))
                at = data.find(needle, at + 1)
        return out


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off for the duration of a read, and back on after it.

    A read keeps an object per turn, hundreds of thousands in a large transcript; every time
    their count crosses the collector's thresholds it walks all of them (and everything else
    alive), finding nothing to free: turns and decoded records hold no reference cycles. That
    was about a tenth of the parsing time. Reference counting frees everything as usual
    meanwhile; collection resumes after the read (the switch is process-wide, so another
    thread's cycles wait until then too). Left off if it was off already.

    What the read made is then moved to the oldest generation (``gc.freeze`` then
    ``gc.unfreeze``, which only relink the collector's lists): left in the youngest, all of it
    would be walked by the very next young collection, for nothing again. Everything stays
    tracked: the next full collection looks at it as it would have.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()  # everything to the permanent generation ...
            gc.unfreeze()  # ... and from there to the oldest one
            gc.enable()


def head_records(
    path: Path, before: int, *, lines: int, max_bytes: int = HEAD_BYTES
) -> Iterator[dict[str, Any]]:
    """The JSON objects on the first ``lines`` lines that start before ``before`` and ``max_bytes``.

    For a read that starts mid-file: the session's first records name its id, time and cwd.
    Other lines are passed over silently (the read that covers them counts them).
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

    For a read that starts mid-file and needs the state in force there (speaker, noise run, cwd)
    without rereading the file. A first piece that may be the tail of an earlier line is left
    out; the last piece is empty, as ``offset`` starts a line.
    """
    low = max(0, offset - lookback)
    with path.open("rb") as handle:
        handle.seek(low)
        data = handle.read(offset - low)
    pieces = data.split(b"\n")
    return pieces[1:] if low > 0 else pieces

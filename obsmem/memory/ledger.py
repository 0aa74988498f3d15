"""The provenance ledger: where each observation came from, keyed by its id, and what was forgotten.

Provenance must survive an index rebuild, and the markdown line has no room for it, so it lives in
an append-only JSON Lines file in the state directory (``paths.ledger_path()``)::

    {"id": "k3v9q2m7xa", "provenance": {"path": "...", "line_start": 10, "line_end": 14, ...}}
    {"id": "k3v9q2m7xa", "forgotten": "2026-11-28T10:00:00Z"}

Entries are appended (and fsynced) before the observation is written to markdown, so a crash in
between leaves at worst an entry for an id that does not exist, which is harmless. When an id
appears twice the last entry wins. Lines that cannot be read are skipped and counted.

The second shape is a tombstone, written by ``om forget`` before it removes a memory: the id and
when, never the text. An id whose last entry is a tombstone is forgotten (``forgotten_ids``):
``read_ledger`` leaves it out, capture does not write it back, a restore skips it. A provenance
entry after the tombstone (the user remembering the same thing again on purpose) revives it.

An entry written by ``append_observations`` also keeps the observation's day and its markdown
line (``"date"``, ``"line"``), and once the markdown write succeeded a ``{"written": [ids]}``
note follows. Together they let ``om doctor`` find observations that were in memory and are gone
from it (a stale editor buffer saved over them) and put them back (``obsmem.memory.restore``);
``scrub_lines`` drops the lines of forgotten ids, so a tombstone leaves no text behind.

The third shape is a turn's tombstone, ``{"forgotten": when, "turn": hash}``: a keyed hash of a
forgotten transcript turn's normalised text (``turn_digest``), never the text. The key is the
memory's own random one (``paths.forget_key_path``), so a short forgotten text (a password, a
codename) cannot be found again by hashing guesses against the ledger alone. Capture drops a turn
whose hash is tombstoned (``ForgottenTurns``), so a copy of a forgotten session at another path
brings nothing back.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from obsmem.memory.atomic import append_line, atomic_write, ensure_dir
from obsmem.memory.lines import render_observation
from obsmem.memory.model import Observation, Provenance

__all__ = [
    "ForgottenTurns",
    "Journal",
    "append_forgotten",
    "append_forgotten_turns",
    "append_observations",
    "append_provenance",
    "append_written",
    "forgotten_ids",
    "forgotten_turns",
    "read_journal",
    "read_ledger",
    "scrub_lines",
    "settled_ids",
    "turn_digest",
    "turn_key",
]

_TOMBSTONE = b'"forgotten"'
_KEY_BYTES = 32


def append_provenance(path: Path, items: Iterable[tuple[str, Provenance]]) -> int:
    """Append one ledger line per ``(id, provenance)``; return how many were written."""
    lines = [_record({"id": obs_id, "provenance": prov.to_dict()}) for obs_id, prov in items]
    if lines:
        append_line(path, "\n".join(lines))
    return len(lines)


def append_forgotten(path: Path, ids: Iterable[str], when: datetime | None = None) -> int:
    """Append one tombstone per id (the id and the time, never the text); return how many."""
    stamp = (when or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [_record({"id": obs_id, "forgotten": stamp}) for obs_id in dict.fromkeys(ids)]
    if lines:
        append_line(path, "\n".join(lines))
    return len(lines)


def append_forgotten_turns(path: Path, digests: Iterable[str], when: datetime | None = None) -> int:
    """Append one turn tombstone per ``turn_digest`` (the hash and the time); return how many."""
    stamp = (when or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    known = forgotten_turns(path)
    lines = [
        _record({"forgotten": stamp, "turn": digest})
        for digest in dict.fromkeys(digests)
        if digest not in known
    ]
    if lines:
        append_line(path, "\n".join(lines))
    return len(lines)


def turn_key(path: Path, *, create: bool = False) -> bytes | None:
    """The memory's key for ``turn_digest`` (None when there is none and ``create`` is false).

    Created once, random, readable by the user only; put in place with a link so that two
    processes creating it at once agree on one key and a reader never sees half of it.
    """
    try:
        key = path.read_bytes()
        if len(key) == _KEY_BYTES:
            return key
    except FileNotFoundError:
        pass
    if not create:
        return None
    ensure_dir(path.parent)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(_KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)  # never over a key another process made: the first one wins
    finally:
        temp.unlink(missing_ok=True)
    return path.read_bytes()


#: ASCII upper case to lower and ASCII whitespace (all ``str.split`` splits on) to a space, as
#: one bytes translation; the UTF-8 of every other character ``str.split`` splits on.
_ASCII_FOLD = bytes.maketrans(
    bytes(range(0x41, 0x5B)) + b"\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f",
    bytes(range(0x61, 0x7B)) + b" " * 9,
)
_WIDE_SPACES = tuple(
    ch.encode()
    for ch in "\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)
_ASCII = bytes(range(0x80))
_SPACES = re.compile(rb"  +")


def turn_digest(key: bytes, text: str) -> str:
    """The keyed hash of a turn's text, normalised (ASCII letters in lower case, every run of
    whitespace as one space), so the same words read again from any copy give the same hash.

    Capture hashes every turn it reads once a turn was forgotten, so the normal form is made on
    bytes, at a few instructions a character: Unicode case folding and NFKC, which cost ten
    times that on text with non-ASCII characters, are left out (a copy of a session holds the
    same characters; one retyped in full-width letters is another text).
    """
    normal = text.encode("utf-8", "surrogatepass").translate(_ASCII_FOLD)
    if not text.isascii():
        # Looked for among the text's non-ASCII bytes alone, usually a few: UTF-8 being self-
        # synchronising, a character's bytes are found there only where that character was.
        wide_bytes = normal.translate(None, _ASCII)
        for wide in _WIDE_SPACES:
            if wide in wide_bytes:
                normal = normal.replace(wide, b" ")
    if b"  " in normal:
        normal = _SPACES.sub(b" ", normal)
    return hashlib.blake2b(normal.strip(b" "), key=key, digest_size=16).hexdigest()


class ForgottenTurns:
    """Which turn texts were forgotten: what capture asks of every turn it reads.

    Costs a ``stat`` of the ledger per question batch while nothing was ever forgotten; the key
    is read only once a turn tombstone exists.
    """

    def __init__(self, ledger: Path, key: Path) -> None:
        self.ledger = ledger
        self.key_path = key
        self._key: bytes | None = None  # read once found: a key never changes once made

    def keep(self, texts: list[str]) -> list[bool]:
        """For each text, False when its turn was forgotten."""
        digests = forgotten_turns(self.ledger)
        if digests and self._key is None:
            self._key = turn_key(self.key_path)  # capture asks per file: not a read each time
        key = self._key if digests else None
        if key is None:
            # No tombstone, or no key to match them with (a deleted key: the hashes are lost).
            return [True] * len(texts)
        return [turn_digest(key, text) not in digests for text in texts]


def append_observations(path: Path, observations: Iterable[Observation]) -> int:
    """Append one entry per observation about to be written: its provenance (when known), its
    day and its markdown line. Fsynced, before the markdown write."""
    lines = []
    for obs in observations:
        record: dict[str, object] = {"id": obs.id}
        if obs.provenance is not None:
            record["provenance"] = obs.provenance.to_dict()
        record |= {"date": obs.date, "line": render_observation(obs)}
        lines.append(_record(record))
    if lines:
        append_line(path, "\n".join(lines))
    return len(lines)


def append_written(path: Path, ids: Iterable[str]) -> None:
    """Note that these ids' markdown write succeeded. Not fsynced: a note lost to a power cut
    only means those ids are not checked by ``om doctor``."""
    wanted = list(ids)
    if wanted:
        append_line(path, json.dumps({"written": wanted}, separators=(",", ":")), sync=False)


def _record(record: dict[str, object]) -> str:
    line = json.dumps(record, ensure_ascii=False, sort_keys=True)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A transcript path with bytes that are not UTF-8 arrives as surrogate escapes, which
        # UTF-8 cannot encode (the append crashed); JSON escapes carry them and read back exact.
        line = json.dumps(record, ensure_ascii=True, sort_keys=True)
    return line


@dataclass
class _Parsed:
    """What the ledger's lines say so far: every id's last provenance, the ids whose last entry
    is a tombstone (with its time), and the number of lines that could not be read."""

    provenance: dict[str, Provenance] = field(default_factory=dict)
    forgotten: dict[str, str] = field(default_factory=dict)
    bad: int = 0
    turns: set[str] = field(default_factory=set)  # the hashes of forgotten turns

    def copy(self) -> _Parsed:
        return _Parsed(dict(self.provenance), dict(self.forgotten), self.bad, set(self.turns))

    def feed(self, data: bytes) -> _Parsed:
        """Apply ``data``'s lines in order (the last entry of an id wins); returns ``self``.

        A last line without its ending counts when it is whole and is never counted as
        unreadable: another process may be writing it right now (a read can see half of an
        append); a line torn by a crash counts once the next append ends it.
        """
        provenance, forgotten = self.provenance, self.forgotten
        pieces = data.split(b"\n")
        unfinished = len(pieces) - 1  # the piece after the last line ending
        for at, raw in enumerate(pieces):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                if raw.startswith(b'{"written"') and isinstance(record.get("written"), list):
                    continue  # a written note (see append_written)
                if "turn" in record and "id" not in record:
                    self.turns.add(str(record["turn"]))  # a forgotten turn's hash
                    continue
                obs_id = str(record["id"])
                if "forgotten" in record and "provenance" not in record:
                    forgotten[obs_id] = str(record["forgotten"])
                    continue
                if "provenance" not in record and "line" in record and "date" in record:
                    forgotten.pop(obs_id, None)  # an observation without provenance, again
                    continue
                provenance[obs_id] = Provenance.from_dict(dict(record["provenance"]))
                forgotten.pop(obs_id, None)
            except (ValueError, KeyError, TypeError, RecursionError):
                # RecursionError: a garbage line of deeply nested brackets stops json's decoder.
                self.bad += at != unfinished
        return self


def _scan(data: bytes) -> tuple[dict[str, Provenance], dict[str, str], int]:
    """Every id's last provenance, the ids whose last entry is a tombstone (with its time), and
    the number of lines that could not be read."""
    parsed = _Parsed().feed(data)
    return parsed.provenance, parsed.forgotten, parsed.bad


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


@dataclass
class _Tail:
    """How far one process has parsed a ledger: the bytes parsed (whole lines only), their
    digest (to tell an append from a rewrite) and what they said."""

    offset: int
    digest: bytes
    parsed: _Parsed


# path -> what was parsed of it. Within one process the ledger is parsed once, then only what
# was appended since: reflecting, the vault, the startup context and the index each need it,
# and a large memory's ledger takes a noticeable share of a second to parse (reading and
# hashing it again costs milliseconds).
_TAILS: dict[str, _Tail] = {}
_TAILS_LOCK = threading.Lock()


def _digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _parsed(path: Path) -> _Parsed:
    """The ledger's lines parsed, parsing only what was appended since the last call: the
    caller's to read (a copy of the shared state)."""
    with _TAILS_LOCK:  # a server's threads share the state
        return _parsed_locked(path)


def _parsed_locked(path: Path) -> _Parsed:
    key = str(path)
    data = _read(path)
    tail = _TAILS.get(key)
    if (
        tail is None
        or len(data) < tail.offset
        or _digest(memoryview(data)[: tail.offset]) != tail.digest
    ):
        tail = _Tail(0, _digest(b""), _Parsed())  # new, or not an append: parse it all
    # Whole lines are kept for next time; a last line without its ending (being appended, or
    # torn by a crash) is read now if it is whole, and again once it has its ending.
    end = data.rfind(b"\n") + 1
    if end > tail.offset:
        tail.parsed.feed(data[tail.offset : end])
        tail.offset = end
        tail.digest = _digest(memoryview(data)[:end])
    _TAILS[key] = tail
    return tail.parsed.copy().feed(data[end:])


def read_ledger(
    path: Path, *, include_forgotten: bool = False
) -> tuple[dict[str, Provenance], int]:
    """Every id's provenance, and the number of lines that could not be read.

    Forgotten ids are left out unless ``include_forgotten`` (``om forget`` needs their transcript
    lines to remove the turns they came from). The dict is the caller's to change.
    """
    parsed = _parsed(path)
    provenance = parsed.provenance
    if not include_forgotten:
        for obs_id in parsed.forgotten:
            provenance.pop(obs_id, None)
    return provenance, parsed.bad


# The ledger is append-only: a tombstone always changes its size, so (inode, size, mtime) says
# when a parse can be reused. Capture asks before every write; this keeps that to one stat.
_CACHE: dict[str, tuple[tuple[int, int, int], dict[str, str], frozenset[str]]] = {}


def _tombstones(path: Path) -> tuple[dict[str, str], frozenset[str]]:
    """The forgotten ids (with when) and the forgotten turns' hashes, cached by the file's stat."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}, frozenset()
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _CACHE.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    data = _read(path)
    parsed = _Parsed().feed(data) if _TOMBSTONE in data else _Parsed()
    turns = frozenset(parsed.turns)
    _CACHE[str(path)] = (key, parsed.forgotten, turns)
    return parsed.forgotten, turns


def forgotten_ids(path: Path) -> dict[str, str]:
    """The ids ``om forget`` removed (and nothing added back since), each with when (UTC, ISO).

    For writers that must not bring a forgotten memory back: capture skips these ids, and a
    restore of ids the ledger knows but memory lacks must skip them too. A ledger without any
    tombstone costs one read and a byte search, no parse.
    """
    return dict(_tombstones(path)[0])


def forgotten_turns(path: Path) -> frozenset[str]:
    """The ``turn_digest`` of every transcript turn ``om forget`` removed."""
    return _tombstones(path)[1]


@dataclass
class Journal:
    """What the ledger knows beyond provenance: each id's day and line, and which ids reached
    the markdown."""

    lines: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (date, line)
    written: set[str] = field(default_factory=set)


def _objects(data: bytes) -> Iterable[dict[str, object]]:
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            yield record


def read_journal(path: Path) -> Journal:
    """The ledger's observation lines and written notes (unreadable lines skipped)."""
    journal = Journal()
    for record in _objects(_read(path)):
        written = record.get("written")
        if isinstance(written, list):
            journal.written.update(str(i) for i in written)
            continue
        date, line = record.get("date"), record.get("line")
        if "id" in record and isinstance(date, str) and isinstance(line, str):
            journal.lines[str(record["id"])] = (date, line)
    return journal


def scrub_lines(path: Path, ids: Iterable[str]) -> int:
    """Rewrite the ledger without the day and line of ``ids`` (forgotten: no text may stay);
    return how many entries lost their line. Call under the memory lock."""
    wanted = set(ids)
    data = _read(path)
    if not wanted or b'"line"' not in data:
        return 0
    out: list[bytes] = []
    changed = 0
    for raw in data.split(b"\n"):
        try:
            record = json.loads(raw) if b'"line"' in raw else None
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict) and str(record.get("id")) in wanted and "line" in record:
            record.pop("line", None)
            record.pop("date", None)
            changed += 1
            if "provenance" not in record:
                continue  # nothing left worth keeping
            raw = _record(record).encode("utf-8")
        out.append(raw)
    if changed:
        atomic_write(path, b"\n".join(out))
    return changed


# path -> (inode, bytes read, ids): the ledger only grows, or is replaced (scrub_lines).
_SETTLED: dict[str, tuple[int, int, set[str]]] = {}


def settled_ids(path: Path) -> set[str]:
    """The ids whose markdown write succeeded: a new write must not add them again. Read
    incrementally within one process (only the bytes appended since the last call)."""
    key = str(path)
    ino, offset, ids = _SETTLED.get(key, (0, 0, set()))
    try:
        with path.open("rb") as handle:
            st = os.fstat(handle.fileno())
            size = st.st_size
            if st.st_ino != ino or size < offset:
                offset, ids = 0, set()  # replaced (scrub_lines): read it all again
            handle.seek(offset)
            data = handle.read(size - offset)
    except FileNotFoundError:
        return set()
    end = data.rfind(b"\n") + 1  # a line being appended is read next time, whole
    ids = set(ids)
    for raw in data[:end].split(b"\n"):
        if raw.startswith(b'{"written"'):
            for record in _objects(raw):
                written = record.get("written")
                if isinstance(written, list):
                    ids.update(str(i) for i in written)
    _SETTLED[key] = (st.st_ino, offset + end, ids)
    return ids

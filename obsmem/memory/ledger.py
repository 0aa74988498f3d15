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
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from obsmem.memory.atomic import append_line
from obsmem.memory.model import Provenance

__all__ = ["append_forgotten", "append_provenance", "forgotten_ids", "read_ledger"]

_TOMBSTONE = b'"forgotten"'


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


def _record(record: dict[str, object]) -> str:
    line = json.dumps(record, ensure_ascii=False, sort_keys=True)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A transcript path with bytes that are not UTF-8 arrives as surrogate escapes, which
        # UTF-8 cannot encode (the append crashed); JSON escapes carry them and read back exact.
        line = json.dumps(record, ensure_ascii=True, sort_keys=True)
    return line


def _scan(data: bytes) -> tuple[dict[str, Provenance], dict[str, str], int]:
    """Every id's last provenance, the ids whose last entry is a tombstone (with its time), and
    the number of lines that could not be read."""
    provenance: dict[str, Provenance] = {}
    forgotten: dict[str, str] = {}
    bad = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            obs_id = str(record["id"])
            if "forgotten" in record and "provenance" not in record:
                forgotten[obs_id] = str(record["forgotten"])
                continue
            provenance[obs_id] = Provenance.from_dict(dict(record["provenance"]))
            forgotten.pop(obs_id, None)
        except (ValueError, KeyError, TypeError, RecursionError):
            # RecursionError: a garbage line of deeply nested brackets stops json's decoder.
            bad += 1
    return provenance, forgotten, bad


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def read_ledger(
    path: Path, *, include_forgotten: bool = False
) -> tuple[dict[str, Provenance], int]:
    """Every id's provenance, and the number of lines that could not be read.

    Forgotten ids are left out unless ``include_forgotten`` (``om forget`` needs their transcript
    lines to remove the turns they came from).
    """
    provenance, forgotten, bad = _scan(_read(path))
    if not include_forgotten:
        for obs_id in forgotten:
            provenance.pop(obs_id, None)
    return provenance, bad


# The ledger is append-only: a tombstone always changes its size, so (inode, size, mtime) says
# when a parse can be reused. Capture asks before every write; this keeps that to one stat.
_CACHE: dict[str, tuple[tuple[int, int, int], dict[str, str]]] = {}


def forgotten_ids(path: Path) -> dict[str, str]:
    """The ids ``om forget`` removed (and nothing added back since), each with when (UTC, ISO).

    For writers that must not bring a forgotten memory back: capture skips these ids, and a
    restore of ids the ledger knows but memory lacks must skip them too. A ledger without any
    tombstone costs one read and a byte search, no parse.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _CACHE.get(str(path))
    if cached is not None and cached[0] == key:
        return dict(cached[1])
    data = _read(path)
    found = _scan(data)[1] if _TOMBSTONE in data else {}
    _CACHE[str(path)] = (key, found)
    return dict(found)

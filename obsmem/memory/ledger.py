"""The provenance ledger: where each observation came from, keyed by its id.

Provenance must survive an index rebuild, and the markdown line has no room for it, so it lives in
an append-only JSON Lines file in the state directory (``paths.ledger_path()``)::

    {"id": "k3v9q2m7xa", "provenance": {"path": "...", "line_start": 10, "line_end": 14, ...}}

Entries are appended (and fsynced) before the observation is written to markdown, so a crash in
between leaves at worst an entry for an id that does not exist, which is harmless. When an id
appears twice the last entry wins. Lines that cannot be read are skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from obsmem.memory.atomic import append_line
from obsmem.memory.model import Provenance

__all__ = ["append_provenance", "read_ledger"]


def append_provenance(path: Path, items: Iterable[tuple[str, Provenance]]) -> int:
    """Append one ledger line per ``(id, provenance)``; return how many were written."""
    lines = [_record(obs_id, prov) for obs_id, prov in items]
    if lines:
        append_line(path, "\n".join(lines))
    return len(lines)


def _record(obs_id: str, prov: Provenance) -> str:
    record = {"id": obs_id, "provenance": prov.to_dict()}
    line = json.dumps(record, ensure_ascii=False, sort_keys=True)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A transcript path with bytes that are not UTF-8 arrives as surrogate escapes, which
        # UTF-8 cannot encode (the append crashed); JSON escapes carry them and read back exact.
        line = json.dumps(record, ensure_ascii=True, sort_keys=True)
    return line


def read_ledger(path: Path) -> tuple[dict[str, Provenance], int]:
    """Every id's provenance, and the number of lines that could not be read."""
    out: dict[str, Provenance] = {}
    bad = 0
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return out, 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            out[str(record["id"])] = Provenance.from_dict(dict(record["provenance"]))
        except (ValueError, KeyError, TypeError, RecursionError):
            # RecursionError: a garbage line of deeply nested brackets stops json's decoder.
            bad += 1
    return out, bad

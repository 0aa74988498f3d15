"""Citations and recall: full entries by id, the source excerpt, timelines, filtered search.

Everything here reads the index (refreshed first, like ``search``), so what it returns always
matches the markdown on disk. Each entry is a JSON-ready dict carrying its citation: the id, the
memory file and line (``citation``: ``observations.md:12``), its date, and, for observations the
ledger knows, the provenance back to the transcript (path, line range, session, agent, project).
These dicts are what ``om show --json`` prints and what the MCP tools return.

``search_entries`` (``entries.py``, re-exported here) is ``search`` (``bm25.search_rows``:
hybrid when a model loads, BM25 otherwise) with filters, returning these dicts. A long-lived
process passes a ``KeptIndex`` so that its searches share one connection and, with it, the
in-process vector cache.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import date as Date
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from obsmem.errors import IndexError_, NotFound, UsageError
from obsmem.index.db import open_index, using_index
from obsmem.index.sync import refresh as refresh_index
from obsmem.memory.store import MemoryStore
from obsmem.search.entries import SELECT as _SELECT
from obsmem.search.entries import Filters, search_entries
from obsmem.search.entries import check_date as _check_date
from obsmem.search.entries import entry_dict as _entry
from obsmem.search.excerpt import Excerpt, read_excerpt

__all__ = [
    "MAX_IDS",
    "Filters",
    "KeptIndex",
    "get_entries",
    "search_entries",
    "show",
    "timeline",
]

#: Most ids one ``get_entries`` call looks up (an agent pasting a thousand ids gets an error).
MAX_IDS = 100
#: Entries a timeline window is read from before it is cut to ``limit`` around its anchor.
_WINDOW_ROWS = 5000

T = TypeVar("T")


def _read(store: MemoryStore, work: Any) -> Any:
    """Run ``work(conn)`` on a refreshed index; an absent memory directory reads as empty."""

    def run(conn: sqlite3.Connection) -> Any:
        refresh_index(store, conn)
        return work(conn)

    return using_index(store.index_path, run)


class KeptIndex:
    """The index of one store on one connection kept open between calls (the MCP server).

    The vector cache (``vectors.py``) lives as long as its connection and the index does not
    change, so on a kept connection a search after the first embeds its query and multiplies
    one matrix instead of reading every vector again. A SQLite connection belongs to the thread
    that opened it, so ``run`` does its work on this object's own thread, one call at a time,
    whichever thread asks.

    The connection is opened again when the index file is replaced (deleted, or repaired by
    another process): its inode changes, and the inode of a file held open cannot be reused.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="om-index")
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None

    def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(conn)`` on the kept connection; damage is repaired as ``using_index`` does."""
        return self._thread.submit(self._run, work).result()

    def close(self) -> None:
        """Close the connection and stop the thread (a later ``run`` raises ``RuntimeError``)."""
        self._thread.submit(self._close).result()
        self._thread.shutdown()

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connection()
        try:
            return work(conn)
        except (sqlite3.Error, IndexError_):
            # Damage, a busy index, a file swapped underneath: the one-shot path reports or
            # repairs each case, and this connection is not trusted again.
            self._close()
        return using_index(self.path, work)

    def _connection(self) -> sqlite3.Connection:
        before = _file_identity(self.path)
        if self._conn is not None and before is not None and before == self._file:
            return self._conn
        self._close()
        conn = open_index(self.path)
        after = _file_identity(self.path)
        # A file swapped while it was being opened leaves no identity: the next call reopens.
        self._conn, self._file = conn, after if before in (None, after) else None
        return conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._file = None, None


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def get_entries(store: MemoryStore, ids: Iterable[str]) -> list[dict[str, Any]]:
    """The full entries with these ids, in the order asked; unknown ids are left out.

    An id found in several files (an observation and its archived copy) gives one entry per file.
    Raises ``UsageError`` for more than ``MAX_IDS`` ids.
    """
    wanted = list(dict.fromkeys(i.strip() for i in ids if i and i.strip()))
    if len(wanted) > MAX_IDS:
        raise UsageError(f"at most {MAX_IDS} ids can be looked up at once, not {len(wanted)}")
    if not wanted or not store.home.is_dir():
        return []
    marks = ", ".join("?" for _ in wanted)
    sql = f"SELECT {_SELECT} FROM entries AS e WHERE e.id IN ({marks}) ORDER BY e.rowid"

    def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for row in conn.execute(sql, wanted).fetchall():
            found.setdefault(str(row[0]), []).append(_entry(row))
        return [entry for entry_id in wanted for entry in found.get(entry_id, [])]

    result: list[dict[str, Any]] = _read(store, work)
    return result


def _ledger_bytes(store: MemoryStore, entry_id: str) -> tuple[int | None, int | None]:
    # Byte offsets are not in the index (only line numbers are); the ledger has them.
    prov = store.provenance().get(entry_id)
    return (prov.byte_start, prov.byte_end) if prov is not None else (None, None)


def show(store: MemoryStore, entry_id: str) -> dict[str, Any]:
    """One entry with the transcript lines it came from under ``excerpt``.

    Raises ``NotFound`` for an unknown id. A missing or changed transcript is not an error: the
    excerpt's ``note`` says what happened. A transcript path kept redacted is opened through the
    capture state's real path (``locate_transcript``); the excerpt shows the redacted one.
    """
    entries = get_entries(store, [entry_id])
    if not entries:
        raise NotFound(f"no memory entry has the id {entry_id!r}", "find ids with `om search`")
    entry = entries[0]
    prov = entry["provenance"]
    if prov is None:
        entry["excerpt"] = {
            "path": None,
            "line_start": None,
            "line_end": None,
            "lines": [],
            "truncated": False,
            "note": f"{entry['kind']} entries have no transcript source recorded",
        }
        return entry
    # Imported here: only showing a source needs the capture state, not every search.
    from obsmem.sources.state import locate_transcript

    byte_start, byte_end = _ledger_bytes(store, entry["id"])
    stored = prov["source_path"]
    found = locate_transcript(store.state_db_path, stored) if stored else []
    if len(found) > 1:
        excerpt = Excerpt(stored, prov["line_start"], prov["line_end"])
        excerpt.note = (
            f"{len(found)} transcripts have the path {stored} once their secrets are redacted; "
            "lines are not shown"
        )
    else:
        excerpt = read_excerpt(
            stored,
            prov["line_start"],
            prov["line_end"],
            byte_start=byte_start,
            byte_end=byte_end,
            real_path=found[0] if found else None,
        )
    entry["excerpt"] = excerpt.to_dict()
    return entry


def timeline(
    store: MemoryStore,
    *,
    around_date: str | None = None,
    around_id: str | None = None,
    days: int = 3,
    limit: int = 50,
) -> dict[str, Any]:
    """Entries dated within ``days`` of a date (or of an entry's date), in time order.

    Returns ``{"anchor_date", "since", "until", "entries", "truncated"}``. When the window holds
    more than ``limit`` entries, the ``limit`` nearest the anchor (the entry, or the start of the
    anchor date) are kept. With neither anchor, the window is around today.
    """
    if around_date and around_id:
        raise UsageError("give a date or an id to center the timeline on, not both")
    if not 0 <= days <= 366:
        raise UsageError(f"days must be between 0 and 366, not {days}")
    if not 1 <= limit <= 1000:
        raise UsageError(f"limit must be between 1 and 1000, not {limit}")
    if around_id:
        found = [e for e in get_entries(store, [around_id]) if e["date"]]
        if not found:
            raise NotFound(f"no dated memory entry has the id {around_id!r}")
        anchor = str(found[0]["date"])
    else:
        anchor = _check_date(around_date, "date") or Date.today().isoformat()
    center = Date.fromisoformat(anchor)
    since = (center - timedelta(days=days)).isoformat()
    until = (center + timedelta(days=days)).isoformat()
    sql = (
        f"SELECT {_SELECT} FROM entries AS e WHERE e.date >= ? AND e.date <= ? "
        "ORDER BY e.date, COALESCE(e.time, ''), e.file, e.line LIMIT ?"
    )
    entries: list[dict[str, Any]] = []
    if store.home.is_dir():
        rows = _read(store, lambda conn: conn.execute(sql, (since, until, _WINDOW_ROWS)).fetchall())
        entries = [_entry(row) for row in rows]
    truncated = len(entries) > limit
    if truncated:
        if around_id:
            pivot = next((i for i, e in enumerate(entries) if e["id"] == around_id), 0)
        else:
            pivot = next((i for i, e in enumerate(entries) if e["date"] >= anchor), len(entries))
        start = max(0, min(pivot - limit // 2, len(entries) - limit))
        entries = entries[start : start + limit]
    return {
        "anchor_date": anchor,
        "since": since,
        "until": until,
        "entries": entries,
        "truncated": truncated,
    }

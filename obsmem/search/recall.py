"""Citations and recall: full entries by id, the source excerpt, timelines, filtered search.

Everything here reads the index (refreshed first, like ``search``), so what it returns always
matches the markdown on disk. Each entry is a JSON-ready dict carrying its citation: the id, the
memory file and line (``citation``: ``observations.md:12``), its date, and, for observations the
ledger knows, the provenance back to the transcript (path, line range, session, agent, project).
These dicts are what ``om show --json`` prints and what the MCP tools return.

``search_entries`` is ``search`` (``bm25.search_rows``: hybrid when a model loads, BM25
otherwise) with filters, returning these dicts. A long-lived process passes a ``KeptIndex`` so
that its searches share one connection and, with it, the in-process vector cache.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date as Date
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from obsmem.errors import IndexError_, NotFound, UsageError
from obsmem.index.db import open_index, using_index
from obsmem.index.sync import refresh as refresh_index
from obsmem.memory.model import OBSERVATION_TYPES
from obsmem.memory.store import MemoryStore
from obsmem.search.bm25 import ENTRY_COLUMNS, search_rows
from obsmem.search.excerpt import Excerpt, read_excerpt
from obsmem.settings import Settings

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

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

T = TypeVar("T")

# The order of an entry's keys in the public dict (the columns are read as search reads them).
_COLUMNS = (
    "id", "kind", "file", "line", "line_end", "date", "time", "priority", "type", "confidence",
    "importance", "referenced_date", "section", "text", "source_path", "source_line_start",
    "source_line_end", "session", "agent", "project",
)  # fmt: skip
_SELECT = ", ".join(f"e.{name}" for name in ENTRY_COLUMNS)


def _entry(row: Sequence[Any]) -> dict[str, Any]:
    """An ``entries`` row (``ENTRY_COLUMNS``) as the public dict, with citation and provenance."""
    read = dict(zip(ENTRY_COLUMNS, row, strict=True))
    data = {name: read[name] for name in _COLUMNS}
    source = data.pop("source_path")
    start, end = data.pop("source_line_start"), data.pop("source_line_end")
    session, agent, project = data.pop("session"), data.pop("agent"), data.pop("project")
    data["citation"] = (
        f"{data['file']}:{data['line']}" if data["line"] is not None else data["file"]
    )
    data["provenance"] = (
        None
        if source is None
        else {
            "source_path": source or None,  # "" marks an entry added explicitly (remember)
            "line_start": start,
            "line_end": end,
            "session": session,
            "agent": agent,
            "project": project,
        }
    )
    return data


def _check_date(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not _DATE.fullmatch(value):
        raise UsageError(f"{name} {value!r} is not a date", "give it as YYYY-MM-DD")
    try:
        Date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{name} {value!r} is not a real date", "give it as YYYY-MM-DD") from None
    return value


@dataclass(frozen=True)
class Filters:
    """Conditions an entry must meet; None means "any". Dates are ``YYYY-MM-DD``, inclusive.

    ``project`` and ``agent`` come from provenance, so they only match observations whose source
    is known; ``type`` and ``min_importance`` only match entries that carry them.
    """

    since: str | None = None
    until: str | None = None
    type: str | None = None
    min_importance: float | None = None
    project: str | None = None
    agent: str | None = None

    def validated(self) -> Filters:
        """Self, after checking every value; raises ``UsageError`` naming the bad one."""
        _check_date(self.since, "since")
        _check_date(self.until, "until")
        if self.type is not None and self.type not in OBSERVATION_TYPES:
            raise UsageError(
                f"unknown type {self.type!r}", f"use one of {', '.join(OBSERVATION_TYPES)}"
            )
        if self.min_importance is not None and not 0.0 <= self.min_importance <= 1.0:
            raise UsageError("min_importance must be between 0 and 1")
        for name in ("project", "agent"):
            value = getattr(self, name)
            try:
                (value or "").encode("utf-8")
            except UnicodeEncodeError:
                # A command-line argument in bytes that are not UTF-8: no entry can match it,
                # and SQLite cannot even be asked.
                raise UsageError(
                    f"the {name} {value!r} is not valid UTF-8 text", "type the name again"
                ) from None
        return self

    def is_empty(self) -> bool:
        """True when no condition is set."""
        return all(value in (None, "") for value in self.__dict__.values())

    def sql(self) -> tuple[str, list[object]]:
        """A ``WHERE``-ready condition over ``entries AS e`` and its parameters (``1`` if empty)."""
        parts: list[str] = []
        params: list[object] = []
        for column, op, value in (
            ("date", ">=", self.since),
            ("date", "<=", self.until),
            ("type", "=", self.type),
            ("importance", ">=", self.min_importance),
            ("project", "=", self.project),
            ("agent", "=", self.agent),
        ):
            if value not in (None, ""):
                parts.append(f"e.{column} {op} ?")
                params.append(value)
        return (" AND ".join(parts) or "1"), params


def _read(store: MemoryStore, work: Any) -> Any:
    """Run ``work(conn)`` on a refreshed index; an absent memory directory reads as empty."""

    def run(conn: sqlite3.Connection) -> Any:
        refresh_index(store, conn)
        return work(conn)

    return using_index(store.index_path, run)


def search_entries(
    store: MemoryStore,
    query: str,
    *,
    filters: Filters | None = None,
    limit: int = 10,
    settings: Settings | None = None,
    index: KeptIndex | None = None,
    kinds: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """``search`` restricted by ``filters``: entry dicts with ``rank`` and ``score``, best first.

    The same search as ``om search`` (hybrid when a model loads, BM25 otherwise; ``settings``
    are read from the environment when None), with the conditions applied inside the query to
    the keyword and the vector candidates alike (not to a cut list of hits), so a filter never
    hides a match that ranked below unrelated entries and never lets in one that fails it.
    ``index`` runs the search on a connection kept between calls. ``kinds`` keeps only entries
    of those index kinds (``observation``, ``archive``, ``reflection``, ...).
    """
    filters = (filters or Filters()).validated()
    where = None if filters.is_empty() else filters.sql()
    if kinds is not None:
        condition, params = where or ("1", [])
        marks = ", ".join("?" for _ in kinds)
        where = (f"({condition}) AND e.kind IN ({marks})", [*params, *kinds])
    rows = search_rows(store, query, limit=limit, settings=settings, where=where, index=index)
    out: list[dict[str, Any]] = []
    for rank, (row, score) in enumerate(rows, start=1):
        entry = _entry(row[1:-1])
        entry["rank"], entry["score"] = rank, score
        out.append(entry)
    return out


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

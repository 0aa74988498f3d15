"""Browsing memory a page at a time, newest first: what the viewer's timeline reads.

A timeline over 100,000 observations must open as fast as one over 100, so pages are cut with
keyset pagination over the index rather than with ``OFFSET`` or by parsing markdown: each page
ends with a cursor (the last entry's date and index row), and the next page asks for the rows
that sort before it. ``entries_date`` (``date``, then the row id SQLite keeps in every index)
serves both the order and the bound, so a deep page costs what the first one costs.

Within a day, entries come in reverse index order: the index stores a file's lines in file
order, and the store keeps each day's observations in time order, so that is newest first too.
A cursor stays valid while the memory changes; a file reindexed meanwhile (a forget, an edit)
gets new row ids, so a page taken across such a change may repeat or skip a few lines of the
day it was cut in, never more.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from obsmem.errors import UsageError
from obsmem.index.db import using_index
from obsmem.index.sync import refresh as refresh_index
from obsmem.memory.model import PRIORITIES
from obsmem.search.bm25 import ENTRY_COLUMNS
from obsmem.search.entries import SELECT, Filters, entry_dict
from obsmem.search.mixed import KIND_GROUPS

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from obsmem.memory.store import MemoryStore
    from obsmem.search.recall import KeptIndex

__all__ = ["OBSERVATION_KINDS", "PRIORITY_NAMES", "BrowsePage", "browse", "facets"]

#: The index kinds of observation lines (``observations.md`` and the archived months).
OBSERVATION_KINDS: tuple[str, ...] = KIND_GROUPS["observation"]
#: Priority names (as filters take them) -> the emoji the markdown and the index hold.
PRIORITY_NAMES: dict[str, str] = {name: emoji for emoji, name in PRIORITIES.items()}
#: Most entries one page holds.
MAX_PAGE = 500

_DATE_COLUMN = ENTRY_COLUMNS.index("date")
#: ``facets`` answers on kept connections: (index path, kinds) -> (index version, answer).
_FACETS: dict[tuple[str, tuple[str, ...]], tuple[tuple[int, int, int], dict[str, list[str]]]] = {}
_CURSOR = re.compile(r"^(\d{4}-\d{2}-\d{2})\.(\d{1,18})$")


@dataclass
class BrowsePage:
    """One page of entries, newest first; ``next_cursor`` asks for the page after (None: last)."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    next_cursor: str | None = None


def _cursor(value: str | None) -> tuple[str, int] | None:
    if not value:
        return None
    match = _CURSOR.fullmatch(value)
    if match is None:
        raise UsageError(f"the page cursor {value!r} is not one om made", "start from page one")
    return match.group(1), int(match.group(2))


def _where(
    filters: Filters, priority: str | None, kinds: Sequence[str]
) -> tuple[list[str], list[object]]:
    condition, params = filters.sql()
    parts = [condition, "e.date IS NOT NULL"]
    parts.append(f"e.kind IN ({', '.join('?' for _ in kinds)})")
    params = [*params, *kinds]
    if priority:
        if priority not in PRIORITY_NAMES:
            raise UsageError(
                f"unknown priority {priority!r}", f"use one of {', '.join(PRIORITY_NAMES)}"
            )
        parts.append("e.priority = ?")
        params.append(PRIORITY_NAMES[priority])
    return parts, params


def browse(
    store: MemoryStore,
    *,
    filters: Filters | None = None,
    priority: str | None = None,
    kinds: Sequence[str] = OBSERVATION_KINDS,
    cursor: str | None = None,
    limit: int = 50,
    index: KeptIndex | None = None,
) -> BrowsePage:
    """A page of dated entries of ``kinds`` meeting ``filters`` (and ``priority``: a name of
    ``PRIORITY_NAMES``), newest first, after ``cursor`` (a previous page's ``next_cursor``).

    The index is brought up to date first, so the page matches the markdown on disk. Raises
    ``UsageError`` for a bad filter, priority, cursor or limit.
    """
    if not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"a page holds 1 to {MAX_PAGE} entries, not {limit}")
    if not kinds:
        raise UsageError("no kind of entry to browse")
    filters = (filters or Filters()).validated()
    parts, params = _where(filters, priority, kinds)
    after = _cursor(cursor)
    if after is not None:
        parts.append("(e.date, e.rowid) < (?, ?)")
        params.extend(after)
    sql = (
        f"SELECT e.rowid, {SELECT} FROM entries AS e WHERE {' AND '.join(parts)} "
        "ORDER BY e.date DESC, e.rowid DESC LIMIT ?"
    )
    params.append(limit + 1)
    if not store.home.is_dir():
        return BrowsePage()

    def work(conn: sqlite3.Connection) -> list[Any]:
        refresh_index(store, conn)
        return conn.execute(sql, params).fetchall()

    rows = index.run(work) if index is not None else using_index(store.index_path, work)
    page = BrowsePage([entry_dict(row[1:]) for row in rows[:limit]])
    if len(rows) > limit:
        last = rows[limit - 1]
        page.next_cursor = f"{last[1 + _DATE_COLUMN]}.{last[0]}"
    return page


def facets(
    store: MemoryStore, *, kinds: Sequence[str] = OBSERVATION_KINDS, index: KeptIndex | None = None
) -> dict[str, list[str]]:
    """The projects, agents and types the entries of ``kinds`` carry, each sorted: the choices a
    filter offers. Reads the index as it is (the page that shows them refreshed it).

    Finding them reads every row (one scan, tens of milliseconds at 100,000 entries), so on a
    kept connection the answer is remembered until the index changes: SQLite's ``data_version``
    moves when another connection commits, ``total_changes`` when this one writes."""
    marks = ", ".join("?" for _ in kinds)
    sql = (
        f"SELECT DISTINCT project, agent, type FROM entries WHERE kind IN ({marks}) "
        "AND (project IS NOT NULL OR agent IS NOT NULL OR type IS NOT NULL)"
    )
    if not store.home.is_dir():
        return {"project": [], "agent": [], "type": []}

    def work(conn: sqlite3.Connection) -> dict[str, list[str]]:
        version = (id(conn), conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        key = (str(store.index_path), tuple(kinds))
        known = _FACETS.get(key)
        if known is not None and known[0] == version:
            return {name: list(values) for name, values in known[1].items()}
        found: dict[str, set[str]] = {"project": set(), "agent": set(), "type": set()}
        for row in conn.execute(sql, list(kinds)):
            for name, value in zip(found, row, strict=True):
                if value:
                    found[name].add(str(value))
        out = {name: sorted(values) for name, values in found.items()}
        if index is not None:
            _FACETS[key] = (version, out)
        return {name: list(values) for name, values in out.items()}

    result: dict[str, list[str]] = (
        index.run(work) if index is not None else using_index(store.index_path, work)
    )
    return result

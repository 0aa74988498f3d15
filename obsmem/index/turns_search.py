"""Searching the kept transcript turns (``om search --raw``, and the turns in every search).

Apart from ``turns.py`` (the store capture writes, with its migrations and locks) so that a
search, often from a cold process, opens the file read-only and imports nothing of capture.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from obsmem.errors import StateError, UsageError
from obsmem.index.query import fts_query

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from obsmem.memory.store import MemoryStore
    from obsmem.search.entries import Filters

__all__ = ["COLUMNS", "query_turns", "search_turns"]

COLUMNS = (
    "role", "timestamp", "date", "text", "source_path", "line_start", "line_end", "session",
    "agent", "project",
)  # fmt: skip
_SELECT = ", ".join(f"e.{name}" for name in COLUMNS)
#: Words of context each side of the match in a hit's ``snippet``.
_SNIPPET_TOKENS = 24


def query_turns(
    conn: sqlite3.Connection, expression: str, where: str, params: Iterable[object], limit: int
) -> list[Any]:
    """Rows matching an FTS5 ``expression`` and a condition over ``turns AS e``, best first:
    ``(bm25, snippet, *COLUMNS)`` each."""
    sql = (
        f"SELECT bm25(turns_fts) AS raw, "
        f"snippet(turns_fts, 0, '', '', ' … ', {_SNIPPET_TOKENS}), {_SELECT} "
        "FROM turns_fts JOIN turns AS e ON e.id = turns_fts.rowid "
        f"WHERE turns_fts MATCH ? AND {where} ORDER BY raw, e.id LIMIT ?"
    )
    return list(conn.execute(sql, [expression, *params, limit]).fetchall())


def _read_only(
    path: Path, expression: str, where: str, params: Iterable[object], limit: int
) -> list[Any] | None:
    """The rows, read without writing anything; [] when nothing was ever stored, None when the
    file must first be opened for writing (a schema to migrate, a journal to recover)."""
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    except sqlite3.Error:
        return None
    try:
        return query_turns(conn, expression, where, params, limit)
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()


def _hit(rank: int, row: Sequence[Any], max_chars: int | None) -> dict[str, Any]:
    data = dict(zip(COLUMNS, row[2:], strict=True))
    text = str(data["text"])
    truncated = max_chars is not None and len(text) > max_chars
    path, start, end = data["source_path"], data["line_start"], data["line_end"]
    return {
        "rank": rank,
        "score": 0.0 - float(row[0]),
        "kind": "turn",
        "role": data["role"],
        "timestamp": data["timestamp"],
        "date": data["date"],
        "citation": f"{path}:{start}" if start == end else f"{path}:{start}-{end}",
        "snippet": " ".join(str(row[1]).split()),
        "text": text[:max_chars] if truncated else text,
        "truncated": truncated,
        "provenance": {
            "source_path": path,
            "line_start": start,
            "line_end": end,
            "session": data["session"],
            "agent": data["agent"],
            "project": data["project"],
        },
    }


def search_turns(
    store: MemoryStore,
    query: str,
    *,
    filters: Filters | None = None,
    limit: int = 10,
    max_chars: int | None = None,
) -> list[dict[str, Any]]:
    """BM25 search over the kept transcript turns: hit dicts, best first, each with its
    transcript path and line range (``citation``, ``provenance``) and a ``snippet``.

    ``filters`` narrow by day (``since``/``until``, the turn's local date), ``project`` and
    ``agent``; turns carry no type or importance, so those filters are refused. ``max_chars``
    cuts each hit's ``text`` (``truncated`` says when it did).
    """
    from obsmem.search.entries import Filters

    filters = (filters or Filters()).validated()
    if filters.type is not None or filters.min_importance is not None:
        raise UsageError(
            "transcript turns have no type or importance",
            "drop --type and --min-importance with --raw",
        )
    if limit < 1:
        raise UsageError(f"the result limit must be at least 1, not {limit}")
    expression = fts_query(query)
    if expression is None:
        return []
    # The turns table names its columns as the index does (date, project, agent), so the same
    # conditions apply; type and importance were refused above.
    where, params = filters.sql()
    try:
        rows = _read_only(store.turns_path, expression, where, params, limit)
        if rows is None:
            # Not readable as it is (an older schema to migrate, a journal to recover): open it
            # the way capture does, which brings it up to date first.
            from obsmem.index.turns import TurnStore

            with TurnStore(store.turns_path) as turns:
                rows = turns.search(expression, where=where, params=params, limit=limit)
    except sqlite3.DatabaseError as exc:
        raise StateError(
            f"cannot search the transcript turns {store.turns_path}: {exc}",
            "move the file away if it is damaged (the turns kept so far are then forgotten)",
        ) from None
    return [_hit(rank, row, max_chars) for rank, row in enumerate(rows, start=1)]

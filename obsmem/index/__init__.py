"""The search index: SQLite FTS5 derived from the markdown memory and the provenance ledger.

Nothing here is a source of truth. The index can be deleted at any time and is rebuilt by the next
search (``refresh``) or by ``om reindex`` (``rebuild``); a damaged database is replaced silently.

- ``open_index(path)``: a connection with the current schema (WAL, busy timeout, self-repair).
- ``refresh(store, conn)``: bring the index up to date; a stat per file when nothing changed.
- ``rebuild(store)``: drop everything and reindex.
- ``index_status(store)``: counts and staleness for ``om status``; ``index_issues`` for doctor.
- ``fts_query(text)``: any user text as a safe FTS5 ``MATCH`` expression (or None).

The names below are loaded on first use, so importing ``obsmem.index.db`` (every search) does
not load ``sync`` and the parsers behind it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from obsmem.index.db import is_corruption, open_index, reset_index, using_index
    from obsmem.index.query import fts_query
    from obsmem.index.schema import SCHEMA_VERSION
    from obsmem.index.sync import (
        FileIssue,
        RefreshReport,
        index_issues,
        index_status,
        rebuild,
        refresh,
    )

_EXPORTS = {
    "is_corruption": "db",
    "open_index": "db",
    "reset_index": "db",
    "using_index": "db",
    "fts_query": "query",
    "SCHEMA_VERSION": "schema",
    "FileIssue": "sync",
    "RefreshReport": "sync",
    "index_issues": "sync",
    "index_status": "sync",
    "rebuild": "sync",
    "refresh": "sync",
}

__all__ = [
    "SCHEMA_VERSION",
    "FileIssue",
    "RefreshReport",
    "fts_query",
    "index_issues",
    "index_status",
    "is_corruption",
    "open_index",
    "rebuild",
    "refresh",
    "reset_index",
    "using_index",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'obsmem.index' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"obsmem.index.{module}"), name)
    globals()[name] = value
    return value

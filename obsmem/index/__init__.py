"""The search index: SQLite FTS5 derived from the markdown memory and the provenance ledger.

Nothing here is a source of truth. The index can be deleted at any time and is rebuilt by the next
search (``refresh``) or by ``om reindex`` (``rebuild``); a damaged database is replaced silently.

- ``open_index(path)``: a connection with the current schema (WAL, busy timeout, self-repair).
- ``refresh(store, conn)``: bring the index up to date; a stat per file when nothing changed.
- ``rebuild(store)``: drop everything and reindex.
- ``index_status(store)``: counts and staleness for ``om status``; ``index_issues`` for doctor.
- ``fts_query(text)``: any user text as a safe FTS5 ``MATCH`` expression (or None).
"""

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

"""Removing forgotten text from the search index's file, not only from its results.

SQLite leaves a deleted row's bytes in free pages and a full-text delete only marks postings
dead, so after ``om forget`` rewrote the memory files the index is refreshed with
``secure_delete`` on, the vectors of texts no entry holds any more are deleted, the full-text
segments merged, and the write-ahead log checkpointed.
"""

from __future__ import annotations

import sqlite3

from obsmem.index.sync import RefreshReport, refresh
from obsmem.memory.store import MemoryStore
from obsmem.search.vectors import embed_text, text_hash

__all__ = ["scrub_index"]


def scrub_index(
    store: MemoryStore, conn: sqlite3.Connection, ids: set[str], changed: int
) -> tuple[int, int]:
    """Bring the index up to date with the rewritten files, so that the removed text is gone
    from its file, not only from its results; return (entries removed, vectors removed)."""
    marks = ", ".join("?" for _ in ids) or "NULL"
    select = f"SELECT section, text FROM entries WHERE id IN ({marks})"
    before = conn.execute(select, sorted(ids)).fetchall()
    # Deleted rows are overwritten with zeros rather than left in free pages.
    conn.execute("PRAGMA secure_delete = ON")
    done: RefreshReport = refresh(store, conn)
    after = conn.execute(select, sorted(ids)).fetchall()
    texts = {(section, text) for section, text in before} - {(s, t) for s, t in after}
    hashes = {text_hash(embed_text(section, str(text))) for section, text in texts}
    still = {
        text_hash(embed_text(section, str(text)))
        for section, text in conn.execute(
            f"SELECT section, text FROM entries WHERE text IN ({', '.join('?' for _ in texts)})",
            [t for _, t in texts],
        )
    } if texts else set()  # fmt: skip
    gone = sorted(hashes - still)
    vectors = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        for digest in gone:
            vectors += conn.execute("DELETE FROM vectors WHERE hash = ?", (digest,)).rowcount
        # A delete only marks full-text postings dead; merging the segments drops the words.
        conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if done.files_indexed + done.files_removed < changed:
        # Another process indexed the new files first, on a connection that left the old rows
        # in free pages: copy the database into clean pages.
        conn.execute("VACUUM")
    # Old page images stay in the write-ahead log until it is checkpointed.
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return len(before) - len(after), vectors

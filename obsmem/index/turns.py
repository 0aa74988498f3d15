"""The transcript turns themselves, kept for exact recall of what was said (``om search --raw``).

Observations say what mattered; sometimes the exact words are wanted (the error message, the
command, the number someone gave). The capture stage hands every turn it reads to ``TurnStore``
before the file's cursor may move, so a turn is kept exactly when it was read. Only what capture
produced is stored: text already redacted and bounded by ``read_pending``, never raw input.

The turns live in their own SQLite file (``paths.turns_path()``): they are not derived from the
markdown, so the index's rebuilds (``om reindex``, repairs) never touch them, and deleting the
file forgets them. A turn is identified by its transcript, its first line and its place among the
turns that start on that line (one record can hold a message and a tool call), so reading the same
bytes again stores nothing twice. A transcript that was replaced (rewritten from its start) has its
old turns dropped before the new ones go in, so line numbers always point into the file as it is.

``OM_RAW_TURNS=off`` keeps capture from storing any; what is already stored stays searchable until
the file is deleted.

``om forget`` removes the turns an observation came from and those holding every word of its
query (``overlapping``, ``holding``, then ``remove``), and records their line ranges, never their
text, in ``forgotten``: reading the transcript again later (a replaced file, a reset cursor)
stores nothing in a forgotten range, so the words do not come back. (A copy of the transcript at
another path is caught earlier, by the hashes of the forgotten texts: ``memory.ledger``.)
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from obsmem.errors import StateError
from obsmem.index.turns_search import query_turns, search_turns
from obsmem.memory.atomic import ensure_dir
from obsmem.sources.model import Turn
from obsmem.sources.state import (
    immediate_transaction,
    open_hint,
    retry_locked,
    writable_companions,
)

if TYPE_CHECKING:
    pass

__all__ = ["KeptTurn", "TurnStore", "search_turns"]

#: Migrations, each a list of statements (``executescript`` would commit the open transaction).
_SCHEMA: list[tuple[str, ...]] = [
    (
        """
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY,
        source_path TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        part INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        role TEXT NOT NULL,
        timestamp TEXT,
        date TEXT,
        session TEXT,
        agent TEXT NOT NULL,
        project TEXT,
        text TEXT NOT NULL,
        UNIQUE (source_path, line_start, part)
    )""",
        "CREATE INDEX turns_date ON turns (date)",
        """
    CREATE VIRTUAL TABLE turns_fts USING fts5(
        text, content='turns', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    )""",
        """
    CREATE TRIGGER turns_added AFTER INSERT ON turns BEGIN
        INSERT INTO turns_fts (rowid, text) VALUES (new.id, new.text);
    END""",
        """
    CREATE TRIGGER turns_removed AFTER DELETE ON turns BEGIN
        INSERT INTO turns_fts (turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
    ),
    # Line ranges of transcripts whose turns ``om forget`` removed: never stored again.
    (
        """
    CREATE TABLE forgotten (
        source_path TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        UNIQUE (source_path, line_start, line_end)
    )""",
    ),
]

# ``date`` is the local date of the turn, as observations are dated, so --since and --until mean
# the same days for both; SQLite reads the trailing Z of the readers' UTC timestamps.
_INSERT = (
    "INSERT OR IGNORE INTO turns (source_path, line_start, part, line_end, role, timestamp, date, "
    "session, agent, project, text) VALUES (?, ?, ?, ?, ?, ?, date(?, 'localtime'), ?, ?, ?, ?)"
)


@dataclass(frozen=True)
class KeptTurn:
    """One stored turn, as ``om forget`` plans its removal (``source_path``, ``line_start`` and
    ``part`` name it)."""

    source_path: str
    line_start: int
    part: int
    line_end: int
    role: str
    date: str | None
    session: str | None
    text: str

    @property
    def key(self) -> tuple[str, int, int]:
        """What names the turn in the store."""
        return (self.source_path, self.line_start, self.part)


_KEPT = "source_path, line_start, part, line_end, role, date, session, text"


def _kept(rows: Iterable[Sequence[object]]) -> list[KeptTurn]:
    out: dict[tuple[str, int, int], KeptTurn] = {}
    for row in rows:
        path, start, part, end, role, day, session, text = row
        turn = KeptTurn(str(path), int(str(start)), int(str(part)), int(str(end)), str(role),
                        None if day is None else str(day),
                        None if session is None else str(session), str(text))  # fmt: skip
        out.setdefault(turn.key, turn)
    return sorted(out.values(), key=lambda t: t.key)


def _quoted(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


class TurnStore:
    """The turns database; the connection is opened on first use, so holding one costs nothing
    until a turn is stored or searched."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> TurnStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection if one was opened."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection, with the current schema (created and migrated on first use)."""
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        ensure_dir(self.path.parent)
        writable_companions(self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA busy_timeout = 30000")
            retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
            # A stored turn must survive a crash once the cursor has moved past it.
            conn.execute("PRAGMA synchronous = FULL")
            if _version(conn) < len(_SCHEMA):
                # Checked again under the write lock: another process may have just done it.
                with immediate_transaction(conn):
                    version = _version(conn)
                    for number, statements in enumerate(_SCHEMA[version:], start=version + 1):
                        for statement in statements:
                            conn.execute(statement)
                        conn.execute(f"PRAGMA user_version = {number}")
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"cannot open the transcript turns {self.path}: {exc}",
                open_hint(
                    exc,
                    self.path,
                    "the turns kept so far are then forgotten; new ones are kept again; or set "
                    "OM_RAW_TURNS=off",
                ),
            ) from None
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o600)
        return conn

    def add(self, turns: Sequence[Turn], *, replaced: str | None = None) -> int:
        """Store ``turns`` (one file's, as read); returns how many were new.

        ``replaced`` names a transcript read again from its start because it was replaced: its
        old turns are dropped first, in the same transaction. Turns already stored are skipped.
        """
        parts: dict[tuple[str, int], int] = {}
        rows = []
        gone = self._forgotten_ranges({turn.source_path for turn in turns})
        for turn in turns:
            key = (turn.source_path, turn.line_start)
            parts[key] = part = parts.get(key, -1) + 1
            if _overlaps(gone.get(turn.source_path, ()), turn.line_start, turn.line_end):
                continue  # forgotten: its words must not come back when the file is read again
            rows.append(
                (turn.source_path, turn.line_start, part, turn.line_end, turn.role,
                 turn.timestamp, turn.timestamp, turn.session, turn.agent, turn.project,
                 turn.text)
            )  # fmt: skip
        if not rows and replaced is None:
            return 0
        try:
            with immediate_transaction(self.conn) as conn:
                if replaced is not None:
                    conn.execute("DELETE FROM turns WHERE source_path = ?", (replaced,))
                # rowcount sums the rows really inserted (ignored ones and triggers do not count).
                return max(0, conn.executemany(_INSERT, rows).rowcount)
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"cannot store transcript turns in {self.path}: {exc}",
                "check the disk and the file's permissions; the transcript stays unread",
            ) from None

    def count(self) -> int:
        """How many turns are stored (0 when the file does not exist)."""
        if self._conn is None and not self.path.exists():
            return 0
        return int(self.conn.execute("SELECT count(*) FROM turns").fetchone()[0])

    def search(
        self, expression: str, *, where: str = "1", params: Iterable[object] = (), limit: int = 10
    ) -> list[sqlite3.Row]:
        """Rows matching an FTS5 ``expression`` and a condition over ``turns AS e``, best first.

        Each row is ``(bm25, snippet, *COLUMNS)``. Nothing stored (no file) gives no rows.
        """
        if self._conn is None and not self.path.exists():
            return []
        return query_turns(self.conn, expression, where, params, limit)

    def _forgotten_ranges(self, paths: set[str]) -> dict[str, list[tuple[int, int]]]:
        """The forgotten line ranges of these transcripts (none when nothing was ever forgotten)."""
        if not paths:
            return {}
        out: dict[str, list[tuple[int, int]]] = {}
        marks = ", ".join("?" for _ in paths)
        sql = (
            "SELECT source_path, line_start, line_end FROM forgotten "
            f"WHERE source_path IN ({marks})"
        )
        for path, start, end in self.conn.execute(sql, sorted(paths)):
            out.setdefault(str(path), []).append((int(start), int(end)))
        return out

    def _exists(self) -> bool:
        return self._conn is not None or self.path.exists()

    def overlapping(self, ranges: Iterable[tuple[str, int, int]]) -> list[KeptTurn]:
        """The stored turns overlapping each ``(transcript, first line, last line)``."""
        wanted = sorted(set(ranges))
        if not wanted or not self._exists():
            return []
        sql = (
            f"SELECT {_KEPT} FROM turns WHERE source_path = ? AND line_start <= ? AND line_end >= ?"
        )
        return _kept(
            row for path, start, end in wanted for row in self.conn.execute(sql, (path, end, start))
        )

    def holding(self, tokens: Sequence[str]) -> list[KeptTurn]:
        """The stored turns that may hold every one of ``tokens``: each token found as a word's
        start or its stem. The caller applies its own exact rule to these candidates."""
        if not tokens or not self._exists():
            return []
        expression = " AND ".join(f"({_quoted(t)}* OR {_quoted(t)})" for t in tokens)
        sql = (
            f"SELECT {', '.join('e.' + c for c in _KEPT.split(', '))} "
            "FROM turns_fts JOIN turns AS e ON e.id = turns_fts.rowid WHERE turns_fts MATCH ?"
        )
        try:
            return _kept(self.conn.execute(sql, (expression,)))
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"cannot search the transcript turns {self.path}: {exc}",
                "move the file away if it is damaged (the turns kept so far are then forgotten)",
            ) from None

    def forget(self, ranges: Iterable[tuple[str, int, int]], *, dry_run: bool = False) -> int:
        """Delete the turns overlapping each ``(transcript, first line, last line)`` and remember
        the ranges so a later read does not store them again; return how many turns went
        (``dry_run``: would go)."""
        wanted = sorted(set(ranges))
        if not wanted or not self._exists():
            return 0
        found = self.overlapping(wanted)
        return len(found) if dry_run else self.remove(found, ranges=wanted)

    def remove(
        self, turns: Sequence[KeptTurn], *, ranges: Iterable[tuple[str, int, int]] = ()
    ) -> int:
        """Delete ``turns`` and remember their line ranges (and ``ranges``) as forgotten, so a
        later read of those lines stores nothing; return how many turns went.

        The deleted text is overwritten (``secure_delete``) and the full-text index merged, so
        the words are gone from the file and not only hidden.
        """
        spans = sorted({*ranges, *((t.source_path, t.line_start, t.line_end) for t in turns)})
        if not spans or not self._exists():
            return 0
        try:
            conn = self.conn
            conn.execute("PRAGMA secure_delete = ON")
            with immediate_transaction(conn):
                removed = 0
                for turn in turns:
                    removed += conn.execute(
                        "DELETE FROM turns WHERE source_path = ? AND line_start = ? AND part = ?",
                        turn.key,
                    ).rowcount
                conn.executemany(
                    "INSERT OR IGNORE INTO forgotten (source_path, line_start, line_end) "
                    "VALUES (?, ?, ?)",
                    spans,
                )
                if removed:
                    # A delete only marks postings dead; merging the segments drops the words.
                    conn.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")
            with contextlib.suppress(sqlite3.DatabaseError):
                # Old page images stay in the write-ahead log until it is checkpointed.
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"cannot forget transcript turns in {self.path}: {exc}",
                "check the disk and the file's permissions, then run the command again",
            ) from None
        return removed


def _overlaps(ranges: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(first <= end and last >= start for first, last in ranges)


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])

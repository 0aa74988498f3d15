"""Capture state: a cursor per transcript file, and leases that keep concurrent observers apart.

State lives in its own SQLite database (``paths.state_db_path()``), not in the index: the index is
derived and may be deleted at any time, the cursors may not.

A cursor is a byte offset that only ever ends just after a complete line, with the file's
identity (device, inode), the size and mtime it had, and two hashes: of its first bytes, and of
the content up to the cursor (every byte up to 64 KB; beyond, the first and last 16 KB and evenly
spaced samples). A file that shrank below the cursor or whose first bytes differ was replaced: it
is read again from the start. A file with a new inode (an atomic save, a sync client, a restore)
is the same transcript when its content up to the cursor is the same, and keeps its cursor;
otherwise it too is read from the start. A cursor moves only through ``advance``, which the
capture run calls after what the bytes produced is durably in memory, and only while its caller
holds the file's lease.

The cursors are keyed by a file's real path, the one that opens it, even when a secret in it
(a folder named after a working directory) is redacted everywhere else: provenance, the index
and the turn store keep the redacted path, and :func:`locate_transcript` finds the real file
again from that.

A lease is a row naming the run that is working on a file. ``claim`` takes it (and returns the
cursor as of that moment) or refuses when another live run holds it; it expires after its time to
live, or at once when its holder's process is gone, so a killed run blocks nobody for long.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from obsmem.errors import StateError, sqlite_hint
from obsmem.memory.atomic import ensure_dir
from obsmem.redact.paths import redact_path

__all__ = [
    "HEAD_BYTES",
    "CaptureState",
    "Cursor",
    "content_hash",
    "head_hash",
    "identity",
    "immediate_transaction",
    "locate_transcript",
    "new_owner",
    "open_hint",
    "retry_locked",
    "same_transcript",
    "writable_companions",
]

#: How many leading bytes of a file identify it (compared when the file changed).
HEAD_BYTES = 1024
DEFAULT_LEASE_SECONDS = 900.0

_SCHEMA = [
    """
    CREATE TABLE cursors (
        path TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        dev INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        line INTEGER NOT NULL,
        head TEXT NOT NULL,
        last_turn_at TEXT,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE leases (
        path TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    # A cursor move recorded before memory is written and made real after it (``intend``): a
    # run killed in between leaves its intent here, and the next claim settles it (``settle``).
    """
    CREATE TABLE intents (
        path TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        dev INTEGER NOT NULL,
        ino INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        line INTEGER NOT NULL,
        head TEXT NOT NULL,
        last_turn_at TEXT,
        ids TEXT NOT NULL
    );
    """,
]
_CURSOR_UPSERT = (
    "INSERT INTO cursors (path, agent, dev, ino, size, mtime_ns, offset, line, head, "
    "last_turn_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(path) DO UPDATE SET agent = excluded.agent, dev = excluded.dev, "
    "ino = excluded.ino, size = excluded.size, mtime_ns = excluded.mtime_ns, "
    "offset = excluded.offset, line = excluded.line, head = excluded.head, "
    "last_turn_at = COALESCE(excluded.last_turn_at, cursors.last_turn_at), "
    "updated_at = excluded.updated_at"
)


@dataclass(frozen=True)
class Cursor:
    """Where reading a transcript stopped, and what the file looked like then."""

    path: str
    agent: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    offset: int
    line: int
    head: str
    last_turn_at: str | None = None

    def unchanged(self, st: os.stat_result) -> bool:
        """True when the file is exactly as it was when the cursor last moved: nothing to read."""
        return (
            st.st_ino == self.ino
            and st.st_dev == self.dev
            and st.st_size == self.size
            and st.st_mtime_ns == self.mtime_ns
        )


def head_hash(path: Path, length: int) -> str:
    """A hash of the first ``min(length, HEAD_BYTES)`` bytes of ``path`` ('' when unreadable)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(min(length, HEAD_BYTES))
    except OSError:
        return ""
    return hashlib.blake2b(data, digest_size=12).hexdigest()


#: Up to this offset the content hash covers every byte; beyond, the ends and samples.
CONTENT_FULL = 64 * 1024
_CONTENT_END = 16 * 1024
_SAMPLES, _SAMPLE = 32, 512


def content_hash(path: Path, offset: int) -> str:
    """A hash of ``path``'s content up to ``offset`` ('' when unreadable or shorter): every
    byte up to ``CONTENT_FULL``; beyond, the first and last 16 KB and 32 evenly spaced 512-byte
    samples, so a long transcript costs a few small reads, not a read of all of it."""
    digest = hashlib.blake2b(str(offset).encode(), digest_size=12)
    try:
        with path.open("rb") as handle:
            fd = handle.fileno()
            if offset <= CONTENT_FULL:
                spans = [(0, offset)]
            else:
                step = (offset - 2 * _CONTENT_END) // (_SAMPLES + 1)
                middle = [(_CONTENT_END + step * (k + 1), _SAMPLE) for k in range(_SAMPLES)]
                spans = [(0, _CONTENT_END), *middle, (offset - _CONTENT_END, _CONTENT_END)]
            for start, length in spans:
                data = os.pread(fd, length, start)
                if len(data) < length:
                    return ""
                digest.update(data)
    except OSError:
        return ""
    return digest.hexdigest()


def identity(path: Path, offset: int) -> str:
    """What a cursor keeps to recognise its file: ``head:content`` hashes."""
    return f"{head_hash(path, offset)}:{content_hash(path, offset)}"


def same_transcript(path: Path, st: os.stat_result, cursor: Cursor) -> bool:
    """Whether ``path`` (stat ``st``) still holds, up to the cursor, what the cursor read."""
    if st.st_size < cursor.offset:
        return False
    head, _, content = cursor.head.partition(":")
    if head_hash(path, cursor.offset) != head:
        return False
    if st.st_ino == cursor.ino and st.st_dev == cursor.dev:
        return True
    # A new inode: the same transcript only when the content matches (a cursor written before
    # content hashes were kept has none, and the file is read again as before).
    return bool(content) and content_hash(path, cursor.offset) == content


def new_owner() -> str:
    """A unique name for one capture run: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def retry_locked(step: Callable[[], object]) -> None:
    """Run ``step``, retrying for up to 30 s while SQLite says the database is locked.

    Switching to WAL (and beginning a write) fails at once, with no busy wait, while another
    process opens the file.
    """
    deadline = time.monotonic() + 30.0
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction on an autocommit connection: committed on success,
    rolled back on error."""
    retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _hold(conn: sqlite3.Connection, owner: str, path: Path) -> None:
    """Raise ``StateError`` unless ``owner`` holds the lease on ``path`` (inside a transaction)."""
    holder = conn.execute("SELECT owner FROM leases WHERE path = ?", (str(path),)).fetchone()
    if holder is None or holder[0] != owner:
        raise StateError(
            f"lost the lease on {redact_path(str(path))} before its cursor could move",
            "another om observe took it over; it will read those lines again",
        )


def writable_companions(db_path: Path) -> None:
    """Give SQLite's ``-wal`` and ``-shm`` files beside ``db_path`` back their write bit.

    SQLite creates them with the database file's mode: a database made read-only for a while
    (``chmod 400``) leaves a 0400 ``-shm`` that keeps every later open failing ("attempt to
    write a readonly database") after the database itself is writable again. They are om's own
    scratch files, so once the database is writable they are made 0600 too.
    """
    try:
        if not db_path.stat().st_mode & 0o200:
            return
        for suffix in ("-wal", "-shm"):
            side = db_path.with_name(db_path.name + suffix)
            with contextlib.suppress(FileNotFoundError):
                if not side.stat().st_mode & 0o200:
                    os.chmod(side, 0o600)
    except OSError:
        return  # the open that follows reports what is wrong


class CaptureState:
    """The cursor and lease tables of one memory directory."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        ensure_dir(db_path.parent)
        writable_companions(db_path)
        try:
            self.conn = sqlite3.connect(db_path, timeout=30.0, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout = 30000")
            retry_locked(lambda: self.conn.execute("PRAGMA journal_mode = WAL"))
            self.conn.execute("PRAGMA synchronous = FULL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"cannot open capture state {db_path}: {exc}",
                open_hint(exc, db_path, "transcripts are then read again and de-duplicated"),
            ) from None
        with contextlib.suppress(OSError):
            os.chmod(db_path, 0o600)

    def _migrate(self) -> None:
        with self.transaction():
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            for number, script in enumerate(_SCHEMA[version:], start=version + 1):
                for statement in script.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number}")

    def close(self) -> None:
        """Close the database connection."""
        self.conn.close()

    def __enter__(self) -> CaptureState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on error."""
        return immediate_transaction(self.conn)

    # -- cursors ------------------------------------------------------------------------------
    def cursors(self) -> dict[str, Cursor]:
        """Every cursor, by path."""
        rows = self.conn.execute(
            "SELECT path, agent, dev, ino, size, mtime_ns, offset, line, head, last_turn_at "
            "FROM cursors"
        ).fetchall()
        return {row[0]: Cursor(*row) for row in rows}

    def cursor(self, path: str) -> Cursor | None:
        """The cursor of one file, or None when it was never read."""
        row = self.conn.execute(
            "SELECT path, agent, dev, ino, size, mtime_ns, offset, line, head, last_turn_at "
            "FROM cursors WHERE path = ?",
            (path,),
        ).fetchone()
        return Cursor(*row) if row else None

    def advance(
        self,
        owner: str,
        path: Path,
        *,
        agent: str,
        offset: int,
        line: int,
        st: os.stat_result,
        last_turn_at: str | None = None,
        size: int | None = None,
    ) -> None:
        """Move a file's cursor to ``offset`` (just after line ``line``); the lease must be held.

        ``size`` is the file size recorded with it (default ``st``'s): a cursor whose size and
        mtime match the file says there is nothing to read, so a move that leaves lines to read
        records ``size=offset``.

        Raises ``StateError`` when the lease was lost (expired and taken by another run): the
        caller must then not assume its bytes are accounted for.
        """
        key = str(path)
        head = identity(path, offset)
        size = st.st_size if size is None else size
        with self.transaction() as conn:
            _hold(conn, owner, path)
            conn.execute(
                _CURSOR_UPSERT,
                (key, agent, st.st_dev, st.st_ino, size, st.st_mtime_ns, offset, line, head,
                 last_turn_at, _now()),
            )  # fmt: skip
            conn.execute("DELETE FROM intents WHERE path = ?", (key,))

    def intend(
        self,
        owner: str,
        path: Path,
        *,
        agent: str,
        offset: int,
        line: int,
        st: os.stat_result,
        last_turn_at: str | None,
        ids: list[str],
    ) -> None:
        """Record the cursor move that will follow writing the observations ``ids`` to memory.

        ``advance`` clears it. A run killed between its memory write and its cursor move leaves
        it behind, and ``settle`` then makes the move, so those lines are not observed again (an
        LLM would word them differently: duplicates that no id catches). The move recorded is a
        checkpoint (``size=offset``): what follows ``offset`` is still to be read.
        """
        key = str(path)
        head = identity(path, offset)
        with self.transaction() as conn:
            _hold(conn, owner, path)
            conn.execute(
                "INSERT OR REPLACE INTO intents (path, agent, dev, ino, size, mtime_ns, offset, "
                "line, head, last_turn_at, ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, agent, st.st_dev, st.st_ino, offset, st.st_mtime_ns, offset, line, head,
                 last_turn_at, json.dumps(ids)),
            )  # fmt: skip

    def settle(self, owner: str, path: Path, durable: Callable[[list[str]], bool]) -> Cursor | None:
        """Finish or drop the cursor move a killed run left for ``path``; return the cursor.

        The move is made when ``durable(ids)`` says its observations are in memory (the run was
        killed after writing them) and dropped otherwise (killed before: the lines are read
        again). The lease must be held.
        """
        key = str(path)
        row = self.conn.execute(
            "SELECT agent, dev, ino, size, mtime_ns, offset, line, head, last_turn_at, ids "
            "FROM intents WHERE path = ?",
            (key,),
        ).fetchone()
        if row is not None:
            written = durable(list(json.loads(row[-1])))
            with self.transaction() as conn:
                _hold(conn, owner, path)
                if written:
                    conn.execute(_CURSOR_UPSERT, (key, *row[:-1], _now()))
                conn.execute("DELETE FROM intents WHERE path = ?", (key,))
        return self.cursor(key)

    def rebind(self, cursor: Cursor, st: os.stat_result) -> None:
        """Give a cursor its file's new identity (same content, new inode), so the next scan
        of an unchanged file is a ``stat`` again. Nothing happens if the cursor moved since."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE cursors SET dev = ?, ino = ?, size = ?, mtime_ns = ?, updated_at = ? "
                "WHERE path = ? AND ino = ? AND dev = ? AND offset = ?",
                (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, _now(), cursor.path,
                 cursor.ino, cursor.dev, cursor.offset),
            )  # fmt: skip

    def forget(self, path: str) -> None:
        """Drop a file's cursor (it will be read again from the start)."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM cursors WHERE path = ?", (path,))
            conn.execute("DELETE FROM intents WHERE path = ?", (path,))

    # -- leases -------------------------------------------------------------------------------
    def claim(
        self, owner: str, path: Path, ttl: float = DEFAULT_LEASE_SECONDS
    ) -> tuple[bool, Cursor | None]:
        """Take the lease on ``path`` for ``owner``; return whether it was taken and the cursor.

        The cursor is read in the same transaction as the claim, so it reflects every run that
        finished with the file before this one got it.
        """
        key = str(path)
        host = socket.gethostname()
        now = time.time()
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT owner, host, pid, expires_at FROM leases WHERE path = ?", (key,)
            ).fetchone()
            if row is not None and row[0] != owner:
                _, holder_host, pid, expires_at = row
                stale = expires_at < now or (holder_host == host and not _pid_alive(int(pid)))
                if not stale:
                    return False, None
            conn.execute(
                "INSERT OR REPLACE INTO leases (path, owner, host, pid, expires_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, owner, host, os.getpid(), now + ttl),
            )
            found = conn.execute(
                "SELECT path, agent, dev, ino, size, mtime_ns, offset, line, head, last_turn_at "
                "FROM cursors WHERE path = ?",
                (key,),
            ).fetchone()
        return True, (Cursor(*found) if found else None)

    def release(self, owner: str, path: Path) -> None:
        """Give back the lease on ``path`` if ``owner`` still holds it."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM leases WHERE path = ? AND owner = ?", (str(path), owner))

    def release_all(self, owner: str) -> None:
        """Give back every lease ``owner`` holds (end of a run, or after an error)."""
        try:
            with self.transaction() as conn:
                conn.execute("DELETE FROM leases WHERE owner = ?", (owner,))
        except sqlite3.Error as exc:
            raise StateError(
                f"cannot write capture state {self.db_path}: {exc}",
                open_hint(exc, self.db_path, "the leases expire on their own"),
            ) from None


def open_hint(exc: sqlite3.Error, db_path: Path, loss: str) -> str:
    """How to fix a database of om's that cannot be opened or written; ``loss`` says what moving
    a damaged one away costs."""
    return sqlite_hint(exc, db_path) or (
        f"run `om doctor`; if the file is damaged, move it away ({loss})"
    )


# What redaction puts in place of a secret; a stored path without one is the real path.
_LABEL = re.compile(r"\[(?:REDACTED|dropped):[^\]]*\]")


def locate_transcript(db_path: Path, stored: str) -> list[str]:
    """The real paths of the transcripts whose stored (redacted) path is ``stored``.

    A path with nothing redacted in it is the real one and comes back as it is, without the
    capture state being read. Otherwise the candidates are the files the capture state has read
    (it keeps real paths): those whose ``redact_path`` is ``stored``. Usually one; none when
    the state does not know the file (deleted, or another machine's); several when paths differ
    only in their secrets.
    """
    pieces = _LABEL.split(stored)
    if len(pieces) == 1:
        return [stored]
    if not db_path.is_file():
        return []
    try:
        conn = sqlite3.connect(db_path, timeout=30.0)
        try:
            known = [str(row[0]) for row in conn.execute("SELECT path FROM cursors")]
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    head, tail = pieces[0], pieces[-1]
    # The text around the labels is kept as it was, so a cheap prefix and suffix test leaves
    # only the few candidates worth redacting.
    return sorted(
        path
        for path in known
        if path.startswith(head) and path.endswith(tail) and redact_path(path) == stored
    )

"""Opening the SQLite search index: WAL, a busy timeout, migrations, and repair by rebuilding.

The index is derived from the markdown and the ledger, so damage is never worth a user's time: a
file that is not a database, a malformed schema, a failing ``PRAGMA quick_check``, missing tables
or a schema written by a newer om all lead to the same answer: delete the database (with its
``-wal`` and ``-shm`` files) and start again empty; the next refresh fills it.

``PRAGMA quick_check`` reads the whole file (tens of milliseconds on a 10 MB index), so an open
runs it only when something looks wrong: a file shorter than the pages its header counts, or when
asked (``check=True``: ``om doctor``). Damage deeper in the file shows up as an SQLite error when
a statement touches it, and ``using_index`` then rebuilds, so skipping the check loses nothing.

Only when a fresh database cannot be created either (permissions, a full disk, a directory in
the way) does ``open_index`` raise ``IndexError_``, whose message says what to do.

Repairs are serialised by a lock file beside the index, and a process that waited for it checks
the database again before deleting anything, so two processes finding the same damage do not
delete each other's freshly rebuilt index.

Connections are in autocommit mode (``isolation_level=None``): ``sync.py`` opens its own
``BEGIN IMMEDIATE`` transactions, which the ``sqlite3`` module's implicit ones would disturb.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from obsmem.errors import IndexError_
from obsmem.index.schema import SchemaTooNew, migrate, missing_tables

__all__ = [
    "BUSY_TIMEOUT_MS",
    "INDEX_SUFFIXES",
    "index_generation",
    "is_corruption",
    "open_index",
    "remove_index_files",
    "reset_index",
    "using_index",
]

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

#: How long a statement waits for another process's write lock before giving up.
BUSY_TIMEOUT_MS = 10_000

#: The files SQLite may keep beside the database; a reset removes them all.
INDEX_SUFFIXES: tuple[str, ...] = ("", "-wal", "-shm", "-journal")

# Result codes (the low byte of extended codes) that mean the file itself is damaged.
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_FULL = 13

_REPAIR_LOCK_TIMEOUT = 60.0


class _Unusable(Exception):
    """The database exists but cannot be trusted; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_corruption(exc: BaseException | None) -> bool:
    """True when an error means the database file is damaged (not busy, not denied).

    ``exc`` is an ``sqlite3`` error, or an ``IndexError_`` raised from one.
    """
    if isinstance(exc, IndexError_):
        exc = exc.__cause__
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def _fatal(path: Path, exc: sqlite3.Error) -> IndexError_:
    """An ``IndexError_`` for a failure that deleting the index would not fix."""
    code = getattr(exc, "sqlite_errorcode", None)
    low = code & 0xFF if isinstance(code, int) else None
    if low in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return IndexError_(
            f"the search index {path} is busy: another om process is updating it",
            "try again in a moment",
        )
    if low == _SQLITE_FULL:
        return IndexError_(
            f"cannot write the search index {path}: disk full", "free some disk space"
        )
    return IndexError_(
        f"cannot use the search index {path}: {exc}",
        f"check that {path.parent} is writable, or set OM_INDEX_PATH to another file",
    )


def _create_private(path: Path) -> None:
    # The index holds the text of every memory: create it 0600 like the memory files (SQLite
    # gives its -wal and -shm files the database file's mode).
    if path.exists():
        return
    from obsmem.memory.atomic import FILE_MODE

    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        os.close(fd)


def _fix_companions(path: Path) -> None:
    """Give a read-only ``-wal`` or ``-shm`` file its write bit back (``writable_companions``).

    That module is imported only when one is found: it brings the redactor with it, which a
    search has no other use for.
    """
    for suffix in ("-wal", "-shm"):
        try:
            mode = os.stat(path.with_name(path.name + suffix)).st_mode
        except OSError:
            continue
        if not mode & 0o200:
            from obsmem.sources.state import writable_companions

            writable_companions(path)
            return


def _ensure_parent(path: Path) -> None:
    if not os.path.isdir(path.parent):
        from obsmem.memory.atomic import ensure_dir

        ensure_dir(path.parent)


def _looks_damaged(conn: sqlite3.Connection, path: Path) -> bool:
    """True when the file is shorter than the pages its header counts (cut short by a full disk
    or a partial copy): a reason to run the full integrity check on this open."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return False
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    wal = path.with_name(path.name + "-wal")
    # Pages still in the WAL are counted by the header before they reach the file.
    return pages * page_size > size and not (os.path.exists(wal) and os.stat(wal).st_size > 0)


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return "locked" in str(exc).lower()


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (a persistent property of the file), waiting out other processes.

    Only a new index is not in WAL yet. Switching needs an exclusive lock, and SQLite reports
    ``database is locked`` at once instead of calling the busy handler when several processes
    open a new index together, so this retries for up to the busy timeout itself.
    """
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _connect(path: Path, *, check: bool) -> sqlite3.Connection:
    """Open, configure, check and migrate; raise ``_Unusable`` for a damaged database."""
    try:
        _create_private(path)
        _fix_companions(path)
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except OSError as exc:
        raise IndexError_(
            f"cannot create the search index {path}: {exc.strerror}",
            f"check that {path.parent} is writable, or set OM_INDEX_PATH to another file",
        ) from None
    except sqlite3.Error as exc:
        raise _fatal(path, exc) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        _enable_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        if check or _looks_damaged(conn, path):
            rows = conn.execute("PRAGMA quick_check").fetchall()
            if [tuple(row) for row in rows] != [("ok",)]:
                raise _Unusable(f"quick_check failed: {rows[0][0] if rows else 'no answer'}")
        migrate(conn)
        missing = missing_tables(conn)
        if missing:
            raise _Unusable(f"missing tables: {', '.join(sorted(missing))}")
    except SchemaTooNew as exc:
        conn.close()
        raise _Unusable(str(exc)) from None
    except _Unusable:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        if is_corruption(exc):
            raise _Unusable(str(exc)) from None
        raise _fatal(path, exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def remove_index_files(path: Path) -> None:
    """Delete the database and the files SQLite keeps beside it; missing ones are fine."""
    for suffix in INDEX_SUFFIXES:
        target = path.with_name(path.name + suffix)
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise IndexError_(
                f"cannot remove the damaged search index {target}: {exc.strerror}",
                f"delete {target} by hand, then run `om reindex`",
            ) from None


def _repair_lock(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def index_generation(path: Path | str) -> str:
    """A token that changes every time the index file at ``path`` is replaced by a repair.

    A process that finds the index damaged remembers it, so that once it holds the repair lock it
    can tell whether the file is still the damaged one or a replacement another process already
    built (inode numbers cannot tell: a new file often reuses the old one's). The token lives in
    the repair lock file and is only written under its lock.
    """
    try:
        return _repair_lock(Path(path)).read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        return ""
    except OSError:
        return "?"


def open_index(path: Path | str, *, check: bool = False) -> sqlite3.Connection:
    """Open (creating or repairing as needed) the search index at ``path``.

    The connection is in autocommit mode, in WAL journal mode with ``synchronous=NORMAL`` and a
    10 s busy timeout, and has the current schema. A damaged database, or one written by a newer
    om, is deleted and recreated empty (refresh it to fill it). ``check=True`` runs
    ``PRAGMA quick_check``, which reads the whole file, even when nothing looks wrong. Raises
    ``IndexError_`` only when a new database cannot be created either.
    """
    path = Path(path)
    _ensure_parent(path)
    try:
        return _connect(path, check=check)
    except _Unusable:
        seen = index_generation(path)
    # Read after the failure: a repair that finished in between is detected on the retry below.
    return reset_index(path, seen, check=check)


def reset_index(path: Path | str, seen: str | None, *, check: bool = False) -> sqlite3.Connection:
    """Replace a damaged index with a new empty one, unless another process already did.

    ``seen`` is the ``index_generation`` read when the damage was found. Callers that meet damage
    after opening (an error while querying, say) close their connection and call this. Repairs
    are serialised by a lock, and the file is deleted only if no repair happened since ``seen``;
    otherwise the replacement is opened (and deleted in turn only if it is damaged too).
    ``seen=None`` deletes whatever is there.
    """
    from obsmem.memory.atomic import memory_lock

    path = Path(path)
    _ensure_parent(path)
    lock = _repair_lock(path)
    with memory_lock(lock, _REPAIR_LOCK_TIMEOUT):
        removed = seen is None or index_generation(path) == seen
        if removed:
            _replace(path, lock)
        try:
            return _connect(path, check=check)
        except _Unusable as exc:
            if removed:
                raise _unrepairable(path, exc.reason) from None
        # The replacement another process made is damaged as well: start from nothing.
        _replace(path, lock)
        try:
            return _connect(path, check=check)
        except _Unusable as exc:
            raise _unrepairable(path, exc.reason) from None


def using_index(
    path: Path | str, work: Callable[[sqlite3.Connection], T], *, check: bool = False
) -> T:
    """Run ``work`` on a connection to the index; if it meets damage, rebuild and run it again.

    Damage that ``open_index`` cannot see (a bad page deep in the file, a broken FTS structure)
    shows up only when a statement touches it. Then the connection is closed, the file replaced
    by an empty database (``reset_index``) and ``work`` runs once more, so a damaged index is
    rebuilt transparently: ``work`` is expected to refresh the index before reading it. Other
    ``sqlite3`` errors become ``IndexError_``. The connection is closed when ``work`` returns.
    """
    path = Path(path)
    conn = open_index(path, check=check)
    generation = index_generation(path)
    try:
        return work(conn)
    except (sqlite3.Error, IndexError_) as exc:
        if not is_corruption(exc):
            if isinstance(exc, sqlite3.Error):
                raise _fatal(path, exc) from exc
            raise
    finally:
        conn.close()
    conn = reset_index(path, generation, check=check)
    try:
        return work(conn)
    except sqlite3.Error as exc:
        raise _fatal(path, exc) from exc
    finally:
        conn.close()


def _replace(path: Path, lock: Path) -> None:
    """Delete the index files and record a new generation (the caller holds the repair lock)."""
    remove_index_files(path)
    try:
        lock.write_text(os.urandom(8).hex() + "\n", encoding="ascii")
    except OSError as exc:
        raise IndexError_(
            f"cannot write {lock}: {exc.strerror}",
            f"check that {path.parent} is writable, or set OM_INDEX_PATH to another file",
        ) from None


def _unrepairable(path: Path, reason: str) -> IndexError_:
    return IndexError_(
        f"cannot rebuild the search index {path}: {reason}",
        f"delete {path} and its -wal and -shm files by hand, then run `om reindex`",
    )

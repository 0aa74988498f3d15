"""Durable file writes and the inter-process lock that serialises writers.

A write goes to a temporary file in the same directory, is flushed and fsynced, then renamed over
the target (atomic on POSIX), and the directory is fsynced so the rename itself survives a power
cut. A reader therefore sees the old file or the new one, never a torn mix. New files are created
0600 and new directories 0700: memory is private. An existing file keeps its mode.

The lock is ``fcntl.flock`` on a lock file: the kernel releases it when its holder dies, so a
killed process never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from obsmem.errors import LockTimeout, MemoryDirError, MemoryFileError
from obsmem.memory import guard

__all__ = ["append_line", "atomic_write", "ensure_dir", "memory_lock", "stray_temp_files"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 if missing; return it."""
    missing: list[Path] = []
    parent = path
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    try:
        # One by one: ``mkdir(parents=True)`` gives the parents it creates the default mode
        # (0755 under the usual umask), and archive/ or vault/ would not be private.
        for folder in reversed(missing):
            folder.mkdir(mode=DIR_MODE, exist_ok=True)
    except OSError as exc:
        raise MemoryDirError(
            f"cannot create directory {path}: {exc.strerror}",
            "check its parent's permissions or set OM_HOME to a writable place",
        ) from None
    if not path.is_dir():
        raise MemoryDirError(f"{path} exists and is not a directory", "move it away or set OM_HOME")
    return path


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_error(path: Path, exc: OSError) -> MemoryFileError:
    if exc.errno == errno.ENOSPC:
        hint = "free some disk space and run the command again; the previous file is intact"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "make the memory directory writable; the previous file is intact"
    else:
        hint = "the previous file is intact"
    return MemoryFileError(f"cannot write {path}: {exc.strerror}", hint)


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    Temp file, fsync, rename, fsync of the directory. The file keeps its mode (0600 when new),
    or gets ``mode`` before it takes the place of the old one (never after: a file holding keys
    must not be readable by others even for a moment).

    When ``path`` was read under the memory lock (``guard.read_for_write``), the rename happens
    only if the file is still the version read: otherwise ``FileChanged`` is raised and the
    file is left as it is (see ``obsmem.memory.guard``).
    """
    ensure_dir(path.parent)
    based_on = guard.expected(path)
    try:
        if mode is None:
            mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = FILE_MODE
    except OSError as exc:
        raise _write_error(path, exc) from None
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
            written = guard.FileStamp.of(os.fstat(handle.fileno()))
        if based_on is not None:
            guard.check_unchanged(path, based_on)
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        raise _write_error(path, exc) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
    _fsync_dir(path.parent)
    guard.wrote(path, written)
    if based_on is not None:
        guard.after_replace(path, based_on, lambda data: atomic_write(path, data, mode=mode))


#: What ``atomic_write``'s temporary files are called: ``.<name>.<8 random characters>.tmp``.
_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def stray_temp_files(folder: Path, min_age: float = 300.0) -> list[Path]:
    """Temporary files of ``atomic_write`` under ``folder`` at least ``min_age`` seconds old.

    A process killed between creating its temporary file and renaming it leaves the file
    behind (the target itself is intact). A write takes well under a second, so one that old
    belongs to no live writer and can be deleted.
    """
    now = time.time()
    out: list[Path] = []
    for path in folder.rglob(".*.tmp"):
        try:
            old = now - path.stat().st_mtime >= min_age
            if _TEMP_NAME.match(path.name) and path.is_file() and old:
                out.append(path)
        except OSError:
            continue
    return sorted(out)


def append_line(path: Path, line: str, *, sync: bool = True) -> None:
    """Append one line to an append-only log and fsync it (creating the file 0600); with
    ``sync=False`` the fsync is left to the system."""
    ensure_dir(path.parent)
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a crash left a torn last line: never glue onto it
            os.write(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _write_error(path, exc) from None


_LOCK_HINT = "another om command is writing; try again, or raise OM_LOCK_TIMEOUT_SECONDS"

# flock is per open file description, so threads of one process need their own guard, and a
# thread that already holds the lock may take it again (store methods call one another).
_local = threading.local()
_thread_lock = threading.RLock()


def flock_until(fd: int, deadline: float) -> bool:
    """Take an exclusive ``flock`` on ``fd``, waiting with a short backoff until ``deadline``
    (``time.monotonic``); False when another holder kept it until then."""
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


@contextlib.contextmanager
def memory_lock(lock_file: Path, timeout: float = 30.0) -> Iterator[None]:
    """Hold the memory directory's exclusive lock; ``LockTimeout`` after ``timeout`` seconds."""
    held: dict[str, int] = getattr(_local, "held", None) or {}
    _local.held = held
    key = str(lock_file)
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    deadline = time.monotonic() + timeout
    if not _thread_lock.acquire(timeout=timeout):
        raise LockTimeout(f"timed out after {timeout:g}s waiting for {lock_file}", _LOCK_HINT)
    try:
        ensure_dir(lock_file.parent)
        try:
            fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, FILE_MODE)
        except OSError as exc:
            raise MemoryDirError(
                f"cannot open lock file {lock_file}: {exc.strerror}",
                "make the memory directory writable",
            ) from None
        try:
            if not flock_until(fd, deadline):
                raise LockTimeout(
                    f"timed out after {timeout:g}s waiting for {lock_file}", _LOCK_HINT
                )
            held[key] = 1
            guard.open_scope(fd)
            try:
                yield
            finally:
                guard.close_scope()
                held.pop(key, None)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        _thread_lock.release()

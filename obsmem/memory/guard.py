"""Guarded rewrites: om replaces a memory file only while it is still the file om read.

People edit memory files while om runs, and an editor does not take om's lock. Three timings
would lose their bytes, and each has its guard here:

- **om reads a file an editor is saving in place** (truncate, write a part, write the rest).
  ``read_for_write`` waits until a file changed by someone else has been quiet for a moment,
  and longer while it ends in the middle of a line or of a UTF-8 character. When such a last
  line stays (a file saved without a final newline), it is the user's text: the merge keeps it
  whole, it never cuts it.
- **the file changes between om's read and its rename** (a save that lands meanwhile).
  ``check_unchanged`` compares the file's identity (inode, size, mtime) with a ``stat`` taken
  right before the rename; a difference raises ``FileChanged`` and the rename does not happen.
  ``retry_changed`` runs the whole read-merge-write step again on the new file, a few times,
  then gives up with a clear error (the file on disk is then still the user's, untouched).
- **an editor keeps writing into the file after om renamed its own over it** (the rest of an
  in-place save goes to the inode om replaced). The file om read stays open until the lock is
  released; ``after_replace`` looks at it once more, and when it grew or changed, puts the
  editor's complete file back and asks for the step to be run again.

Only reads made while the memory lock is held are tracked (``open_scope`` / ``close_scope``,
called by ``memory_lock``): they are the reads a write is based on. A stale editor buffer saved
over om's lines later cannot be prevented by any lock; ``om doctor`` finds and restores those
lines from the ledger (``obsmem.memory.restore``).

What om itself wrote last (each file's identity) is kept in the lock file, so a file om just
wrote is not waited on by the next om process.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from obsmem.errors import FileChanged, MemoryFileError

__all__ = [
    "ATTEMPTS",
    "FileStamp",
    "after_replace",
    "check_unchanged",
    "close_scope",
    "expected",
    "open_scope",
    "read_for_write",
    "retry_changed",
    "wrote",
]

T = TypeVar("T")

#: How many times a read-merge-write step is run before ``FileChanged`` reaches the caller.
ATTEMPTS = 6
#: A file someone else changed must have been quiet this long before om merges into it.
QUIET_SECONDS = 0.05
#: ... and this long when it ends mid-line (a save half-way), unless the wait below runs out.
PARTIAL_QUIET_SECONDS = 0.5
#: The longest om waits for a file to settle before taking it as it is.
MAX_WAIT_SECONDS = 2.0
_POLL = 0.02
_KEEP_WRITTEN = 4000  # entries kept in the lock file: every memory file om may write


@dataclass(frozen=True)
class FileStamp:
    """What identifies one version of a file: its inode (and device), size and mtime."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        """The stamp of a ``stat`` result."""
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def to_list(self) -> list[int]:
        """JSON form."""
        return [self.dev, self.ino, self.size, self.mtime_ns]


def stamp_of(path: Path) -> FileStamp | None:
    """The stamp of ``path`` now, None when it does not exist."""
    try:
        return FileStamp.of(os.stat(path))
    except FileNotFoundError:
        return None


@dataclass
class _Read:
    stamp: FileStamp | None  # None: the file did not exist
    fd: int | None  # the file read, kept open so a write into it after the rename shows


class _Scope:
    def __init__(self, lock_fd: int | None, outer: _Scope | None) -> None:
        self.lock_fd = lock_fd
        self.outer = outer  # a second memory directory's lock taken inside the first
        self.reads: dict[str, _Read] = {}
        self.written = _load_written(lock_fd)
        self.dirty = False


_local = threading.local()


def _scope() -> _Scope | None:
    return getattr(_local, "scope", None)


def open_scope(lock_fd: int | None = None) -> None:
    """Start tracking reads (the memory lock was just taken; ``lock_fd`` is its file)."""
    _local.scope = _Scope(lock_fd, _scope())


def close_scope() -> None:
    """Stop tracking (the lock is about to be released): close the files held, save what om
    wrote into the lock file."""
    scope = _scope()
    if scope is None:
        return
    _local.scope = scope.outer
    for read in scope.reads.values():
        _close(read)
    if scope.dirty and scope.lock_fd is not None:
        _save_written(scope.lock_fd, scope.written)


def _close(read: _Read) -> None:
    if read.fd is not None:
        with contextlib.suppress(OSError):
            os.close(read.fd)
        read.fd = None


def _load_written(fd: int | None) -> dict[str, list[int]]:
    if fd is None:
        return {}
    try:
        raw = os.pread(fd, 1 << 20, 0)
        data = json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError, RecursionError):
        return {}  # a hint only: without it a file om wrote is waited on once
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, list)}


def _save_written(fd: int, written: dict[str, list[int]]) -> None:
    items = list(written.items())[-_KEEP_WRITTEN:]
    data = json.dumps(dict(items), separators=(",", ":")).encode("utf-8")
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)


def _om_wrote(scope: _Scope, path: Path, stamp: FileStamp) -> bool:
    return scope.written.get(str(path)) == stamp.to_list()


def _settled(data: bytes, stamp: FileStamp, now_ns: int) -> bool:
    age = (now_ns - stamp.mtime_ns) / 1e9
    if data and not data.endswith(b"\n"):
        # Ends mid-line, or mid-character: very likely a save that has not finished.
        return age >= PARTIAL_QUIET_SECONDS
    return age >= QUIET_SECONDS


def read_for_write(path: Path) -> bytes:
    """A memory file's bytes (empty when missing), read to be merged into and written back.

    Outside the lock this is a plain read. Under it, the read is recorded for the checks before
    and after the rename, and a file someone else is writing is waited on until it settles (at
    most ``MAX_WAIT_SECONDS``; then it is taken as it is, a partial last line included).
    Reading a file again that changed since the first read in this lock raises ``FileChanged``:
    the merge began from the first version.
    """
    scope = _scope()
    if scope is None:
        return path.read_bytes() if path.exists() else b""
    key = str(path)
    before = scope.reads.get(key)
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while True:
        data, read = _read_once(path)
        stamp = read.stamp
        if (
            stamp is None
            or _om_wrote(scope, path, stamp)
            or _settled(data, stamp, time.time_ns())
            or time.monotonic() >= deadline
        ):
            break
        _close(read)
        time.sleep(_POLL)
    if before is not None:
        _close(before)
        if before.stamp != stamp:
            scope.reads[key] = read
            raise FileChanged(f"{path} changed while om was merging into it", path=path)
    scope.reads[key] = read
    return data


def _read_once(path: Path) -> tuple[bytes, _Read]:
    """The file's bytes and its stamp from one open file; a file that changed while it was
    being read is read again."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return b"", _Read(None, None)
        try:
            first = os.fstat(fd)
            chunks: list[bytes] = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            last = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if FileStamp.of(first) == FileStamp.of(last):
            return b"".join(chunks), _Read(FileStamp.of(last), fd)
        os.close(fd)


def expected(path: Path) -> _Read | None:
    """The read a write of ``path`` is based on, when it was read under the current lock."""
    scope = _scope()
    return None if scope is None else scope.reads.get(str(path))


def check_unchanged(path: Path, read: _Read) -> None:
    """Raise ``FileChanged`` unless ``path`` is still the version ``read`` saw (call right
    before the rename)."""
    if stamp_of(path) != read.stamp:
        _forget(path)
        raise FileChanged(f"{path} changed while om was merging into it", path=path)


def wrote(path: Path, stamp: FileStamp) -> None:
    """Record that om's rename made ``stamp`` the current version of ``path``."""
    scope = _scope()
    if scope is None:
        return
    key = str(path)
    # The read this write was based on stays open: ``after_replace`` looks at it, then closes it.
    scope.reads[key] = _Read(stamp, None)
    scope.written.pop(key, None)
    scope.written[key] = stamp.to_list()
    scope.dirty = True


def after_replace(path: Path, read: _Read, restore: Callable[[bytes], None]) -> None:
    """After om's rename: when the file om read was written to since (an in-place save that
    went on), give the editor's complete file back (``restore``) and raise ``FileChanged``."""
    fd, stamp = read.fd, read.stamp
    if fd is None or stamp is None:
        return
    try:
        if FileStamp.of(os.fstat(fd)) == stamp:
            return
        deadline = time.monotonic() + MAX_WAIT_SECONDS
        while True:
            now = FileStamp.of(os.fstat(fd))
            data = _pread_all(fd)
            if _settled(data, now, time.time_ns()) or time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
    except OSError:
        return
    finally:
        _close(read)
    restore(data)
    _forget(path)
    raise FileChanged(f"{path} was still being saved when om wrote it", path=path)


def _pread_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _forget(path: Path) -> None:
    scope = _scope()
    if scope is not None and (read := scope.reads.pop(str(path), None)) is not None:
        _close(read)


def _forget_all() -> None:
    scope = _scope()
    if scope is not None:
        for read in scope.reads.values():
            _close(read)
        scope.reads.clear()


def retry_changed(step: Callable[[], T], attempts: int = ATTEMPTS) -> T:
    """Run ``step`` (a read-merge-write under the lock), again when a file it read changed
    before its write; after ``attempts`` tries the last ``FileChanged`` is raised, with a hint."""
    for attempt in range(attempts):
        try:
            return step()
        except FileChanged as exc:
            if attempt + 1 >= attempts:
                raise FileChanged(
                    f"{exc.path} kept changing while om was merging into it "
                    f"({attempts} tries); nothing was written over it",
                    "close or pause the program that keeps saving it, then run the command again",
                    path=exc.path,
                ) from None
            _forget_all()  # the step reads every file again
            time.sleep(_POLL * (attempt + 1))
    raise MemoryFileError("unreachable")  # pragma: no cover - the loop returns or raises

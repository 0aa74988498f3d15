"""Atomic durable writes, the append-only log writer and the inter-process lock."""

from __future__ import annotations

import errno
import fcntl
import multiprocessing
import os
import random
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from obsmem.errors import LockTimeout, MemoryDirError, MemoryFileError
from obsmem.memory.atomic import append_line, atomic_write, ensure_dir, memory_lock
from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore, new_observation

# fork: children start in milliseconds and need nothing pickled; the code under test is the
# same in any process.
_fork = multiprocessing.get_context("fork")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def is_locked(lock_file: Path) -> bool:
    """Whether someone holds the flock (a new open file description conflicts even in-process)."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def strays(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(".tmp"))


# -- atomic_write ---------------------------------------------------------------------------------


def test_atomic_write_creates_private_file_and_dirs(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "observations.md"
    atomic_write(target, b"one\n")
    assert target.read_bytes() == b"one\n"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700
    atomic_write(target, b"two\n")
    assert target.read_bytes() == b"two\n"
    assert mode(target) == 0o600
    assert strays(target.parent) == []


def test_atomic_write_keeps_an_existing_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "reflections.md"
    target.write_bytes(b"old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert mode(target) == 0o640
    assert target.read_bytes() == b"new"


def test_atomic_write_failure_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "observations.md"
    atomic_write(target, b"old\n")

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(MemoryFileError) as caught:
        atomic_write(target, b"new\n" * 1000)
    assert "disk space" in str(caught.value)
    assert "intact" in str(caught.value)
    assert target.read_bytes() == b"old\n"
    assert strays(tmp_path) == []


def test_atomic_write_into_read_only_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulated (root writes anywhere, so chmod cannot stand in): creating the temporary file
    # fails the way it does on a read-only file system.
    target = tmp_path / "ro" / "observations.md"
    atomic_write(target, b"old\n")

    def read_only(*args: object, **kwargs: object) -> NoReturn:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(MemoryFileError, match=r"Read-only file system.*previous file is intact"):
        atomic_write(target, b"new\n")
    assert target.read_bytes() == b"old\n"


def test_ensure_dir_on_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(MemoryDirError):
        ensure_dir(tmp_path / "file")
    with pytest.raises(MemoryDirError):
        ensure_dir(tmp_path / "file" / "below")
    assert mode(ensure_dir(tmp_path / "new")) == 0o700


def test_append_line(tmp_path: Path) -> None:
    log = tmp_path / "state" / "log.jsonl"
    append_line(log, "one")
    append_line(log, "two\n")
    assert log.read_bytes() == b"one\ntwo\n"
    assert mode(log) == 0o600
    with log.open("ab") as handle:
        handle.write(b"torn")
    append_line(log, "three")
    assert log.read_bytes() == b"one\ntwo\ntorn\nthree\n"


# -- a writer killed mid-write --------------------------------------------------------------------


def _payload(tag: str, count: int) -> bytes:
    lines = ["# Observations", "", f"## 2026-02-{10 if tag == 'A' else 11}", ""]
    lines += [
        f"- 🟡 10:{i % 60:02d} [fact|c=0.90|i=0.50] {tag} observation {i}" for i in range(count)
    ]
    return ("\n".join(lines) + "\n").encode()


def _write_forever(path: str, payloads: tuple[bytes, bytes], written: object) -> None:
    target = Path(path)
    number = 0
    while True:
        atomic_write(target, payloads[number % 2])
        number += 1
        written.value = number  # type: ignore[attr-defined]


def test_killed_writer_leaves_old_or_new_file(store: MemoryStore) -> None:
    a, b = _payload("A", 40_000), _payload("B", 30_000)  # about 2 MB each
    target = store.observations_path
    atomic_write(target, a)
    rng = random.Random(20260210)
    started = time.monotonic()
    kills = 0
    while kills < 20 and time.monotonic() - started < 4.0:
        written = _fork.Value("i", 0)
        proc = _fork.Process(target=_write_forever, args=(str(target), (a, b), written))
        proc.start()
        time.sleep(rng.uniform(0.0, 0.03))
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        assert proc.exitcode == -signal.SIGKILL
        kills += 1
        data = target.read_bytes()
        assert data in (a, b), f"kill {kills}: torn file of {len(data)} bytes"
    assert kills >= 10
    assert len(parse_observations(target.read_bytes()).observations) in (30_000, 40_000)
    # Temp files a killed writer left behind are not memory files, and break nothing.
    left = strays(store.home)
    assert left, "no kill landed mid-write: the test proved nothing"
    for stray in left:
        assert stray.name.startswith(".observations.md.")
    archive = store.archive_dir / "observations"
    archive.mkdir(parents=True)
    (archive / ".2026-01.md.x1y2.tmp").write_bytes(b"partial")
    (archive / "2026-01.md").write_bytes(b"# Observations\n")
    files = store.memory_files()
    assert files == [target, archive / "2026-01.md"]
    assert store.add_observations([new_observation("after the crash", date="2026-02-12")])


# -- memory_lock ----------------------------------------------------------------------------------


def _hold_lock(lock_file: str, ready: object, release: object) -> None:
    with memory_lock(Path(lock_file), timeout=5):
        ready.set()  # type: ignore[attr-defined]
        release.wait(10)  # type: ignore[attr-defined]


def _start_holder(
    lock_file: Path,
) -> tuple[multiprocessing.process.BaseProcess, Callable[[], None]]:
    ready, release = _fork.Event(), _fork.Event()
    proc = _fork.Process(target=_hold_lock, args=(str(lock_file), ready, release))
    proc.start()
    assert ready.wait(5), "the holder never got the lock"
    return proc, release.set


def test_lock_times_out_while_another_process_holds_it(tmp_path: Path) -> None:
    lock_file = tmp_path / "state" / "memory.lock"
    proc, release = _start_holder(lock_file)
    try:
        started = time.monotonic()
        with pytest.raises(LockTimeout) as caught, memory_lock(lock_file, timeout=0.3):
            pytest.fail("got a lock another process holds")
        waited = time.monotonic() - started
        assert 0.3 <= waited < 2.0
        assert "OM_LOCK_TIMEOUT_SECONDS" in str(caught.value)
    finally:
        release()
        proc.join(5)
    with memory_lock(lock_file, timeout=1):
        assert is_locked(lock_file)
    assert not is_locked(lock_file)
    assert mode(lock_file) == 0o600


def test_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    lock_file = tmp_path / "memory.lock"
    proc, _ = _start_holder(lock_file)
    assert is_locked(lock_file)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(5)
    started = time.monotonic()
    with memory_lock(lock_file, timeout=2):
        pass
    assert time.monotonic() - started < 1.0


def test_lock_is_reentrant_within_a_thread(tmp_path: Path) -> None:
    lock_file = tmp_path / "memory.lock"
    with memory_lock(lock_file, timeout=0.2):
        with memory_lock(lock_file, timeout=0.2), memory_lock(lock_file, timeout=0.2):
            assert is_locked(lock_file)
        assert is_locked(lock_file)  # leaving the inner block keeps the outer one's lock
    assert not is_locked(lock_file)
    # An error inside releases it too.
    with pytest.raises(RuntimeError), memory_lock(lock_file):
        raise RuntimeError("boom")
    assert not is_locked(lock_file)


def test_lock_excludes_other_threads(tmp_path: Path) -> None:
    lock_file = tmp_path / "memory.lock"
    outcome: list[str] = []

    def other() -> None:
        try:
            with memory_lock(lock_file, timeout=0.2):
                outcome.append("acquired")
        except LockTimeout:
            outcome.append("timeout")

    with memory_lock(lock_file):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(5)
    assert outcome == ["timeout"]
    thread = threading.Thread(target=other)
    thread.start()
    thread.join(5)
    assert outcome == ["timeout", "acquired"]


def test_lock_in_an_unwritable_place(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(MemoryDirError), memory_lock(tmp_path / "file" / "memory.lock"):
        pass

"""Hostile surroundings for real ``om`` processes: every failure is one ``om: error:`` line.

Each scenario runs ``om`` as a new process and checks what a user sees: exit status 2 and one
line ``om: error: <what> (<how to fix>)`` on stderr, never a traceback or an "internal error".
Output into a pipe whose reader has gone (``om context | head -c1``) ends quietly: status 0,
nothing on stderr. ``om doctor`` reports a broken surrounding as failed lines (status 1) and
never crashes.

An unreadable folder (``chmod 000``) is staged with ``fakes.denied`` because the suite runs as
root, which reads through any mode; ``test_a_real_chmod_000_memory_directory`` does it for real
where the suite does not run as root.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.denied import SHIM

from obsmem.memory.store import MemoryStore, new_observation

TESTS = Path(__file__).resolve().parents[1]
# OM_TEST_ARGV is the shims' own: dropped so that om does not see it as a misspelt setting.
_MAIN = (
    "import os, sys; os.environ.pop('OM_TEST_ARGV', None); "
    "from obsmem.cli.entry import main; sys.argv[0] = 'om'; main()"
)
_FULL_DISK = r"""
import json, os, re, sqlite3, sys
real = sqlite3.connect
target = os.environ.pop("OM_TEST_FULL")

class Full(sqlite3.Connection):
    # Every write fails as on a full disk, as does the clean-up after it.
    def execute(self, sql, *args):
        if re.match(r"\s*(INSERT|UPDATE|DELETE|REPLACE)", sql, re.I):
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *args)

def connect(database, *args, **kwargs):
    if os.fspath(database).endswith(target):
        kwargs["factory"] = Full
    return real(database, *args, **kwargs)

sqlite3.connect = connect
sys.argv = ["om", *json.loads(os.environ.pop("OM_TEST_ARGV"))]
from obsmem.cli.entry import main
main()
"""


def om(*args: str, code: str = _MAIN, env: dict[str, str] | None = None, stdout: int | None = None
       ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    environ = {**os.environ, "OM_LLM_PROVIDER": "none", **(env or {})}
    environ["OM_TEST_ARGV"] = json.dumps(list(args))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=environ,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    err = result.stderr
    assert "Traceback" not in err and "internal error" not in err, err
    assert result.returncode == 2, (result.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1 and re.match(r"om: error: .+ \(.+\)$", lines[0]), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def assert_doctor_reports(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.returncode == 1 and result.stderr == "", (result.returncode, result.stderr)
    failed = "\n".join(line for line in result.stdout.splitlines() if line.startswith("[FAIL]"))
    for word in words:
        assert word in failed, (word, result.stdout)
    return failed


@pytest.fixture
def memory() -> MemoryStore:
    """The memory directory of $OM_HOME with a few observations, an index and capture state."""
    store = MemoryStore().ensure()
    store.add_observations(
        [new_observation(f"Chose PostgreSQL for queue {n}", date="2026-11-20") for n in range(3)]
    )
    (store.archive_dir / "observations").mkdir(parents=True)
    assert om("search", "PostgreSQL").returncode == 0
    assert om("observe").returncode == 0
    return store


@pytest.mark.parametrize(
    "args", [("context",), ("context", "--for", "claude"), ("search", "PostgreSQL"), ("status",)]
)
def test_output_into_a_closed_pipe_ends_quietly(memory: MemoryStore, args: tuple[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before om writes a byte: every write is EPIPE
    try:
        result = om(*args, stdout=write)
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (0, "")


def _denied(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return om(*args, code=SHIM, env={"OM_TEST_DENY": str(folder), "OM_TEST_FAKES": str(TESTS)})


@pytest.mark.parametrize(
    ("where", "args"),
    [
        ("archive", ("reflect",)),
        ("archive", ("search", "PostgreSQL")),
        ("archive", ("status",)),
        ("archive", ("reindex",)),
        (".om", ("status",)),
        (".om", ("remember", "a new fact")),
        ("", ("status",)),
        ("", ("search", "PostgreSQL")),
        ("", ("remember", "a new fact")),
    ],
)
def test_an_unreadable_folder_is_one_line(memory: MemoryStore, where: str, args: tuple[str]
                                          ) -> None:  # fmt: skip
    folder = memory.home / where if where else memory.home
    line = assert_one_line_error(_denied(folder, *args), str(folder))
    assert "Permission denied" in line or "writable" in line, line


@pytest.mark.parametrize("where", ["archive", ".om", ""])
def test_doctor_reports_an_unreadable_folder(memory: MemoryStore, where: str) -> None:
    folder = memory.home / where if where else memory.home
    assert_doctor_reports(_denied(folder, "doctor"), str(folder))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads through chmod 000; staged above")
def test_a_real_chmod_000_memory_directory(memory: MemoryStore) -> None:
    for folder in (memory.home / ".om", memory.home):
        folder.chmod(0)
        try:
            assert_one_line_error(om("status"), str(folder))
            assert_doctor_reports(om("doctor"))
        finally:
            folder.chmod(0o700)


def test_a_file_where_the_hook_queue_folder_should_be(memory: MemoryStore) -> None:
    queue = memory.state_dir / "queue"
    if queue.is_dir():
        queue.rmdir()
    queue.write_text("not a folder\n")
    assert_doctor_reports(om("doctor"), str(queue), "a file where om expects a folder")
    assert om("status").returncode == 0
    assert queue.read_text() == "not a folder\n"  # never deleted: om did not write it


def test_a_file_where_the_state_folder_should_be(memory: MemoryStore, tmp_path: Path) -> None:
    home = tmp_path / "home-file"
    home.write_text("mine\n")
    assert_one_line_error(om("status", env={"OM_HOME": str(home)}), str(home))
    assert_doctor_reports(om("doctor", env={"OM_HOME": str(home)}))
    assert home.read_text() == "mine\n"


def test_a_full_disk_is_reported_not_masked_by_the_clean_up(memory: MemoryStore) -> None:
    result = om("observe", "--flush", code=_FULL_DISK, env={"OM_TEST_FULL": "state.sqlite3"})
    assert_one_line_error(result, "disk is full", "free some disk space")


@pytest.mark.parametrize("name", ["state.sqlite3", "turns.sqlite3"])
def test_doctor_finds_a_damaged_database(memory: MemoryStore, name: str) -> None:
    path = memory.state_dir / name
    for suffix in ("-wal", "-shm"):
        path.with_name(name + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is no database" * 300)
    assert_doctor_reports(om("doctor"), str(path), "damaged")
    if name == "state.sqlite3":
        assert_one_line_error(om("status"), str(path))


def test_a_read_only_shm_left_behind_is_made_writable_again(memory: MemoryStore) -> None:
    path = memory.state_db_path
    conn = sqlite3.connect(path)  # keeps the -wal and -shm in place while the mode is changed
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        shm = path.with_name(path.name + "-shm")
        assert shm.exists()
        shm.chmod(0o400)
        assert "not writable" in assert_doctor_reports(om("doctor"), str(shm))
        assert om("observe").returncode == 0
        assert shm.stat().st_mode & 0o777 == 0o600
    finally:
        conn.close()


def test_context_with_an_unreadable_archive_still_starts_the_session(memory: MemoryStore) -> None:
    result = _denied(memory.home / "archive", "context")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr

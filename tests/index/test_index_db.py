"""Opening the index: schema and version, pragmas, and replacing a damaged database."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from obsmem.errors import IndexError_
from obsmem.index import open_index, reset_index, using_index
from obsmem.index.db import index_generation, is_corruption
from obsmem.index.schema import (
    MIGRATIONS,
    REQUIRED_TABLES,
    SCHEMA_VERSION,
    migrate,
    schema_version,
    split_statements,
)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _mark(path: Path) -> None:
    """Leave a row in the index that only survives if the database is not replaced."""
    conn = open_index(path)
    conn.execute("INSERT INTO meta (key, value) VALUES ('marker', 'kept')")
    conn.close()


def _marked(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM meta WHERE key = 'marker'").fetchone() is not None


def test_new_index_has_schema_version_and_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "state" / "index.sqlite3"
    conn = open_index(path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION == len(MIGRATIONS)
        assert _tables(conn) >= REQUIRED_TABLES
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.isolation_level is None
    finally:
        conn.close()
    # The index holds the text of every memory: private like the memory files.
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_reopening_keeps_contents(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    conn = open_index(path)
    assert _marked(conn)
    conn.close()


def test_migrations_are_applied_once_even_when_raced(tmp_path: Path) -> None:
    # Two connections that both read version 0 before either migrates: the second must see,
    # once it holds the write lock, that the work is done (a second CREATE TABLE would fail).
    path = tmp_path / "index.sqlite3"
    first = sqlite3.connect(path, isolation_level=None)
    second = sqlite3.connect(path, isolation_level=None)
    try:
        assert schema_version(first) == schema_version(second) == 0
        assert migrate(first) == SCHEMA_VERSION
        assert migrate(second) == SCHEMA_VERSION
        assert schema_version(second) == SCHEMA_VERSION
    finally:
        first.close()
        second.close()


def test_split_statements_respects_literals_and_triggers() -> None:
    script = """
    CREATE TABLE t (a TEXT);
    INSERT INTO t VALUES ('semi;colon');
    CREATE TRIGGER tr AFTER INSERT ON t BEGIN
        UPDATE t SET a = 'x;y' WHERE a = new.a;
    END;
    """
    statements = split_statements(script)
    assert len(statements) == 3
    assert statements[1] == "INSERT INTO t VALUES ('semi;colon');"
    assert statements[2].startswith("CREATE TRIGGER") and statements[2].endswith("END;")
    with pytest.raises(IndexError_):
        split_statements("INSERT INTO t VALUES ('unterminated")


@pytest.mark.parametrize(
    "garbage",
    [b"this is not a database" * 100, b"\x00" * 4096, b"SQLite format 3\x00" + b"\xff" * 5000],
    ids=["text", "zeros", "bad-header"],
)
def test_garbage_file_is_replaced_by_a_fresh_index(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "index.sqlite3"
    path.write_bytes(garbage)
    conn = open_index(path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    finally:
        conn.close()


def _scribbled(path: Path) -> None:
    """An index whose pages after the first (the schema) are garbage."""
    conn = open_index(path)
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)", [(f"k{i}", "v" * 200) for i in range(300)]
    )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    # Keep the header page (so the file still looks like SQLite) and scribble over the rest.
    data[page:] = b"\xa5" * (len(data) - page)
    path.write_bytes(bytes(data))


def test_damaged_page_fails_quick_check_and_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _scribbled(path)
    conn = open_index(path, check=True)
    try:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM meta").fetchone()[0] == 0
    finally:
        conn.close()


def test_damaged_page_found_by_a_query_is_replaced_without_a_check(tmp_path: Path) -> None:
    # An ordinary open skips the integrity check; the damage shows up when a statement reads
    # the bad pages, and using_index then rebuilds and runs the work again.
    path = tmp_path / "index.sqlite3"
    _scribbled(path)
    runs: list[int] = []

    def work(conn: sqlite3.Connection) -> int:
        runs.append(1)
        return int(conn.execute("SELECT count(*) FROM meta WHERE value != ''").fetchone()[0])

    assert using_index(path, work) == 0
    assert len(runs) == 2


_STATEMENTS: list[str] = []


class _Traced(sqlite3.Connection):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.set_trace_callback(_STATEMENTS.append)


def test_an_ordinary_open_runs_no_integrity_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    real = sqlite3.connect
    monkeypatch.setattr(
        sqlite3,
        "connect",
        lambda *a, **k: real(*a, **k, factory=_Traced),  # type: ignore[misc]
    )
    _STATEMENTS.clear()
    using_index(path, lambda conn: conn.execute("SELECT 1").fetchone())
    assert not any("quick_check" in s for s in _STATEMENTS)
    open_index(path, check=True).close()
    assert any("quick_check" in s for s in _STATEMENTS)


def test_a_file_shorter_than_its_pages_is_checked_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    conn = open_index(path)
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)", [(f"k{i}", "v" * 200) for i in range(300)]
    )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a copy cut short
    conn = open_index(path)
    try:
        assert not _marked(conn)
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_newer_schema_version_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    raw.close()
    conn = open_index(path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION
        assert not _marked(conn)
    finally:
        conn.close()


def test_missing_table_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE entries_fts")
    raw.close()
    conn = open_index(path)
    try:
        assert _tables(conn) >= REQUIRED_TABLES
        assert not _marked(conn)
    finally:
        conn.close()


def test_wal_and_shm_files_go_with_the_database(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).write_bytes(b"stale garbage" * 10)
    path.write_bytes(b"not a database" * 100)
    conn = open_index(path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION
    finally:
        conn.close()


def test_unusable_place_raises_one_line_index_error(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    path.mkdir()  # a directory where the database should be: deleting files cannot fix that
    with pytest.raises(IndexError_) as caught:
        open_index(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    assert caught.value.hint


def test_reset_deletes_only_the_file_found_damaged(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    # Another process already replaced the damaged file: its replacement must be kept.
    seen = index_generation(path)
    conn = reset_index(path, seen)
    assert not _marked(conn)
    conn.close()
    _mark(path)
    # Another process found the same damage but repaired it first: its new index must be kept.
    conn = reset_index(path, seen)
    assert _marked(conn)
    conn.close()
    assert index_generation(path) != seen


def test_using_index_rebuilds_after_damage_met_while_working(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    _mark(path)
    calls: list[bool] = []

    def work(conn: sqlite3.Connection) -> bool:
        calls.append(_marked(conn))
        if len(calls) == 1:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return True

    assert using_index(path, work) is True
    assert calls == [True, False]  # second run on a fresh database


def test_using_index_turns_other_errors_into_index_error(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"

    def work(conn: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(IndexError_) as caught:
        using_index(path, work)
    assert not is_corruption(caught.value)
    assert path.exists()  # a busy index is not deleted


def test_is_corruption_looks_through_index_error() -> None:
    damaged = sqlite3.DatabaseError("file is not a database")
    wrapped = IndexError_("damaged")
    wrapped.__cause__ = damaged
    assert is_corruption(damaged)
    assert is_corruption(wrapped)
    assert not is_corruption(IndexError_("busy"))
    assert not is_corruption(ValueError("malformed"))

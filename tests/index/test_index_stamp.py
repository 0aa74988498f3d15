"""The refresh's stamp: an unchanged memory is known fresh from a stat of each path it recorded,
without listing a folder or loading a parser; any change a listing would see still reaches it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from obsmem.index import open_index, refresh
from obsmem.index import sync as sync_module
from obsmem.index.sync import STAMP_KEY, RefreshReport
from obsmem.memory.store import MemoryStore
from tests.index.test_index_sync import FILES, age, matches, populate, write


def _age_folders(store: MemoryStore) -> None:
    """Every folder a memory file lives in, dated in the past (the stamp skips racy stats)."""
    for folder, subfolders, _ in os.walk(store.home):
        for name in subfolders:
            age(Path(folder) / name)
    age(store.home)


@pytest.fixture
def conn(store: MemoryStore) -> Iterator[sqlite3.Connection]:
    connection = open_index(store.index_path)
    yield connection
    connection.close()


def _stamp(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (STAMP_KEY,)).fetchone()
    return None if row is None else str(row[0])


@pytest.fixture
def stamped(store: MemoryStore, conn: sqlite3.Connection) -> sqlite3.Connection:
    populate(store)
    _age_folders(store)
    assert refresh(store, conn).files_indexed == len(FILES)
    assert _stamp(conn) is not None
    return conn


def test_unchanged_memory_is_fresh_without_listing_a_folder(
    store: MemoryStore, stamped: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_listing(*args: object, **kwargs: object) -> object:
        raise AssertionError("a fresh index was scanned")

    monkeypatch.setattr(sync_module, "_scan", no_listing)
    monkeypatch.setattr(MemoryStore, "memory_files", no_listing)
    assert refresh(store, stamped) == RefreshReport()


def test_a_file_added_in_a_subfolder_is_found(
    store: MemoryStore, stamped: sqlite3.Connection
) -> None:
    write(store, "archive/observations/2026-03.md",
          "# Observations\n\n## 2026-03-02\n\n- 🟡 09:00 Archived quokka note\n")  # fmt: skip
    report = refresh(store, stamped)
    assert report.files_indexed == 1
    assert matches(stamped, "quokka") == ["Archived quokka note"]


def test_a_new_vault_folder_is_found(store: MemoryStore, stamped: sqlite3.Connection) -> None:
    write(store, "vault/projects/om.md", "# om\n\n## Facts\n\n- Uses a wombat cache\n")
    _age_folders(store)  # even dated in the past, the folder's parent moved
    assert refresh(store, stamped).files_indexed == 1
    assert matches(stamped, "wombat") == ["Uses a wombat cache"]


def test_a_same_size_edit_is_found(store: MemoryStore, stamped: sqlite3.Connection) -> None:
    text = FILES["vault/people/alice.md"]
    write(store, "vault/people/alice.md", text.replace("payments", "paymentz"))
    assert refresh(store, stamped).files_indexed == 1
    assert matches(stamped, "paymentz") == ["Alice owns the paymentz team"]


def test_a_deleted_file_is_noticed(store: MemoryStore, stamped: sqlite3.Connection) -> None:
    (store.home / "active.md").unlink()
    assert refresh(store, stamped).files_removed == 1


def test_no_stamp_is_kept_while_a_file_is_racy(
    store: MemoryStore, stamped: sqlite3.Connection
) -> None:
    write(store, "reflections.md", FILES["reflections.md"] + "- Prefers tabs\n", old=False)
    assert refresh(store, stamped).files_indexed == 1
    assert _stamp(stamped) is None


def test_a_missing_stamp_is_recorded_when_nothing_changed(
    store: MemoryStore, stamped: sqlite3.Connection
) -> None:
    before = _stamp(stamped)
    stamped.execute("DELETE FROM meta WHERE key = ?", (STAMP_KEY,))
    assert refresh(store, stamped) == RefreshReport()
    assert _stamp(stamped) == before


def test_the_stamp_of_another_memory_directory_does_not_count(
    store: MemoryStore, stamped: sqlite3.Connection, tmp_path: Path
) -> None:
    other = MemoryStore(tmp_path / "other", environ={"OM_INDEX_PATH": str(store.index_path)})
    other.ensure()
    write(other, "observations.md", "# Observations\n\n## 2026-02-10\n\n- 🟡 09:00 Other\n")
    report = refresh(other, stamped)
    assert report.files_indexed == 1
    assert report.files_removed == 0  # another directory: its rows replace the old ones


def test_the_stamp_names_no_external_path_and_still_sees_its_changes(
    store: MemoryStore, conn: sqlite3.Connection, tmp_path: Path
) -> None:
    # Claude Code names a project's folder after its working directory, which can hold a secret:
    # the index stores such a path only redacted, and the stamp not at all.
    folder = tmp_path / "-home-dev-ghp_abcdefghijklmnopqrstuvwxyz0123456789" / "memory"
    folder.mkdir(parents=True)
    note = folder / "MEMORY.md"
    note.write_text("# Memory\n\n- The capybara queue retries thrice\n", encoding="utf-8")
    age(note)
    store.set_external_files({str(note): {"kind": "claude-memory", "sha256": ""}})
    age(store.external_list_path)
    populate(store)
    _age_folders(store)
    refresh(store, conn)
    stamp = _stamp(conn)
    assert stamp is not None and "ghp_" not in stamp and str(folder) not in stamp
    assert refresh(store, conn) == RefreshReport()
    note.write_text("# Memory\n\n- The capybara queue retries twice\n", encoding="utf-8")
    age(note)
    assert refresh(store, conn).files_indexed == 1
    assert matches(conn, "twice") == ["The capybara queue retries twice"]


def test_a_search_over_a_fresh_index_loads_neither_the_redactor_nor_a_reader(
    store: MemoryStore, stamped: sqlite3.Connection
) -> None:
    stamped.close()
    code = (
        "import sys\n"
        "from obsmem.memory.store import MemoryStore\n"
        "from obsmem.search import search\n"
        f"hits = search(MemoryStore({str(store.home)!r}), 'payments')\n"
        "print(len(hits), [m for m in ('obsmem.sources.claude_memory', 'obsmem.sources.state',"
        " 'obsmem.redact') if m in sys.modules])\n"
    )
    env = {**os.environ, "OM_HOME": str(store.home)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 1) == ["1", "[]\n"]

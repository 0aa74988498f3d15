"""Refreshing the index: what changes is picked up, what does not change costs no read."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.errors import MemoryFileError
from obsmem.index import (
    SCHEMA_VERSION,
    index_issues,
    index_status,
    open_index,
    rebuild,
    refresh,
)
from obsmem.index.sync import FileIssue, RefreshReport, entry_kind
from obsmem.memory.ledger import append_provenance
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation

OBSERVATIONS = """# Observations

## 2026-02-10

### Current Context

- **Active task:** Setting up FastAPI project

### Observations

- 🔴 14:00 User is building a task management REST API with FastAPI
  - 🟡 14:10 Changed mind from SQLAlchemy to Tortoise ORM
- 🟢 15:00 [fact|c=0.90|i=0.30] Prefers pytest fixtures over setup methods ^k3v9q2m7xa
"""

REFLECTIONS = """# Reflections — Long-Term Memory

_Last updated: 2026-02-10 04:00 UTC_

## Preferences

- Uses vim keybindings everywhere

## Active Projects

### om

- Ships the search index with FTS5
"""

FILES = {
    "observations.md": OBSERVATIONS,
    "reflections.md": REFLECTIONS,
    "profile.md": "# Profile\n\n## Identity\n\n- Backend engineer in Lisbon\n",
    "active.md": "# Active\n\n## Now\n\n- Migrating the billing service\n",
    "archive/observations/2026-01.md": (
        "# Observations\n\n## 2026-01-05\n\n- 🟡 09:00 Archived note on kubernetes\n"
    ),
    "vault/people/alice.md": "# Alice\n\n## Facts\n\n- Alice owns the payments team\n",
}

_age = [3600]


def age(path: Path) -> None:
    """Give ``path`` an mtime well in the past (and different from any given before)."""
    _age[0] += 7
    past = time.time_ns() - _age[0] * 1_000_000_000
    os.utime(path, ns=(past, past))


def write(store: MemoryStore, rel: str, text: str, *, old: bool = True) -> Path:
    path = store.home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if old:
        age(path)
    return path


def populate(store: MemoryStore) -> None:
    for rel, text in FILES.items():
        write(store, rel, text)


@pytest.fixture
def conn(store: MemoryStore) -> Iterator[sqlite3.Connection]:
    connection = open_index(store.index_path)
    yield connection
    connection.close()


def entries(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT file, line, kind, id, text FROM entries ORDER BY file, line"
    ).fetchall()


def contexts(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT file, line, context FROM entries ORDER BY file, line").fetchall()


def fts_consistent(conn: sqlite3.Connection) -> None:
    # rank=1 also checks the full-text index against the content table, row by row.
    conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('integrity-check', 1)")


def matches(conn: sqlite3.Connection, word: str, column: str = "text") -> list[str]:
    """Entries whose ``column`` holds ``word`` (an entry's neighbours hold its words too)."""
    rows = conn.execute(
        "SELECT e.text FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid "
        "WHERE entries_fts MATCH ? ORDER BY e.rowid",
        (f'{column}: "{word}"',),
    )
    return [row[0] for row in rows]


def test_entry_kind_of_each_file() -> None:
    assert [entry_kind(rel) for rel in FILES] == [
        "observation", "reflection", "profile", "active", "archive", "vault",
    ]  # fmt: skip
    assert entry_kind("notes.md") is None
    assert entry_kind("archive") is None


def test_first_refresh_indexes_every_kind_of_file(
    store: MemoryStore, conn: sqlite3.Connection
) -> None:
    populate(store)
    report = refresh(store, conn)
    assert report.files_indexed == len(FILES)
    assert report.entries == 9
    assert report.changed
    kinds = {row[2] for row in entries(conn)}
    assert kinds == {"observation", "reflection", "profile", "active", "archive", "vault"}
    row = conn.execute(
        "SELECT date, time, priority, type, confidence, importance, line FROM entries "
        "WHERE id = 'k3v9q2m7xa'"
    ).fetchone()
    assert row == ("2026-02-10", "15:00", "🟢", "fact", 0.9, 0.3, 13)
    section = conn.execute("SELECT section FROM entries WHERE text LIKE 'Ships%'").fetchone()[0]
    assert section == "Active Projects / om"
    assert matches(conn, "tortoise") == ["Changed mind from SQLAlchemy to Tortoise ORM"]
    assert matches(conn, "payments") == ["Alice owns the payments team"]
    fts_consistent(conn)


def test_unchanged_refresh_reads_nothing(
    store: MemoryStore, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate(store)
    refresh(store, conn)
    before = entries(conn)

    def no_reads(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("an unchanged refresh read a file")

    monkeypatch.setattr(MemoryStore, "read_bytes", no_reads)
    monkeypatch.setattr(MemoryStore, "provenance", no_reads)
    monkeypatch.setattr(Path, "read_bytes", no_reads)
    report = refresh(store, conn)
    assert report == RefreshReport()
    assert not report.changed
    assert entries(conn) == before


def test_touched_file_is_hashed_not_reparsed(store: MemoryStore, conn: sqlite3.Connection) -> None:
    populate(store)
    refresh(store, conn)
    rowids = conn.execute("SELECT rowid FROM entries ORDER BY rowid").fetchall()
    age(store.home / "reflections.md")  # new mtime, same bytes
    report = refresh(store, conn)
    assert (report.files_rehashed, report.files_indexed, report.entries) == (1, 0, 0)
    assert conn.execute("SELECT rowid FROM entries ORDER BY rowid").fetchall() == rowids
    assert refresh(store, conn) == RefreshReport()  # the new stat was recorded


def test_hand_added_lines_are_picked_up(store: MemoryStore, conn: sqlite3.Connection) -> None:
    populate(store)
    refresh(store, conn)
    kept = conn.execute("SELECT rowid, id FROM entries WHERE file = 'observations.md'").fetchall()
    write(store, "observations.md", OBSERVATIONS + "- 🔴 16:00 Chose zygomorphic caching\n")
    write(store, "reflections.md", REFLECTIONS + "- Never deploys on Fridays\n")
    report = refresh(store, conn)
    assert report.files_indexed == 2
    assert matches(conn, "zygomorphic") == ["Chose zygomorphic caching"]
    assert matches(conn, "fridays") == ["Never deploys on Fridays"]
    # Lines that did not change keep their rows: only the new line was written to the FTS index.
    assert set(kept) <= set(conn.execute("SELECT rowid, id FROM entries").fetchall())
    fts_consistent(conn)


def test_a_new_line_becomes_context_of_its_neighbours_which_keep_their_rows(
    store: MemoryStore, conn: sqlite3.Connection
) -> None:
    populate(store)
    refresh(store, conn)
    kept = conn.execute("SELECT rowid, id FROM entries WHERE file = 'observations.md'").fetchall()
    write(store, "observations.md", OBSERVATIONS + "- 🔴 16:00 Chose zygomorphic caching\n")
    refresh(store, conn)
    # The two lines before it now carry its words as context, in the full-text index too.
    assert matches(conn, "zygomorphic", "context") == [
        "Changed mind from SQLAlchemy to Tortoise ORM",
        "Prefers pytest fixtures over setup methods",
    ]
    assert set(kept) <= set(conn.execute("SELECT rowid, id FROM entries").fetchall())
    fts_consistent(conn)
    write(store, "observations.md", OBSERVATIONS)
    refresh(store, conn)
    assert matches(conn, "zygomorphic", "context") == []
    fts_consistent(conn)


def test_a_day_moved_to_the_archive_keeps_its_rows_and_postings(
    store: MemoryStore, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate(store)
    refresh(store, conn)
    day = conn.execute(
        "SELECT rowid, id, text FROM entries WHERE file = 'observations.md' ORDER BY line"
    ).fetchall()
    # The day leaves observations.md for its archive month, as ``om reflect`` moves it.
    write(store, "observations.md", "# Observations\n")
    write(store, "archive/observations/2026-02.md", OBSERVATIONS)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    report = refresh(store, conn)
    conn.set_trace_callback(None)
    assert report.files_indexed == 2
    moved = conn.execute(
        "SELECT rowid, id, text, kind FROM entries WHERE file = 'archive/observations/2026-02.md' "
        "ORDER BY line"
    ).fetchall()
    assert [(r, i, t) for r, i, t, _ in moved] == day  # the same rows, now in the archive
    assert {kind for *_, kind in moved} == {"archive"}
    assert not [s for s in statements if "entries_fts" in s and "'delete'" in s]
    assert matches(conn, "Tortoise") == ["Changed mind from SQLAlchemy to Tortoise ORM"]
    fts_consistent(conn)


def test_edited_and_deleted_lines_leave_no_stale_rows(
    store: MemoryStore, conn: sqlite3.Connection
) -> None:
    populate(store)
    refresh(store, conn)
    edited = OBSERVATIONS.replace("Tortoise ORM", "Piccolo ORM").replace(
        "- 🔴 14:00 User is building a task management REST API with FastAPI\n", ""
    )
    write(store, "observations.md", edited)
    refresh(store, conn)
    assert matches(conn, "tortoise") == []
    assert matches(conn, "fastapi") == []
    assert matches(conn, "piccolo") == ["Changed mind from SQLAlchemy to Piccolo ORM"]
    lines = [row[1] for row in entries(conn) if row[0] == "observations.md"]
    assert lines == [11, 12]  # line numbers follow the lines that moved up
    fts_consistent(conn)


def test_deleted_file_loses_its_rows(store: MemoryStore, conn: sqlite3.Connection) -> None:
    populate(store)
    refresh(store, conn)
    (store.home / "vault" / "people" / "alice.md").unlink()
    report = refresh(store, conn)
    assert report.files_removed == 1
    assert matches(conn, "payments") == []
    files = {row[0] for row in conn.execute("SELECT path FROM files")}
    assert "vault/people/alice.md" not in files
    fts_consistent(conn)


def test_same_size_rewrite_in_the_same_clock_tick_is_noticed(
    store: MemoryStore, conn: sqlite3.Connection
) -> None:
    # Coarse timestamps: a rewrite of equal size may keep the mtime it had when it was indexed.
    path = write(store, "active.md", "# Active\n\n## Now\n\n- Alpha task\n", old=False)
    tick = path.stat().st_mtime_ns
    refresh(store, conn)
    path.write_text("# Active\n\n## Now\n\n- Gamma task\n", encoding="utf-8")
    os.utime(path, ns=(tick, tick))
    refresh(store, conn)
    assert matches(conn, "gamma") == ["Gamma task"]
    assert matches(conn, "alpha") == []


def test_parse_issues_are_reported_and_stored(store: MemoryStore, conn: sqlite3.Connection) -> None:
    write(store, "observations.md", "# Observations\n\nstray text\n\n## 2026-01-02\n\n- ok line\n")
    report = refresh(store, conn)
    assert report.issues == [FileIssue("observations.md", 3, "text outside any day section (kept)")]
    assert index_issues(conn) == report.issues
    assert str(report.issues[0]) == "observations.md:3: text outside any day section (kept)"
    write(store, "observations.md", "# Observations\n\n## 2026-01-02\n\n- ok line\n")
    assert refresh(store, conn).issues == []
    assert index_issues(conn) == []


def test_unreadable_file_is_an_issue_and_retried(
    store: MemoryStore, conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate(store)
    original = MemoryStore.read_bytes

    def flaky(self: MemoryStore, path: Path) -> bytes:
        if path.name == "profile.md":
            raise MemoryFileError(f"cannot read {path}: Permission denied", "check its permissions")
        return original(self, path)

    monkeypatch.setattr(MemoryStore, "read_bytes", flaky)
    report = refresh(store, conn)
    assert report.files_indexed == len(FILES) - 1
    assert [issue.file for issue in report.issues] == ["profile.md"]
    monkeypatch.setattr(MemoryStore, "read_bytes", original)
    assert refresh(store, conn).files_indexed == 1
    assert matches(conn, "lisbon") == ["Backend engineer in Lisbon"]


def test_provenance_comes_from_the_ledger_and_follows_it(
    store: MemoryStore, conn: sqlite3.Connection
) -> None:
    prov = Provenance(
        path="/t/s1.jsonl", line_start=3, line_end=9, session="s1", agent="claude", project="om"
    )
    (added,) = store.add_observations(
        [
            new_observation(
                "Chose PostgreSQL for writes", date="2026-02-10", time="14:30", provenance=prov
            )
        ]
    )
    refresh(store, conn)
    columns = "session, agent, project, source_path, source_line_start, source_line_end"
    query = f"SELECT {columns} FROM entries WHERE id = ?"
    assert conn.execute(query, (added.id,)).fetchone() == (
        "s1",
        "claude",
        "om",
        "/t/s1.jsonl",
        3,
        9,
    )
    # A later ledger line for the same id wins; the markdown did not change at all.
    append_provenance(store.ledger_path, [(added.id, Provenance(path="/t/s2.jsonl", line_start=1))])
    age(store.ledger_path)
    report = refresh(store, conn)
    assert (report.files_indexed, report.provenance_updated) == (0, 1)
    assert conn.execute(query, (added.id,)).fetchone() == (None, None, None, "/t/s2.jsonl", 1, None)
    store.ledger_path.unlink()
    assert refresh(store, conn).provenance_updated == 1
    assert conn.execute(query, (added.id,)).fetchone() == (None,) * 6


def test_vault_pages_with_equal_lines_get_distinct_ids(
    store: MemoryStore, conn: sqlite3.Connection
) -> None:
    write(store, "vault/a.md", "# A\n\n## Notes\n\n- Same line\n")
    write(store, "vault/b.md", "# B\n\n## Notes\n\n- Same line\n")
    refresh(store, conn)
    ids = [row[3] for row in entries(conn)]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_another_memory_directory_replaces_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_INDEX_PATH", str(tmp_path / "shared.sqlite3"))
    first = MemoryStore(tmp_path / "one").ensure()
    second = MemoryStore(tmp_path / "two").ensure()
    write(first, "profile.md", "# P\n\n## A\n\n- Lives in Porto\n")
    write(second, "profile.md", "# P\n\n## A\n\n- Lives in Oslo\n")
    assert first.index_path == second.index_path
    conn = open_index(first.index_path)
    try:
        refresh(first, conn)
        refresh(second, conn)
        assert [row[4] for row in entries(conn)] == ["Lives in Oslo"]
    finally:
        conn.close()


def test_rebuild_starts_from_nothing(store: MemoryStore, conn: sqlite3.Connection) -> None:
    populate(store)
    refresh(store, conn)
    conn.execute(
        "INSERT INTO entries (id, kind, file, text) VALUES ('junk', 'vault', 'gone.md', 'junk')"
    )
    report = rebuild(store)
    assert (report.files_indexed, report.entries) == (len(FILES), 9)
    assert "junk" not in {row[3] for row in entries(conn)}
    fts_consistent(conn)


def test_index_status(store: MemoryStore) -> None:
    populate(store)
    status = index_status(store)
    assert status["exists"] is False
    assert status["stale_files"] == len(FILES)
    assert not store.index_path.exists()  # status does not create the index
    rebuild(store)
    status = index_status(store)
    assert {k: status[k] for k in ("exists", "healthy", "schema_version", "entries", "files")} == {
        "exists": True, "healthy": True, "schema_version": SCHEMA_VERSION, "entries": 9,
        "files": len(FILES),
    }  # fmt: skip
    assert status["stale_files"] == 0
    write(store, "active.md", "# Active\n\n## Now\n\n- Something else entirely\n")
    age(store.home / "profile.md")  # touched only: not stale
    assert index_status(store)["stale_files"] == 1
    store.index_path.write_bytes(b"garbage" * 1000)
    status = index_status(store)
    assert status["healthy"] is False
    assert status["entries"] == 0


def _refresh_worker(home: str, barrier: Any, results: Any) -> None:
    try:
        store = MemoryStore(home)
        barrier.wait()
        conn = open_index(store.index_path)
        try:
            report = refresh(store, conn)
        finally:
            conn.close()
        results.put((report.files_indexed, report.files_rehashed, report.entries, ""))
    except BaseException as exc:  # reported to the test, which shows it
        results.put((0, 0, 0, f"{type(exc).__name__}: {exc}"))


def _run_at_once(home: Path, workers: int, method: str) -> list[tuple[int, int, int, str]]:
    ctx = multiprocessing.get_context(method)
    barrier = ctx.Barrier(workers)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_refresh_worker, args=(str(home), barrier, results))
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    reports = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert [r[3] for r in reports if r[3]] == []
    return reports


def test_processes_opening_a_new_index_at_once_all_succeed(tmp_path: Path) -> None:
    # Creating the database (and switching it to WAL) is the most contended moment: a process
    # must wait for the others, never fail with "database is locked".
    for round_ in range(25):
        store = MemoryStore(tmp_path / f"mem{round_}").ensure()
        write(store, "profile.md", FILES["profile.md"])
        reports = _run_at_once(store.home, 4, "fork")
        assert sum(r[0] for r in reports) == 1


def test_processes_refreshing_at_once_do_the_work_once(store: MemoryStore) -> None:
    lines = [
        f"- 🟡 {h:02d}:{m:02d} Observation number {h * 60 + m} about topic{m % 7}"
        for h in range(20)
        for m in range(60)
    ]
    write(store, "observations.md", "# Observations\n\n## 2026-03-01\n\n" + "\n".join(lines) + "\n")
    write(store, "reflections.md", REFLECTIONS)
    write(store, "archive/observations/2026-01.md", FILES["archive/observations/2026-01.md"])
    expected = len(lines) + 3
    # spawn: fresh interpreters, sharing nothing with this one but the files.
    reports = _run_at_once(store.home, 4, "spawn")
    assert sum(r[0] for r in reports) == 3  # each file parsed by exactly one process
    assert sum(r[1] for r in reports) == 0
    assert sum(r[2] for r in reports) == expected
    conn = open_index(store.index_path)
    try:
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == expected
        dupes = conn.execute(
            "SELECT file, line FROM entries GROUP BY file, line HAVING count(*) > 1"
        ).fetchall()
        assert dupes == []
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 3
        fts_consistent(conn)
    finally:
        conn.close()


# Hand edits in any order: after each, the index must hold exactly what a fresh parse holds.
_LINE = st.sampled_from(
    [
        "- 🔴 09:00 Alpha decision about postgres",
        "- 🟡 10:00 Beta note about redis",
        "- 🟢 Gamma detail",
        "  - 🟡 11:00 Delta nested point",
        "- ✅ 12:00 Epsilon shipped ^abcdef1234",
        "- Zeta untagged line",
        "- Zeta untagged line",
    ]
)
_VERSION = st.lists(st.tuples(st.sampled_from(["2026-01-01", "2026-01-02"]), _LINE), max_size=12)


def _render(version: list[tuple[str, str]]) -> str:
    out = ["# Observations", ""]
    for day in sorted({d for d, _ in version}):
        out += [f"## {day}", "", "### Observations", ""]
        out += [line for d, line in version if d == day]
        out.append("")
    return "\n".join(out) + "\n"


@settings(max_examples=40, deadline=None)
@given(st.lists(_VERSION, min_size=1, max_size=5))
def test_any_sequence_of_edits_matches_a_fresh_index(versions: list[list[tuple[str, str]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "mem").ensure()
        fresh = MemoryStore(Path(tmp) / "fresh").ensure()
        conn = open_index(store.index_path)
        try:
            for version in versions:
                write(store, "observations.md", _render(version))
                refresh(store, conn)
                fts_consistent(conn)
                write(fresh, "observations.md", _render(version))
                rebuild(fresh)
                other = open_index(fresh.index_path)
                try:
                    assert entries(conn) == entries(other)
                    assert contexts(conn) == contexts(other)
                finally:
                    other.close()
        finally:
            conn.close()


def test_bytes_that_are_not_utf8_are_indexed_not_fatal(store: MemoryStore) -> None:
    from obsmem.search import search

    store.ensure()
    store.observations_path.write_bytes(
        b"# Observations\n\n## 2026-02-23\n\n### Observations\n\n"
        b"- \xf0\x9f\x9f\xa1 10:00 Latin-1 caf\xe9 from an old editor\n"
    )
    hits = search(store, "latin editor")
    assert [h.text for h in hits] == ["Latin-1 caf\ufffd from an old editor"]
    assert store.observations_path.read_bytes().count(b"caf\xe9") == 1  # the file keeps its bytes


def test_generated_blocks_of_profile_and_active_are_not_indexed(store: MemoryStore) -> None:
    from obsmem.search import search

    store.ensure()
    (store.home / "profile.md").write_text(
        "# Profile\n\n## Notes\n\n- Hand-written zanzibar note\n\n"
        "<!-- om:begin generated -->\n## Preferences\n\n- Generated zanzibar copy\n"
        "<!-- om:end generated -->\n"
    )
    texts = [h.text for h in search(store, "zanzibar")]
    assert texts == ["Hand-written zanzibar note"]

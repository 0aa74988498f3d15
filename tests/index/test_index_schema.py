"""The schema: version 3 (entries carry their neighbours' text, older indexes are rebuilt) and 6
(the label index, added to an index of version 5 without reindexing)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from obsmem.index import open_index, refresh
from obsmem.index.schema import (
    CONTEXT_CHARS,
    ENTRY_COLUMNS,
    MIGRATIONS,
    SCHEMA_VERSION,
    neighbour_context,
    schema_version,
    split_statements,
)
from obsmem.memory.store import MemoryStore
from obsmem.search import search
from obsmem.search.speakers import labelled


def row(text: str, *, kind: str = "observation", date: str | None = "2026-03-01",
        section: str | None = None) -> tuple[object, ...]:  # fmt: skip
    values: dict[str, object] = dict.fromkeys(ENTRY_COLUMNS)
    values.update(id=text[:10], kind=kind, file="f.md", date=date, section=section, text=text)
    return tuple(values[name] for name in ENTRY_COLUMNS)


def context(rows: list[tuple[object, ...]]) -> list[object]:
    return [r[ENTRY_COLUMNS.index("context")] for r in neighbour_context(rows)]


def test_context_is_two_neighbours_on_each_side() -> None:
    rows = [row(f"line {n}") for n in range(6)]
    assert context(rows) == [
        "line 1 line 2",
        "line 0 line 2 line 3",
        "line 0 line 1 line 3 line 4",
        "line 1 line 2 line 4 line 5",
        "line 2 line 3 line 5",
        "line 3 line 4",
    ]


def test_context_stays_within_a_day_or_a_section() -> None:
    days = [row("a1"), row("a2"), row("b1", date="2026-03-02"), row("b2", date="2026-03-02")]
    assert context(days) == ["a2", "a1", "b2", "b1"]
    # Sections group reflections and the like, whatever date a line mentions.
    sections = [
        row("p1", kind="reflection", section="Preferences", date="2026-01-01"),
        row("p2", kind="reflection", section="Preferences", date=None),
        row("t1", kind="reflection", section="Tools", date=None),
    ]
    assert context(sections) == ["p2", "p1", None]


def test_long_neighbours_are_cut_at_a_space() -> None:
    long = "word " * 200
    (first, _) = context([row("short"), row(long)])
    assert isinstance(first, str)
    assert CONTEXT_CHARS // 2 < len(first) <= CONTEXT_CHARS
    assert first.split() == ["word"] * len(first.split())


def test_other_columns_are_left_as_they_were() -> None:
    rows = [row("one"), row("two")]
    out = neighbour_context(rows)
    for before, after in zip(rows, out, strict=True):
        changed = [n for n, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert changed == [ENTRY_COLUMNS.index("context")]


OBSERVATIONS = """# Observations

## 2026-03-01

### Observations

- 🟡 10:00 How often does the nightly backup run?
- 🟡 10:05 Every four hours since the storage move
"""


def _version_2_index(path: Path, store: MemoryStore) -> None:
    """An index as om wrote it before version 3: two FTS columns, no context, marked fresh."""
    conn = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:2]:
        for statement in split_statements(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    old_columns = [c for c in ENTRY_COLUMNS if c != "context"]
    values = dict.fromkeys(old_columns)
    values.update(id="stale00000", kind="observation", file="observations.md", line=7,
                  date="2026-03-01", text="A stale row from before the upgrade")  # fmt: skip
    conn.execute(
        f"INSERT INTO entries ({', '.join(old_columns)}) "
        f"VALUES ({', '.join('?' for _ in old_columns)})",
        [values[c] for c in old_columns],
    )
    conn.execute("INSERT INTO entries_fts (rowid, text, section) SELECT rowid, text, section "
                 "FROM entries")  # fmt: skip
    stat = store.observations_path.stat()
    conn.execute(
        "INSERT INTO files VALUES ('observations.md', 'observation', ?, ?, 'x', '2026-03-01')",
        (stat.st_size, stat.st_mtime_ns),
    )
    conn.execute("INSERT INTO meta VALUES ('home', ?)", (os.path.abspath(store.home),))
    conn.close()


def test_a_version_2_index_is_migrated_and_reindexed(store: MemoryStore) -> None:
    store.observations_path.write_text(OBSERVATIONS, encoding="utf-8")
    _version_2_index(store.index_path, store)
    conn = open_index(store.index_path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION == 6
        report = refresh(store, conn)
        assert report.files_indexed == 1  # the migration forgot what had been indexed
        texts = [r[0] for r in conn.execute("SELECT text FROM entries ORDER BY line")]
        assert texts == [
            "How often does the nightly backup run?",
            "Every four hours since the storage move",
        ]
        conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()
    # The answer holds none of the question's words: its neighbour does.
    hits = search(store, "how often nightly backup")
    assert [h.text for h in hits] == texts


def test_a_version_5_index_gains_the_label_index_and_keeps_its_rows(store: MemoryStore) -> None:
    conn = sqlite3.connect(store.index_path, isolation_level=None)
    for script in MIGRATIONS[:5]:
        for statement in split_statements(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 5")
    values = dict(zip(ENTRY_COLUMNS, row("user: keep the cache warm"), strict=True))
    conn.execute(
        f"INSERT INTO entries ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})",
        list(values.values()),
    )
    conn.close()
    conn = open_index(store.index_path)
    try:
        assert schema_version(conn) == SCHEMA_VERSION
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "entries_label" in names
        assert labelled(conn, ["User", "assistant"]) == ("User",)  # the row already there
    finally:
        conn.close()

"""Keyset pages over the index: newest first, filtered, and deep pages as cheap as the first."""

from __future__ import annotations

import sqlite3

import pytest

from obsmem.errors import UsageError
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search.browse import browse, facets
from obsmem.search.entries import Filters


def _fill(store: MemoryStore, days: int = 5, per_day: int = 4) -> None:
    store.add_observations(
        new_observation(
            f"day {d} note {n}", date=f"2026-11-{10 + d:02d}", time=f"1{n}:00",
            type="decision" if n == 0 else "fact", importance=0.9 if n == 0 else 0.5,
            provenance=Provenance(path="", project="atlas" if d % 2 else "billing",
                                  agent="claude"),
        )
        for d in range(days)
        for n in range(per_day)
    )  # fmt: skip


def test_pages_cover_everything_newest_first(store: MemoryStore) -> None:
    _fill(store)
    seen: list[tuple[str, str]] = []
    cursor = None
    pages = 0
    while True:
        page = browse(store, cursor=cursor, limit=3)
        seen += [(e["date"], e["time"]) for e in page.entries]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == 20 and len(set(seen)) == 20
    assert seen == sorted(seen, reverse=True)
    assert pages == 7


def test_filters_and_priority(store: MemoryStore) -> None:
    _fill(store)
    page = browse(store, filters=Filters(project="atlas", type="decision"), limit=50)
    assert [e["text"] for e in page.entries] == ["day 3 note 0", "day 1 note 0"]
    important = browse(store, priority="important", limit=50)
    assert len(important.entries) == 5
    assert {e["priority"] for e in important.entries} == {"🔴"}
    assert browse(store, priority="minor").entries == []


def test_an_empty_memory_has_one_empty_page(store: MemoryStore) -> None:
    page = browse(store)
    assert page.entries == [] and page.next_cursor is None


@pytest.mark.parametrize("cursor", ["yesterday", "2026-11-10", "2026-11-10.x", "1.2"])
def test_a_forged_cursor_is_a_usage_error(store: MemoryStore, cursor: str) -> None:
    with pytest.raises(UsageError, match="cursor"):
        browse(store, cursor=cursor)


@pytest.mark.parametrize(
    "kwargs", [{"limit": 0}, {"limit": 501}, {"priority": "urgent"}, {"kinds": ()}]
)
def test_bad_arguments_are_usage_errors(store: MemoryStore, kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        browse(store, **kwargs)  # type: ignore[arg-type]


def test_a_deep_page_uses_the_date_index(store: MemoryStore) -> None:
    _fill(store)
    first = browse(store, limit=2)
    assert first.next_cursor is not None
    conn = sqlite3.connect(store.index_path)
    plan = " ".join(
        str(row[3])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT rowid FROM entries AS e WHERE e.date IS NOT NULL "
            "AND e.kind IN ('observation', 'archive') AND (e.date, e.rowid) < (?, ?) "
            "ORDER BY e.date DESC, e.rowid DESC LIMIT 3",
            ("2026-11-12", 10),
        )
    )
    conn.close()
    assert "entries_date" in plan
    assert "TEMP B-TREE" not in plan  # no sort of every row


def test_facets_list_the_choices(store: MemoryStore) -> None:
    _fill(store)
    browse(store)  # brings the index up to date
    assert facets(store) == {
        "project": ["atlas", "billing"],
        "agent": ["claude"],
        "type": ["decision", "fact"],
    }


def test_facets_on_a_kept_index_follow_new_entries(store: MemoryStore) -> None:
    from obsmem.search.recall import KeptIndex

    _fill(store, days=1, per_day=1)
    kept = KeptIndex(store.index_path)
    try:
        browse(store, index=kept)
        assert facets(store, index=kept)["project"] == ["billing"]
        store.add_observations([
            new_observation("a new project appears", date="2026-11-30", type="event",
                            provenance=Provenance(path="", project="zephyr", agent="codex"))
        ])  # fmt: skip
        browse(store, index=kept)  # the page's refresh, on the kept connection
        assert facets(store, index=kept)["project"] == ["billing", "zephyr"]
        assert facets(store, index=kept)["type"] == ["decision", "event"]
    finally:
        kept.close()


@pytest.mark.parametrize(("column", "value"), [("project", "billing"), ("agent", "claude")])
def test_a_filtered_page_walks_its_own_index(store: MemoryStore, column: str, value: str) -> None:
    """A rare project must not cost a scan of every row (schema 4)."""
    _fill(store)
    assert browse(store, filters=Filters(**{column: value}), limit=2).entries
    conn = sqlite3.connect(store.index_path)
    plan = " ".join(
        str(row[3])
        for row in conn.execute(
            f"EXPLAIN QUERY PLAN SELECT rowid FROM entries AS e WHERE e.{column} = ? "
            "AND e.date IS NOT NULL AND e.kind IN ('observation', 'archive') "
            "ORDER BY e.date DESC, e.rowid DESC LIMIT 3",
            (value,),
        )
    )
    conn.close()
    assert f"entries_{column}_date" in plan, plan

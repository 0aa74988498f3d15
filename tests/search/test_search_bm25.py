"""``search``: always fresh, ranked by BM25, and indifferent to a lost or damaged index."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obsmem.errors import UsageError
from obsmem.index.db import INDEX_SUFFIXES
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import Hit, search

OBSERVATIONS = """# Observations

## 2026-02-10

### Observations

- 🔴 14:00 [decision|c=0.95|i=0.90] Chose PostgreSQL over SQLite for concurrent writes
- 🟡 14:10 Changed mind from SQLAlchemy to Tortoise ORM
- 🟢 15:00 Redis cache for the CI pipeline was flaky
"""

REFLECTIONS = """# Reflections

## Preferences

- Prefers Tortoise ORM and async code
"""


def fill(store: MemoryStore) -> MemoryStore:
    (store.home / "observations.md").write_text(OBSERVATIONS, encoding="utf-8")
    (store.home / "reflections.md").write_text(REFLECTIONS, encoding="utf-8")
    return store


def texts(hits: list[Hit]) -> list[str]:
    return [hit.text for hit in hits]


def holding(hits: list[Hit], word: str) -> list[Hit]:
    """The hits whose own text holds ``word``: the others were found through their neighbours."""
    return [hit for hit in hits if word.casefold() in hit.text.casefold()]


def append(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def test_first_search_of_a_never_indexed_directory(store: MemoryStore) -> None:
    fill(store)
    assert not store.index_path.exists()
    hits = search(store, "tortoise")
    assert store.index_path.exists()
    # The entries holding the word come first; their neighbours follow (test_bm25_ranking.py).
    assert sorted(texts(hits[:2])) == [
        "Changed mind from SQLAlchemy to Tortoise ORM",
        "Prefers Tortoise ORM and async code",
    ]
    top = search(store, "postgresql")[0]
    assert (top.rank, top.kind, top.file, top.line) == (1, "observation", "observations.md", 7)
    assert (top.date, top.time, top.priority, top.type, top.importance) == (
        "2026-02-10",
        "14:00",
        "🔴",
        "decision",
        0.9,
    )
    reflection = next(h for h in hits if h.kind == "reflection")
    assert (reflection.section, reflection.file, reflection.line) == (
        "Preferences",
        "reflections.md",
        5,
    )


def test_lines_added_by_hand_are_found_by_the_next_search(store: MemoryStore) -> None:
    fill(store)
    assert search(store, "zygomorphic") == []
    append(store.observations_path, "- 🔴 18:00 Adopted zygomorphic caching for the gateway")
    assert texts(search(store, "zygomorphic"))[0] == "Adopted zygomorphic caching for the gateway"
    append(store.home / "reflections.md", "- Writes commit messages in the imperative")
    assert texts(search(store, "imperative"))[0] == "Writes commit messages in the imperative"


def test_refresh_false_searches_the_index_as_it_is(store: MemoryStore) -> None:
    fill(store)
    search(store, "redis")
    append(store.observations_path, "- 🟡 19:00 Quokka sighting near the office")
    assert search(store, "quokka", refresh=False) == []
    assert len(holding(search(store, "quokka"), "quokka")) == 1


def test_a_deleted_file_loses_its_hits(store: MemoryStore) -> None:
    fill(store)
    assert len(holding(search(store, "tortoise"), "tortoise")) == 2
    (store.home / "reflections.md").unlink()
    assert {h.file for h in search(store, "tortoise")} == {"observations.md"}


def test_more_matching_words_rank_higher(store: MemoryStore) -> None:
    fill(store)
    hits = search(store, "redis pipeline flaky sqlite")
    assert hits[0].text == "Redis cache for the CI pipeline was flaky"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_limit(store: MemoryStore) -> None:
    fill(store)
    assert len(search(store, "tortoise redis postgresql", limit=2)) == 2
    with pytest.raises(UsageError):
        search(store, "tortoise", limit=0)


@pytest.mark.parametrize("query", ["", "   ", "*", "🤷", '"', "AND OR NOT"[:0]])
def test_queries_without_words_return_nothing_and_touch_nothing(
    store: MemoryStore, query: str
) -> None:
    fill(store)
    assert search(store, query) == []
    assert not store.index_path.exists()


def test_missing_memory_directory_is_an_empty_result(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "nowhere")
    assert search(store, "anything") == []
    assert not (tmp_path / "nowhere").exists()


def test_corrupt_index_is_rebuilt(store: MemoryStore) -> None:
    fill(store)
    search(store, "tortoise")
    store.index_path.write_bytes(b"\x13\x37 garbage, not SQLite " * 512)
    assert len(holding(search(store, "tortoise"), "tortoise")) == 2


def test_deleted_index_is_rebuilt(store: MemoryStore) -> None:
    fill(store)
    search(store, "tortoise")
    for suffix in INDEX_SUFFIXES:
        store.index_path.with_name(store.index_path.name + suffix).unlink(missing_ok=True)
    assert len(holding(search(store, "tortoise"), "tortoise")) == 2


def test_damage_only_a_query_can_see_is_rebuilt(store: MemoryStore) -> None:
    fill(store)
    search(store, "tortoise")
    # Break the full-text index's own blocks: the file stays a valid database (quick_check
    # passes), but MATCH fails with "database disk image is malformed".
    conn = sqlite3.connect(store.index_path)
    conn.execute(
        "UPDATE entries_fts_data SET block = x'ffffffffffffffffffffffffffffffff' WHERE id > 10"
    )
    conn.commit()
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute(
            "SELECT rowid FROM entries_fts WHERE entries_fts MATCH '\"tortoise\"'"
        ).fetchall()
    conn.close()
    assert len(holding(search(store, "tortoise"), "tortoise")) == 2


def test_provenance_from_the_ledger_shows_in_hits(store: MemoryStore) -> None:
    prov = Provenance(path="/home/u/.claude/projects/x/s1.jsonl", line_start=40, line_end=52,
                      session="s1", agent="claude", project="om")  # fmt: skip
    store.add_observations(
        [
            new_observation(
                "Pinned the gRPC version to 1.62",
                date="2026-03-01",
                time="09:30",
                type="decision",
                importance=0.8,
                provenance=prov,
            )
        ]
    )
    append(store.observations_path, "- 🟡 10:00 Hand-written note about gRPC retries")
    hits = search(store, "grpc")
    by_text = {h.text: h for h in hits}
    assert by_text["Pinned the gRPC version to 1.62"].provenance == {
        "source_path": "/home/u/.claude/projects/x/s1.jsonl", "line_start": 40, "line_end": 52,
        "session": "s1", "agent": "claude", "project": "om",
    }  # fmt: skip
    assert by_text["Hand-written note about gRPC retries"].provenance is None


def test_hit_to_dict_is_json_ready(store: MemoryStore) -> None:
    fill(store)
    hit = search(store, "postgresql")[0]
    data = hit.to_dict()
    assert list(data) == [
        "rank", "score", "id", "kind", "file", "line", "date", "time", "priority", "type",
        "importance", "section", "text", "provenance",
    ]  # fmt: skip
    assert json.loads(json.dumps(data)) == data


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    home = tmp_path_factory.mktemp("hostile") / "mem"
    return fill(MemoryStore(home, environ={"OM_HOME": str(home)}).ensure())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.text(),
        st.sampled_from(['"C++ OR', "NOT", "a:b", "*", "AND", "NEAR(", "^", "\x00", "🤷", '"']),
    )
)
def test_hostile_queries_never_raise(shared_store: MemoryStore, query: str) -> None:
    for hit in search(shared_store, query, limit=3):
        assert hit.score >= 0


def test_import_is_cheap() -> None:
    code = (
        "import sys, obsmem.search; "
        "heavy = {'numpy', 'click', 'rich', 'fastembed', 'mcp'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

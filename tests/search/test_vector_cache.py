"""VectorStore's in-process cache: reused on one unchanged connection, dropped on any change."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from obsmem.index.db import open_index
from obsmem.index.sync import refresh
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import vectors
from obsmem.search.vectors import VectorStore


class CountingEmbedder:
    """Deterministic unit vectors from each text's hash; counts the texts it embeds."""

    name = "counting-test-model"
    dim = 8

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.embedded += texts
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(vec / np.linalg.norm(vec))
        return np.stack(rows)


@pytest.fixture(autouse=True)
def _clean_cache() -> Iterator[None]:
    vectors.clear_cache()
    yield
    vectors.clear_cache()


@pytest.fixture
def memory(tmp_path: Path) -> MemoryStore:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    store.add_observations(
        [
            new_observation(f"Entry number {n} about topic {n % 3}", date="2026-01-05")
            for n in range(6)
        ]
    )
    return store


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = VectorStore._matrix

    def counted(self: VectorStore) -> Any:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(VectorStore, "_matrix", counted)
    return calls


def test_cache_is_reused_and_matches_an_uncached_ranking(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = _count_loads(monkeypatch)
    embedder = CountingEmbedder()
    conn: sqlite3.Connection = open_index(memory.index_path)
    try:
        refresh(memory, conn)
        assert VectorStore(conn, embedder).sync() == 6
        first = VectorStore(conn, embedder).rank("topic 1", 4)
        embedded = len(embedder.embedded)
        # Same connection, nothing changed: no entry re-read, nothing re-embedded but the query.
        assert VectorStore(conn, embedder).sync() == 0
        assert VectorStore(conn, embedder).rank("topic 1", 4) == first
        assert len(loads) == 1
        assert len(embedder.embedded) == embedded + 1
    finally:
        conn.close()
    vectors.clear_cache()
    other = open_index(memory.index_path)
    try:
        assert VectorStore(other, embedder).rank("topic 1", 4) == first  # uncached: same answer
        assert len(loads) == 2
    finally:
        other.close()


def test_cache_is_dropped_when_entries_change(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads = _count_loads(monkeypatch)
    embedder = CountingEmbedder()
    conn = open_index(memory.index_path)
    writer = open_index(memory.index_path)
    try:
        refresh(memory, conn)
        VectorStore(conn, embedder).sync()
        before = VectorStore(conn, embedder).rank("topic", 10)
        assert len(before) == 6 and len(loads) == 1
        # Another connection (another om process) indexes a new entry: data_version moves.
        memory.add_observations([new_observation("A brand new entry", date="2026-01-06")])
        refresh(memory, writer)
        assert VectorStore(conn, embedder).sync() == 1
        assert "A brand new entry" in embedder.embedded[-1]
        after = VectorStore(conn, embedder).rank("topic", 10)
        assert len(after) == 7 and len(loads) == 2
        # This connection's own write (an edit in place) also moves it.
        conn.execute("UPDATE entries SET text = 'edited text' WHERE rowid = ?", (after[0][0],))
        assert VectorStore(conn, embedder).sync() == 1
        VectorStore(conn, embedder).rank("topic", 10)
        assert len(loads) == 3
        # A different connection never reuses another's snapshot.
        VectorStore(writer, embedder).rank("topic", 10)
        assert len(loads) == 4
    finally:
        conn.close()
        writer.close()


def test_rank_among_ranks_only_the_given_entries(memory: MemoryStore) -> None:
    embedder = CountingEmbedder()
    conn = open_index(memory.index_path)
    try:
        refresh(memory, conn)
        store = VectorStore(conn, embedder)
        store.sync()
        full = store.rank("topic 1", 100)
        among = {rowid for rowid, _ in full[1::2]}
        query = embedder.embed(["topic 1"])[0]
        assert store.rank_vector(query, 2, among=among) == [p for p in full if p[0] in among][:2]
        assert store.rank_vector(query, 10, among={full[0][0], 10_000}) == full[:1]
        assert store.rank_vector(query, 10, among=set()) == []
    finally:
        conn.close()

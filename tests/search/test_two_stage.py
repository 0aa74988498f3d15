"""Two-stage vector ranking of large memories: short vectors pick candidates, exact scores rank.

The pure pieces are checked against the exact ranking on real sentence embeddings of the
packaged model; ``VectorStore`` is checked to take the two-stage path above the threshold and
to give the exact ranking's answer when the approximation loses nothing.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from obsmem.index.db import open_index
from obsmem.index.sync import refresh
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import vectors
from obsmem.search.embeddings import Embedder
from obsmem.search.vectors import (
    VectorStore,
    principal_directions,
    top_positions,
    two_stage_top,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def _sentences(count: int) -> list[str]:
    """Distinct English-looking sentences from the bundled transcripts (their JSON strings)."""
    seen: dict[str, None] = {}
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for match in re.finditer(
            r"[A-Z][a-z]+(?: [a-zA-Z]+){3,20}[.!?]", path.read_text("utf-8", "replace")
        ):
            seen.setdefault(match.group(0), None)
            if len(seen) == count:
                return list(seen)
    return list(seen)


def _exact(
    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32], limit: int
) -> list[int]:
    return top_positions(np.arange(len(matrix)), matrix @ query, limit).tolist()


def test_on_real_embeddings_the_candidates_hold_the_exact_top(embedder: Embedder) -> None:
    texts = _sentences(400)
    assert len(texts) >= 300, len(texts)
    matrix = embedder.embed(texts)
    queries = embedder.embed(texts[::10])  # a sentence is its own best match, and more
    basis, reduced = principal_directions(matrix, 96)
    assert basis.shape == (matrix.shape[1], 96) and reduced.shape == (len(texts), 96)
    found = total = 0
    for query in queries:
        expected = _exact(matrix, query, 5)
        # Candidates a tenth of the memory, as 1,000 of 10,000; exact scores rank them.
        order, scores = two_stage_top(matrix, basis, reduced, query, 5, len(texts) // 10)
        found += len(set(order.tolist()) & set(expected))
        total += len(expected)
        assert order[0] == expected[0]
        np.testing.assert_allclose(scores[order], (matrix @ query)[order], rtol=1e-5)
    assert found / total >= 0.97


def test_fewer_directions_lose_more(embedder: Embedder) -> None:
    # The check above can fail: with two directions the candidates miss much of the exact top.
    texts = _sentences(400)
    matrix = embedder.embed(texts)
    basis, reduced = principal_directions(matrix, 2)
    found = 0
    for query in embedder.embed(texts[::10]):
        order, _ = two_stage_top(matrix, basis, reduced, query, 5, len(texts) // 10)
        found += len(set(order.tolist()) & set(_exact(matrix, query, 5)))
    assert found / (5 * len(texts[::10])) < 0.9


def test_with_as_many_candidates_as_rows_it_is_the_exact_ranking() -> None:
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((300, 16)).astype(np.float32)
    basis, reduced = principal_directions(matrix, 3)
    for query in rng.standard_normal((10, 16)).astype(np.float32):
        order, _ = two_stage_top(matrix, basis, reduced, query, 20, 300)
        assert order.tolist() == _exact(matrix, query, 20)


class SubspaceEmbedder:
    """Unit vectors that all lie in a 4-dimensional subspace of 16 dimensions: four principal
    directions keep every score exactly, so two stages must give the exact ranking."""

    name = "subspace-test-model"
    dim = 16

    def __init__(self) -> None:
        self._mix = np.random.default_rng(1).standard_normal((4, self.dim))

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vec = np.random.default_rng(seed).standard_normal(4) @ self._mix
            rows.append(vec / np.linalg.norm(vec))
        return np.asarray(rows, dtype=np.float32)


def test_a_large_store_ranks_in_two_stages_with_the_exact_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    store.add_observations(
        new_observation(f"Entry {n} on subject {n % 7} and {n % 11}", date="2026-01-05")
        for n in range(400)
    )
    monkeypatch.setattr(vectors, "TWO_STAGE_FROM", 100)
    monkeypatch.setattr(vectors, "REDUCED_DIMS", 4)
    monkeypatch.setattr(vectors, "CANDIDATES", 60)
    embedder = SubspaceEmbedder()
    conn: sqlite3.Connection = open_index(store.index_path)
    try:
        refresh(store, conn)
        ranked_store = VectorStore(conn, embedder)
        assert ranked_store.sync() == 400
        rowids = [int(r) for (r,) in conn.execute("SELECT rowid FROM entries ORDER BY rowid")]
        matrix = embedder.embed(
            [t for (t,) in conn.execute("SELECT text FROM entries ORDER BY rowid")]
        )
        for query_text in ("subject 3", "entry 250", "nothing like it"):
            query = embedder.embed([query_text])[0]
            got = ranked_store.rank_vector(query, 2)  # 20 x 2 = 40 < 60: 60 candidates
            want = [rowids[i] for i in _exact(matrix, query, 2)]
            assert [rowid for rowid, _ in got] == want
        snap = vectors._SNAPSHOTS[embedder.name]
        assert snap.reduced is not None and snap.reduced.shape == (400, 4)
        # Filters rank exactly, among the entries they keep.
        among = set(rowids[::3])
        got = ranked_store.rank_vector(embedder.embed(["subject 3"])[0], 5, among=among)
        assert {rowid for rowid, _ in got} <= among and len(got) == 5
    finally:
        conn.close()


def test_a_small_store_ranks_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    store.add_observations(
        new_observation(f"Entry {n} on subject {n % 7}", date="2026-01-05") for n in range(50)
    )
    monkeypatch.setattr(vectors, "TWO_STAGE_FROM", 100)
    embedder = SubspaceEmbedder()
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        VectorStore(conn, embedder).sync()
        VectorStore(conn, embedder).rank_vector(embedder.embed(["subject 3"])[0], 5)
        assert vectors._SNAPSHOTS[embedder.name].reduced is None
    finally:
        conn.close()

"""Neighbours in the vector ranking: an entry's cosine plus a share of its neighbours' mean.

The arithmetic and the two-stage path are checked on hand-made vectors; the neighbour links on a
real index (same file and day only, as the BM25 neighbours column groups them).
"""

from __future__ import annotations

import numpy as np

from obsmem.index.db import open_index
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search.embeddings import Embedder
from obsmem.search.indexing import embed_index
from obsmem.search.vectors import (
    Neighbours,
    VectorStore,
    neighbour_positions,
    principal_directions,
    top_positions,
    two_stage_top,
    with_context,
)
from obsmem.settings import load_settings


def _chain(pairs: list[list[int]]) -> Neighbours:
    links = np.array(pairs, dtype=np.intp)
    count = (links < len(pairs)).sum(axis=1).astype(np.float32)
    share = np.divide(1.0, count, out=np.zeros(len(pairs), dtype=np.float32), where=count > 0)
    return Neighbours(np.ascontiguousarray(links.T), share)


def test_with_context_adds_the_share_of_the_neighbours_mean() -> None:
    scores = np.array([0.2, 0.4, 0.6, 0.8], dtype=np.float32)
    neighbours = _chain([[4, 1], [0, 2], [1, 4], [4, 4]])  # 4: none
    got = with_context(scores, neighbours, 0.5)
    assert np.allclose(got, [0.2 + 0.5 * 0.4, 0.4 + 0.5 * 0.4, 0.6 + 0.5 * 0.4, 0.8])
    assert with_context(scores, neighbours, 0.0) is scores
    # Limited to some rows, the others are left as they were.
    only = with_context(scores, neighbours, 0.5, rows=np.array([1]))
    assert np.allclose(only, [0.2, 0.6, 0.6, 0.8])


def test_two_stage_with_context_matches_the_exact_smoothed_ranking() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((300, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    neighbours = _chain([[i - 1 if i else 300, i + 1 if i < 299 else 300] for i in range(300)])
    basis, reduced = principal_directions(matrix, 16)  # no reduction: the stages agree
    query = matrix[42]
    exact = with_context(matrix @ query, neighbours, 0.5)
    expected = top_positions(np.arange(300), exact, 5)
    order, scores = two_stage_top(
        matrix, basis, reduced, query, 5, 50, neighbours=neighbours, context_weight=0.5
    )
    assert order.tolist() == expected.tolist()
    assert np.allclose(scores[order], exact[order], atol=1e-5)


def test_neighbours_are_the_entries_beside_it_on_the_same_day(
    store: MemoryStore, hybrid_env: dict[str, str], embedder: Embedder
) -> None:
    store.ensure()
    store.add_observations(
        [
            new_observation("How often do you all work out together?", date="2026-01-05"),
            new_observation("Three times a week, mostly swimming", date="2026-01-05"),
            new_observation("The release went out on Friday", date="2026-01-06"),
        ]
    )
    embed_index(store, load_settings(hybrid_env))
    conn = open_index(store.index_path)
    try:
        rows = [(int(r), str(t)) for r, t in conn.execute("SELECT rowid, text FROM entries")]
        rowids = sorted(r for r, _ in rows)
        links = neighbour_positions(conn, rowids)
        text = {rowids.index(r): t for r, t in rows}
        pairs = {
            (text[i], text[int(j)])
            for i in range(len(rowids))
            for j in links.links[:, i]
            if j < len(rowids)
        }
        query = embedder.embed(["how often do they exercise as a group"])[0]
        plain = VectorStore(conn, embedder).rank_vector(query, 3)
        smoothed = VectorStore(conn, embedder, 1.0).rank_vector(query, 3)
    finally:
        conn.close()
    workout, swim, release = (t for _, t in sorted(rows))
    assert pairs == {(workout, swim), (swim, workout)}  # another day is not a neighbour
    by_text = {r: t for r, t in rows}
    plain_scores = {by_text[r]: s for r, s in plain}
    smoothed_scores = {by_text[r]: s for r, s in smoothed}
    assert smoothed_scores[swim] > plain_scores[swim]
    assert smoothed_scores[release] == plain_scores[release]


def test_neighbours_two_wide_skip_entries_without_a_vector() -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE entries (file TEXT, kind TEXT, date TEXT, section TEXT, line INT)")
    rows = [("o.md", "observation", "2026-01-05", None, line) for line in range(1, 5)]
    rows += [("o.md", "observation", "2026-01-06", None, 9)]  # another day
    rows += [("p.md", "profile", None, "Editor", 1), ("p.md", "profile", None, "Editor", 2)]
    conn.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?)", rows)
    # Rowid 3 has no vector: rows 2 and 4 are still two apart, not neighbours at distance 1.
    rowids = [1, 2, 4, 5, 6, 7]
    links = neighbour_positions(conn, rowids, 2)
    none = len(rowids)
    by_row = {
        rowids[i]: sorted(rowids[int(j)] for j in links.links[:, i] if j != none)
        for i in range(none)
    }
    assert by_row == {1: [2], 2: [1, 4], 4: [2], 5: [], 6: [7], 7: [6]}
    assert links.share.tolist() == [1.0, 0.5, 1.0, 0.0, 1.0, 1.0]

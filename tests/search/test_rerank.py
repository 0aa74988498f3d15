"""Reranking: the blending as pure functions, search with a fake cross-encoder, and degradation.

No cross-encoder model can be loaded in tests (none ships in a package), so the search path is
exercised with ``FakeReranker`` (tests/conftest.py), and the fastembed path is tested for what it
does when the model is unavailable: one notice, and the fused order.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from fakes.reranker import FakeReranker

from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import search
from obsmem.search.embeddings import Embedder
from obsmem.search.indexing import embed_index
from obsmem.search.rerank import (
    FastEmbedReranker,
    blend_order,
    load_reranker,
    position_score,
    rerank_folder_problem,
    rerank_order,
    retrieval_weight,
)
from obsmem.settings import load_settings

# -- pure functions ----------------------------------------------------------------------------


def test_retrieval_weight_bands() -> None:
    assert [retrieval_weight(p) for p in (1, 3, 4, 10, 11, 30)] == [
        0.75,
        0.75,
        0.60,
        0.60,
        0.40,
        0.40,
    ]


def test_position_score_runs_from_one_to_one_over_n() -> None:
    assert position_score(1, 4) == 1.0
    assert position_score(4, 4) == 0.25


def test_blend_keeps_the_fused_order_when_the_reranker_agrees_or_is_indifferent() -> None:
    assert blend_order([5.0, 4.0, 3.0, 2.0]) == [0, 1, 2, 3]
    assert blend_order([0.0] * 6) == list(range(6))  # ties keep the fused order
    assert blend_order([]) == []


def _reranked(n: int, favourite_order: list[int]) -> list[float]:
    """Scores that put the candidates of ``favourite_order`` first, in that order."""
    scores = [0.0] * n
    for place, index in enumerate(favourite_order):
        scores[index] = float(n - place)
    rest = [i for i in range(n) if i not in favourite_order]
    for place, index in enumerate(rest, start=len(favourite_order)):
        scores[index] = float(n - place)
    return scores


def test_the_fused_first_gives_way_to_the_second_only_from_fifth_place_down() -> None:
    # The reranker puts the fused second first and the fused first at place r.
    for r, swapped in ((4, False), (5, True)):
        favourites = [1, *range(2, r), 0]  # the fused second first, the fused first at r
        order = blend_order(_reranked(30, favourites))
        assert (order.index(1) < order.index(0)) is swapped, r


def test_the_tail_passes_the_fused_first_only_when_the_reranker_sinks_it_to_18th() -> None:
    # Fused position 11 (index 10) reranked first; the fused first at place r.
    for r, passes in ((17, False), (18, True)):
        others = [i for i in range(1, 30) if i != 10][: r - 2]
        favourites = [10, *others, 0]
        order = blend_order(_reranked(30, favourites))
        assert (order.index(10) < order.index(0)) is passes, r


def test_rerank_order_keeps_the_first_and_the_tail_in_place() -> None:
    reranker = FakeReranker()
    reranker.favourite = "pick"
    texts = ["winner", "a", "b", "c", "pick me", "tail pick"]
    # keep_first: the winner stays; only the next three are reranked; the tail keeps its place.
    order = rerank_order("q", texts, reranker, top=4, keep_first=True)
    assert reranker.calls == [("q", ["a", "b", "c", "pick me"])]
    # "pick me" passes "c" (fused 3rd, w 0.75) but not "a" or "b" within its pool of four.
    assert order == [0, 1, 2, 4, 3, 5]


def test_rerank_order_with_fewer_than_two_candidates_asks_nothing() -> None:
    reranker = FakeReranker()
    assert rerank_order("q", ["only"], reranker, top=30) == [0]
    assert rerank_order("q", ["kept", "only"], reranker, top=30, keep_first=True) == [0, 1]
    assert reranker.calls == []


def test_a_failing_reranker_leaves_the_fused_order_and_says_so_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    reranker = FakeReranker()
    reranker.fail = True
    assert rerank_order("q", ["a", "b", "c"], reranker, top=30) == [0, 1, 2]
    assert rerank_order("q", ["a", "b", "c"], reranker, top=30) == [0, 1, 2]
    err = capsys.readouterr().err
    assert err.count("reranking skipped (fake-cross-encoder: the fake cross-encoder broke)") == 1


# -- search with the fake cross-encoder ---------------------------------------------------------


def _memory(store: MemoryStore) -> MemoryStore:
    store.ensure()
    store.add_observations(
        [
            new_observation(f"Deploy note {n}: the deploy pipeline step {n}", date="2026-01-05")
            for n in range(8)
        ]
        + [new_observation("Deploy once: rollback plan for the database", date="2026-01-05")]
    )
    return store


def test_bm25_only_search_is_reranked(store: MemoryStore, fake_reranker: FakeReranker) -> None:
    _memory(store)
    plain = search(store, "deploy", settings=load_settings({"OM_SEARCH_BACKEND": "bm25"}))
    assert "rollback" in plain[-1].text and len(plain) == 9
    fake_reranker.favourite = "rollback"
    env = {"OM_SEARCH_BACKEND": "bm25", "OM_RERANK_MODEL": "fake-cross-encoder"}
    hits = search(store, "deploy", settings=load_settings(env))
    query, texts = fake_reranker.calls[0]
    assert query == "deploy" and len(texts) == 9
    # From 9th to 6th: the reranker's favourite climbs past the lower fused places, while the
    # fused top three (weight 0.75) stay where they were.
    assert "rollback" in hits[5].text
    assert [h.id for h in hits[:3]] == [h.id for h in plain[:3]]
    assert [h.rank for h in hits] == list(range(1, 10))
    assert {h.id for h in hits} == {h.id for h in plain}


def test_rerank_top_limits_what_the_cross_encoder_sees(
    store: MemoryStore, fake_reranker: FakeReranker
) -> None:
    _memory(store)
    env = {
        "OM_SEARCH_BACKEND": "bm25",
        "OM_RERANK_MODEL": "fake-cross-encoder",
        "OM_RERANK_TOP": "3",
    }
    search(store, "deploy", settings=load_settings(env))
    assert len(fake_reranker.calls[0][1]) == 3


def test_hybrid_reranks_but_never_the_clear_keyword_winner(
    store: MemoryStore,
    hybrid_env: dict[str, str],
    embedder: Embedder,
    fake_reranker: FakeReranker,
) -> None:
    store.ensure()
    store.add_observations(
        [
            new_observation("Chose PostgreSQL over MySQL for billing", date="2026-01-05"),
            new_observation("The dog Biscuit loves the beach", date="2026-01-06"),
            new_observation("Deploys go through GitHub Actions", date="2026-01-07"),
        ]
    )
    env = {**hybrid_env, "OM_RERANK_MODEL": "fake-cross-encoder"}
    embed_index(store, load_settings(env))
    fake_reranker.favourite = "Biscuit"
    hits = search(store, "PostgreSQL", settings=load_settings(env))
    assert "PostgreSQL" in hits[0].text  # the unambiguous keyword hit is not reranked
    assert "Biscuit" in hits[1].text
    assert all("PostgreSQL" not in text for text in fake_reranker.calls[0][1])


# -- the fastembed cross-encoder, unavailable ----------------------------------------------------


def test_reranking_is_off_by_default() -> None:
    assert load_reranker(load_settings({})) is None


def test_a_bad_model_folder_degrades_to_no_reranking_with_one_notice(
    store: MemoryStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _memory(store)
    env = {
        "OM_SEARCH_BACKEND": "bm25",
        "OM_RERANK_MODEL": "Xenova/ms-marco-MiniLM-L-6-v2",
        "OM_RERANK_MODEL_PATH": str(tmp_path),
    }
    plain = search(store, "deploy", settings=load_settings({"OM_SEARCH_BACKEND": "bm25"}))
    assert search(store, "deploy", settings=load_settings(env)) == plain
    assert search(store, "pipeline", settings=load_settings(env))
    err = capsys.readouterr().err
    assert err.count("reranking unavailable") == 1
    assert "lacks onnx/model.onnx or model.onnx, tokenizer.json, config.json" in err
    assert "Traceback" not in err


def test_an_unknown_model_without_a_folder_is_refused_before_any_download(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert load_reranker(load_settings({"OM_RERANK_MODEL": "someone/unknown-reranker"})) is None
    assert "is not a cross-encoder fastembed knows" in capsys.readouterr().err


def test_without_fastembed_reranking_is_unavailable_once(
    hide_fastembed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings({"OM_RERANK_MODEL": "Xenova/ms-marco-MiniLM-L-6-v2"})
    assert load_reranker(settings) is None
    assert load_reranker(settings) is None
    err = capsys.readouterr().err
    assert err.count("reranking unavailable") == 1 and "No module named 'fastembed'" in err


def test_folder_check_accepts_both_layouts(tmp_path: Path) -> None:
    for name in ("tokenizer.json", "config.json"):
        (tmp_path / name).write_text("{}")
    assert rerank_folder_problem(tmp_path) is not None
    (tmp_path / "model.onnx").write_bytes(b"")
    assert rerank_folder_problem(tmp_path) is None
    assert "is not a folder" in str(rerank_folder_problem(tmp_path / "missing"))


def test_fastembed_reranker_passes_the_folder_and_registers_an_unknown_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[tuple[str, dict[str, Any]]] = []
    registered: list[dict[str, Any]] = []

    class StubCrossEncoder:
        def __init__(self, model: str, **kwargs: Any) -> None:
            made.append((model, kwargs))

        @staticmethod
        def list_supported_models() -> list[dict[str, Any]]:
            return [{"model": "Xenova/ms-marco-MiniLM-L-6-v2"}]

        @staticmethod
        def add_custom_model(**kwargs: Any) -> None:
            registered.append(kwargs)

        def rerank(self, query: str, documents: list[str], batch_size: int) -> list[float]:
            return [float(len(d)) for d in documents]

    stub = types.ModuleType("fastembed.rerank.cross_encoder")
    stub.TextCrossEncoder = StubCrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastembed.rerank.cross_encoder", stub)
    (tmp_path / "model.onnx").write_bytes(b"")
    reranker = FastEmbedReranker("me/custom-reranker", tmp_path)
    assert made == [("me/custom-reranker", {"specific_model_path": str(tmp_path)})]
    assert registered[0]["model"] == "me/custom-reranker"
    assert registered[0]["model_file"] == "model.onnx"
    assert reranker.score("q", ["ab", "abc"]) == [2.0, 3.0]
    assert reranker.score("q", []) == []

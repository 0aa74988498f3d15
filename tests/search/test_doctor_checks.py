"""``om doctor`` on search: the backend with a fix that fits the provider, the reranker, and
entries that have no vector under the current model."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from obsmem.doctor import Check, run_checks
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import rerank
from obsmem.search.indexing import embed_index
from obsmem.settings import load_settings


def _checks(store: MemoryStore, environ: dict[str, str]) -> dict[str, Check]:
    return {check.name: check for check in run_checks(store, environ)}


def _memory(store: MemoryStore) -> MemoryStore:
    store.add_observations(
        [
            new_observation("Chose PostgreSQL over MySQL for billing", date="2026-01-05"),
            new_observation("The user's dog is called Biscuit", date="2026-01-06"),
            new_observation("Deploys go through GitHub Actions", date="2026-01-07"),
        ]
    )
    return store


# -- the backend ---------------------------------------------------------------------------


def test_an_endpoint_without_a_url_gets_an_endpoint_fix(store: MemoryStore) -> None:
    backend = _checks(store, {"OM_EMBED_PROVIDER": "openai-compatible"})["search backend"]
    assert backend.verdict == "warn"
    assert "OM_EMBED_BASE_URL is empty" in backend.detail
    assert "OM_EMBED_BASE_URL" in backend.fix and "11434/v1" in backend.fix
    assert "OM_EMBED_MODEL_PATH" not in backend.fix and "fastembed" not in backend.fix


def test_an_endpoint_without_its_packages_says_what_to_install(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "openai" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    environ = {"OM_EMBED_PROVIDER": "openai-compatible", "OM_EMBED_BASE_URL": "http://x/v1"}
    backend = _checks(store, environ)["search backend"]
    assert backend.verdict == "warn" and "openai package is not installed" in backend.detail
    assert backend.fix.startswith("run: pip install") and "llm" in backend.fix


def test_a_bad_model_folder_with_auto_is_a_warning(store: MemoryStore, tmp_path: Path) -> None:
    backend = _checks(store, {"OM_EMBED_MODEL_PATH": str(tmp_path)})["search backend"]
    assert backend.verdict == "warn" and "lacks model.onnx" in backend.detail
    assert "OM_EMBED_MODEL_PATH" in backend.fix


def test_auto_with_nothing_configured_is_bm25_and_fine(store: MemoryStore) -> None:
    checks = _checks(store, {})
    assert checks["search backend"].verdict == "ok"
    assert checks["search backend"].detail.startswith("BM25 only")
    assert "embeddings" not in checks  # no model: nothing to count


# -- the reranker --------------------------------------------------------------------------


def _rerank_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cross-encoder"
    (folder / "onnx").mkdir(parents=True)
    for name in ("onnx/model.onnx", "tokenizer.json", "config.json"):
        (folder / name).write_text("{}")
    return folder


def test_reranker_off_by_default(store: MemoryStore) -> None:
    reranker = _checks(store, {})["reranker"]
    assert (reranker.verdict, reranker.detail) == ("ok", "off (OM_RERANK_MODEL is empty)")


def test_reranker_from_the_hub_is_not_downloaded_by_doctor(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("doctor must not load a model it would have to download")

    monkeypatch.setattr(rerank, "FastEmbedReranker", refuse)
    reranker = _checks(store, {"OM_RERANK_MODEL": "Xenova/ms-marco-MiniLM-L-6-v2"})["reranker"]
    assert reranker.verdict == "ok" and "downloaded on first use" in reranker.detail


def test_reranker_from_a_folder_is_loaded(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[tuple[str, Path]] = []

    class Loads:
        def __init__(self, model: str, path: Path) -> None:
            loaded.append((model, path))

    monkeypatch.setattr(rerank, "FastEmbedReranker", Loads)
    folder = _rerank_folder(tmp_path)
    environ = {"OM_RERANK_MODEL": "my/cross-encoder", "OM_RERANK_MODEL_PATH": str(folder)}
    reranker = _checks(store, environ)["reranker"]
    assert reranker.verdict == "ok" and reranker.detail.endswith("(loads)")
    assert loaded == [("my/cross-encoder", folder)]


def test_reranker_that_cannot_load_is_a_warning(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(model: str, path: Path) -> None:
        raise RuntimeError("ONNX graph is truncated\nand more")

    monkeypatch.setattr(rerank, "FastEmbedReranker", broken)
    environ = {"OM_RERANK_MODEL": "my/cross-encoder", "OM_RERANK_MODEL_PATH": str(tmp_path / "x")}
    assert "is not a folder" in _checks(store, environ)["reranker"].detail
    environ["OM_RERANK_MODEL_PATH"] = str(_rerank_folder(tmp_path))
    reranker = _checks(store, environ)["reranker"]
    assert reranker.verdict == "warn"
    assert reranker.detail.endswith("cannot load it: ONNX graph is truncated")
    assert "OM_RERANK_MODEL_PATH" in reranker.fix


def test_reranker_without_fastembed_is_a_warning(store: MemoryStore, hide_fastembed: None) -> None:
    reranker = _checks(store, {"OM_RERANK_MODEL": "my/cross-encoder"})["reranker"]
    assert reranker.verdict == "warn" and "fastembed is not installed" in reranker.detail
    assert reranker.fix == "run: pip install 'obsmem[semantic]'"


# -- entries without a vector --------------------------------------------------------------


def test_entries_without_a_vector_are_counted_and_reindex_is_the_fix(
    store: MemoryStore, hybrid_env: dict[str, str]
) -> None:
    _memory(store)
    embed_index(store, load_settings(hybrid_env))
    vectors = _checks(store, hybrid_env)["embeddings"]
    assert vectors.verdict == "ok" and vectors.detail.startswith("all 3 entries have a vector")
    # A line written with no index update since, and a model nothing was embedded with.
    store.add_observations([new_observation("A new line about Rust", date="2026-01-08")])
    vectors = _checks(store, hybrid_env)["embeddings"]
    assert vectors.verdict == "warn" and vectors.detail.startswith("1 of 4 entries")
    assert vectors.fix == "run: om reindex"
    other = _checks(store, {**hybrid_env, "OM_EMBED_MODEL": "another/model"})["embeddings"]
    assert other.detail.startswith("4 of 4 entries have no vector under another/model")

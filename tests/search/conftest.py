"""Search fixtures: caches emptied around each test, fastembed hidden on demand.

The packaged embedding model (``model_folder``, ``embedder``, ``hybrid_env``) is in
tests/conftest.py, so the MCP server's tests share the one loaded per session.
"""

from __future__ import annotations

import builtins
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from obsmem.search import embeddings, rerank, vectors


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

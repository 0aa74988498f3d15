"""Search fixtures: caches emptied around each test, fastembed hidden on demand.

``run_dir`` and ``memory`` are the search daemon's tests' (``daemon_setup.py``). The packaged
embedding model (``model_folder``, ``embedder``, ``hybrid_env``) is in
tests/conftest.py, so the MCP server's tests share the one loaded per session.
"""

from __future__ import annotations

import builtins
import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import embeddings, rerank, vectors
from tests.search.daemon_setup import TEXTS


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


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A short directory for sockets (a Unix socket path must stay under about 100 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="om-run-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def memory(
    hybrid_env: dict[str, str], run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> MemoryStore:
    """Hybrid settings with the daemon on, and a memory of ``TEXTS`` (no vectors yet)."""
    for name, value in hybrid_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OM_SEARCH_DAEMON", "on")
    monkeypatch.setenv("OM_RUN_DIR", str(run_dir / "om"))
    store = MemoryStore().ensure()
    store.add_observations(
        [new_observation(text, date="2026-11-30", type="fact") for text in TEXTS]
    )
    return store

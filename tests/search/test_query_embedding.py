"""Hybrid search embeds the query on a thread of its own while BM25 runs, for embedders that
allow it; the rows are the same either way, and a failing model still leaves BM25's answer."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from obsmem.index.db import open_index
from obsmem.index.query import fts_query
from obsmem.index.sync import refresh
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search.embeddings import thread_safe
from obsmem.search.hybrid import hybrid_rows
from obsmem.search.vectors import VectorStore
from obsmem.settings import load_settings


class HashEmbedder:
    """Vectors from the text's hash; records the thread each call ran on."""

    name = "hash-test-model"
    dim = 8

    def __init__(self, safe: bool, fail: bool = False) -> None:
        self.thread_safe = safe
        self.fail = fail
        self.threads: list[int] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.threads.append(threading.get_ident())
        if self.fail:
            raise RuntimeError("the model is gone")
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim)
            rows.append(vec / np.linalg.norm(vec))
        return np.asarray(rows, dtype=np.float32)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    store.add_observations(
        new_observation(f"Redis timeout {n} on worker {n % 5}", date="2026-01-05")
        for n in range(40)
    )
    connection = open_index(store.index_path)
    refresh(store, connection)
    VectorStore(connection, HashEmbedder(safe=False)).sync()
    yield connection
    connection.close()


def _rows(conn: sqlite3.Connection, embedder: HashEmbedder) -> list[tuple[object, ...]]:
    query = "redis timeout on worker 3"
    expression = fts_query(query)
    assert expression is not None
    scored = hybrid_rows(conn, query, expression, 10, embedder, load_settings({}))
    return [tuple(item) for item in scored]


def test_a_thread_safe_embedder_runs_beside_bm25_with_the_same_rows(
    conn: sqlite3.Connection,
) -> None:
    beside, inline = HashEmbedder(safe=True), HashEmbedder(safe=False)
    assert thread_safe(beside) and not thread_safe(inline)
    assert _rows(conn, beside) == _rows(conn, inline)
    main = threading.get_ident()
    assert beside.threads and main not in beside.threads[:1]  # the query's call, off this thread
    assert inline.threads[:1] == [main]


def test_an_embedder_without_the_flag_is_called_on_the_caller_thread(
    conn: sqlite3.Connection,
) -> None:
    class Plain(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(safe=False)
            del self.thread_safe  # no attribute at all: not thread-safe

    plain = Plain()
    assert not thread_safe(plain)
    _rows(conn, plain)
    assert set(plain.threads) == {threading.get_ident()}


def test_a_model_failing_on_its_thread_leaves_the_bm25_answer(
    conn: sqlite3.Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = HashEmbedder(safe=True, fail=True)
    rows = _rows(conn, failing)
    assert rows and failing.threads
    assert "cannot embed the query: the model is gone" in capsys.readouterr().err

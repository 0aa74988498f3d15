"""Search latency at 10,000 and 100,000 observations: cold BM25 `om search`, warm hybrid queries.

Usage: python bench/search_latency.py [--sizes 10000,100000] [--queries 50] [--runs 15]
       [--embed-limit 10000] [--json]

For each size, builds a synthetic memory in a temporary directory through the store
(``search_cold.build``: 500 observations per ``add_observations`` call, forty a day) and indexes
it once, then measures:

- cold: whole ``python -m obsmem search QUERY`` processes with ``OM_SEARCH_BACKEND=bm25``
  against the fresh index (median and p90 over ``--runs``);
- warm hybrid: ``hybrid_query`` in this process on one open index connection, as a long-lived
  process (an MCP server) would hold it, with the packaged model loaded once. One warm-up
  query, then ``--queries`` timed queries (p50, p95). Each includes embedding the query, BM25,
  the vector ranking (with its count of entries without a vector) and fusion; entries are
  embedded beforehand, as an index update does, never by the query.

Vectors: up to ``--embed-limit`` entries, every entry is embedded for real by
``VectorStore.sync`` (its time is reported). Above it (embedding 100,000 entries takes many
minutes on 2 cores), every entry gets a random unit vector stored under the key and in the
format ``VectorStore`` uses (``text_hash(embed_text(...))``, float32 BLOB), so ``sync`` finds
nothing to embed; the query is still embedded by the real model. Latency does not depend on the
vectors' values (the ranking scores every vector), only the rankings would. The report says
which was done (``vectors``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_cold import build, timed

from obsmem.index import rebuild
from obsmem.index.db import open_index
from obsmem.index.query import fts_query
from obsmem.search.embeddings import load_embedder, packaged_model_folder
from obsmem.search.hybrid import hybrid_query
from obsmem.search.vectors import VectorStore, embed_text, text_hash
from obsmem.settings import load_settings

QUERIES = [
    "redis timeout",
    "release canary rollout",
    "jwt secret rotation",
    "pytest",
    "why did the deploy fail",
    "billing invoice for a tenant",
    "postgres migration schema",
    "vector embedding rank fusion",
    "oauth token expired",
    "kubernetes worker queue retry",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def random_vectors(conn: sqlite3.Connection, model: str, dim: int, seed: int = 11) -> int:
    """Store a random unit vector for every entry text, as ``VectorStore.sync`` would store one."""
    import numpy as np

    rng = np.random.default_rng(seed)
    hashes = {
        text_hash(embed_text(section, str(text)))
        for section, text in conn.execute("SELECT section, text FROM entries")
    }
    rows = []
    for h in sorted(hashes):
        vec = rng.standard_normal(dim).astype("<f4")
        vec /= np.linalg.norm(vec)
        rows.append((h, model, dim, vec.tobytes()))
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    return len(rows)


def measure(size: int, args: argparse.Namespace, model_dir: Path) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        t0 = time.perf_counter()
        store = build(home, size)
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rebuild(store)
        index_s = time.perf_counter() - t0
        env = {**os.environ, "OM_HOME": str(home), "OM_SEARCH_BACKEND": "bm25"}
        om = [sys.executable, "-m", "obsmem", "search"]
        cold: list[float] = []
        for n in range(args.runs):
            cold += timed([*om, QUERIES[n % 4]], env, 1)

        hybrid_env = {
            "OM_HOME": str(home),
            "OM_SEARCH_BACKEND": "hybrid",
            "OM_EMBED_MODEL_PATH": str(model_dir),
        }
        settings = load_settings(hybrid_env)
        embedder = load_embedder(settings)
        conn = open_index(store.index_path)
        try:
            t0 = time.perf_counter()
            if size <= args.embed_limit:
                vectors = "embedded by the model (VectorStore.sync)"
                count = VectorStore(conn, embedder).sync()
            else:
                vectors = "random unit vectors under VectorStore's keys (not embedded)"
                count = random_vectors(conn, embedder.name, embedder.dim)
            vectors_s = time.perf_counter() - t0

            def ask(q: str) -> float:
                t = time.perf_counter()
                hybrid_query(conn, q, fts_query(q) or "", 10, embedder, settings)
                return (time.perf_counter() - t) * 1000

            warmup = ask("first query after start")
            warm = [ask(QUERIES[n % len(QUERIES)]) for n in range(args.queries)]
            embed_only = []
            for n in range(args.queries):
                t = time.perf_counter()
                embedder.embed([QUERIES[n % len(QUERIES)]])
                embed_only.append((time.perf_counter() - t) * 1000)
        finally:
            conn.close()
    return {
        "observations": size,
        "write_seconds": round(write_s, 1),
        "index_seconds": round(index_s, 2),
        "cold_bm25_ms": {
            "median": round(statistics.median(cold), 1),
            "p90": round(pct(cold, 0.9), 1),
            "runs": len(cold),
        },
        "vectors": vectors,
        "vectors_stored": count,
        "vectors_seconds": round(vectors_s, 1),
        "warm_hybrid_ms": {
            "warmup": round(warmup, 1),
            "p50": round(pct(warm, 0.5), 1),
            "p95": round(pct(warm, 0.95), 1),
            "queries": len(warm),
        },
        "query_embed_ms_p50": round(pct(embed_only, 0.5), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--embed-limit", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="om-model-") as model_dir:
        packaged_model_folder(Path(model_dir))
        results = [measure(size, args, Path(model_dir)) for size in sizes]
    if args.json:
        print(json.dumps(results))
    else:
        for result in results:
            for key, value in result.items():
                print(f"{key:20} {value}")
            print()


if __name__ == "__main__":
    main()

"""Search latency at 10,000 and 100,000 observations: cold BM25 `om search`, warm hybrid queries.

Usage: python bench/search_latency.py [--sizes 10000,100000] [--queries 50] [--runs 15]
       [--embed-limit 10000] [--corpus zipf|narrow] [--roles] [--ask-user] [--category]
       [--when] [--keep DIR] [--json]

For each size, builds a synthetic memory in a temporary directory through the store
(``search_cold.build``: 500 observations per ``add_observations`` call, forty a day; words as
``--corpus`` says, see ``search_cold.CORPORA``; with ``--roles``, each text starts with ``user:``
or ``assistant:`` and each query is asked as ``user QUERY``, so that the speaker paths of search
run: the speaker boost and the speaker centroid; with ``--ask-user`` alone, the queries are asked
so over texts without a label, as in a coding memory) and indexes it once (with ``--keep DIR``, in
``DIR/mem-CORPUS-SIZE``, kept and reused by later runs: building 100,000 takes minutes), then
measures:

- cold: whole ``python -m obsmem search QUERY`` processes with ``OM_SEARCH_BACKEND=bm25``
  against the fresh index (median and p90 over ``--runs``);
- warm hybrid: ``hybrid_query`` in this process on one open index connection, as a long-lived
  process (an MCP server) would hold it, with the packaged model loaded once. One warm-up
  query, then ``--queries`` timed queries (p50, p95). Each includes embedding the query, BM25,
  the vector ranking (with its count of entries without a vector) and fusion; entries are
  embedded beforehand, as an index update does, never by the query. Each query's CPU time (this
  process, all threads) and the fastest query are reported beside the percentiles: on a shared
  machine the wall time also counts waiting for a core, and the load average before and after
  says how busy it was.
- parts: the query embedding, BM25 (``query_index``, plain; "bm25 ranked": ``bm25_rows`` with
  the query's ``Ranking``, its speakers and dates, ``POOL`` deep, as hybrid search runs it) and
  the vector ranking
  (``VectorStore.rank_vector`` over ``POOL`` candidates; with ``--roles`` also over the user's
  entries only, as the speaker centroid ranks), each timed on its own (p50 CPU and wall,
  fastest wall).

``--category``: each query is asked as ``what QUERY``, so that its words are a category word
and the vocabulary bridge runs (``OM_SEARCH_VOCAB_BRIDGE_WEIGHT`` from the environment; 0 for
the run without it): the vocabulary is stored like the vectors (embedded up to
``--embed-limit``, random unit vectors above it, ``random_vocabulary``), the first query with a
category word (which reads the vocabulary and its holders) is timed apart, and the bridge's
list is one more part. Then one observation is written and indexed on another connection, as
``om observe`` does beside a resident process, and the next query with a category word is
timed (``after_write``: the whole hybrid query, the vectors' snapshot read again too); then a
second one, and the bridge's list alone (its vocabulary brought up to date).

``--when``: each query is asked as ``when QUERY``, so that the answer form runs
(``OM_SEARCH_ANSWER_FORM_BOOST`` from the environment; 0 for the run without it): the entries
that could reach the first results are tested for a time they state (``search/answers.py``).

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
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_cold import CORPORA, build, timed

from obsmem.index import rebuild, refresh
from obsmem.index.db import open_index, using_index
from obsmem.index.query import fts_query
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import query_index
from obsmem.search.bm25 import Ranking, bm25_rows
from obsmem.search.bridge import bridge_list
from obsmem.search.embeddings import load_embedder, packaged_model_folder
from obsmem.search.hybrid import POOL, hybrid_query
from obsmem.search.vectors import VectorStore, embed_text, text_hash
from obsmem.search.vocabulary import embed_vocabulary
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


def random_vocabulary(conn: sqlite3.Connection, model: str, dim: int, limit: int) -> int:
    """Store a random unit vector for every vocabulary item (``vocabulary.chosen_items``), as
    ``vocabulary.embed_vocabulary`` would store one; how many."""
    import numpy as np

    from obsmem.search.vectors import ENTRIES_SQL
    from obsmem.search.vocabulary import chosen_items, stems

    rng = np.random.default_rng(13)
    items = chosen_items((str(text) for _, _, text in conn.execute(ENTRIES_SQL)), limit)
    rows = []
    for item, stem in zip(items, stems(items), strict=True):
        vec = rng.standard_normal(dim).astype("<f4")
        vec /= np.linalg.norm(vec)
        rows.append((item, model, stem, dim, vec.tobytes()))
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT OR REPLACE INTO vocabulary VALUES (?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    return len(rows)


def prepare_memory(
    home: Path, size: int, corpus: str = "zipf", roles: bool = False
) -> tuple[MemoryStore, float | None, float | None]:
    """The synthetic memory of ``size`` observations in ``home``, indexed: built through the store
    (write and index seconds returned), or reused as it is when ``home`` already holds it."""
    store = MemoryStore(home, environ={"OM_HOME": str(home)})
    if (home / ".om" / "built").is_file():
        return store, None, None
    t0 = time.perf_counter()
    build(home, size, corpus=corpus, roles=roles)
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rebuild(store)
    index_s = time.perf_counter() - t0
    (home / ".om" / "built").write_text(f"{size}\n")
    return store, write_s, index_s


def written_then(
    store: MemoryStore, items: int, timed_work: Callable[[], tuple[float, float]]
) -> tuple[float, float] | None:
    """Write one observation and index it on a connection of its own (as ``om observe`` does
    beside a resident process), then ``timed_work``'s (cpu, wall) ms; None without a
    vocabulary. The memory grows by one observation per call (a kept memory too)."""
    if not items:
        return None
    text = f"kitten adopted from the shelter, named Miso ({time.time_ns()})"
    store.add_observations([new_observation(text, date=time.strftime("%Y-%m-%d"))])
    using_index(store.index_path, lambda conn: refresh(store, conn))
    return timed_work()


def cpu_and_wall(work: Callable[[], object]) -> tuple[float, float]:
    """Milliseconds of this process's CPU time (all threads) and of wall time ``work`` took."""
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


def p50s(samples: list[tuple[float, float]]) -> dict[str, float]:
    """The median CPU and wall milliseconds of ``(cpu, wall)`` samples, and the fastest wall
    time (the least disturbed by other work on a busy machine)."""
    return {
        "cpu": round(pct([c for c, _ in samples], 0.5), 1),
        "wall": round(pct([w for _, w in samples], 0.5), 1),
        "wall_min": round(min(w for _, w in samples), 1),
    }


def measure(size: int, args: argparse.Namespace, model_dir: Path, root: Path) -> dict[str, object]:
    load_before = os.getloadavg()[0]
    home = root / f"mem-{args.corpus}-{size}{'-roles' if args.roles else ''}"
    store, write_s, index_s = prepare_memory(home, size, args.corpus, args.roles)
    queries = [f"user {q}" for q in QUERIES] if args.roles or args.ask_user else QUERIES
    if args.category:
        queries = [f"what {q}" for q in queries]
    if args.when:
        queries = [f"when {q}" for q in queries]
    env = {**os.environ, "OM_HOME": str(home), "OM_SEARCH_BACKEND": "bm25"}
    om = [sys.executable, "-m", "obsmem", "search"]
    cold: list[float] = []
    for n in range(args.runs):
        cold += [wall for wall, _ in timed([*om, queries[n % 4]], env, 1)]

    hybrid_env = {
        "OM_HOME": str(home),
        "OM_SEARCH_BACKEND": "hybrid",
        "OM_EMBED_MODEL_PATH": str(model_dir),
        "OM_SEARCH_VOCAB_BRIDGE_WEIGHT": os.environ.get("OM_SEARCH_VOCAB_BRIDGE_WEIGHT", "0.5"),
    }
    settings = load_settings(hybrid_env)
    embedder = load_embedder(settings)
    conn = open_index(store.index_path)
    try:
        t0 = time.perf_counter()
        stored = conn.execute(
            "SELECT count(*) FROM vectors WHERE model = ?", (embedder.name,)
        ).fetchone()[0]
        if size <= args.embed_limit:
            vectors = "embedded by the model (VectorStore.sync)"
            count = VectorStore(conn, embedder).sync()
        else:
            vectors = "random unit vectors under VectorStore's keys (not embedded)"
            count = stored or random_vectors(conn, embedder.name, embedder.dim)
        vectors_s = time.perf_counter() - t0
        items = 0
        if args.category and settings.search_vocab_bridge_weight > 0:
            limit = settings.search_vocab_max_items
            if size <= args.embed_limit:
                embed_vocabulary(conn, embedder, limit)
            elif not conn.execute("SELECT 1 FROM vocabulary LIMIT 1").fetchone():
                random_vocabulary(conn, embedder.name, embedder.dim, limit)
            items = conn.execute("SELECT count(*) FROM vocabulary").fetchone()[0]

        def ask(q: str) -> tuple[float, float]:
            expression = fts_query(q) or ""
            return cpu_and_wall(partial(hybrid_query, conn, q, expression, 10, embedder, settings))

        warmup = ask("first query after start")[1]
        # Reads the vocabulary and which entries hold each item, once per index state.
        first_category = ask("which deploy failed")[1] if items else None
        warm = [ask(queries[n % len(queries)]) for n in range(args.queries)]
        # The parts of a query, each timed on its own over the same queries.
        store_vectors = VectorStore(conn, embedder)
        vector = embedder.embed([queries[0]])[0]
        parts: dict[str, list[tuple[float, float]]] = {
            "embed": [],
            "bm25": [],
            "bm25 ranked": [],
            "vectors": [],
        }
        for n in range(args.queries):
            q = queries[n % len(queries)]
            expression = fts_query(q) or ""
            parts["embed"].append(cpu_and_wall(partial(embedder.embed, [q])))
            parts["bm25"].append(cpu_and_wall(partial(query_index, conn, expression, 10)))
            ranking = Ranking.for_query(q, settings)
            ranked = partial(bm25_rows, conn, expression, POOL, ranking)
            parts["bm25 ranked"].append(cpu_and_wall(ranked))
            parts["vectors"].append(cpu_and_wall(partial(store_vectors.rank_vector, vector, POOL)))
            if items:
                bridged = partial(bridge_list, conn, embedder, q, POOL, 1.0)
                parts.setdefault("bridge", []).append(cpu_and_wall(bridged))
            if args.roles:
                # The speaker centroid's ranking: one more, over the user's entries only.
                said = partial(store_vectors.rank_vector, vector, POOL, said_by=["user"])
                parts.setdefault("vectors, user only", []).append(cpu_and_wall(said))
        after_write = written_then(store, items, lambda: ask("which deploy failed"))
        bridged = partial(bridge_list, conn, embedder, queries[0], POOL, 1.0)
        bridge_after = written_then(store, items, lambda: cpu_and_wall(bridged))
    finally:
        conn.close()
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    wall = [w for _, w in warm]
    return {
        "observations": size,
        "corpus": args.corpus,
        "roles": args.roles,
        "ask_user": args.ask_user,
        "write_seconds": None if write_s is None else round(write_s, 1),
        "index_seconds": None if index_s is None else round(index_s, 2),
        "cold_bm25_ms": {
            "median": round(statistics.median(cold), 1),
            "p90": round(pct(cold, 0.9), 1),
            "runs": len(cold),
        },
        "vectors": vectors,
        "vectors_stored": count,
        "vectors_seconds": round(vectors_s, 1),
        "vocabulary_items": items,
        "first_category_query_ms": None if first_category is None else round(first_category, 1),
        "warm_hybrid_ms": {
            "warmup": round(warmup, 1),
            "p50": round(pct(wall, 0.5), 1),
            "p95": round(pct(wall, 0.95), 1),
            "min": round(min(wall), 1),
            "cpu_p50": p50s(warm)["cpu"],
            "queries": len(warm),
        },
        "after_write_ms": None
        if after_write is None
        else {
            "query_cpu": round(after_write[0], 1),
            "query_wall": round(after_write[1], 1),
            "bridge_cpu": round(bridge_after[0], 1) if bridge_after else None,
            "bridge_wall": round(bridge_after[1], 1) if bridge_after else None,
        },
        "parts_p50_ms": {name: p50s(values) for name, values in parts.items()},
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--embed-limit", type=int, default=10_000)
    parser.add_argument("--corpus", choices=CORPORA, default="zipf")
    parser.add_argument(
        "--category", action="store_true", help="queries as 'what QUERY' (the vocabulary bridge)"
    )
    parser.add_argument(
        "--when",
        action="store_true",
        help="queries as 'when QUERY' (the answer form: entries stating a time are raised)",
    )
    parser.add_argument(
        "--roles", action="store_true", help="user: / assistant: texts, queries naming the user"
    )
    parser.add_argument(
        "--ask-user", action="store_true", help="queries naming the user (texts as --roles says)"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="Build the memories under this folder and keep them; reuse them when present.",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with (
        tempfile.TemporaryDirectory(prefix="om-model-") as model_dir,
        tempfile.TemporaryDirectory(prefix="om-bench-") as tmp,
    ):
        packaged_model_folder(Path(model_dir))
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        results = [measure(size, args, Path(model_dir), root) for size in sizes]
    if args.json:
        print(json.dumps(results))
    else:
        for result in results:
            for key, value in result.items():
                print(f"{key:20} {value}")
            print()


if __name__ == "__main__":
    main()

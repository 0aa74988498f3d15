"""How fast `om ui` serves its timeline and search pages over a large memory.

Usage: python bench/ui_pages.py [--observations 100000] [--requests 50] [--keep DIR]
       [--backend bm25|hybrid] [--json]

Builds a synthetic memory through the store (``search_latency.prepare_memory``: the builder of
``search_cold.py``, reused from ``--keep DIR`` when it is already there), serves the viewer on a
free loopback port (uvicorn, as ``om ui`` runs it, in this process), logs in with the run's
token, and then times whole HTTP requests from a client on the same machine, server warm:

- the timeline's first page, a filtered page (type and priority), a deep page (the middle of
  the memory, through a keyset cursor) and a filter nothing matches (every row examined);
- the search page for a few queries.

Each figure is the median and the 95th percentile of ``--requests`` requests (wall clock), with
the server process's CPU time per request beside it (less sensitive to a busy machine).
Target (docs/benchmarks.md): each page under 200 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from search_latency import prepare_memory  # noqa: E402

QUERIES = ("redis deploy", "postgres migration timeout", "billing invoice customer")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    conn: http.client.HTTPConnection, cookie: str, path: str, runs: int
) -> dict[str, float]:
    """Median/p95 wall milliseconds and mean CPU milliseconds of ``runs`` GETs of ``path``."""
    walls: list[float] = []
    cpus: list[float] = []
    body = b""
    for attempt in range(runs + 2):
        cpu0, t0 = _cpu(), time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie})
        answer = conn.getresponse()
        body = answer.read()
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        if answer.status != 200:
            raise SystemExit(f"{path}: HTTP {answer.status}: {body[:300]!r}")
        if attempt >= 2:  # two warm-up requests
            walls.append(wall * 1000)
            cpus.append(cpu * 1000)
    return {
        "median_ms": round(statistics.median(walls), 1),
        "p95_ms": round(_pct(walls, 0.95), 1),
        "cpu_ms": round(statistics.fmean(cpus), 1),
        "bytes": len(body),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--keep", type=Path, help="Build the memory here and keep it (reused).")
    parser.add_argument("--backend", default="bm25", choices=("bm25", "hybrid"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ["OM_SEARCH_BACKEND"] = args.backend
    with tempfile.TemporaryDirectory(prefix="om-ui-bench-") as tmp:
        root = args.keep or Path(tmp)
        home = root / f"memory-{args.observations}"
        os.environ["OM_HOME"] = str(home)
        t0 = time.perf_counter()
        store, _, _ = prepare_memory(home, args.observations)
        built_s = time.perf_counter() - t0
        from ui.browser import ServerThread  # tests/ui/browser.py

        middle = (date.today() - timedelta(days=args.observations // 80)).isoformat()
        pages = {
            "timeline, first page": "/",
            "timeline, filtered (type + priority)": "/?type=decision&priority=important",
            "timeline, deep page (middle of memory)": f"/?after={middle}.999999999999",
            "timeline, filter matching nothing": "/?project=no-such-project",
            **{f"search {q!r}": f"/search?q={q.replace(' ', '+')}" for q in QUERIES},
        }
        results: dict[str, dict[str, float]] = {}
        with ServerThread(store) as server:
            conn = http.client.HTTPConnection("127.0.0.1", server.guard.port, timeout=60)
            cookie = f"{server.guard.cookie}={server.guard.token}"
            for name, path in pages.items():
                results[name] = measure(conn, cookie, path, args.requests)
            conn.close()
    report = {
        "observations": args.observations,
        "requests": args.requests,
        "backend": args.backend,
        "memory_ready_s": round(built_s, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "pages": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.observations:,} observations, {args.requests} requests per page, "
          f"{args.backend}, load {report['load_average']}")  # fmt: skip
    for name, row in results.items():
        print(f"  {name:45s} median {row['median_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
              f"cpu {row['cpu_ms']:6.1f} ms  {row['bytes']:,} bytes")  # fmt: skip


if __name__ == "__main__":
    main()

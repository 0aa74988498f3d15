"""Cold-process `om search` latency over a synthetic memory of N observations (BM25).

Usage: python bench/search_cold.py [--observations 10000] [--runs 21] [--json]

Builds the memory in a temporary directory through the store (so the files are what om writes),
indexes it once, then times whole `om search` processes, each a fresh interpreter, against a bare
`python -c pass` on the same machine. Target (docs/benchmarks.md): median under 150 ms at 10,000.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from obsmem.index import rebuild
from obsmem.memory.store import MemoryStore, new_observation

WORDS = """
postgres sqlite redis fastapi tortoise deploy release migration cache worker queue retry
timeout schema index vector embedding token budget prompt observer reflector hook session
transcript cursor ledger archive vault profile context search rank fusion rerank latency
benchmark pytest ruff mypy docker kubernetes terraform nginx oauth jwt secret rotation
billing invoice pricing customer tenant feature flag rollout canary incident outage
""".split()
TYPES = ("decision", "preference", "fact", "task", "milestone", "lesson", "error", "event")


def build(home: Path, count: int, seed: int = 7) -> MemoryStore:
    """Write ``count`` synthetic observations spread over days, in batches like the observer."""
    rng = random.Random(seed)
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    # Forty a day, ending today: a realistic mix of old memory and the last days' work.
    start = date.today() - timedelta(days=count // 40)
    batch = []
    for n in range(count):
        day = start + timedelta(days=n // 40)
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) + f" #{n}"
        batch.append(
            new_observation(
                text,
                date=day.isoformat(),
                time=f"{rng.randint(8, 20):02d}:{rng.randint(0, 59):02d}",
                type=rng.choice(TYPES),
                importance=round(rng.random(), 2),
                confidence=0.9,
            )
        )
        if len(batch) == 500:
            store.add_observations(batch)
            batch = []
    store.add_observations(batch)
    return store


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        t0 = time.perf_counter()
        store = build(home, args.observations)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rebuild(store)
        index_s = time.perf_counter() - t0
        env = {**os.environ, "OM_HOME": str(home)}
        om = [sys.executable, "-m", "obsmem", "search"]
        queries = ["redis timeout", "release canary rollout", "jwt secret rotation", "pytest"]
        samples: list[float] = []
        for q in queries:
            samples += timed([*om, q], env, max(1, args.runs // len(queries)))
        bare = timed([sys.executable, "-c", "pass"], env, args.runs)
    result = {
        "observations": args.observations,
        "write_seconds": round(build_s, 2),
        "index_seconds": round(index_s, 2),
        "search_cold_ms": {
            "median": round(statistics.median(samples), 1),
            "p90": round(sorted(samples)[int(0.9 * (len(samples) - 1))], 1),
        },
        "python_pass_ms": {"median": round(statistics.median(bare), 1)},
        "runs": len(samples),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")


if __name__ == "__main__":
    main()

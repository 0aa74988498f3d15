"""Cold-process `om search` latency over a synthetic memory of N observations (BM25).

Usage: python bench/search_cold.py [--observations 10000] [--runs 21] [--corpus zipf|narrow]
       [--json]

Builds the memory in a temporary directory through the store (so the files are what om writes),
indexes it once, then times whole `om search` processes, each a fresh interpreter, against a bare
`python -c pass` on the same machine. Target (docs/benchmarks.md): median under 150 ms at 10,000.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

from obsmem.index import rebuild
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.sources.registry import reader_for

WORDS = """
postgres sqlite redis fastapi tortoise deploy release migration cache worker queue retry
timeout schema index vector embedding token budget prompt observer reflector hook session
transcript cursor ledger archive vault profile context search rank fusion rerank latency
benchmark pytest ruff mypy docker kubernetes terraform nginx oauth jwt secret rotation
billing invoice pricing customer tenant feature flag rollout canary incident outage
""".split()
TYPES = ("decision", "preference", "fact", "task", "milestone", "lesson", "error", "event")
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "transcripts"

#: Corpora ``build`` can write. ``zipf``: words drawn from a vocabulary of ``VOCABULARY`` words
#: whose frequencies follow Zipf's law, as the words of natural text do (the words of the
#: bundled transcripts' turns by frequency first, the sixty domain words above spread over
#: ranks 40 to 1,810, made-up words after), so a query word is in a small share of the
#: memories, as in a real one. ``narrow``: every word one of the sixty, so each is in about a
#: sixth of the memories and a query of three words matches about half of them: a worst case
#: for BM25.
CORPORA = ("zipf", "narrow")
VOCABULARY = 30_000


def zipf_vocabulary(size: int = VOCABULARY) -> tuple[list[str], list[float]]:
    """The ``zipf`` corpus's words, most frequent first, and their cumulative weights."""
    counts: Counter[str] = Counter()
    for agent, folder in (("claude", "claude-code"), ("codex", "codex"), ("hermes", "hermes")):
        reader = reader_for(agent)
        for path in sorted((FIXTURES / folder).rglob("*.jsonl")):
            for turn in reader.read(path, flush=True).turns:
                counts.update(w.lower() for w in re.findall(r"[^\W\d_]{2,20}", turn.text))
    words = [w for w, _ in counts.most_common() if w not in WORDS]
    for i, word in enumerate(WORDS):
        words.insert(40 + 30 * i, word)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    rng = random.Random(3)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    words = words[:size]
    # Zipf-Mandelbrot weights (exponent 1, shift 2.7): the usual fit to English word counts.
    return words, list(itertools.accumulate(1.0 / (rank + 2.7) for rank in range(1, size + 1)))


def build(home: Path, count: int, seed: int = 7, corpus: str = "zipf") -> MemoryStore:
    """Write ``count`` synthetic observations spread over days, in batches like the observer."""
    rng = random.Random(seed)
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    if corpus == "narrow":
        words, cumulative = WORDS, None
    else:
        words, cumulative = zipf_vocabulary()
    # Forty a day, ending today: a realistic mix of old memory and the last days' work.
    start = date.today() - timedelta(days=count // 40)
    batch = []
    for n in range(count):
        day = start + timedelta(days=n // 40)
        chosen = rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 16))
        text = " ".join(chosen) + f" #{n}"
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
    parser.add_argument("--corpus", choices=CORPORA, default="zipf")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        t0 = time.perf_counter()
        store = build(home, args.observations, corpus=args.corpus)
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
        "corpus": args.corpus,
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

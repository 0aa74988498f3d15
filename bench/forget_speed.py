"""`om forget ID` on a memory of N observations, a third of them important.

Usage: python bench/forget_speed.py [--observations 10000] [--runs 5] [--json]

Builds the memory of ``bench/reflect_first.py`` (forty observations a day ending today, three
projects), brings the derived files and the index up to date, runs one `om reflect` (so most
days sit in archive months and reflections cite them), then times `om forget` processes, each
forgetting another memory: observations of observations.md, archived observations and reflection
lines in turn. Each run removes the lines from every file that holds them and refreshes the
startup context, the vault and the index (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reflect_first import build  # the same memory as the first-reflect benchmark

from obsmem.derived import update_derived
from obsmem.memory.store import MemoryStore
from obsmem.reflect.reflections import ReflectionsDoc


def targets(store: MemoryStore, runs: int) -> list[str]:
    """Ids to forget, one per run: observations of observations.md, archived observations and
    reflection lines in turn, none cited by another target."""
    current = [o.id for o in store.read_observations().observations]
    months = sorted((store.archive_dir / "observations").glob("*.md"))
    archived = [o.id for p in months for o in store.read_observations(p).observations]
    doc = ReflectionsDoc(store.read_bytes(store.home / "reflections.md"))
    lines = [p.line for p in doc.places()]
    cited = {c for line in lines for c in line.cites}
    pools = [
        [i for i in current if i not in cited],
        [i for i in archived if i not in cited],
        [line.rid for line in lines],
    ]
    out: list[str] = []
    for n in range(runs):
        pool = pools[n % 3] or current
        out.append(pool[(n // 3 * 7919) % len(pool)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    om = shutil.which("om", path=str(Path(sys.executable).parent)) or "om"
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        store = build(home, args.observations, 1 / 3)
        update_derived(store)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OM_")}
        env.update({"OM_HOME": str(home), "OM_LLM_PROVIDER": "none"})
        done = subprocess.run([om, "reflect"], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"om reflect failed: {done.stderr.strip()}")
        walls: list[float] = []
        cpus: list[float] = []
        for entry_id in targets(store, args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run([om, "forget", entry_id, "--json"], env=env,
                                  capture_output=True, text=True)  # fmt: skip
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if done.returncode != 0:
                sys.exit(f"om forget {entry_id} failed: {done.stderr.strip()}")
    result = {
        "observations": args.observations,
        "runs": args.runs,
        "om_forget_median_s": round(statistics.median(walls), 2),
        "om_forget_max_s": round(max(walls), 2),
        "om_forget_cpu_median_s": round(statistics.median(cpus), 2),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")


if __name__ == "__main__":
    main()

"""`om context` (the SessionStart hot path) from a cold process, with 10,000 observations.

Usage: python bench/context_hot.py [--observations 10000] [--runs 21] [--json]

Builds the memory through the store, prepares the startup context once (as `om observe` does
after writing), then times whole `om context --for claude` processes against a bare
`python -c pass`. Target (docs/benchmarks.md): median under 3x the bare interpreter.
It also checks that the hot path imports no LLM SDK, numpy or click.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_cold import build, timed  # the same memory and timing as the search benchmark

from obsmem.context.prepare import prepare_context

HEAVY = ("anthropic", "openai", "numpy", "fastembed", "click", "rich", "sqlite3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    om = shutil.which("om", path=str(Path(sys.executable).parent)) or "om"
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        store = build(home, args.observations)
        t0 = time.perf_counter()
        prepared = prepare_context(store)
        prepare_s = time.perf_counter() - t0
        env = {**os.environ, "OM_HOME": str(home)}
        cmd = [om, "context", "--for", "claude", "--cwd", tmp]
        context = timed(cmd, env, args.runs)
        bare = timed([sys.executable, "-c", "pass"], env, args.runs)
        probe = subprocess.run(
            [sys.executable, "-c",
             "import sys, runpy; sys.argv=['om','context','--for','claude']; "
             "from obsmem.cli.entry import main\ntry:\n main()\nexcept SystemExit: pass\n"
             f"print('IMPORTED', [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)"],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        size = len(subprocess.run(cmd, env=env, capture_output=True, check=True).stdout)
    heavy = probe.stderr.strip().rsplit("IMPORTED", 1)[-1].strip()
    med, base = statistics.median(context), statistics.median(bare)
    result = {
        "observations": args.observations,
        "entries_prepared": len(prepared.entries),
        "prepare_seconds": round(prepare_s, 2),
        "context_ms": {
            "median": round(med, 1),
            "p90": round(sorted(context)[int(0.9 * (len(context) - 1))], 1),
        },
        "python_pass_ms": {"median": round(base, 1)},
        "ratio": round(med / base, 2),
        "output_bytes": size,
        "heavy_imports": heavy,
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")


if __name__ == "__main__":
    main()

"""`om context` (the SessionStart hot path) from a cold process, at 10,000 and 100,000 observations.

Usage: python bench/context_hot.py [--observations 10000 100000] [--important 0.33] [--runs 21]
       [--json]

For each size, builds a memory through the store (forty observations a day ending today, in five
projects, a third of them important (🔴) by default, every type, a Current Context per day),
prepares the startup context once (as `om observe` does after writing, which also renders it
ahead), then times whole `om context --for claude` processes fed the SessionStart hook's JSON on
stdin (as Claude Code runs it) against a bare `python -c pass`, the two in turn. Target
(docs/benchmarks.md): median under 2x the bare interpreter; the ratio of the fastest runs and
that of the median CPU times (user + system, less sensitive to a busy machine) are printed too.
It also reports the size of the derived files, checks that the output is what the full path
(`run_context`) prints, that the hot path imports no LLM SDK, numpy, click or sqlite3, and which
of `json`, `re`, `math` and the full path's module it loaded (none when the context rendered
ahead was used). Run it with the interpreter of a regular (not editable) install whose modules
are compiled, so start-up is measured as users get it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from obsmem.context.prepare import BEGIN, END, prepare_context, tokens
from obsmem.context.startup import run_context
from obsmem.memory.model import OBSERVATION_TYPES, Provenance
from obsmem.memory.store import MemoryStore, new_observation

HEAVY = ("anthropic", "openai", "numpy", "fastembed", "click", "rich", "sqlite3")
#: What the full path loads and the context rendered ahead does not need.
FULL_PATH = ("json", "re", "math", "obsmem.context.startup")
PROJECTS = ("atlas", "hermes-bot", "ledger", "pipeline", "website")
WORDS = (
    "cache index parser worker queue schema migration release build test deploy config token "
    "session retry timeout upload export import report metric alert backup search filter "
    "payment invoice webhook endpoint client server database table column field"
).split()


def build(home: Path, count: int, important: float, seed: int = 7) -> MemoryStore:
    """``count`` observations, forty a day ending today, written as one batch."""
    rng = random.Random(seed)
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    start = date.today() - timedelta(days=count // 40)
    batch, context = [], {}
    for n in range(count):
        day = (start + timedelta(days=n // 40)).isoformat()
        project = PROJECTS[n % len(PROJECTS)]
        text = " ".join(rng.choices(WORDS, k=rng.randint(6, 14))) + f" #{n}"
        hot = rng.random() < important
        batch.append(
            new_observation(
                text,
                date=day,
                time=f"{8 + (n % 40) // 4:02d}:{rng.randint(0, 59):02d}",
                type=OBSERVATION_TYPES[n % len(OBSERVATION_TYPES)],
                importance=round(rng.uniform(0.8, 1.0) if hot else rng.uniform(0.1, 0.79), 2),
                confidence=0.9,
                provenance=Provenance(
                    f"/t/{project}.jsonl", n, n, f"s{n // 40}", "claude", project
                ),
            )
        )
        context[day] = {"Active task": f"Working on {project} {text[:40]}"}
    store.add_observations(batch, context=context)
    return store


def timed(
    cmd: list[str], env: dict[str, str], runs: int, stdin: bytes
) -> list[tuple[float, float]]:
    """(wall, CPU) milliseconds of each of ``runs`` whole processes; CPU is user + system."""
    out = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, input=stdin, check=True, stdout=subprocess.DEVNULL)
        wall = (time.perf_counter() - t0) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        out.append((wall, cpu))
    return out


def interleaved(
    cmd: list[str], env: dict[str, str], runs: int, stdin: bytes
) -> tuple[list[tuple[float, float]], list[tuple[float, float]], list[tuple[float, float]]]:
    """``cmd``, a bare ``python -c pass`` and ``python -c "import re, json"`` (what the console
    script and reading JSON cost before om does anything) run in turn, so that a machine whose
    load changes during the measurement weighs on all alike."""
    context: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    floor: list[tuple[float, float]] = []
    for _ in range(runs):
        context += timed(cmd, env, 1, stdin)
        bare += timed([sys.executable, "-c", "pass"], env, 1, b"")
        floor += timed([sys.executable, "-c", "import re, json"], env, 1, b"")
    return context, bare, floor


def _generated_tokens(path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    return tokens(text.split(BEGIN)[1].split(END)[0].strip("\n").splitlines())


def measure(count: int, important: float, runs: int) -> dict[str, object]:
    """Build, prepare and time one memory size."""
    om = shutil.which("om", path=str(Path(sys.executable).parent)) or "om"
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        home = Path(tmp) / "mem"
        t0 = time.perf_counter()
        store = build(home, count, important)
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        prepared = prepare_context(store)
        prepare_s = time.perf_counter() - t0
        cwd = Path(tmp) / PROJECTS[0]
        cwd.mkdir()
        payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(cwd)}).encode()
        env = {**os.environ, "OM_HOME": str(home)}
        cmd = [om, "context", "--for", "claude"]
        timed(cmd, env, 2, payload)  # warm the page cache
        runs_context, runs_bare, runs_floor = interleaved(cmd, env, runs, payload)
        context, bare, floor = ([w for w, _ in r] for r in (runs_context, runs_bare, runs_floor))
        cpu_context, cpu_bare = ([c for _, c in r] for r in (runs_context, runs_bare))
        probe = subprocess.run(
            [sys.executable, "-c",
             "import sys; sys.argv=['om','context','--for','claude']; before=set(sys.modules)\n"
             "from obsmem.cli.entry import main\ntry:\n main()\nexcept SystemExit: pass\n"
             "new=[m for m in sys.modules if m not in before]\n"
             f"print('IMPORTED', [m for m in {HEAVY!r} if m in new], file=sys.stderr)\n"
             f"print('FULL', [m for m in {FULL_PATH!r} if m in new], file=sys.stderr)"],
            env=env, input=payload, capture_output=True, check=True,
        )  # fmt: skip
        out = subprocess.run(cmd, env=env, input=payload, capture_output=True, check=True).stdout
        full = run_context("claude", cwd=str(cwd), environ={"OM_HOME": str(home)})
        report = probe.stderr.decode()
        ahead = store.state_dir / "context.rendered"
        result = {
            "observations": count,
            "important_share": important,
            "build_seconds": round(build_s, 1),
            "prepare_seconds": round(prepare_s, 2),
            "entries_prepared": len(prepared.entries),
            "context_json_bytes": store.context_path.stat().st_size,
            "rendered_bytes": ahead.stat().st_size if ahead.exists() else 0,
            "profile_tokens": _generated_tokens(home / "profile.md"),
            "active_tokens": _generated_tokens(home / "active.md"),
            "context_ms": {
                "median": round(statistics.median(context), 1),
                "p90": round(sorted(context)[int(0.9 * (len(context) - 1))], 1),
                "min": round(min(context), 1),
            },
            "python_pass_ms": {
                "median": round(statistics.median(bare), 1),
                "min": round(min(bare), 1),
            },
            "cpu_ms": {
                "context": round(statistics.median(cpu_context), 1),
                "python_pass": round(statistics.median(cpu_bare), 1),
            },
            "output_bytes": len(out),
            "project_first": "This project (atlas)" in out.decode(),
            "same_as_full_path": out.decode() == full + "\n",
            "heavy_imports": report.split("IMPORTED", 1)[-1].split("\n", 1)[0].strip(),
            "full_path_imports": report.split("FULL", 1)[-1].strip(),
        }
    result["ratio"] = round(statistics.median(context) / statistics.median(bare), 2)
    result["ratio_of_minimums"] = round(min(context) / min(bare), 2)
    result["cpu_ratio"] = round(statistics.median(cpu_context) / statistics.median(cpu_bare), 2)
    result["re_json_ratio"] = round(statistics.median(floor) / statistics.median(bare), 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--important", type=float, default=1 / 3)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for count in args.observations:
        result = measure(count, round(args.important, 2), args.runs)
        if args.json:
            print(json.dumps(result))
        else:
            for key, value in result.items():
                print(f"{key:20} {value}")
            print()


if __name__ == "__main__":
    main()

"""Idle cost of ``om observe --watch``: CPU time of a watcher with nothing to do.

Usage: python bench/watch_idle.py [--files 200] [--seconds 60] [--json]

A temporary agent home holds ``--files`` Claude Code transcripts, all observed once by the
watcher's start-up catch-up. Once that is done, the watcher's CPU time (user + system, from
``/proc/<pid>/stat``, Linux only) is read, and again after ``--seconds`` with nothing written:
the difference is what an idle watcher costs. Then one transcript grows and the figure says how
long the watcher took to write its observations (an end-to-end figure, debounce included).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "obsmem" / "demo" / "data" / "transcripts" / "claude" / "projects" / "-home-dev-atlas"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _wait(check: object, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit("gave up waiting")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="om-watch-bench-"))
    try:
        sample = next(DEMO.glob("*.jsonl")).read_bytes()
        for number in range(args.files):
            folder = root / "claude" / "projects" / f"-home-dev-p{number % 20}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{number:08d}-5b8a-4e6f-9a2d-1c4b7e8f0a3d.jsonl").write_bytes(sample)
        (root / "home").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("OM_")}
        env |= {
            "HOME": str(root / "home"),
            "OM_HOME": str(root / "mem"),
            "OM_CONFIG_DIR": str(root / "config"),
            "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "CODEX_HOME": str(root / "codex"),
            "HERMES_HOME": str(root / "hermes"),
            "OPENCLAW_HOME": str(root / "openclaw"),
            "OM_LLM_PROVIDER": "none",
            "OM_SEARCH_BACKEND": "bm25",
        }
        log = (root / "watch.log").open("w")
        process = subprocess.Popen(
            [sys.executable, "-m", "obsmem", "observe", "--watch"], env=env, stdout=log, stderr=log
        )
        text = lambda: (root / "watch.log").read_text()  # noqa: E731
        _wait(lambda: "file(s) read" in text())
        time.sleep(2.0)  # the catch-up's derived files are written
        before = _cpu_seconds(process.pid)
        time.sleep(args.seconds)
        idle = _cpu_seconds(process.pid) - before
        grown = next((root / "claude" / "projects").rglob("*.jsonl"))
        batches = text().count("file(s) read")
        started = time.monotonic()
        with grown.open("ab") as handle:
            handle.write(sample)
        _wait(lambda: text().count("file(s) read") > batches)
        latency = time.monotonic() - started
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=120)
        result = {
            "files": args.files,
            "idle_seconds": args.seconds,
            "idle_cpu_seconds": round(idle, 3),
            "idle_cpu_percent": round(100 * idle / args.seconds, 3),
            "grow_to_written_seconds": round(latency, 2),
            "exit_code": code,
        }
        if args.json:
            print(json.dumps(result))
        else:
            for name, value in result.items():
                print(f"{name}: {value}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

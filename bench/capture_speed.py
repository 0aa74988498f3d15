"""Capture speed: transcript parsing throughput, and the rescan of unchanged transcripts.

Usage: python bench/capture_speed.py [--mb 100] [--files 1000] [--corpus both] [--json]
       python bench/capture_speed.py --callgrind [--copies 20] [--corpus fixtures]

1. Parsing: for each agent, its test fixtures repeated into one large JSONL file (about ``--mb``
   megabytes), read in full by the agent's reader; figure in MB/s (target: over 50). Also in
   CPU time of the process (what a loaded machine distorts least), for the reader alone and
   with every turn redacted as capture does it. The Hermes and OpenClaw fixtures are mostly
   hand-written, very short turns (the worst case); both agents are also read on a corpus
   shaped like real sessions (``--corpus sessions``, the default being ``both``): for OpenClaw
   the one public real session among the fixtures alone, for Hermes the session written by
   ``hermes_session.py`` (full tools list, multi-KB tool results; no public one exists).
2. Rescan: ``--files`` Claude Code transcripts whose cursors are all at the end; one ``scan`` of
   them, the work ``om observe`` does when nothing changed (target: under 0.3 s for 1,000).
3. ``--callgrind``: instructions per turn under ``valgrind --tool=callgrind`` (repeatable on a
   loaded machine, where time is not), for each reader alone and for redacting its turns as
   capture does. Each figure is the difference of two runs of this script that build the same
   file of ``--copies`` copies of the fixtures and stop at different points (``--stage``), so
   start-up and imports cancel out.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hermes_session import session as hermes_session

from obsmem.memory.ledger import ForgottenTurns, append_forgotten_turns, turn_digest, turn_key
from obsmem.redact import redact_all
from obsmem.sources.capture import MAX_TURN_CHARS, CaptureRun, scan
from obsmem.sources.model import Turn
from obsmem.sources.normalise import clip
from obsmem.sources.registry import reader_for
from obsmem.sources.state import CaptureState

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
GROUPS = {
    "claude": ["claude-code"],
    "codex": ["codex"],
    "hermes": ["hermes"],
    "openclaw": ["openclaw"],
}


#: The corpus shaped like real sessions, per agent (see the module's docstring).
SESSIONS = {
    "hermes": lambda: hermes_session(seed=1),
    "openclaw": lambda: (
        FIXTURES / "openclaw" / "openclaw-session-md" / "session.jsonl"
    ).read_bytes(),
}
CORPORA = ("fixtures", "sessions")


def _sample(agent: str, corpus: str = "fixtures") -> bytes:
    if corpus == "sessions":
        return SESSIONS[agent]() if agent in SESSIONS else b""
    parts = []
    for group in GROUPS[agent]:
        for path in sorted((FIXTURES / group).rglob("*.jsonl")):
            data = path.read_bytes()
            if agent == "openclaw" and b'"type":"session"' not in data[:200].replace(b" ", b""):
                continue  # the trajectory trace is another kind of file
            parts.append(data if data.endswith(b"\n") else data + b"\n")
    return b"".join(parts)


STAGES = ("build", "read", "redact")
#: For --callgrind: about this many bytes of JSONL per ``--copies`` (the larger fixtures are
#: copied fewer times, valgrind being about fifty times slower).
_COPY_BYTES = 20_000


def _redact_turns(turns: list[Turn]) -> None:
    # As capture.read_pending does.
    for turn, text in zip(turns, redact_all([turn.text for turn in turns]), strict=True):
        turn.text = clip(text, MAX_TURN_CHARS)


def stage(agent: str, copies: int, upto: str, workdir: Path, corpus: str = "fixtures") -> int:
    """Build ``copies`` copies of ``agent``'s fixtures and run up to ``upto`` (``build``,
    ``read``, ``redact``); the number of turns read (0 when not read). One copy is read and
    redacted first, so that imports and caches filled once are outside every difference."""
    path = workdir / f"{agent}.jsonl"
    sample = _sample(agent, corpus)
    path.write_bytes(sample)
    _redact_turns(reader_for(agent).read(path, flush=True).turns)
    path.write_bytes(sample * copies)
    if upto == "build":
        return 0
    result = reader_for(agent).read(path, flush=True)
    if upto == "redact":
        _redact_turns(result.turns)
    return len(result.turns)


_COLLECTED = re.compile(r"Collected : (\d+)")


def _instructions(agent: str, copies: int, upto: str, corpus: str) -> int:
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, "--stage", upto, "--agent", agent, "--copies", str(copies),
        "--corpus", corpus,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind: {done.stderr[-500:]}")
    return int(found.group(1))


def callgrind(
    copies: int, agents: list[str], corpus: str = "fixtures"
) -> dict[str, dict[str, float]]:
    """Instructions per turn of each reader, and of redacting its turns, under callgrind."""
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        for agent in agents:
            size = len(_sample(agent, corpus))
            if not size:
                continue
            n = max(1, copies * _COPY_BYTES // size)
            turns = stage(agent, n, "read", Path(tmp), corpus)
            build, read, redacted = (_instructions(agent, n, upto, corpus) for upto in STAGES)
            out[agent] = {
                "turns": turns,
                "bytes_per_turn": round(size * n / turns),
                "reader_per_turn": round((read - build) / turns),
                "redaction_per_turn": round((redacted - read) / turns),
            }
    return out


def _after_forget(workdir: Path) -> ForgottenTurns:
    """The check capture makes once ``om forget`` removed turns: 100 tombstones in a ledger."""
    ledger, key_path = workdir / "provenance.jsonl", workdir / "forget.key"
    key = turn_key(key_path, create=True)
    assert key is not None
    append_forgotten_turns(ledger, [turn_digest(key, f"a forgotten turn {i}") for i in range(100)])
    return ForgottenTurns(ledger, key_path)


def parsing(mb: int, workdir: Path, corpus: str = "fixtures") -> dict[str, dict[str, float]]:
    """Each agent's reader on ``corpus`` repeated to ``mb`` megabytes: MB/s, best of three.

    CPU time is given for the reader alone, with every turn redacted, and with redaction and
    the forgotten-turn check a memory makes after ``om forget``."""
    out: dict[str, dict[str, float]] = {}
    forgotten = _after_forget(workdir)
    for agent in GROUPS:
        sample = _sample(agent, corpus)
        if not sample:
            continue
        path = workdir / f"{agent}.jsonl"
        with path.open("wb") as handle:
            size = 0
            while size < mb * 1024 * 1024:
                handle.write(sample)
                size += len(sample)
        reader = reader_for(agent)
        runs, cpu, redacted, checked = [], [], [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            result = reader.read(path, flush=True)
            runs.append(time.perf_counter() - t0)
            c1 = time.process_time()
            cpu.append(c1 - c0)
            _redact_turns(result.turns)
            redacted.append(time.process_time() - c0)
            kept = forgotten.keep([turn.text for turn in result.turns])
            checked.append(time.process_time() - c0)
            assert all(kept)
        best = min(runs)
        out[agent] = {
            "mb": round(size / 1e6, 1),
            "seconds": round(best, 3),
            "mb_per_s": round(size / 1e6 / best, 1),
            "cpu_mb_per_s": round(size / 1e6 / min(cpu), 1),
            "redacted_cpu_mb_per_s": round(size / 1e6 / min(redacted), 1),
            "after_forget_cpu_mb_per_s": round(size / 1e6 / min(checked), 1),
            "turns": len(result.turns),
        }
        path.unlink()
    return out


def rescan(files: int, workdir: Path) -> dict[str, float]:
    home = workdir / "claude"
    project = home / "projects" / "-home-dev-bench"
    project.mkdir(parents=True)
    source = FIXTURES / "claude-code" / "claude-code-transcripts" / "sample_session.jsonl"
    for n in range(files):
        shutil.copyfile(source, project / f"{n:08d}-0000-0000-0000-000000000000.jsonl")
    env = {"CLAUDE_CONFIG_DIR": str(home)}
    with CaptureState(workdir / "state.sqlite3") as state:
        first = scan(state, ["claude"], environ=env, flush=True)
        with CaptureRun(state) as run:
            for pending in first.pending:
                claimed = run.claim(pending, flush=True)
                assert claimed is not None
                result = reader_for("claude").read(claimed.path, flush=True)
                run.finish(claimed, result)
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            again = scan(state, ["claude"], environ=env)
            times.append(time.perf_counter() - t0)
            assert not again.pending and again.unchanged == files
    return {
        "files": files,
        "median_s": round(statistics.median(times), 4),
        "max_s": round(max(times), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--callgrind", action="store_true", help="instructions per turn")
    parser.add_argument("--copies", type=int, default=20, help="fixture copies for --callgrind")
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    parser.add_argument("--agent", choices=sorted(GROUPS), help="only this agent (--callgrind)")
    parser.add_argument(
        "--corpus",
        choices=(*CORPORA, "both"),
        help="fixtures, sessions (shaped like real ones) or both; --callgrind: fixtures",
    )
    args = parser.parse_args()
    if args.stage:  # one run measured by --callgrind
        with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
            stage(args.agent, args.copies, args.stage, Path(tmp), args.corpus or "fixtures")
        return
    if args.callgrind:
        corpus = args.corpus or "fixtures"
        if corpus == "both":
            raise SystemExit("om: error: --callgrind takes one --corpus (fixtures or sessions)")
        agents = [args.agent] if args.agent else list(GROUPS)
        figures = callgrind(args.copies, agents, corpus)
        if args.json:
            print(json.dumps(figures))
            return
        for agent, row in figures.items():
            print(
                f"callgrind {agent:9} {row['turns']} turns ({row['bytes_per_turn']} bytes each): "
                f"reader {row['reader_per_turn']:,} instructions a turn, "
                f"redaction {row['redaction_per_turn']:,}"
            )
        return
    corpora = CORPORA if args.corpus in (None, "both") else (args.corpus,)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="om-bench-") as tmp:
        # "parsing" stays the fixture figure it always was; the other corpus has its own key.
        for corpus in corpora:
            key = "parsing" if corpus == "fixtures" else f"parsing_{corpus}"
            result[key] = parsing(args.mb, Path(tmp), corpus)
        result["rescan"] = rescan(args.files, Path(tmp))
    if args.json:
        print(json.dumps(result))
        return
    for corpus in corpora:
        key = "parsing" if corpus == "fixtures" else f"parsing_{corpus}"
        for agent, figures in result[key].items():
            print(
                f"parse {agent:9} {corpus:8} {figures['mb_per_s']:>7} MB/s  ({figures['mb']} MB "
                f"in {figures['seconds']} s, {figures['turns']} turns); CPU time: "
                f"{figures['cpu_mb_per_s']} MB/s, {figures['redacted_cpu_mb_per_s']} MB/s "
                f"redacted, {figures['after_forget_cpu_mb_per_s']} MB/s after a forget"
            )
    r = result["rescan"]
    print(
        f"rescan of {r['files']} unchanged transcripts: "
        f"median {r['median_s']} s, max {r['max_s']} s"
    )


if __name__ == "__main__":
    main()

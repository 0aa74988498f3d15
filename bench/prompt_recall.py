"""Per-prompt recall: the prompt hook's latency from a cold process, and how its threshold acts.

Usage: python bench/prompt_recall.py [--observations 10000] [--runs 60] [--python PATH] [--json]
       python bench/prompt_recall.py --relevance PATH [--thresholds 0.5,1,1.5,2] [--json]

Speed (the default). Builds a synthetic memory of N observations (``search_cold.build``: the
same Zipf-distributed words as the cold search benchmark), indexes it and prepares its startup
context, then times whole ``om hook prompt --agent claude`` processes (the console script of a
regular install, as Claude Code starts it), each given on stdin the JSON Claude Code sends
(``session_id``, ``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name``,
``prompt``). The prompts cycle through five kinds: short questions, routine replies ("ok",
"go on"), long prompts (a paragraph), pasted output with a question, and questions about
earlier work (``recall``: each built from the rarest words of one stored observation, as a
user asking about something done before would put it, so that recall finds a memory above the
relevance threshold and writes its lines and the session record); sessions of ten prompts
each, so the first prompt of a session (which reads the startup context) is timed as often as
it happens. The script holds the worker lock, as a busy worker would, so no worker starts: the
checkpoint is queued (first prompt of a transcript) or throttled, as in use. Reports median,
p95 and CPU time (user + system) per kind and overall, and apart for the prompts that were
given memories and those that were not (``given_ms``, ``not_given_ms``, with how many of each),
a bare ``python -c pass`` and a cold ``om search`` (of a short prompt's words) beside it, and
the load average. Target
(docs/benchmarks.md): p95 under 150 ms at 10,000 observations.

Relevance (``--relevance`` LoCoMo's ``locomo_dev.json``). For each conversation, every turn
becomes one observation (``locomo_recall.index_conversation``), and recall runs for every
question of that conversation (a prompt about something the memory holds) and for as many
questions of the other conversations (prompts about people and events it does not hold). At
each threshold it reports how often something is added, and of the lines added, the share that
are an evidence turn of the question and the share from an evidence session. No LLM, no network.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_cold import _cpu, build, regular_install  # the cold search bench's memory and venv

from obsmem.context.prepare import prepare_context
from obsmem.index import rebuild
from obsmem.memory.store import MemoryStore

SHORT = [
    "why did we choose redis for the cache worker?",
    "what was the plan for the jwt secret rotation?",
    "remind me how the canary rollout is configured",
    "is the postgres migration for tenant billing finished?",
]
ROUTINE = ["ok", "go on", "yes please", "thanks!", "/compact", "sounds good, continue"]
LONG = [
    "I want to rework how the observer handles retries when the queue backs up. Right now a "
    "timeout in the worker makes the whole batch wait, and the cursor does not move, so after an "
    "outage we replay far too much. Can you look at the retry and backoff code, check what we "
    "decided about the budget of tokens per run and the schema of the ledger, and propose a "
    "change that keeps the cursor safe? Keep the benchmark for latency in mind and run pytest, "
    "ruff and mypy before you say it is done.",
]
PASTED = [
    "this fails again after the deploy, any idea?\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/app/worker.py", line 88, in run\n'
    "    result = queue.take(timeout=30)\n"
    '  File "/srv/app/queue.py", line 41, in take\n'
    "    raise TimeoutError(f'queue empty after {timeout}s')\n"
    "TimeoutError: queue empty after 30s\n"
    "2026-12-01 10:02:11 ERROR worker exited with status 1\n"
    "2026-12-01 10:02:12 INFO restarting worker (attempt 3)\n",
]
KINDS = {"short": SHORT, "routine": ROUTINE, "long": LONG, "pasted": PASTED}
PROMPTS_PER_SESSION = 10
#: Questions about earlier work in the prompt mix, each about one stored observation.
RECALL_PROMPTS = 12
#: The words of a stored observation a ``recall`` prompt asks about: its longest (in the Zipf
#: corpus, the long words are the rare ones, as in natural text).
RECALL_WORDS = 4
RECALL_FORMS = (
    "what did we decide about {0} {1} and {2} {3}?",
    "remind me what we found on {0} and {1} {2} {3} last time",
    "where did we leave the {0} {1} work, with {2} and {3}?",
)


def _stats(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "max": round(ordered[-1], 1),
    }


def recall_prompts(store: MemoryStore, count: int, seed: int = 13) -> list[str]:
    """Questions about ``count`` stored observations, each naming their longest words."""
    observations = store.read_observations().observations
    rng = random.Random(seed)
    prompts = []
    for n, observation in enumerate(rng.sample(observations, min(count, len(observations)))):
        words = list(dict.fromkeys(w for w in observation.text.split() if w.isalpha()))
        longest = sorted(words, key=len, reverse=True)[:RECALL_WORDS]
        if len(longest) < RECALL_WORDS:
            continue  # too few words to ask about: an observation of repeats
        prompts.append(RECALL_FORMS[n % len(RECALL_FORMS)].format(*longest))
    return prompts


def speed(args: argparse.Namespace) -> dict[str, Any]:
    """Time the hook command over a memory of ``args.observations`` observations."""
    from obsmem.integrations.worker import _worker_lock

    with tempfile.TemporaryDirectory(prefix="om-bench-prompt-") as tmp:
        root = Path(tmp)
        python = args.python or regular_install(root / "venv")
        home = root / "mem"
        store = build(home, args.observations)
        rebuild(store)
        prepare_context(store)
        env = {**os.environ, "OM_HOME": str(home), "CLAUDE_CONFIG_DIR": str(root / "claude")}
        env.pop("OM_DEBUG", None)
        transcript = root / "claude" / "projects" / "-w-atlas" / "session.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
        project = root / "atlas"
        project.mkdir()
        om = [str(Path(python).parent / "om"), "hook", "prompt", "--agent", "claude"]
        kinds = {**KINDS, "recall": recall_prompts(store, RECALL_PROMPTS)}
        order = [(kind, prompt) for kind, prompts in kinds.items() for prompt in prompts]
        random.Random(5).shuffle(order)
        samples: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
        given: list[tuple[float, float]] = []  # the runs whose prompt was given memories
        not_given: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        searches: list[tuple[float, float]] = []  # `om search` of a short prompt, for scale
        search = [str(Path(python).parent / "om"), "search"]
        time.sleep(2.5)  # past the index stamp's racy window, as the search bench does
        with _worker_lock({"OM_HOME": str(home)}) as held:
            assert held, "a worker is running on the benchmark's memory"
            session = str(uuid.uuid4())
            for n in range(args.runs):
                if n % PROMPTS_PER_SESSION == 0:
                    session = str(uuid.uuid4())
                kind, prompt = order[n % len(order)]
                payload = {
                    "session_id": session,
                    "transcript_path": str(transcript),
                    "cwd": str(project),
                    "permission_mode": "default",
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": prompt,
                }
                c0, t0 = _cpu(), time.perf_counter()
                done = subprocess_run(om, env, json.dumps(payload))
                wall, cpu = (time.perf_counter() - t0) * 1000, (_cpu() - c0) * 1000
                samples[kind].append((wall, cpu))
                (given if done.strip() else not_given).append((wall, cpu))
                c0, t0 = _cpu(), time.perf_counter()
                subprocess_run([str(python), "-c", "pass"], env, "")
                bare.append(((time.perf_counter() - t0) * 1000, (_cpu() - c0) * 1000))
                c0, t0 = _cpu(), time.perf_counter()
                subprocess_run([*search, SHORT[n % len(SHORT)]], env, "")
                searches.append(((time.perf_counter() - t0) * 1000, (_cpu() - c0) * 1000))
    every = [s for kind in samples.values() for s in kind]
    return {
        "observations": args.observations,
        "runs": len(every),
        "hook_ms": _stats([w for w, _ in every]),
        "hook_cpu_ms": _stats([c for _, c in every]),
        "by_kind_ms": {k: _stats([w for w, _ in v]) for k, v in samples.items() if v},
        "prompts_given_memories": len(given),
        "given_ms": _stats([w for w, _ in given]) if given else None,
        "given_cpu_ms": _stats([c for _, c in given]) if given else None,
        "prompts_not_given": len(not_given),
        "not_given_ms": _stats([w for w, _ in not_given]) if not_given else None,
        "not_given_cpu_ms": _stats([c for _, c in not_given]) if not_given else None,
        "om_search_ms": _stats([w for w, _ in searches]),
        "om_search_cpu_ms": _stats([c for _, c in searches]),
        "python_pass_ms": _stats([w for w, _ in bare]),
        "python_pass_cpu_ms": _stats([c for _, c in bare]),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }


def subprocess_run(cmd: list[str], env: dict[str, str], stdin: str) -> str:
    import subprocess

    done = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout


def relevance(args: argparse.Namespace) -> dict[str, Any]:
    """Fire rate and precision of recall at each threshold on LoCoMo questions."""

    from locomo_recall import index_conversation, load_conversation, session_of

    from obsmem.context.prompt_recall import recall_for_prompt
    from obsmem.memory.store import MemoryStore
    from obsmem.settings import load_settings

    data = json.loads(Path(args.relevance).read_text(encoding="utf-8"))
    conversations = [load_conversation(sample) for sample in data]
    thresholds = [float(v) for v in args.thresholds.split(",")]
    base = load_settings({})
    rng = random.Random(11)
    tally = {
        t: {"on": 0, "on_fired": 0, "lines": 0, "turn": 0, "session": 0, "off": 0, "off_fired": 0}
        for t in thresholds
    }
    for conversation in conversations:
        others = [q for c in conversations if c is not conversation for q in c.questions]
        offtopic = rng.sample(others, min(len(others), len(conversation.questions)))
        with tempfile.TemporaryDirectory(prefix="om-bench-relevance-") as tmp:
            home = Path(tmp) / "mem"
            mapping = index_conversation(home, conversation)
            env = {"OM_HOME": str(home)}
            store = MemoryStore(home, environ=env)
            for threshold in thresholds:
                settings = base.replace(prompt_recall_min_score=threshold)
                row = tally[threshold]
                for question, ontopic in [(q, True) for q in conversation.questions] + [
                    (q, False) for q in offtopic
                ]:
                    found = recall_for_prompt(
                        question.text, store=store, settings=settings, environ=env
                    )
                    key = "on" if ontopic else "off"
                    row[key] += 1
                    row[f"{key}_fired"] += bool(found.ids)
                    if not ontopic:
                        continue
                    sessions = {session_of(e) for e in question.evidence}
                    for entry_id in found.ids:
                        dias = mapping.get(entry_id, [])
                        row["lines"] += 1
                        row["turn"] += any(d in question.evidence for d in dias)
                        row["session"] += any(session_of(d) in sessions for d in dias)
    report = []
    for threshold, row in tally.items():
        lines = row["lines"] or 1
        report.append(
            {
                "threshold": threshold,
                "fires_on_topic": round(row["on_fired"] / max(row["on"], 1), 3),
                "fires_off_topic": round(row["off_fired"] / max(row["off"], 1), 3),
                "lines_per_firing": round(row["lines"] / max(row["on_fired"], 1), 2),
                "lines_evidence_turn": round(row["turn"] / lines, 3),
                "lines_evidence_session": round(row["session"] / lines, 3),
                "questions": row["on"],
            }
        )
    return {"conversations": len(conversations), "thresholds": report}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--python", type=Path, help="interpreter of a regular install of om")
    parser.add_argument("--relevance", type=Path, help="LoCoMo's locomo_dev.json")
    parser.add_argument("--thresholds", default="0.5,1,1.5,2")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = relevance(args) if args.relevance else speed(args)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                print(key)
                for row in value:
                    print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
            else:
                print(f"{key:24} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Fake ``claude`` and ``codex`` executables: they record how they were run and print the JSON the
real CLIs print (``claude -p --output-format json``: one result object; ``codex exec --json``:
JSON Lines events).

Each run appends one JSON line to ``calls.jsonl`` (argv, stdin, cwd, the observer marker, start
and end times) and then does what ``behaviour.json`` says, read at every run so a test can change
it between calls: ``reply`` (the text), ``usage``, ``error`` (a message the CLI reports as its
error), ``exit`` (status), ``garbage`` (print something that is not JSON), ``sleep`` (seconds
before answering) and ``hang`` (start a child, write both pids to ``pids.json``, never answer).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.programs import script

__all__ = ["FakeAgentCLI", "make_agent_cli"]

_SCRIPT = """#!{python}
import json, os, subprocess, sys, time
KIND, FOLDER = {kind!r}, {folder!r}
started = time.time()
prompt = sys.stdin.read()
try:
    with open(os.path.join(FOLDER, "behaviour.json")) as handle:
        do = json.load(handle)
except FileNotFoundError:
    do = {{}}
if do.get("hang"):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.path.join(FOLDER, "pids.json"), "w") as handle:
        json.dump([os.getpid(), child.pid], handle)
    time.sleep(600)
time.sleep(do.get("sleep", 0))
call = {{
    "argv": sys.argv[1:], "stdin": prompt, "cwd": os.getcwd(),
    "marker": os.environ.get("OM_OBSERVER_SESSION"), "start": started, "end": time.time(),
}}
with open(os.path.join(FOLDER, "calls.jsonl"), "a") as handle:
    handle.write(json.dumps(call) + "\\n")
if do.get("garbage"):
    print("Welcome! Please choose a theme:")
    sys.exit(do.get("exit", 0))
reply, error = do.get("reply", '{{"observations": []}}'), do.get("error")
usage = do.get("usage", {{}})
if KIND == "claude":
    model = "claude-haiku-5-5"
    out = {{
        "type": "result", "subtype": "error_during_execution" if error else "success",
        "is_error": bool(error), "duration_ms": 1200, "num_turns": 1,
        "result": error or reply, "session_id": "5f0c", "total_cost_usd": 0.0021,
        "usage": {{"input_tokens": usage.get("in", 12), "cache_creation_input_tokens": 0,
                   "cache_read_input_tokens": usage.get("cached", 0),
                   "output_tokens": usage.get("out", 34)}},
        "modelUsage": {{model: {{"inputTokens": usage.get("in", 12)}}}},
    }}
    print(json.dumps(out))
else:
    print(json.dumps({{"type": "thread.started", "thread_id": "0199a"}}))
    print(json.dumps({{"type": "turn.started"}}))
    if error:
        print(json.dumps({{"type": "turn.failed", "error": {{"message": error}}}}))
    else:
        item = {{"id": "item_0", "type": "reasoning", "text": "thinking"}}
        print(json.dumps({{"type": "item.completed", "item": item}}))
        item = {{"id": "item_1", "type": "agent_message", "text": reply}}
        print(json.dumps({{"type": "item.completed", "item": item}}))
        print(json.dumps({{"type": "turn.completed", "usage": {{
            "input_tokens": usage.get("in", 12), "cached_input_tokens": usage.get("cached", 0),
            "output_tokens": usage.get("out", 34)}}}}))
sys.exit(do.get("exit", 0))
"""


@dataclass
class FakeAgentCLI:
    """A fake agent CLI on PATH: what it was given, and what it will do next."""

    path: Path
    folder: Path

    def behave(self, **behaviour: Any) -> None:
        """What the next runs do (see the module docstring)."""
        (self.folder / "behaviour.json").write_text(json.dumps(behaviour))

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every completed run, oldest first."""
        log = self.folder / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def pids(self) -> list[int]:
        """A hung run's pid and its child's."""
        return [int(pid) for pid in json.loads((self.folder / "pids.json").read_text())]


def make_agent_cli(bin_dir: Path, folder: Path, kind: str) -> FakeAgentCLI:
    """Write the fake ``claude`` or ``codex`` into ``bin_dir``; its records go in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    text = _SCRIPT.format(python=sys.executable, kind=kind, folder=str(folder))
    return FakeAgentCLI(script(bin_dir / kind, text), folder)

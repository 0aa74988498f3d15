"""``om hook prompt``: the UserPromptSubmit hook of Claude Code and Codex, checkpoint and recall
in one process, with the payloads the agents send."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fakes.memories import ATLAS, KAFKA, topical_memory

from obsmem.integrations import queue
from obsmem.integrations.hooks import fast_main, prompt_reply
from obsmem.integrations.worker import _worker_lock
from obsmem.paths import agent_home

DEMO = Path(__file__).resolve().parents[2] / "obsmem" / "demo" / "data" / "transcripts"
CLAUDE_SESSION = "7d3f2c1e-5b8a-4e6f-9a2d-1c4b7e8f0a3d"


@pytest.fixture
def transcript() -> Path:
    shutil.copytree(DEMO / "claude", agent_home("claude"))
    return next(agent_home("claude").glob(f"projects/*/{CLAUDE_SESSION}.jsonl"))


def claude_payload(prompt: str, transcript: Path, session: str = CLAUDE_SESSION) -> dict[str, Any]:
    """What Claude Code writes on a UserPromptSubmit hook's stdin (hooks reference)."""
    return {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": "/home/dev/atlas",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def codex_payload(prompt: str, transcript: Path) -> dict[str, Any]:
    """What Codex writes (its user-prompt-submit.command.input schema)."""
    return {
        "session_id": "019e2b44-1c2d-7e3f-8a9b-0c1d2e3f4a5b",
        "turn_id": "turn-3",
        "transcript_path": str(transcript),
        "cwd": "/home/dev/atlas",
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "prompt": prompt,
    }


def _hook(
    agent: str, payload: dict[str, Any] | str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    with _worker_lock(None) as held:  # a worker "runs": the hook queues and starts none
        assert held
        status = fast_main(["prompt", "--agent", agent], io.StringIO(text))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_prompt_gets_its_memories_and_a_checkpoint(
    agent: str, transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topical_memory(ATLAS, KAFKA)
    make = claude_payload if agent == "claude" else codex_payload
    status, out, _ = _hook(
        agent, make("where were we with the atlas billing migration?", transcript), capsys
    )
    assert status == 0
    reply = json.loads(out)
    assert set(reply) == {"hookSpecificOutput"}
    specific = reply["hookSpecificOutput"]
    assert set(specific) == {"hookEventName", "additionalContext"}
    assert specific["hookEventName"] == "UserPromptSubmit"
    assert ATLAS in specific["additionalContext"] and KAFKA not in specific["additionalContext"]
    assert len(queue.pending()) == 1  # the checkpoint of the session's transcript


@pytest.mark.parametrize("prompt", ["ok", "go on", "thanks!", "/compact", "yes"])
def test_routine_prompts_print_nothing_but_still_checkpoint(
    prompt: str, transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topical_memory(ATLAS)
    status, out, _ = _hook("claude", claude_payload(prompt, transcript), capsys)
    assert (status, out) == (0, "")
    assert len(queue.pending()) == 1


def test_the_second_prompt_of_a_session_is_not_given_the_same_lines(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topical_memory(ATLAS)
    prompt = "atlas billing migration to postgres: what is left?"
    first = _hook("claude", claude_payload(prompt, transcript), capsys)[1]
    second = _hook("claude", claude_payload(prompt, transcript), capsys)[1]
    assert ATLAS in first and second == ""


@pytest.mark.parametrize(
    "payload", ["{broken", "[1, 2]", json.dumps({"prompt": 42}), json.dumps({"cwd": "/x"}), ""]
)
def test_bad_payloads_print_nothing_and_exit_zero(
    payload: str, capsys: pytest.CaptureFixture[str]
) -> None:
    topical_memory(ATLAS)
    assert _hook("claude", payload, capsys)[:2] == (0, "")


def test_a_failing_recall_prints_nothing_and_says_why_on_stderr(
    transcript: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    topical_memory(ATLAS)
    monkeypatch.setenv("OM_PROMPT_RECALL_TOKENS", "lots")
    status, out, err = _hook(
        "claude", claude_payload("atlas billing migration", transcript), capsys
    )
    assert (status, out) == (0, "")
    assert "OM_PROMPT_RECALL_TOKENS" in err and "Traceback" not in err


def test_a_damaged_index_prints_nothing_or_a_whole_reply(
    transcript: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = topical_memory(ATLAS)
    store.index_path.write_bytes(b"not a database" * 100)
    status, out, _ = _hook("claude", claude_payload("atlas billing migration", transcript), capsys)
    assert status == 0
    assert out == "" or json.loads(out)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_agents_without_a_prompt_hook_format_get_nothing(transcript: Path) -> None:
    topical_memory(ATLAS)
    assert prompt_reply("hermes", claude_payload("atlas billing migration", transcript)) == ""


def test_the_hook_loads_nothing_heavy(transcript: Path) -> None:
    """The hook runs on every prompt, before the model sees it: no command line framework, no
    memory parsers, no model. (Speed itself is measured in bench/prompt_recall.py.)"""
    import os
    import subprocess
    import sys
    import time

    topical_memory(ATLAS)
    time.sleep(2.1)  # past the index stamp's racy window, so the index reads as fresh
    heavy = ("click", "rich", "numpy", "fastembed", "obsmem.memory", "obsmem.index.sync")
    heavy += ("dataclasses",)  # with inspect, ast and dis: a third of a cold start
    payload = json.dumps(claude_payload("atlas billing migration", transcript))
    probe = (
        "import io, sys\n"
        "sys.argv = ['om', 'hook', 'prompt', '--agent', 'claude']\n"
        f"sys.stdin = io.StringIO({json.dumps(payload)})\n"
        "from obsmem.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', [m for m in {heavy!r} if m in sys.modules], file=sys.stderr)\n"
    )
    with _worker_lock(None):
        first = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=dict(os.environ)
        )
        again = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=dict(os.environ)
        )
    assert ATLAS in first.stdout  # it did search
    assert again.stderr.strip().endswith("LOADED []"), again.stderr

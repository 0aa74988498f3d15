"""The Claude Code plugin in this repository: its manifests against Claude Code's documented
fields, and every hook it declares run as Claude Code runs it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.memories import ATLAS, KAFKA, topical_memory

import obsmem
from obsmem.integrations import claude
from obsmem.integrations.base import InstallContext
from obsmem.integrations.jsonhooks import is_om_server
from obsmem.integrations.queue import pending
from obsmem.integrations.worker import _worker_lock
from obsmem.paths import agent_home

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
PLUGIN = ROOT / "plugins" / "claude-code"
DEMO = ROOT / "obsmem" / "demo" / "data" / "transcripts" / "claude" / "projects"
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

# Claude Code's documented fields (plugins reference, marketplace reference, hooks reference).
PLUGIN_KEYS = {
    "name", "version", "description", "author", "homepage", "repository", "license",
    "keywords", "commands", "agents", "skills", "hooks", "mcpServers", "outputStyles",
    "lspServers", "userConfig", "channels", "$schema",
}  # fmt: skip
MARKETPLACE_KEYS = {"name", "owner", "plugins", "metadata", "description", "version", "$schema"}
ENTRY_KEYS = PLUGIN_KEYS | {"source", "category", "tags", "strict"}
OWNER_KEYS = {"name", "email", "url"}
EVENTS = {
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit",
    "Notification", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "SessionStart",
    "SessionEnd",
}  # fmt: skip
HOOK_KEYS = {"type", "command", "timeout", "async"}
SERVER_KEYS = {"type", "command", "args", "env", "cwd"}
SKILL_KEYS = {
    "name", "description", "license", "compatibility", "metadata", "allowed-tools",
    "argument-hint", "disable-model-invocation", "user-invocable", "model", "when_to_use",
}  # fmt: skip


def _json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _front_matter(path: Path) -> tuple[dict[str, str], str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    head, _, body = text[4:].partition("\n---\n")
    fields = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        assert sep and key.strip() == key, f"not a one-line field: {line!r}"
        fields[key] = value.strip()
    return fields, body


def _install_specs() -> dict[str, tuple[str, int, str | None]]:
    """What om install --claude writes, for an om found on PATH and no moved paths."""
    ctx = InstallContext({"HOME": "/home/u"}, ("om",))
    return {s.event: (s.command, s.timeout, s.matcher) for s in claude._specs(ctx)}


def test_the_marketplace_lists_the_plugin_folder() -> None:
    data = _json(MARKETPLACE)
    assert set(data) <= MARKETPLACE_KEYS
    assert NAME.match(data["name"])
    assert isinstance(data["owner"], dict) and data["owner"]["name"]
    assert set(data["owner"]) <= OWNER_KEYS
    [entry] = data["plugins"]
    assert set(entry) <= ENTRY_KEYS
    assert entry["name"] == "om"
    assert entry["source"].startswith("./")
    folder = (ROOT / entry["source"]).resolve()
    assert folder == PLUGIN.resolve()
    assert _json(folder / ".claude-plugin" / "plugin.json")["name"] == entry["name"]
    assert entry["version"] == obsmem.__version__


def test_the_plugin_manifest_has_the_package_version() -> None:
    data = _json(PLUGIN / ".claude-plugin" / "plugin.json")
    assert set(data) <= PLUGIN_KEYS
    assert NAME.match(data["name"])
    assert data["version"] == obsmem.__version__
    assert data["description"]
    # Components sit where Claude Code looks by default: nothing to declare.
    assert not set(data) & {"hooks", "mcpServers", "skills"}
    assert sorted(p.name for p in (PLUGIN / ".claude-plugin").iterdir()) == ["plugin.json"]


def test_the_plugin_hooks_are_the_ones_om_install_writes() -> None:
    data = _json(PLUGIN / "hooks" / "hooks.json")
    assert set(data) <= {"description", "hooks"}
    declared: dict[str, tuple[str, int, str | None]] = {}
    for event, groups in data["hooks"].items():
        assert event in EVENTS
        [group] = groups
        assert set(group) <= {"matcher", "hooks"}
        [hook] = group["hooks"]
        assert set(hook) <= HOOK_KEYS and hook["type"] == "command"
        declared[event] = (hook["command"], hook["timeout"], group.get("matcher"))
    assert declared == _install_specs()


def test_the_plugin_mcp_server_is_om_mcp() -> None:
    data = _json(PLUGIN / ".mcp.json")
    assert set(data) == {"mcpServers"}
    server = data["mcpServers"]["om"]
    assert set(server) <= SERVER_KEYS
    assert is_om_server(server)
    wanted = claude._server(InstallContext({"HOME": "/home/u"}, ("om",)))
    assert {k: v for k, v in server.items()} == {k: v for k, v in wanted.items() if k != "env"}


def test_the_skill_names_real_tools_and_commands() -> None:
    path = PLUGIN / "skills" / "om-memory" / "SKILL.md"
    fields, body = _front_matter(path)
    assert set(fields) <= SKILL_KEYS
    assert fields["name"] == path.parent.name and NAME.match(fields["name"])
    assert len(fields["name"]) <= 64
    assert 0 < len(fields["description"]) <= 1024
    from obsmem.mcp.server import build_server

    tools = {tool.name for tool in asyncio.run(build_server().list_tools())}
    named = set(re.findall(r"\| `([a-z_]+)`", body))
    assert named and named <= tools
    om = Path(sys.executable).parent / "om"
    for command in sorted(set(re.findall(r"`om ([a-z]+)", body))):
        done = subprocess.run(
            [str(om), command, "--help"], capture_output=True, timeout=60, check=False
        )
        assert done.returncode == 0, (command, done.stderr)


PAYLOADS: dict[str, dict[str, Any]] = {
    "SessionStart": {"source": "startup"},
    "SessionEnd": {"reason": "prompt_input_exit"},
    "UserPromptSubmit": {"prompt": "where were we with the atlas migration?"},
    "PreCompact": {"trigger": "manual", "custom_instructions": ""},
}


@pytest.fixture
def om_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test venv's ``om`` first on PATH, as the plugin expects the installed one."""
    om = Path(sys.executable).parent / "om"
    assert om.is_file()
    monkeypatch.setenv("PATH", f"{om.parent}{os.pathsep}{os.environ['PATH']}")
    return om


def _run(command: str, payload: dict[str, Any], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def test_every_plugin_hook_runs_as_claude_code_runs_it(om_on_path: Path, tmp_path: Path) -> None:
    projects = agent_home("claude") / "projects"
    shutil.copytree(DEMO, projects)
    transcript = next(projects.glob("*/*.jsonl"))
    remembered = subprocess.run(
        [str(om_on_path), "remember", "The atlas service deploys with blue-green releases."],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert remembered.returncode == 0, remembered.stderr
    hooks = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == set(PAYLOADS)
    common = {"session_id": transcript.stem, "transcript_path": str(transcript), "cwd": "/w"}
    # A worker is "running" (this test holds its lock): the hooks queue and start none.
    with _worker_lock(None) as got:
        assert got
        for event, extra in PAYLOADS.items():
            command = hooks[event][0]["hooks"][0]["command"]
            payload = {**common, "hook_event_name": event, **extra}
            done = _run(command, payload, tmp_path)
            assert done.returncode == 0, (event, done.stderr)
            if event == "SessionStart":
                reply = json.loads(done.stdout)["hookSpecificOutput"]
                assert reply["hookEventName"] == "SessionStart"
                assert "blue-green" in reply["additionalContext"]
            else:
                # The prompt's one matching memory came with the startup context: nothing more.
                assert done.stdout == "", event
        jobs = pending()
    assert jobs  # the session end (and a checkpoint) queued the transcript for the worker


def test_the_plugin_prompt_hook_adds_relevant_memories(om_on_path: Path, tmp_path: Path) -> None:
    topical_memory(ATLAS, KAFKA)  # indexed, no startup context prepared: nothing given yet
    projects = agent_home("claude") / "projects"
    shutil.copytree(DEMO, projects)
    transcript = next(projects.glob("*/*.jsonl"))
    command = _json(PLUGIN / "hooks" / "hooks.json")["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    payload = {
        "session_id": transcript.stem,
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "how did the atlas billing migration switch over?",
    }
    with _worker_lock(None) as got:
        assert got
        done = _run(command["command"], payload, tmp_path)
        assert done.returncode == 0, done.stderr
        reply = json.loads(done.stdout)["hookSpecificOutput"]
        assert reply["hookEventName"] == "UserPromptSubmit"
        assert ATLAS in reply["additionalContext"] and KAFKA not in reply["additionalContext"]
        assert len(pending()) == 1  # and the prompt's checkpoint was queued
        routine = _run(command["command"], {**payload, "prompt": "ok, go on"}, tmp_path)
    assert (routine.returncode, routine.stdout) == (0, "")

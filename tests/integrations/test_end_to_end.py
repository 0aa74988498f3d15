"""As a new user would: `om install --all --non-interactive --scheduler cron` on a machine with
Claude Code and Codex configured, then the hooks and MCP servers as the agents would run them,
then `om uninstall`, which must give back every file byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from fakes.programs import FakeCrontab
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from obsmem.integrations.queue import pending
from obsmem.integrations.worker import worker_running
from obsmem.paths import agent_home

DEMO = Path(__file__).resolve().parents[2] / "obsmem" / "demo" / "data" / "transcripts"
CLAUDE_SESSION = "7d3f2c1e-5b8a-4e6f-9a2d-1c4b7e8f0a3d"
OM = Path(sys.executable).parent / "om"

CLAUDE_SETTINGS = """{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "SessionStart": [
      {"matcher": "startup", "hooks": [{"type": "command", "command": "direnv export json"}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}
    ]
  },
  "model": "opus"
}
"""
CLAUDE_JSON = '{"numStartups": 12, "mcpServers": {"github": {"command": "gh-mcp"}}}\n'
CODEX_CONFIG = """# my codex settings
model = "gpt-5"   # the default

[features]
web_search = true

[mcp_servers.github]
command = "gh-mcp"
args = ["--stdio"]
"""
CODEX_AGENTS = "# House rules\n\nAlways run the tests."
CRONTAB = "MAILTO=me\n0 9 * * 1 /usr/bin/backup --weekly\n"


def _files() -> dict[str, Path]:
    claude, codex = agent_home("claude"), agent_home("codex")
    return {
        "settings": claude / "settings.json",
        "claude.json": claude / ".claude.json",
        "config.toml": codex / "config.toml",
        "AGENTS.md": codex / "AGENTS.md",
        "hooks.json": codex / "hooks.json",
    }


def _snapshot() -> dict[str, bytes | None]:
    return {k: p.read_bytes() if p.exists() else None for k, p in _files().items()}


@pytest.fixture
def machine(fake_crontab: FakeCrontab) -> FakeCrontab:
    """Claude Code and Codex configured with other tools' entries, a crontab, two sessions."""
    files = _files()
    files["settings"].parent.mkdir(parents=True)
    files["config.toml"].parent.mkdir(parents=True)
    files["settings"].write_text(CLAUDE_SETTINGS)
    files["claude.json"].write_text(CLAUDE_JSON)
    files["config.toml"].write_text(CODEX_CONFIG)
    files["AGENTS.md"].write_text(CODEX_AGENTS)
    shutil.copytree(DEMO / "claude" / "projects", files["settings"].parent / "projects")
    shutil.copytree(DEMO / "codex" / "sessions", files["config.toml"].parent / "sessions")
    fake_crontab.write(CRONTAB)
    return fake_crontab


def _om(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(OM), *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _shell(command: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, shell=True, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def _commands(hooks: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for group in hooks.get(event, []) for h in group["hooks"]]


def _ours(commands: list[str]) -> str:
    found = [c for c in commands if f" {OM} " in f" {c} "]
    assert len(found) == 1, commands
    return found[0]


def _wait_for_worker() -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (pending() or worker_running()):
        time.sleep(0.1)
    assert not pending()


def _mcp_search(command: str, args: list[str], query: str) -> dict[str, Any]:
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))

    async def main() -> Any:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("search", {"query": query})

    result = anyio.run(main)
    assert not result.isError, result.content
    return dict(result.structuredContent)


def test_install_use_and_uninstall_as_a_new_user(machine: FakeCrontab) -> None:
    before = _snapshot()
    done = _om("install", "--all", "--non-interactive", "--scheduler", "cron")
    assert done.returncode == 0, done.stderr
    assert _om("install", "--all", "--non-interactive", "--scheduler", "cron").stdout.startswith(
        "Nothing to change"
    )

    # Claude Code: memory at start, capture at end, search through MCP.
    settings = json.loads(_files()["settings"].read_text())
    assert "direnv export json" in _commands(settings["hooks"], "SessionStart")
    assert settings["permissions"] == {"allow": ["Bash(npm test)"]}
    transcript = next(agent_home("claude").glob(f"projects/*/{CLAUDE_SESSION}.jsonl"))
    payload = json.dumps(
        {"session_id": CLAUDE_SESSION, "transcript_path": str(transcript), "cwd": "/home/dev/atlas"}
    )
    end = _shell(_ours(_commands(settings["hooks"], "SessionEnd")), payload)
    assert (end.returncode, end.stdout) == (0, "")
    _wait_for_worker()
    observations = Path(os.environ["OM_HOME"]) / "observations.md"
    assert observations.exists() and observations.read_text().count("\n- ") >= 1
    start = _shell(_ours(_commands(settings["hooks"], "SessionStart")), payload)
    reply = json.loads(start.stdout)
    assert reply["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert reply["hookSpecificOutput"]["additionalContext"].strip()
    server = json.loads(_files()["claude.json"].read_text())["mcpServers"]["om"]
    assert json.loads(_files()["claude.json"].read_text())["mcpServers"]["github"]
    first_line = next(
        line for line in observations.read_text().splitlines() if line.startswith("- ")
    )
    word = max(first_line.split(), key=len).strip(".,:;()`'\"")
    hits = _mcp_search(server["command"], list(server.get("args", [])), word)
    assert hits["results"], word

    # Codex: flag, hooks, fallback block and MCP server; other settings untouched.
    config = tomllib.loads(_files()["config.toml"].read_text())
    assert config["features"]["web_search"] is True and config["features"]["hooks"] is True
    assert config["mcp_servers"]["github"] == {"command": "gh-mcp", "args": ["--stdio"]}
    codex_server = config["mcp_servers"]["om"]
    assert _mcp_search(codex_server["command"], codex_server.get("args", []), word)["results"]
    assert "# my codex settings" in _files()["config.toml"].read_text()
    codex_hooks = json.loads(_files()["hooks.json"].read_text())["hooks"]
    codex_start = _shell(_ours(_commands(codex_hooks, "SessionStart")), "{}")
    assert json.loads(codex_start.stdout)["hookSpecificOutput"]["additionalContext"].strip()
    stop = _shell(_ours(_commands(codex_hooks, "Stop")), json.dumps({"session_id": "none"}))
    assert (stop.returncode, stop.stdout) == (0, "")
    assert "om search" in _files()["AGENTS.md"].read_text()

    # The scheduler: om's block beside the user's lines.
    table = machine.read() or ""
    assert table.startswith(CRONTAB) and "observe --source all" in table and " reflect" in table

    status = _om("status")
    assert "claude" in status.stdout and "codex" in status.stdout

    done = _om("uninstall", "--non-interactive")
    assert done.returncode == 0, done.stderr
    assert _snapshot() == before
    assert machine.read() == CRONTAB

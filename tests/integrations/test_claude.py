"""Claude Code: hooks in settings.json, the MCP server in .claude.json, and back again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from obsmem.errors import IntegrationError
from obsmem.integrations import claude
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.edits import apply_edits, render_diff
from obsmem.integrations.jsonhooks import is_om_command

# What a user's settings.json looks like after a while: permissions, env, another tool's hooks on
# two of om's events (and on one om does not use), written by Claude Code itself (2 spaces).
SETTINGS = """{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": [
      "Bash(npm run test:*)",
      "Read(~/.zshrc)"
    ],
    "deny": [
      "Read(./.env)"
    ]
  },
  "env": {
    "BASH_DEFAULT_TIMEOUT_MS": "120000"
  },
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "$HOME/.claude/hooks/git-status.sh",
            "timeout": 30
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "python3 ~/.claude/hooks/prompt_guard.py"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [{"type": "command", "command": "afplay /System/Library/Sounds/Glass.aiff"}]
      }
    ]
  },
  "model": "opus",
  "statusLine": {
    "type": "command",
    "command": "~/.claude/statusline.sh"
  }
}
"""

# .claude.json: Claude Code's own state, other user-scope servers, per-project servers.
DOT_CLAUDE = """{
  "numStartups": 42,
  "installMethod": "native",
  "autoUpdates": true,
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-github"
      ],
      "env": {
        "GITHUB_TOKEN": "ghp_example"
      }
    }
  },
  "projects": {
    "/home/dev/atlas": {
      "allowedTools": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true
    }
  },
  "userID": "3f9a0c"
}"""

Build = Callable[..., InstallContext]


@pytest.fixture
def claude_home() -> Path:
    home = Path(os.environ["CLAUDE_CONFIG_DIR"])
    home.mkdir()
    (home / "settings.json").write_text(SETTINGS)
    (home / ".claude.json").write_text(DOT_CLAUDE)
    return home


def install(ctx: InstallContext) -> Plan:
    plan = claude.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def test_install_merges_and_uninstall_restores_the_bytes(
    claude_home: Path, install_context: Build
) -> None:
    ctx = install_context()
    assert claude.detect(ctx)
    plan = install(ctx)
    assert plan.changed

    settings = json.loads((claude_home / "settings.json").read_text())
    before = json.loads(SETTINGS)
    for key in ("$schema", "permissions", "env", "model", "statusLine"):
        assert settings[key] == before[key]
    hooks = settings["hooks"]
    assert hooks["Stop"] == before["hooks"]["Stop"]
    assert hooks["SessionStart"][0] == before["hooks"]["SessionStart"][0]
    assert hooks["UserPromptSubmit"][0] == before["hooks"]["UserPromptSubmit"][0]
    expected = {
        "SessionStart": (ctx.hook_command("context", "--for", "claude"), 15),
        "SessionEnd": (ctx.hook_command("hook", "session-end", "--agent", "claude"), 15),
        "UserPromptSubmit": (ctx.hook_command("hook", "prompt", "--agent", "claude"), 10),
        "PreCompact": (ctx.hook_command("hook", "checkpoint", "--agent", "claude"), 10),
    }
    for event, (command, timeout) in expected.items():
        ours = [g for g in hooks[event] if g not in before["hooks"].get(event, [])]
        assert ours == [
            {"matcher": "", "hooks": [{"type": "command", "command": command, "timeout": timeout}]}
        ]
    assert list(settings) == list(before)  # key order kept

    state = json.loads((claude_home / ".claude.json").read_text())
    assert state["mcpServers"]["om"] == {
        "type": "stdio",
        "command": ctx.om[0],
        "args": ["mcp"],
        "env": ctx.carried,
    }
    assert state["mcpServers"]["github"] == json.loads(DOT_CLAUDE)["mcpServers"]["github"]
    assert {k: v for k, v in state.items() if k != "mcpServers"} == {
        k: v for k, v in json.loads(DOT_CLAUDE).items() if k != "mcpServers"
    }

    again = claude.plan_install(install_context(plan.record))
    assert not again.changed
    assert again.record == plan.record

    removal = claude.plan_uninstall(install_context(plan.record))
    assert removal.record is None
    apply_edits(removal.edits, ctx.environ)
    assert (claude_home / "settings.json").read_text() == SETTINGS
    assert (claude_home / ".claude.json").read_text() == DOT_CLAUDE


def test_other_entries_keep_their_bytes(claude_home: Path, install_context: Build) -> None:
    install(install_context())
    text = (claude_home / "settings.json").read_text()
    # Everything before the first hook om appends is untouched, byte for byte.
    head = SETTINGS[: SETTINGS.index('\n    ],\n    "UserPromptSubmit"')]
    assert text.startswith(head)
    assert (
        '"hooks": [{"type": "command", "command": "afplay /System/Library/Sounds/Glass.aiff"}]'
        in text
    )
    state = (claude_home / ".claude.json").read_text()
    assert state.startswith(DOT_CLAUDE[: DOT_CLAUDE.index('\n    }\n  },\n  "projects"')])


def test_a_changed_om_path_updates_the_entries_in_place(
    claude_home: Path, install_context: Build, tmp_path: Path
) -> None:
    first = install(install_context())
    moved = tmp_path / "new place" / "om"
    moved.parent.mkdir()
    moved.write_text("#!/bin/sh\n")
    moved.chmod(0o755)
    ctx = InstallContext(dict(os.environ), (str(moved),), first.record)
    second = claude.plan_install(ctx)
    diff = render_diff(second.edits)
    wanted = ctx.hook_command("context", "--for", "claude")
    assert f"'{moved}' context --for claude" in wanted
    assert f'+            "command": {json.dumps(wanted)},' in diff
    assert f'-      "command": "{install_context().om[0]}",' in diff
    apply_edits(second.edits, ctx.environ)

    hooks = json.loads((claude_home / "settings.json").read_text())["hooks"]
    commands = [h["command"] for e in claude.EVENTS for g in hooks[e] for h in g["hooks"]]
    assert [c for c in commands if "context --for claude" in c] == [wanted]
    assert sum("hook checkpoint" in c for c in commands) == 1  # PreCompact, not duplicated
    assert sum("hook prompt" in c for c in commands) == 1
    server = json.loads((claude_home / ".claude.json").read_text())["mcpServers"]["om"]
    assert server["command"] == str(moved)
    assert not claude.plan_install(
        InstallContext(dict(os.environ), (str(moved),), second.record)
    ).changed

    apply_edits(claude.plan_uninstall(ctx).edits, ctx.environ)
    assert (claude_home / "settings.json").read_text() == SETTINGS
    assert (claude_home / ".claude.json").read_text() == DOT_CLAUDE


def test_an_older_prompt_hook_is_upgraded_in_place(
    claude_home: Path, install_context: Build, fake_om: Path
) -> None:
    """Installs before per-prompt recall wired UserPromptSubmit to ``om hook checkpoint``: doctor
    says so, and a new install replaces that command (one om hook per event, never two)."""
    first = install(install_context())
    settings = claude_home / "settings.json"
    ctx = install_context(first.record)
    new = ctx.hook_command("hook", "prompt", "--agent", "claude")
    old = ctx.hook_command("hook", "checkpoint", "--agent", "claude")
    settings.write_text(settings.read_text().replace(json.dumps(new), json.dumps(old)))
    verdicts = {c.name: (c.verdict, c.detail, c.fix) for c in claude.checks(ctx)}
    verdict, detail, fix = verdicts["claude: hook commands"]
    assert verdict == "warn" and "UserPromptSubmit" in detail and "older" in detail
    assert fix == "run om install --claude"

    second = install(ctx)
    hooks = json.loads(settings.read_text())["hooks"]
    ours = [
        h["command"]
        for g in hooks["UserPromptSubmit"]
        for h in g["hooks"]
        if is_om_command(h["command"])
    ]
    assert ours == [new]
    assert {c.name: c.verdict for c in claude.checks(install_context(second.record))}[
        "claude: hook commands"
    ] == "ok"
    apply_edits(claude.plan_uninstall(ctx).edits, ctx.environ)
    assert settings.read_text() == SETTINGS


def test_dry_run_diff_shows_the_change_and_writes_nothing(
    claude_home: Path, install_context: Build
) -> None:
    ctx = install_context()
    plan = claude.plan_install(ctx)
    diff = render_diff(plan.edits)
    settings = str(claude_home / "settings.json")
    assert f"--- {settings}\n+++ {settings}\n" in diff
    assert f'+            "command": "{ctx.hook_command("context", "--for", "claude")}",' in diff
    assert '+    "PreCompact": [' in diff
    assert f'+    "om": {{\n+      "type": "stdio",\n+      "command": "{ctx.om[0]}",' in diff
    assert '\n     "Stop": [\n' in diff  # context lines around the change
    assert (claude_home / "settings.json").read_text() == SETTINGS
    assert (claude_home / ".claude.json").read_text() == DOT_CLAUDE


def test_missing_files_are_created_private_and_removed_again(install_context: Build) -> None:
    home = Path(os.environ["CLAUDE_CONFIG_DIR"])
    ctx = install_context()
    assert not claude.detect(ctx)
    plan = install(ctx)
    assert (home.stat().st_mode & 0o777) == 0o700
    for name in ("settings.json", ".claude.json"):
        assert ((home / name).stat().st_mode & 0o777) == 0o600
    settings = json.loads((home / "settings.json").read_text())
    assert list(settings["hooks"]) == list(claude.EVENTS)
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["om"]["args"] == ["mcp"]
    assert (
        (home / "settings.json").read_text().startswith('{\n  "hooks": {\n    "SessionStart": [\n')
    )
    apply_edits(claude.plan_uninstall(install_context(plan.record)).edits, ctx.environ)
    assert not (home / "settings.json").exists()
    assert not (home / ".claude.json").exists()


def test_claude_json_lives_in_home_unless_claude_config_dir_is_set(tmp_path: Path) -> None:
    assert claude.mcp_config_path({"HOME": str(tmp_path)}) == tmp_path / ".claude.json"
    assert claude.settings_path({"HOME": str(tmp_path)}).name == "settings.json"
    custom = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert claude.mcp_config_path(custom) == tmp_path / "cfg" / ".claude.json"
    assert claude.settings_path(custom) == tmp_path / "cfg" / "settings.json"


def test_tab_indented_settings_get_tab_indented_hooks(
    claude_home: Path, install_context: Build
) -> None:
    text = json.dumps(json.loads(SETTINGS), indent="\t") + "\n"
    (claude_home / "settings.json").write_text(text)
    plan = install(install_context())
    after = (claude_home / "settings.json").read_text()
    assert after == json.dumps(json.loads(after), indent="\t") + "\n"
    apply_edits(claude.plan_uninstall(install_context(plan.record)).edits, os.environ)
    assert (claude_home / "settings.json").read_text() == text


def test_invalid_settings_stop_the_install_with_a_hint(
    claude_home: Path, install_context: Build
) -> None:
    (claude_home / "settings.json").write_text('{\n  "model": "opus",\n}\n')
    with pytest.raises(IntegrationError) as caught:
        claude.plan_install(install_context())
    message = str(caught.value)
    assert "settings.json is not valid JSON" in message and "om changed nothing" in message
    assert "\n" not in message
    assert (claude_home / ".claude.json").read_text() == DOT_CLAUDE


def test_someone_elses_om_server_is_replaced_and_put_back(
    claude_home: Path, install_context: Build
) -> None:
    theirs = DOT_CLAUDE.replace(
        '"mcpServers": {\n',
        '"mcpServers": {\n    "om": {"command": "/usr/bin/other-om-server"},\n',
    )
    (claude_home / ".claude.json").write_text(theirs)
    plan = install(install_context())
    assert any("another MCP server named om" in note for note in plan.notes)
    assert plan.record is not None
    assert plan.record["mcp"]["previous"] == {"command": "/usr/bin/other-om-server"}
    again = claude.plan_install(install_context(plan.record))
    assert not again.changed and again.record == plan.record
    apply_edits(claude.plan_uninstall(install_context(plan.record)).edits, os.environ)
    restored = json.loads((claude_home / ".claude.json").read_text())
    assert restored == json.loads(theirs)


def test_an_extra_field_the_user_added_to_our_server_stays(
    claude_home: Path, install_context: Build
) -> None:
    plan = install(install_context())
    path = claude_home / ".claude.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["om"]["env"] = {"OM_HOME": "/data/memory", "DEBUG": "1"}
    data["mcpServers"]["om"]["command"] = "/old/om"
    path.write_text(json.dumps(data, indent=2))
    apply_edits(claude.plan_install(install_context(plan.record)).edits, os.environ)
    server = json.loads(path.read_text())["mcpServers"]["om"]
    # The user's variable stays; OM_HOME follows the memory this install is for.
    assert server["env"] == {"DEBUG": "1", **install_context().carried}
    assert server["command"] == install_context().om[0]


def test_checks_follow_the_install(
    claude_home: Path, install_context: Build, fake_om: Path
) -> None:
    ctx = install_context()
    before = {c.name: c.verdict for c in claude.checks(ctx)}
    assert before == {"claude: wiring": "warn", "claude: hooks": "fail", "claude: mcp": "fail"}
    plan = install(ctx)
    ctx = install_context(plan.record)
    after = {c.name: c.verdict for c in claude.checks(ctx)}
    assert after == {
        "claude: wiring": "ok",
        "claude: hooks": "ok",
        "claude: hook commands": "ok",
        "claude: mcp": "ok",
    }
    fake_om.unlink()
    gone = {c.name: (c.verdict, c.fix) for c in claude.checks(ctx)}
    assert gone["claude: hook commands"] == ("fail", "run om install --claude")
    assert gone["claude: mcp"][0] == "fail"


def test_the_installed_session_start_command_runs_as_claude_code_runs_it(
    claude_home: Path, tmp_path: Path
) -> None:
    """The command line written into settings.json, run by sh with the hook's JSON on stdin."""
    env = dict(os.environ, OM_HOME=str(tmp_path / "memory"))
    ctx = InstallContext(env, (sys.executable, "-m", "obsmem"))
    apply_edits(claude.plan_install(ctx).edits, env)
    hooks = json.loads((claude_home / "settings.json").read_text())["hooks"]
    command = hooks["SessionStart"][1]["hooks"][0]["command"]
    payload = {
        "session_id": "abc",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(tmp_path),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert isinstance(output["hookSpecificOutput"]["additionalContext"], str)


def test_disable_all_hooks_is_left_alone_with_a_warning(
    claude_home: Path, install_context: Build
) -> None:
    (claude_home / "settings.json").write_text('{"disableAllHooks": true}\n')
    plan = install(install_context())
    assert len(plan.warnings) == 1 and "disableAllHooks" in plan.warnings[0]
    assert json.loads((claude_home / "settings.json").read_text())["disableAllHooks"] is True

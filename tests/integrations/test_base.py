"""A custom memory place reaches every hook, MCP entry and job; om's other settings do not."""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.programs import FakeCrontab

from obsmem.integrations import claude, codex, openclaw, scheduler
from obsmem.integrations.base import InstallContext, path_environment
from obsmem.integrations.edits import apply_edits
from obsmem.integrations.jsonhooks import is_om_command

Build = Callable[..., InstallContext]


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``OM_HOME=~/Documents/notes``-style memory, and nothing else moved."""
    for name in ("OM_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "Documents" / "notes"
    monkeypatch.setenv("OM_HOME", str(home))
    return home


def _assignments(command: str) -> dict[str, str]:
    words = shlex.split(command)
    assert words[0] == "env", command
    return dict(w.split("=", 1) for w in words[1:] if "=" in w and not w.startswith("/"))


def test_path_environment_carries_only_what_moves_om(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = {"HOME": os.environ["HOME"]}
    assert path_environment(env) == {}
    moved = {**env, "XDG_DATA_HOME": str(tmp_path / "data"), "OM_LLM_PROVIDER": "anthropic"}
    assert path_environment(moved) == {"OM_HOME": str(tmp_path / "data" / "observational-memory")}
    monkeypatch.chdir(tmp_path)
    assert path_environment({**env, "OM_STATE_DIR": "state"}) == {
        "OM_STATE_DIR": str(tmp_path / "state")
    }


def test_default_paths_write_no_variable(default_paths: None, install_context: Build) -> None:
    ctx = install_context()
    assert ctx.carried == {}
    assert ctx.hook_command("context") == ctx.command("context")
    plan = codex.plan_install(ctx)
    assert "env" not in plan.edits[0].after  # type: ignore[operator]


def test_claude_hooks_and_mcp_entry_carry_om_home(notes: Path, install_context: Build) -> None:
    ctx = install_context()
    plan = claude.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    settings = json.loads(claude.settings_path(os.environ).read_text())
    hooks = settings["hooks"]
    commands = [h["command"] for e in claude.EVENTS for g in hooks[e] for h in g["hooks"]]
    assert len(commands) == 4
    for command in commands:
        assert _assignments(command) == {"OM_HOME": str(notes)}
        assert is_om_command(command)  # uninstall still knows them
    server = json.loads(claude.mcp_config_path(os.environ).read_text())["mcpServers"]["om"]
    assert server["env"] == {"OM_HOME": str(notes)}
    apply_edits(claude.plan_uninstall(install_context(plan.record)).edits, ctx.environ)
    assert not claude.settings_path(os.environ).exists()
    assert not claude.mcp_config_path(os.environ).exists()


def test_codex_hooks_mcp_entry_and_agents_md_carry_om_home(
    notes: Path, install_context: Build
) -> None:
    home = Path(os.environ["CODEX_HOME"])
    home.mkdir()
    (home / "config.toml").write_text('model = "o3"\n')
    ctx = install_context()
    plan = codex.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["mcp_servers"]["om"]["env"] == {"OM_HOME": str(notes)}
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    for event in ("SessionStart", "Stop"):
        assert _assignments(hooks[event][0]["hooks"][0]["command"]) == {"OM_HOME": str(notes)}
    assert f"env OM_HOME={notes} " in (home / "AGENTS.md").read_text()
    # Installed again with the memory moved: the entry follows, no second one appears.
    other = notes.parent / "other"
    env = {**ctx.environ, "OM_HOME": str(other)}
    again = codex.plan_install(InstallContext(env, ctx.om, plan.record))
    apply_edits(again.edits, env)
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["mcp_servers"]["om"]["env"] == {"OM_HOME": str(other)}
    apply_edits(codex.plan_uninstall(InstallContext(env, ctx.om, plan.record)).edits, env)
    assert (home / "config.toml").read_text() == 'model = "o3"\n'
    assert not (home / "hooks.json").exists()


def test_openclaw_block_says_which_memory_to_search(notes: Path, install_context: Build) -> None:
    workspace = Path(os.environ["OPENCLAW_HOME"]) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("# Mine\n")
    plan = openclaw.plan_install(install_context())
    assert f"`env OM_HOME={notes} om search" in (plan.edits[0].after or "")


def test_cron_jobs_carry_paths_not_settings(
    notes: Path, fake_crontab: FakeCrontab, install_context: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("OM_ARCHIVE_AFTER_DAYS", "3")
    plan = scheduler.plan_install(install_context(scheduler="cron"))
    apply_edits(plan.edits, os.environ)
    table = fake_crontab.read() or ""
    assert f"OM_HOME={notes} " in table
    assert "OM_LLM_PROVIDER" not in table and "OM_ARCHIVE_AFTER_DAYS" not in table

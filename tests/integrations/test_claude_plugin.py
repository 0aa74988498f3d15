"""om install --claude beside om's plugin: it adds no second copy, and om doctor says which way
om is wired in."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from obsmem.integrations import claude
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.checks import integration_checks
from obsmem.integrations.claude_plugin import plugin_state, wiring_check
from obsmem.integrations.edits import apply_edits

Build = Callable[..., InstallContext]
KEY = "om@om"


@pytest.fixture
def claude_home() -> Path:
    home = Path(os.environ["CLAUDE_CONFIG_DIR"])
    home.mkdir()
    (home / "settings.json").write_text('{\n  "model": "opus"\n}\n')
    (home / ".claude.json").write_text('{"numStartups": 3}\n')
    return home


def _enable(home: Path, value: bool = True, *, installed: bool = True) -> None:
    settings = json.loads((home / "settings.json").read_text())
    settings["enabledPlugins"] = {"github@claude-plugins-official": True, KEY: value}
    (home / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    if installed:
        folder = home / "plugins"
        folder.mkdir(exist_ok=True)
        record = {"scope": "user", "installPath": str(folder / "cache" / "om" / "om" / "0.1.0")}
        data = {"version": 2, "plugins": {KEY: [record]}}
        (folder / "installed_plugins.json").write_text(json.dumps(data))


def install(ctx: InstallContext) -> Plan:
    plan = claude.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def _om_hooks(home: Path) -> list[str]:
    hooks = json.loads((home / "settings.json").read_text()).get("hooks", {})
    return [event for event, groups in hooks.items() if groups]


def test_plugin_state_reads_enabled_plugins_and_installed_plugins(claude_home: Path) -> None:
    env = dict(os.environ)
    assert plugin_state(env) is None
    _enable(claude_home, installed=False)
    assert plugin_state(env) == claude_plugin_state(enabled=True, installed=False)
    _enable(claude_home, value=False)
    assert plugin_state(env) == claude_plugin_state(enabled=False, installed=True)
    # Another marketplace's plugin of another name is not om's.
    (claude_home / "settings.json").write_text('{"enabledPlugins": {"omx@m": true}}')
    (claude_home / "plugins" / "installed_plugins.json").write_text('{"plugins": {}}')
    assert plugin_state(env) is None


def claude_plugin_state(*, enabled: bool, installed: bool) -> object:
    from obsmem.integrations.claude_plugin import PluginState

    return PluginState(KEY, enabled=enabled, installed=installed)


def test_install_adds_no_hooks_or_server_while_the_plugin_is_enabled(
    claude_home: Path, install_context: Build
) -> None:
    _enable(claude_home)
    files = (claude_home / "settings.json", claude_home / ".claude.json")
    before = {path: path.read_text() for path in files}
    plan = claude.plan_install(install_context())
    assert not plan.changed
    assert any(KEY in note and "adds neither" in note for note in plan.notes)
    assert plan.record == {"plugin": KEY}
    apply_edits(plan.edits, dict(os.environ))
    assert {path: path.read_text() for path in files} == before


def test_install_takes_out_its_own_copies_once_the_plugin_is_enabled(
    claude_home: Path, install_context: Build
) -> None:
    first = install(install_context())
    assert _om_hooks(claude_home) == list(claude.EVENTS)
    assert "om" in json.loads((claude_home / ".claude.json").read_text())["mcpServers"]
    _enable(claude_home)
    assert wiring_check(dict(os.environ)).verdict == "warn"  # both: every event twice

    plan = install(install_context(first.record))
    assert any("removes the copies" in note for note in plan.notes)
    assert _om_hooks(claude_home) == []
    assert "mcpServers" not in json.loads((claude_home / ".claude.json").read_text())
    assert not claude.plan_install(install_context(plan.record)).changed
    check = wiring_check(dict(os.environ))
    assert (check.verdict, KEY in check.detail) == ("ok", True)


def test_a_disabled_plugin_does_not_stop_the_install(
    claude_home: Path, install_context: Build
) -> None:
    _enable(claude_home, value=False)
    install(install_context())
    assert _om_hooks(claude_home) == list(claude.EVENTS)
    check = wiring_check(dict(os.environ))
    assert check.verdict == "ok" and "installed but not enabled" in check.detail


def test_doctor_reports_the_plugin_without_an_install(
    claude_home: Path, fake_om: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _enable(claude_home)
    checks = {c.name: c for c in integration_checks()}
    assert checks["claude: wiring"].verdict == "ok"
    assert "integrations" not in checks  # not "none installed": the plugin is
    fake_om.unlink()  # the plugin runs `om` from PATH
    monkeypatch.setenv("PATH", str(fake_om.parent))
    assert {c.name: c for c in integration_checks()}["claude: wiring"].verdict == "fail"


def test_doctor_without_plugin_or_hooks_says_om_is_not_wired_in(claude_home: Path) -> None:
    check = wiring_check(dict(os.environ))
    assert check.verdict == "warn" and "not wired" in check.detail

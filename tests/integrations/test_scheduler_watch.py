"""``om install --scheduler watch``: the watcher as a systemd user service or a launchd agent."""

from __future__ import annotations

import importlib.util
import os
import plistlib
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.programs import FakeTool

from obsmem.errors import IntegrationError
from obsmem.integrations import scheduler
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.checks import installed_summary
from obsmem.integrations.edits import apply_edits

Ctx = Callable[..., InstallContext]


def install(ctx: InstallContext) -> Plan:
    plan = scheduler.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def uninstall(ctx: InstallContext) -> Plan:
    plan = scheduler.plan_uninstall(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def _units(ctx: InstallContext) -> Path:
    return Path(ctx.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"


@pytest.fixture
def linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")


def test_systemd_watch_service_replaces_the_observe_timers(
    linux: None, fake_systemctl: FakeTool, install_context: Ctx, fake_om: Path
) -> None:
    ctx = install_context(scheduler="watch")
    plan = install(ctx)
    assert plan.record is not None
    assert plan.record["kind"] == "systemd" and plan.record["capture"] == "watch"
    assert plan.record["services"] == ["om-watch"] and plan.record["units"] == ["om-reflect"]
    units = _units(ctx)
    assert sorted(p.name for p in units.iterdir()) == [
        "om-reflect.service",
        "om-reflect.timer",
        "om-watch.service",
    ]
    service = (units / "om-watch.service").read_text()
    fields = dict(
        line.split("=", 1) for line in service.splitlines() if "=" in line and "[" not in line
    )
    assert fields["Type"] == "simple"
    assert fields["Restart"] == "on-failure"
    assert fields["WantedBy"] == "default.target"
    assert f"exec {fake_om} observe --watch >> " in fields["ExecStart"]
    assert fields["ExecStart"].rstrip('"').endswith("watch.log 2>&1")
    assert f'Environment="OM_HOME={os.environ["OM_HOME"]}"' in service
    assert "[Timer]" not in service and "OnCalendar" not in service
    assert ["--user", "enable", "om-watch.service"] in fake_systemctl.calls
    assert ["--user", "restart", "om-watch.service"] in fake_systemctl.calls
    assert any("om observe --watch" in note for note in plan.notes)

    fake_systemctl.forget()
    again = install(install_context(record=plan.record))  # auto keeps the watcher
    assert not again.changed
    assert all(call[1] not in ("enable", "restart") for call in fake_systemctl.calls)

    fake_systemctl.forget()
    uninstall(install_context(record=plan.record))
    assert list(units.iterdir()) == []
    assert ["--user", "disable", "--now", "om-watch.service"] in fake_systemctl.calls
    assert ["--user", "disable", "--now", "om-watch.timer"] not in fake_systemctl.calls


def test_dry_run_lists_the_watch_service(
    linux: None, fake_systemctl: FakeTool, install_context: Ctx
) -> None:
    from obsmem.integrations.edits import render_diff

    plan = scheduler.plan_install(install_context(scheduler="watch"))
    diff = render_diff(plan.edits)
    assert "om-watch.service" in diff and "systemctl --user restart om-watch.service" in diff
    assert not _units(install_context()).exists()


def test_switching_from_timers_to_the_watcher_and_back(
    linux: None, fake_systemctl: FakeTool, install_context: Ctx
) -> None:
    timers = install(install_context(scheduler="systemd"))
    watch = install(install_context(record=timers.record, scheduler="watch"))
    units = _units(install_context())
    assert sorted(p.name for p in units.iterdir()) == [
        "om-reflect.service",
        "om-reflect.timer",
        "om-watch.service",
    ]
    assert ["--user", "disable", "--now", "om-observe.timer"] in fake_systemctl.calls
    back = install(install_context(record=watch.record, scheduler="systemd"))
    assert back.record is not None and "capture" not in back.record
    assert "om-watch.service" not in {p.name for p in units.iterdir()}
    assert ["--user", "disable", "--now", "om-watch.service"] in fake_systemctl.calls


def test_doctor_and_status_say_the_watcher_captures(
    linux: None, fake_systemctl: FakeTool, install_context: Ctx
) -> None:
    from obsmem.integrations.base import save_records

    plan = install(install_context(scheduler="watch"))
    assert plan.record is not None
    ctx = install_context(record=plan.record)
    fake_systemctl.respond("--user is-active om-watch.service", "failed\n", 3)
    fake_systemctl.respond("--user is-active", "active\n")
    checks = {c.name: c for c in scheduler.checks(ctx)}
    assert checks["scheduler (systemd) om-watch"].verdict == "warn"
    assert "restart om-watch.service" in checks["scheduler (systemd) om-watch"].fix
    assert checks["scheduler (systemd) om-reflect"].verdict == "ok"
    assert "om observe --watch" in checks["scheduler"].detail
    save_records({"scheduler": plan.record}, dict(os.environ))
    assert "read by the watcher" in scheduler.sessions_check(ctx, "hermes", "Hermes").detail
    assert installed_summary() == ["scheduler (systemd, watcher)"]


def test_launchd_watch_agent_keeps_the_watcher_alive(
    monkeypatch: pytest.MonkeyPatch, fake_launchctl: FakeTool, install_context: Ctx
) -> None:
    monkeypatch.setattr(scheduler, "current_platform", lambda: "darwin")
    ctx = install_context(scheduler="watch")
    plan = install(ctx)
    folder = ctx.home / "Library" / "LaunchAgents"
    assert sorted(p.name for p in folder.iterdir()) == [
        "dev.om.reflect.plist",
        "dev.om.watch.plist",
    ]
    agent = plistlib.loads((folder / "dev.om.watch.plist").read_bytes())
    assert agent["KeepAlive"] == {"SuccessfulExit": False} and agent["RunAtLoad"] is True
    assert "StartInterval" not in agent
    assert " observe --watch >> " in agent["ProgramArguments"][2]
    assert agent["EnvironmentVariables"]["OM_HOME"] == os.environ["OM_HOME"]
    uninstall(install_context(record=plan.record))
    assert list(folder.iterdir()) == []
    assert ["bootout", f"gui/{os.getuid()}/dev.om.watch"] in fake_launchctl.calls


def test_watch_without_a_service_manager_is_refused(
    linux: None, fake_systemctl: FakeTool, install_context: Ctx
) -> None:
    fake_systemctl.respond("--user show-environment", rc=1)
    with pytest.raises(IntegrationError, match="user service") as caught:
        scheduler.plan_install(install_context(scheduler="watch"))
    assert "om observe --watch" in (caught.value.hint or "")


def test_watch_without_the_extra_is_refused_before_any_write(
    linux: None,
    fake_systemctl: FakeTool,
    install_context: Ctx,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "watchfiles" else real(name, *a),
    )
    with pytest.raises(IntegrationError, match="watchfiles") as caught:
        scheduler.plan_install(install_context(scheduler="watch"))
    assert "obsmem[watch]" in (caught.value.hint or "")
    assert not _units(install_context()).exists()

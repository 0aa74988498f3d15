"""The scheduler on cron, launchd and systemd: install, install again, uninstall, doctor."""

from __future__ import annotations

import os
import plistlib
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.programs import FakeCrontab, FakeTool, script

from obsmem.errors import IntegrationError, SettingsError
from obsmem.integrations import scheduler, scheduler_cron, scheduler_systemd
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.edits import apply_edits
from obsmem.integrations.logs import job_log, rotate
from obsmem.integrations.scheduler_jobs import scheduled_jobs
from obsmem.paths import logs_dir

Ctx = Callable[..., InstallContext]

USER_CRONTAB = (
    "MAILTO=me@example.com\n"
    "# nightly backup\n"
    "30 2 * * * /usr/local/bin/backup --all\n"
    "*/5 * * * * cd /srv && ./poll.sh >/dev/null 2>&1\n"
)


def install(ctx: InstallContext) -> Plan:
    plan = scheduler.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def uninstall(ctx: InstallContext) -> Plan:
    plan = scheduler.plan_uninstall(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


# --- logs --------------------------------------------------------------------------------------


def test_rotate_keeps_three_old_logs(tmp_path: Path) -> None:
    log = tmp_path / "observe.log"
    assert rotate(log, max_bytes=10) is False  # missing: nothing to do
    for n in range(5):
        log.write_text(f"run {n} " + "x" * 20)
        assert rotate(log, max_bytes=10, keep=3) is True
        assert not log.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "observe.log.1",
        "observe.log.2",
        "observe.log.3",
    ]
    assert (tmp_path / "observe.log.1").read_text().startswith("run 4")
    assert (tmp_path / "observe.log.3").read_text().startswith("run 2")


def test_rotate_leaves_a_small_log_alone(tmp_path: Path) -> None:
    log = tmp_path / "reflect.log"
    log.write_text("short\n")
    assert rotate(log, max_bytes=1024) is False
    assert log.read_text() == "short\n"
    assert job_log("reflect") == logs_dir() / "reflect.log"


# --- cron --------------------------------------------------------------------------------------


def test_cron_install_again_and_uninstall_restore_the_crontab(
    fake_crontab: FakeCrontab, install_context: Ctx
) -> None:
    fake_crontab.write(USER_CRONTAB)
    ctx = install_context(scheduler="cron")
    plan = install(ctx)
    assert plan.changed and plan.record is not None and plan.record["kind"] == "cron"
    table = fake_crontab.read() or ""
    assert table.startswith(USER_CRONTAB)
    lines = [line for line in table.splitlines() if line and not line.startswith(("#", "MAILTO"))]
    ours = [line for line in lines if "observe" in line or "reflect" in line]
    assert [line.split(" ", 5)[:5] for line in ours] == [
        ["*/15", "*", "*", "*", "*"],
        ["0", "*", "*", "*", "*"],
        ["0", "4", "*", "*", "*"],
    ]
    assert "observe --source all >> " in ours[0] and "observe.log" in ours[0]
    assert "observe --source claude-memory >> " in ours[1]
    assert f"OM_HOME={os.environ['OM_HOME']}" in ours[0]  # cron's bare environment gets om's
    again = scheduler.plan_install(install_context(record=plan.record, scheduler="cron"))
    assert not again.changed
    uninstall(install_context(record=plan.record))
    assert fake_crontab.read() == USER_CRONTAB


def test_cron_without_a_crontab_is_left_empty_after_uninstall(
    fake_crontab: FakeCrontab, install_context: Ctx
) -> None:
    plan = install(install_context(scheduler="cron"))
    assert "# >>> om (managed by om install) >>>" in (fake_crontab.read() or "")
    uninstall(install_context(record=plan.record))
    assert fake_crontab.read() == ""


def test_cron_job_runs_and_writes_a_private_log(
    fake_crontab: FakeCrontab, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_SCHEDULE_OBSERVE_MINUTES", "5")
    install(install_context(scheduler="cron"))
    line = next(x for x in (fake_crontab.read() or "").splitlines() if "--source all" in x)
    when, command = line.split(" ", 5)[:5], line.split(" ", 5)[5]
    assert when[0] == "*/5"
    # What cron does with the line: \% becomes %, then /bin/sh -c, in a nearly empty environment.
    done = subprocess.run(
        ["/bin/sh", "-c", command.replace("\\%", "%")],
        env={"HOME": os.environ["HOME"]},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    log = job_log("observe")
    assert log.read_text() == "['observe', '--source', 'all']\n"
    assert log.stat().st_mode & 0o777 == 0o600
    assert log.parent.stat().st_mode & 0o777 == 0o700


def test_cron_escapes_percent_signs(
    fake_crontab: FakeCrontab, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_HOME", os.environ["OM_HOME"] + "/100%")
    install(install_context(scheduler="cron"))
    jobs = [x for x in (fake_crontab.read() or "").splitlines() if not x.startswith("#")]
    assert len(jobs) == 3
    assert all("100\\%" in job and not re.search(r"[^\\]%", job) for job in jobs)


def test_secrets_never_reach_the_jobs(
    fake_crontab: FakeCrontab, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-xyzzy1")
    monkeypatch.setenv("OM_MCP_TOKEN", "tok-xyzzy2")
    monkeypatch.setenv("OM_SOMETHING_API_KEY", "xyzzy3")
    install(install_context(scheduler="cron"))
    assert "xyzzy" not in (fake_crontab.read() or "")


def test_cron_checks(fake_crontab: FakeCrontab, install_context: Ctx, fake_om: Path) -> None:
    plan = install(install_context(scheduler="cron"))
    ctx = install_context(record=plan.record)
    verdicts = {c.name: c.verdict for c in scheduler.checks(ctx)}
    assert verdicts["scheduler (cron)"] == "ok"
    fake_om.unlink()
    assert any(c.verdict == "fail" and "does not exist" in c.detail for c in scheduler.checks(ctx))
    fake_crontab.write(USER_CRONTAB)
    assert [c.verdict for c in scheduler.checks(ctx) if c.name == "scheduler (cron)"] == ["fail"]


# --- launchd -----------------------------------------------------------------------------------


@pytest.fixture
def macos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler, "current_platform", lambda: "darwin")


def _agents(ctx: InstallContext) -> Path:
    return ctx.home / "Library" / "LaunchAgents"


def test_launchd_install_loads_plists_and_uninstall_removes_them(
    macos: None, fake_launchctl: FakeTool, install_context: Ctx
) -> None:
    ctx = install_context()  # auto on macOS
    folder = _agents(ctx)
    folder.mkdir(parents=True)
    other = folder / "com.example.other.plist"
    other.write_text("<plist>keep</plist>\n")
    plan = install(ctx)
    assert plan.record is not None and plan.record["kind"] == "launchd"
    observe = plistlib.loads((folder / "dev.om.observe.plist").read_bytes())
    assert observe["Label"] == "dev.om.observe"
    assert observe["StartInterval"] == 900 and observe["RunAtLoad"] is True
    assert observe["ProgramArguments"][:2] == ["/bin/sh", "-c"]
    assert "observe --source all >> " in observe["ProgramArguments"][2]
    assert observe["EnvironmentVariables"]["OM_HOME"] == os.environ["OM_HOME"]
    reflect = plistlib.loads((folder / "dev.om.reflect.plist").read_bytes())
    assert reflect["StartCalendarInterval"] == {"Hour": 4, "Minute": 0}
    hourly = plistlib.loads((folder / "dev.om.claude-memory.plist").read_bytes())
    assert hourly["StartInterval"] == 3600
    domain = f"gui/{os.getuid()}"
    assert fake_launchctl.calls[:2] == [
        ["bootout", f"{domain}/dev.om.observe"],
        ["bootstrap", domain, str(folder / "dev.om.observe.plist")],
    ]
    assert len(fake_launchctl.calls) == 6
    fake_launchctl.forget()
    again = install(install_context(record=plan.record))
    assert not again.changed and fake_launchctl.calls == []
    uninstall(install_context(record=plan.record))
    assert sorted(p.name for p in folder.iterdir()) == ["com.example.other.plist"]
    assert other.read_text() == "<plist>keep</plist>\n"
    assert sorted(fake_launchctl.calls) == [
        ["bootout", f"{domain}/dev.om.{name}"] for name in ("claude-memory", "observe", "reflect")
    ]


def test_launchd_never_overwrites_a_plist_om_did_not_write(
    macos: None, fake_launchctl: FakeTool, install_context: Ctx
) -> None:
    ctx = install_context()
    _agents(ctx).mkdir(parents=True)
    (_agents(ctx) / "dev.om.reflect.plist").write_text("<plist>someone else's</plist>\n")
    with pytest.raises(IntegrationError, match="not written by om"):
        scheduler.plan_install(ctx)


def test_launchd_checks_report_an_unloaded_agent(
    macos: None, fake_launchctl: FakeTool, install_context: Ctx
) -> None:
    plan = install(install_context())
    ctx = install_context(record=plan.record)
    assert all(c.verdict == "ok" for c in scheduler.checks(ctx) if "launchd" in c.name)
    fake_launchctl.respond("print", rc=113)
    bad = [c for c in scheduler.checks(ctx) if c.verdict == "warn"]
    assert len(bad) == 3 and "launchctl bootstrap" in bad[0].fix


def test_launchd_only_on_macos(install_context: Ctx) -> None:
    with pytest.raises(IntegrationError, match="only on macOS"):
        scheduler.plan_install(install_context(scheduler="launchd"))


# --- systemd -----------------------------------------------------------------------------------


def _units(ctx: InstallContext) -> Path:
    return Path(ctx.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"


def test_systemd_install_enables_timers_and_uninstall_disables_them_first(
    fake_systemctl: FakeTool, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")
    monkeypatch.setenv("OM_HOME", os.environ["OM_HOME"] + "/50%")
    ctx = install_context()  # auto: systemctl --user works
    plan = install(ctx)
    assert plan.record is not None and plan.record["kind"] == "systemd"
    units = _units(ctx)
    assert sorted(p.name for p in units.iterdir()) == [
        f"om-{job}.{kind}"
        for job in ("claude-memory", "observe", "reflect")
        for kind in ("service", "timer")
    ]
    service = (units / "om-observe.service").read_text()
    assert 'ExecStart=/bin/sh -c "umask 077; mkdir -p' in service
    assert "/50%%" in service and "/50%/" not in service  # systemd specifiers made literal
    assert "Type=oneshot" in service
    assert "OnCalendar=*-*-* *:00/15:00" in (units / "om-observe.timer").read_text()
    assert "OnCalendar=*-*-* 04:00:00" in (units / "om-reflect.timer").read_text()
    calls = fake_systemctl.calls
    assert ["--user", "enable", "--now", "om-observe.timer"] in calls
    assert ["--user", "daemon-reload"] in calls
    fake_systemctl.forget()
    again = install(install_context(record=plan.record))
    assert not again.changed
    assert all(call[1] != "enable" for call in fake_systemctl.calls)
    fake_systemctl.forget()
    removal = scheduler.plan_uninstall(install_context(record=plan.record)).edits
    # Each timer is disabled by its service's edit, while the timer's own file still exists.
    labels = [Path(edit.target.label).name for edit in removal]
    assert labels.index("om-observe.service") < labels.index("om-observe.timer")
    service_edit = removal[labels.index("om-observe.service")]
    assert ("systemctl", "--user", "disable", "--now", "om-observe.timer") in service_edit.then
    uninstall(install_context(record=plan.record))
    assert list(units.iterdir()) == []
    calls = fake_systemctl.calls
    disables = [c for c in calls if c[1] == "disable"]
    assert sorted(c[-1] for c in disables) == [
        "om-claude-memory.timer",
        "om-observe.timer",
        "om-reflect.timer",
    ]
    assert calls[-1] == ["--user", "daemon-reload"]


def test_systemd_checks_report_an_inactive_timer(
    fake_systemctl: FakeTool, install_context: Ctx
) -> None:
    plan = install(install_context(scheduler="systemd"))
    ctx = install_context(record=plan.record)
    fake_systemctl.respond("--user is-active om-observe.timer", "inactive\n", 3)
    fake_systemctl.respond("--user is-active", "active\n")
    verdicts = {c.name: c.verdict for c in scheduler.checks(ctx)}
    assert verdicts["scheduler (systemd) om-observe"] == "warn"
    assert verdicts["scheduler (systemd) om-reflect"] == "ok"


def test_systemd_refused_when_no_user_manager(
    fake_systemctl: FakeTool,
    fake_crontab: FakeCrontab,
    install_context: Ctx,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")
    fake_systemctl.respond("--user show-environment", rc=1)
    with pytest.raises(IntegrationError, match="user manager"):
        scheduler.plan_install(install_context(scheduler="systemd"))
    assert scheduler.resolve(install_context()) == "cron"


# --- choosing and switching ------------------------------------------------------------------


def test_switching_scheduler_moves_the_jobs(
    fake_crontab: FakeCrontab, fake_systemctl: FakeTool, install_context: Ctx
) -> None:
    fake_crontab.write(USER_CRONTAB)
    first = install(install_context(scheduler="cron"))
    second = install(install_context(record=first.record, scheduler="systemd"))
    assert fake_crontab.read() == USER_CRONTAB
    assert any("from cron to systemd" in note for note in second.notes)
    assert second.record is not None and second.record["kind"] == "systemd"
    none = install(install_context(record=second.record, scheduler="none"))
    assert none.record == {"kind": "none", "om": second.record["om"]}
    assert list(_units(install_context()).iterdir()) == []
    assert [c.verdict for c in scheduler.checks(install_context(record=none.record))] == ["ok"]


def test_unknown_scheduler_is_refused(install_context: Ctx) -> None:
    with pytest.raises(IntegrationError, match="unknown scheduler"):
        scheduler.resolve(install_context(scheduler="anacron"))


def test_checks_without_a_scheduler_warn(install_context: Ctx) -> None:
    [check] = scheduler.checks(install_context())
    assert check.verdict == "warn" and "om install" in check.fix


def test_logs_open_to_others_are_reported(fake_crontab: FakeCrontab, install_context: Ctx) -> None:
    plan = install(install_context(scheduler="cron"))
    folder = logs_dir()
    folder.mkdir(parents=True, mode=0o700)
    (folder / "observe.log").write_text("x\n")
    (folder / "observe.log").chmod(0o644)
    checks = {c.name: c for c in scheduler.checks(install_context(record=plan.record))}
    assert checks["scheduler logs"].verdict == "warn"
    assert "chmod 600" in checks["scheduler logs"].fix


@pytest.mark.parametrize(
    ("minutes", "cron", "calendar"),
    [
        ("1", "*/1", "*-*-* *:00/1:00"),
        ("20", "*/20", "*-*-* *:00/20:00"),
        ("60", "0", "*-*-* *:00:00"),
    ],
)
def test_observe_interval_setting(
    minutes: str, cron: str, calendar: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_SCHEDULE_OBSERVE_MINUTES", minutes)
    observe = scheduled_jobs(dict(os.environ))[0]
    assert scheduler_cron._when(observe).split()[0] == cron
    assert scheduler_systemd._calendar(observe) == calendar


def test_observe_interval_out_of_range_is_refused(
    fake_crontab: FakeCrontab, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_SCHEDULE_OBSERVE_MINUTES", "90")
    with pytest.raises(SettingsError, match="OM_SCHEDULE_OBSERVE_MINUTES"):
        scheduler.plan_install(install_context(scheduler="cron"))
    assert fake_crontab.read() is None


# --- no scheduler on this machine -------------------------------------------------------------


@pytest.fixture
def bare_machine(fake_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux with neither cron nor a systemd user manager (a container): only fakes on PATH."""
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")
    monkeypatch.setenv("PATH", str(fake_bin))


def test_auto_without_any_scheduler_falls_back_to_none_with_a_warning(
    bare_machine: None, install_context: Ctx
) -> None:
    plan = scheduler.plan_install(install_context())
    assert plan.record is not None and plan.record["kind"] == "none"
    assert plan.edits == []
    assert len(plan.warnings) == 1
    assert "observe --source all` every 15 minutes" in plan.warnings[0]
    assert "reflect` daily" in plan.warnings[0]


def test_a_crontab_that_refuses_falls_back_too(
    fake_bin: Path, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")
    monkeypatch.setenv("PATH", str(fake_bin))
    script(fake_bin / "crontab", "#!/bin/sh\necho 'you are not allowed to use cron' >&2\nexit 1\n")
    plan = scheduler.plan_install(install_context())
    assert plan.record is not None and plan.record["kind"] == "none"
    assert "not allowed" in plan.warnings[0]


def test_cron_asked_for_by_name_without_cron_is_refused(
    bare_machine: None, install_context: Ctx
) -> None:
    with pytest.raises(IntegrationError, match="crontab program was not found"):
        scheduler.plan_install(install_context(scheduler="cron"))

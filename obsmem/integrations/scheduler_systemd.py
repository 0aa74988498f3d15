"""The scheduler on systemd user timers: ``om-<job>.service`` + ``om-<job>.timer`` per job.

Units go to ``$XDG_CONFIG_HOME/systemd/user`` (``~/.config/systemd/user``). After they are
written, ``systemctl --user daemon-reload`` and ``enable --now om-<job>.timer``. Timers use
``OnCalendar`` with ``Persistent=true``, so a run missed while the machine was off happens at the
next start. Uninstall disables each timer while its unit file still exists (so the
``timers.target.wants`` link goes too), then deletes both files and reloads.

The watcher (``om install --scheduler watch``) is a service without a timer, ``om-watch.service``:
``Type=simple``, ``Restart=on-failure``, wanted by ``default.target`` and started with
``enable`` + ``restart`` (a running watcher picks up a changed unit); uninstall disables and stops
it before deleting the file.

Unit files start with a comment saying om manages them: a file of the same name without it is
someone else's and is never overwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations.base import InstallContext
from obsmem.integrations.edits import Edit, FileTarget
from obsmem.integrations.scheduler_jobs import (
    MANAGED,
    Job,
    cadence,
    job_environment,
    run_tool,
    shell_command,
)

__all__ = ["available", "checks", "plan_install", "plan_uninstall", "present", "units_dir"]

_HEADER = f"# {MANAGED}\n"
_RELOAD = ("systemctl", "--user", "daemon-reload")


def units_dir(ctx: InstallContext) -> Path:
    """``$XDG_CONFIG_HOME/systemd/user``, else ``~/.config/systemd/user``."""
    base = ctx.environ.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else ctx.home / ".config") / "systemd" / "user"


def available(ctx: InstallContext) -> bool:
    """True when ``systemctl --user`` reaches a user manager (not in most containers)."""
    done = run_tool(("systemctl", "--user", "show-environment"), ctx.environ)
    return done is not None and done.returncode == 0


def _quote(value: str, *, command: bool = False) -> str:
    """A double-quoted systemd value: ``%`` specifiers (and ``$`` in commands) made literal."""
    text = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if command:
        text = text.replace("$", "$$")
    return f'"{text}"'


def _calendar(job: Job) -> str:
    kind, a, b = cadence(job)
    if kind == "daily":
        return f"*-*-* {a:02d}:{b:02d}:00"
    return "*-*-* *:00:00" if kind == "hourly" else f"*-*-* *:00/{a}:00"


def render_service(ctx: InstallContext, job: Job) -> str:
    """The ``.service`` unit of one job."""
    env = "".join(
        f"Environment={_quote(f'{name}={value}')}\n"
        for name, value in job_environment(ctx.environ).items()
    )
    command = _quote(shell_command(ctx, job), command=True)
    if job.service:
        return (
            f"{_HEADER}[Unit]\nDescription=om: {job.what}\n\n"
            f"[Service]\nType=simple\n{env}ExecStart=/bin/sh -c {command}\n"
            # A crash restarts it; a clean stop (om uninstall, systemctl stop) does not.
            "Restart=on-failure\nRestartSec=10\n"
            "Nice=10\nIOSchedulingClass=idle\n\n"
            "[Install]\nWantedBy=default.target\n"
        )
    return (
        f"{_HEADER}[Unit]\nDescription=om: {job.what}\n\n"
        f"[Service]\nType=oneshot\n{env}ExecStart=/bin/sh -c {command}\n"
        # Scheduled runs should never compete with what the user is doing.
        "Nice=10\nIOSchedulingClass=idle\n"
    )


def render_timer(job: Job) -> str:
    """The ``.timer`` unit of one job."""
    return (
        f"{_HEADER}[Unit]\nDescription=om: {job.what} (schedule)\n\n"
        f"[Timer]\nOnCalendar={_calendar(job)}\nPersistent=true\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )


def _read_ours(path: Path) -> str | None:
    text = FileTarget(path).read()
    if text is not None and not text.startswith(_HEADER):
        raise IntegrationError(
            f"{path} exists and was not written by om",
            "move it away, or choose another scheduler with --scheduler cron|none",
        )
    return text


def _managed_jobs(ctx: InstallContext) -> list[str]:
    """Names of the jobs whose units om wrote (from the files themselves)."""
    folder = units_dir(ctx)
    if not folder.is_dir():
        return []
    names: set[str] = set()
    for path in folder.glob("om-*.*"):
        if path.suffix in (".service", ".timer") and path.is_file():
            text = FileTarget(path).read() or ""
            if text.startswith(_HEADER):
                names.add(path.stem.removeprefix("om-"))
    return sorted(names)


def present(ctx: InstallContext) -> bool:
    """True when any unit om wrote is in the user's systemd folder."""
    return bool(_managed_jobs(ctx))


def plan_install(ctx: InstallContext, jobs: list[Job]) -> tuple[list[Edit], dict[str, Any]]:
    """A service and a timer per job, enabled; units of jobs om no longer has are removed."""
    folder = units_dir(ctx)
    edits: list[Edit] = []
    for job in jobs:
        service, timer = folder / f"om-{job.name}.service", folder / f"om-{job.name}.timer"
        # A timer's service only needs systemd to know it; the watcher is started (again, so
        # that a running one picks up a changed unit).
        start: tuple[tuple[str, ...], ...] = (
            (
                _RELOAD,
                ("systemctl", "--user", "enable", service.name),
                ("systemctl", "--user", "restart", service.name),
            )
            if job.service
            else (_RELOAD,)
        )
        edits.append(
            Edit(
                FileTarget(service),
                _read_ours(service),
                render_service(ctx, job),
                why=f"om's systemd service om-{job.name}",
                then=start,
            )
        )
        if job.service:
            continue
        edits.append(
            Edit(
                FileTarget(timer),
                _read_ours(timer),
                render_timer(job),
                why=f"om's systemd timer om-{job.name}",
                then=(_RELOAD, ("systemctl", "--user", "enable", "--now", timer.name)),
            )
        )
    wanted = {job.name for job in jobs}
    for name in _managed_jobs(ctx):
        if name not in wanted:
            edits += _removal(ctx, name)
    extra = {"units": sorted(f"om-{job.name}" for job in jobs if not job.service)}
    services = sorted(f"om-{job.name}" for job in jobs if job.service)
    if services:
        extra["services"] = services
    return edits, extra


def _removal(ctx: InstallContext, name: str) -> list[Edit]:
    folder = units_dir(ctx)
    service, timer = folder / f"om-{name}.service", folder / f"om-{name}.timer"
    disable = ("systemctl", "--user", "disable", "--now", timer.name)
    service_text, timer_text = FileTarget(service).read(), FileTarget(timer).read()
    if timer_text is None and not timer.exists():
        # A service without a timer (the watcher): stop it, then delete its file.
        stop = ("systemctl", "--user", "disable", "--now", service.name)
        return [
            Edit(
                FileTarget(service),
                service_text,
                None,
                why=f"remove om-{name}.service",
                then=(stop, _RELOAD),
            )
        ]
    # The service goes first and disables the timer while the timer's file still exists;
    # when there is no service file left, the timer's own edit disables it.
    first = Edit(
        FileTarget(service), service_text, None, why=f"remove om-{name}.service", then=(disable,)
    )
    later = (disable, _RELOAD) if service_text is None else (_RELOAD,)
    second = Edit(FileTarget(timer), timer_text, None, why=f"remove om-{name}.timer", then=later)
    return [first, second]


def plan_uninstall(ctx: InstallContext) -> list[Edit]:
    """Disable and delete every unit om wrote (found by its header, whatever the record says)."""
    return [edit for name in _managed_jobs(ctx) for edit in _removal(ctx, name)]


def checks(ctx: InstallContext, record: dict[str, Any]) -> list[Check]:
    """Is each recorded timer there and active, and does the om it starts exist?"""
    out: list[Check] = []
    folder = units_dir(ctx)
    for unit in record.get("units", []):
        timer = folder / f"{unit}.timer"
        if not (folder / f"{unit}.service").is_file() or not timer.is_file():
            out.append(
                Check(
                    f"scheduler (systemd) {unit}",
                    "fail",
                    f"{unit}.service or {unit}.timer is missing from {folder}",
                    "run: om install --scheduler systemd",
                )
            )
            continue
        done = run_tool(("systemctl", "--user", "is-active", timer.name), ctx.environ)
        state = done.stdout.strip() if done is not None else "unknown"
        if state != "active":
            out.append(
                Check(
                    f"scheduler (systemd) {unit}",
                    "warn",
                    f"{timer.name} is {state or 'not active'}",
                    f"run: systemctl --user enable --now {timer.name}",
                )
            )
        else:
            out.append(Check(f"scheduler (systemd) {unit}", "ok", f"{timer.name} is active"))
    for unit in record.get("services", []):
        out.append(_service_check(ctx, folder / f"{unit}.service"))
    return out


def _service_check(ctx: InstallContext, path: Path) -> Check:
    """Is a long-running service (the watcher) there and running?"""
    unit = path.stem
    if not path.is_file():
        return Check(
            f"scheduler (systemd) {unit}",
            "fail",
            f"{path.name} is missing from {path.parent}",
            "run: om install --scheduler watch",
        )
    done = run_tool(("systemctl", "--user", "is-active", path.name), ctx.environ)
    state = done.stdout.strip() if done is not None else "unknown"
    if state != "active":
        return Check(
            f"scheduler (systemd) {unit}",
            "warn",
            f"{path.name} is {state or 'not running'}",
            f"run: systemctl --user restart {path.name}; its log: journalctl --user -u {unit}",
        )
    return Check(f"scheduler (systemd) {unit}", "ok", f"{path.name} is running")

"""The scheduler integration: om's background jobs on cron, launchd or systemd user timers.

``--scheduler auto`` picks launchd on macOS, systemd user timers where ``systemctl --user``
reaches a user manager, and cron otherwise; where there is none of them (a container without
cron) it falls back to no scheduler, with a warning saying what to run by hand. ``none``
installs nothing (run ``om observe`` and ``om reflect`` yourself). A scheduler named explicitly
that cannot work here stops the install before any file is written. The jobs are in
:mod:`obsmem.integrations.scheduler_jobs`; each backend module plans its own files:

- :mod:`~obsmem.integrations.scheduler_cron`: a marker block in the crontab;
- :mod:`~obsmem.integrations.scheduler_launchd`: ``~/Library/LaunchAgents/dev.om.<job>.plist``;
- :mod:`~obsmem.integrations.scheduler_systemd`: ``om-<job>.service`` and ``om-<job>.timer`` in
  ``~/.config/systemd/user``.

Only one backend holds om's jobs at a time: installing with one removes om's entries from the
others, so a job never runs twice. Every backend recognises its entries by a marker written into
them, so uninstall finds them even when the record in ``integrations.json`` is gone. The record
keeps the scheduler used (``kind``), the om the jobs start and the backend's files.

``--scheduler watch`` installs the watcher instead of the periodic observe jobs: ``om observe
--watch`` as a user service (systemd on Linux, launchd on macOS) that a crash restarts, with the
daily reflection still on a timer. The record says so (``capture: watch``), and a later
``om install`` with ``--scheduler auto`` keeps the watcher.

Hermes Agent and OpenClaw have no session hooks: their sessions are read by the ``observe`` job,
so the orchestrator installs this integration whenever either of them is chosen.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from types import ModuleType
from typing import Any

from obsmem.doctor import Check
from obsmem.errors import IntegrationError, OmError
from obsmem.integrations import scheduler_cron, scheduler_launchd, scheduler_systemd
from obsmem.integrations.base import InstallContext, Plan, load_records
from obsmem.integrations.edits import Edit
from obsmem.integrations.scheduler_jobs import om_program_ok, scheduled_jobs
from obsmem.paths import logs_dir
from obsmem.settings import load_settings

__all__ = [
    "NAME",
    "SCHEDULERS",
    "checks",
    "current_platform",
    "detect",
    "plan_install",
    "plan_uninstall",
    "resolve",
    "sessions_check",
]

NAME = "scheduler"
SCHEDULERS = ("auto", "cron", "launchd", "systemd", "watch", "none")
#: The record's ``capture`` value when the watcher, not periodic jobs, observes the sessions.
WATCH = "watch"

_BACKENDS: dict[str, ModuleType] = {
    "cron": scheduler_cron,
    "launchd": scheduler_launchd,
    "systemd": scheduler_systemd,
}


def current_platform() -> str:
    """``sys.platform``, behind a function so tests can plan for macOS on Linux."""
    return sys.platform


def watching(ctx: InstallContext) -> bool:
    """True when this install runs the watcher: ``--scheduler watch``, or ``auto`` over an
    install that chose it."""
    choice = (ctx.scheduler or "auto").lower()
    return choice == WATCH or (choice == "auto" and ctx.record.get("capture") == WATCH)


def resolve(ctx: InstallContext) -> str:
    """The scheduler ``ctx.scheduler`` means here: cron, launchd, systemd or none (``watch``:
    the service manager that runs the watcher, launchd or systemd)."""
    choice = (ctx.scheduler or "auto").lower()
    if choice not in SCHEDULERS:
        raise IntegrationError(
            f"unknown scheduler {ctx.scheduler!r}",
            "use auto, cron, launchd, systemd, watch or none",
        )
    if watching(ctx):
        if current_platform() == "darwin":
            return "launchd"
        if scheduler_systemd.available(ctx):
            return "systemd"
        raise IntegrationError(
            "the watcher runs as a systemd user service or a launchd agent, and "
            "systemctl --user reaches no user manager here",
            "run om observe --watch under your own supervisor, or use --scheduler cron",
        )
    if choice == "auto":
        if current_platform() == "darwin":
            return "launchd"
        if scheduler_systemd.available(ctx):
            return "systemd"
        return "cron" if _has_crontab(ctx) else "none"
    if choice == "launchd" and current_platform() != "darwin":
        raise IntegrationError(
            "launchd is only on macOS", "use --scheduler auto, cron or systemd on this system"
        )
    if choice == "systemd" and not scheduler_systemd.available(ctx):
        raise IntegrationError(
            "systemctl --user does not reach a systemd user manager here",
            "use --scheduler cron, or run om install inside a systemd user session",
        )
    return choice


def _has_crontab(ctx: InstallContext) -> bool:
    return shutil.which("crontab", path=ctx.environ.get("PATH")) is not None


def detect(ctx: InstallContext) -> bool:
    """True when some scheduler can run om's jobs on this machine."""
    return current_platform() == "darwin" or scheduler_systemd.available(ctx) or _has_crontab(ctx)


def _by_hand(ctx: InstallContext, why: str) -> str:
    """The warning for an install that found no scheduler: what to run, and how often."""
    minutes = load_settings(ctx.environ).schedule_observe_minutes
    observe = ctx.with_paths_command([*ctx.om, "observe", "--source", "all"])
    reflect = ctx.with_paths_command([*ctx.om, "reflect"])
    return (
        f"no scheduler here ({why}), so om installed no background jobs: schedule "
        f"`{observe}` every {minutes} minutes and `{reflect}` daily yourself "
        "(Hermes and OpenClaw sessions are read only then), or install cron and run "
        "om install again"
    )


def _present(ctx: InstallContext) -> list[str]:
    """The backends that hold om's jobs now."""
    return [name for name, backend in _BACKENDS.items() if backend.present(ctx)]


def _describe(ctx: InstallContext, chosen: str, watch: bool = False) -> str:
    if watch:
        return (
            f"{chosen}: om observe --watch as a service (restarted if it fails), om reflect "
            f"daily at 04:00; logs in {logs_dir(ctx.environ)}"
        )
    jobs = {job.name: job for job in scheduled_jobs(ctx.environ)}
    minutes = jobs["observe"].every_minutes
    return (
        f"{chosen}: om observe --source all every {minutes} min, om observe --source "
        f"claude-memory hourly, om reflect daily at 04:00; logs in {logs_dir(ctx.environ)}"
    )


def plan_install(ctx: InstallContext) -> Plan:
    """om's jobs on the chosen scheduler, and om's jobs removed from any other one."""
    chosen = resolve(ctx)
    watch = watching(ctx)
    if watch and importlib.util.find_spec("watchfiles") is None:
        raise IntegrationError(
            "the watcher needs the watchfiles package, which is not installed",
            "pip install 'obsmem[watch]' (or: pipx inject obsmem watchfiles), then run "
            "om install --scheduler watch again",
        )
    jobs = scheduled_jobs(ctx.environ, watch=watch)
    edits: list[Edit] = []
    extra: dict[str, Any] = {}
    fallback = ""
    if chosen == "none" and (ctx.scheduler or "auto").lower() == "auto":
        fallback = "no crontab on PATH, no systemd user manager"
    elif chosen != "none":
        try:
            edits, extra = _BACKENDS[chosen].plan_install(ctx, jobs)
        except IntegrationError as exc:
            # A crontab that does not work (cron not allowed for this user) is no scheduler;
            # anything else (a file om would overwrite), or a scheduler asked for by name, stops
            # the install with nothing changed.
            if (ctx.scheduler or "auto").lower() != "auto" or chosen != "cron":
                raise
            chosen, fallback = "none", exc.message
    record: dict[str, Any] = {"kind": chosen, "om": list(ctx.om)}
    if watch:
        record["capture"] = WATCH
    plan = Plan(NAME, record=record)
    for name in _present(ctx):
        if name != chosen:
            plan.edits += _BACKENDS[name].plan_uninstall(ctx)
            plan.notes.append(f"om's jobs move from {name} to {chosen}")
    if fallback:
        plan.warnings.append(_by_hand(ctx, fallback))
        return plan
    if chosen == "none":
        plan.notes.append(
            "no scheduler: Hermes and OpenClaw sessions are read only when you run om observe; "
            "run om reflect daily"
        )
        return plan
    plan.edits += edits
    assert plan.record is not None
    plan.record.update(extra, jobs=[job.name for job in jobs])
    plan.notes.append(_describe(ctx, chosen, watch))
    return plan


def plan_uninstall(ctx: InstallContext) -> Plan:
    """Remove om's jobs from every scheduler that holds them."""
    plan = Plan(NAME, record=None)
    for name in _present(ctx):
        plan.edits += _BACKENDS[name].plan_uninstall(ctx)
    if plan.edits and logs_dir(ctx.environ).is_dir():
        plan.notes.append(f"the jobs' logs stay in {logs_dir(ctx.environ)}")
    return plan


def sessions_check(ctx: InstallContext, agent: str, label: str) -> Check:
    """om doctor for an agent without hooks: is a scheduler installed to read its sessions?"""
    try:
        record = load_records(ctx.environ).get(NAME, {})
        kind = record.get("kind")
    except OmError as exc:
        return Check(f"{agent} sessions", "fail", exc.message, exc.hint or "")
    if kind and kind != "none" and record.get("capture") == WATCH:
        return Check(f"{agent} sessions", "ok", f"read by the watcher, om observe --watch ({kind})")
    if kind and kind != "none":
        return Check(f"{agent} sessions", "ok", f"read by the scheduled om observe ({kind})")
    return Check(
        f"{agent} sessions",
        "warn",
        f"no scheduled om observe: {label} sessions are read only when you run om observe",
        f"run: om install --{agent} --scheduler auto",
    )


def _check_logs(ctx: InstallContext) -> list[Check]:
    folder = logs_dir(ctx.environ)
    if not folder.is_dir():
        return []
    mode = folder.stat().st_mode & 0o777
    if mode & 0o077:
        return [
            Check(
                "scheduler logs",
                "warn",
                f"{folder} is open to others (mode {mode:o})",
                f"run: chmod 700 {folder}",
            )
        ]
    loose = [p.name for p in sorted(folder.glob("*.log*")) if p.stat().st_mode & 0o077]
    if loose:
        return [
            Check(
                "scheduler logs",
                "warn",
                f"readable by others: {', '.join(loose)}",
                f"run: chmod 600 {folder}/*.log*",
            )
        ]
    return [Check("scheduler logs", "ok", str(folder))]


def _watch_check(chosen: str) -> Check:
    """How capture runs when the watcher was installed, and whether it can run at all."""
    if importlib.util.find_spec("watchfiles") is None:
        return Check(
            "scheduler",
            "fail",
            "the watcher is installed but the watchfiles package is not",
            "pip install 'obsmem[watch]' (or: pipx inject obsmem watchfiles)",
        )
    return Check(
        "scheduler",
        "ok",
        f"capture runs through the watcher (om observe --watch, a {chosen} service); "
        "om reflect runs daily",
    )


def checks(ctx: InstallContext) -> list[Check]:
    """om doctor: the jobs are installed where recorded, loaded, and start an om that exists."""
    record = dict(ctx.record)
    chosen = record.get("kind")
    if not chosen:
        return [
            Check(
                "scheduler",
                "warn",
                "no scheduled jobs: Hermes and OpenClaw sessions are not read in the background",
                "run: om install --scheduler auto",
            )
        ]
    if chosen == "none":
        return [Check("scheduler", "ok", "none chosen: run om observe and om reflect yourself")]
    out: list[Check] = list(_BACKENDS[chosen].checks(ctx, record))
    if record.get("capture") == WATCH:
        out.append(_watch_check(chosen))
    om = record.get("om") or list(ctx.om)
    if not om_program_ok(om, ctx.environ):
        out.append(
            Check(
                "scheduler",
                "fail",
                f"the jobs start {om[0]}, which does not exist",
                "run: om install (it writes the jobs again with the om you run it with)",
            )
        )
    others = [name for name in _present(ctx) if name != chosen]
    if others:
        out.append(
            Check(
                "scheduler",
                "warn",
                f"om's jobs are also in {', '.join(others)}: they would run twice",
                f"run: om install --scheduler {chosen}",
            )
        )
    return out + _check_logs(ctx)

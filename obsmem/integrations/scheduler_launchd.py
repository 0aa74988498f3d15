"""The scheduler on launchd (macOS): one LaunchAgent plist per job in ``~/Library/LaunchAgents``.

``dev.om.observe.plist`` and ``dev.om.claude-memory.plist`` run at an interval
(``StartInterval``, and once at login); ``dev.om.reflect.plist`` daily at 04:00
(``StartCalendarInterval``, which launchd runs on wake when the Mac slept through it). After a
plist is written, ``launchctl bootout`` then ``bootstrap`` (re)load it into the user's GUI
domain; uninstall boots it out and deletes the file. Each plist carries an XML comment saying om
manages it: a file of the same name without it is someone else's and is never overwritten.

The watcher (``om install --scheduler watch``) is ``dev.om.watch.plist``: started at login
(``RunAtLoad``) and restarted whenever it exits with an error (``KeepAlive`` with
``SuccessfulExit`` false: a clean stop stays stopped).
"""

from __future__ import annotations

import os
import plistlib
from pathlib import Path
from typing import Any

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations.base import InstallContext
from obsmem.integrations.edits import Edit, FileTarget
from obsmem.integrations.scheduler_jobs import (
    MANAGED,
    Job,
    job_environment,
    run_tool,
    shell_command,
)

__all__ = ["LABEL_PREFIX", "agents_dir", "checks", "plan_install", "plan_uninstall", "present"]

LABEL_PREFIX = "dev.om."
_COMMENT = f"<!-- {MANAGED} -->"


def agents_dir(ctx: InstallContext) -> Path:
    """``~/Library/LaunchAgents``."""
    return ctx.home / "Library" / "LaunchAgents"


def _domain() -> str:
    return f"gui/{os.getuid()}"


def _path(ctx: InstallContext, name: str) -> Path:
    return agents_dir(ctx) / f"{LABEL_PREFIX}{name}.plist"


def render(ctx: InstallContext, job: Job) -> str:
    """The plist of one job, with om's comment after the DOCTYPE line."""
    data: dict[str, Any] = {
        "Label": LABEL_PREFIX + job.name,
        "ProgramArguments": ["/bin/sh", "-c", shell_command(ctx, job)],
        "EnvironmentVariables": job_environment(ctx.environ),
        # Background: launchd may throttle the job's CPU and I/O in favour of what the user does.
        "ProcessType": "Background",
    }
    if job.service:
        data["RunAtLoad"] = True
        data["KeepAlive"] = {"SuccessfulExit": False}
    elif job.daily_at is not None:
        data["StartCalendarInterval"] = {"Hour": job.daily_at[0], "Minute": job.daily_at[1]}
    else:
        data["StartInterval"] = (job.every_minutes or 60) * 60
        data["RunAtLoad"] = True
    text = plistlib.dumps(data, sort_keys=True).decode("utf-8")
    head, sep, rest = text.partition('.dtd">\n')
    return f"{head}{sep}{_COMMENT}\n{rest}"


def _ours(path: Path) -> str | None:
    """The text of ``path`` when om wrote it, else None."""
    text = FileTarget(path).read()
    return text if text is not None and _COMMENT in text else None


def _managed_files(ctx: InstallContext) -> list[Path]:
    folder = agents_dir(ctx)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"{LABEL_PREFIX}*.plist") if _ours(p) is not None)


def present(ctx: InstallContext) -> bool:
    """True when any plist om wrote is in ``~/Library/LaunchAgents``."""
    return bool(_managed_files(ctx))


def _removal(path: Path) -> Edit:
    label = path.name.removesuffix(".plist")
    return Edit(
        FileTarget(path),
        _ours(path),
        None,
        why=f"remove om's LaunchAgent {label}",
        then=(("launchctl", "bootout", f"{_domain()}/{label}"),),
    )


def plan_install(ctx: InstallContext, jobs: list[Job]) -> tuple[list[Edit], dict[str, Any]]:
    """A plist per job, loaded with launchctl; plists of jobs om no longer has are removed."""
    edits: list[Edit] = []
    wanted = {_path(ctx, job.name) for job in jobs}
    for job in jobs:
        path = _path(ctx, job.name)
        target = FileTarget(path)
        before = target.read()
        if before is not None and _COMMENT not in before:
            raise IntegrationError(
                f"{path} exists and was not written by om",
                "move it away, or choose another scheduler with --scheduler cron|none",
            )
        label = LABEL_PREFIX + job.name
        load = (
            ("launchctl", "bootout", f"{_domain()}/{label}"),
            ("launchctl", "bootstrap", _domain(), str(path)),
        )
        edits.append(
            Edit(target, before, render(ctx, job), why=f"om's LaunchAgent {label}", then=load)
        )
    edits += [_removal(path) for path in _managed_files(ctx) if path not in wanted]
    return edits, {"files": sorted(str(path) for path in wanted)}


def plan_uninstall(ctx: InstallContext) -> list[Edit]:
    """Boot out and delete every plist om wrote (found by its comment, whatever the record says)."""
    return [_removal(path) for path in _managed_files(ctx)]


def checks(ctx: InstallContext, record: dict[str, Any]) -> list[Check]:
    """Is each recorded plist there and loaded, and does the om it starts exist?"""
    out: list[Check] = []
    for name in record.get("files", []):
        path = Path(name)
        label = path.name.removesuffix(".plist")
        if _ours(path) is None:
            out.append(
                Check(
                    f"scheduler (launchd) {label}",
                    "fail",
                    f"{path} is missing",
                    "run: om install --scheduler launchd",
                )
            )
            continue
        done = run_tool(("launchctl", "print", f"{_domain()}/{label}"), ctx.environ)
        if done is None or done.returncode != 0:
            out.append(
                Check(
                    f"scheduler (launchd) {label}",
                    "warn",
                    "the LaunchAgent is not loaded",
                    f"run: launchctl bootstrap {_domain()} {path}",
                )
            )
        else:
            out.append(Check(f"scheduler (launchd) {label}", "ok", f"loaded from {path}"))
    return out

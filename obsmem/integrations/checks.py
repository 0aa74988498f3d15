"""``om doctor``'s checks of the integrations: hooks, scheduler, leftovers, modes and the queue.

Each installed integration checks itself (its module's ``checks``); this module adds what is
shared: the original tool's entries still active beside ours, the settings file's mode and
unknown ``OM_*`` names, and jobs the hooks queued that no worker took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from obsmem.errors import OmError

if TYPE_CHECKING:
    from obsmem.doctor import Check

__all__ = ["installed_summary", "integration_checks"]

#: A queued job older than this means no worker is taking jobs.
_STUCK_SECONDS = 3600


def installed_summary(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per installed integration, for ``om status`` (empty when none or unreadable)."""
    from obsmem.integrations.base import load_records

    try:
        records = load_records(environ)
    except OmError:
        return []
    lines = []
    for name, record in sorted(records.items()):
        if name == "migration":
            continue
        kind = record.get("kind")
        if kind and record.get("capture") == "watch":
            kind = f"{kind}, watcher"  # capture runs through om observe --watch
        lines.append(f"{name} ({kind})" if kind else name)
    return lines


def integration_checks(environ: Mapping[str, str] | None = None) -> list[Check]:
    """Every integration check, in a stable order."""
    from obsmem.doctor import Check
    from obsmem.integrations.base import InstallContext, find_om, load_records
    from obsmem.integrations.claude_plugin import plugin_state, wiring_check
    from obsmem.integrations.install import integration

    env = os.environ if environ is None else environ
    out: list[Check] = []
    try:
        records = load_records(env)
    except OmError as exc:
        return [Check("integrations", "fail", exc.message, exc.hint or "")]
    om = find_om(env)
    plugin = plugin_state(env)
    if not any(name != "migration" for name in records) and plugin is None:
        out.append(Check("integrations", "ok", "none installed", "run: om install"))
    if "claude" not in records and plugin is not None:
        # Wired in by the plugin alone: om install never ran for Claude Code.
        out.append(wiring_check(env))
    for name, record in sorted(records.items()):
        if name == "migration":
            continue
        ctx = InstallContext(
            environ=env, om=om, record=record, scheduler=record.get("kind", "auto")
        )
        try:
            out.extend(integration(name).checks(ctx))
        except OmError as exc:
            out.append(Check(f"integration {name}", "fail", exc.message, exc.hint or ""))
    out.extend(_legacy(env, om))
    out.append(_settings_mode(env))
    out.extend(_setting_names(env))
    out.append(_queue(env))
    return out


def _setting_names(environ: Mapping[str, str]) -> list[Check]:
    """A warning for each ``OM_*`` name om does not read (a typo is otherwise silent)."""
    from obsmem.doctor import Check
    from obsmem.settings import unknown_settings

    return [
        Check("settings names", "warn", line, "fix the name, or remove it")
        for line in unknown_settings(environ)
    ]


def _legacy(environ: Mapping[str, str], om: tuple[str, ...]) -> list[Check]:
    from obsmem.doctor import Check
    from obsmem.integrations.base import InstallContext
    from obsmem.integrations.install import integration

    try:
        found: list[Check] = integration("migration").checks(InstallContext(environ, om))
    except OmError as exc:
        return [Check("original om", "warn", exc.message, exc.hint or "")]
    return found


def _settings_mode(environ: Mapping[str, str]) -> Check:
    from obsmem.doctor import Check
    from obsmem.paths import env_file

    path = env_file(environ)
    folder = path.parent
    if folder.is_dir() and folder.stat().st_mode & 0o077:
        return Check(
            "settings file",
            "warn",
            f"{folder} is open to others (mode {folder.stat().st_mode & 0o777:o})",
            f"run: chmod 700 {folder}",
        )
    if not path.exists():
        return Check("settings file", "ok", f"{path} not created (defaults in use)")
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        return Check(
            "settings file",
            "fail",
            f"{path} is readable by others (mode {mode:o}) and may hold API keys",
            f"run: chmod 600 {path}",
        )
    return Check("settings file", "ok", f"{path} (mode 600)")


def _queue(environ: Mapping[str, str]) -> Check:
    from obsmem.doctor import Check
    from obsmem.integrations.queue import pending
    from obsmem.integrations.worker import worker_running
    from obsmem.paths import logs_dir

    jobs = pending(environ)
    if not jobs:
        return Check("hook queue", "ok", "empty")
    oldest = min(job.stat().st_mtime for job in jobs if job.exists())
    age = time.time() - oldest
    if age > _STUCK_SECONDS and not worker_running(environ):
        return Check(
            "hook queue",
            "warn",
            f"{len(jobs)} job(s) waiting, the oldest for {age / 3600:.1f} h, and no worker running",
            f"run: om worker (and read {logs_dir(environ) / 'worker.log'})",
        )
    return Check("hook queue", "ok", f"{len(jobs)} job(s) waiting for the worker")

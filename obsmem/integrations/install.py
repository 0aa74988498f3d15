"""``om install`` and ``om uninstall``: plan each integration, show or apply, record what changed.

Order matters. The original ``observational-memory`` tool's hooks and scheduled jobs are removed
first (so the two never run side by side), then each chosen agent is installed, then the
scheduler (the backstop for every agent). Every step is planned before anything is written,
each against the files as the earlier steps will leave them, so two steps touching one file (the
migration and Claude Code both edit ``settings.json``) never trip over each other, and
``dry_run`` shows exactly what a real run would write. A step that cannot succeed stops the
command before any file changes; a write that fails anyway undoes the writes before it. Never a
half install.

What each integration added is kept in ``integrations.json``; ``om uninstall`` hands that record
back to the integration so it removes exactly what it added.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from obsmem.errors import OmError, UsageError
from obsmem.integrations.base import InstallContext, Plan, find_om, load_records, save_records
from obsmem.integrations.edits import (
    Edit,
    apply_all,
    new_backup_folder,
    planning,
    render_diff,
    run_commands,
    undo,
)
from obsmem.integrations.purge import PurgePlan, apply_purge, plan_purge
from obsmem.integrations.scheduler import SCHEDULERS
from obsmem.llm.cli import subscription_offer
from obsmem.settings import unknown_settings

__all__ = [
    "AGENTS",
    "SCHEDULERS",
    "InstallReport",
    "detect_agents",
    "install",
    "installed",
    "integration",
    "uninstall",
]

#: Agents om integrates with, in the order they are installed.
AGENTS = ("claude", "codex", "hermes", "openclaw")
_MODULES = {
    "claude": "obsmem.integrations.claude",
    "codex": "obsmem.integrations.codex",
    "hermes": "obsmem.integrations.hermes",
    "openclaw": "obsmem.integrations.openclaw",
    "scheduler": "obsmem.integrations.scheduler",
    "migration": "obsmem.integrations.migration",
}


def integration(name: str) -> ModuleType:
    """The planner module of an integration (``claude``, ``scheduler``, ``migration``, ...)."""
    return importlib.import_module(_MODULES[name])


@dataclass
class InstallReport:
    """What an install or uninstall did (or, with ``dry_run``, would do)."""

    dry_run: bool
    plans: list[Plan] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    diff: str = ""
    #: ``om uninstall --purge``: what was (or, with ``dry_run``, would be) deleted and kept.
    purge: PurgePlan | None = None
    #: Warnings about the whole run rather than one integration.
    extra_warnings: list[str] = field(default_factory=list)
    #: Notes about the whole run (an observer the user could choose).
    extra_notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        """Names of the integrations whose files changed (or would)."""
        return [plan.name for plan in self.plans if plan.changed]

    @property
    def notes(self) -> list[str]:
        """Every note the planners left for the user."""
        return [note for plan in self.plans for note in plan.notes] + self.extra_notes

    @property
    def warnings(self) -> list[str]:
        """Every warning: fallbacks taken, user settings om overrides, unknown settings."""
        return self.extra_warnings + [w for plan in self.plans for w in plan.warnings]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        data: dict[str, Any] = {
            "dry_run": self.dry_run,
            "changed": self.changed,
            "unchanged": [p.name for p in self.plans if not p.changed],
            "skipped": self.skipped,
            "backups": [str(p) for p in self.backups],
            "notes": self.notes,
            "warnings": self.warnings,
            "files": sorted({e.target.label for p in self.plans for e in p.edits if e.changed}),
        }
        if self.purge is not None:
            data["purge"] = self.purge.to_dict()
        return data


def _context(
    environ: Mapping[str, str], name: str, records: Mapping[str, Any], scheduler: str
) -> InstallContext:
    return InstallContext(
        environ=environ,
        om=find_om(environ),
        record=dict(records.get(name) or {}),
        scheduler=scheduler,
    )


def detect_agents(environ: Mapping[str, str]) -> list[str]:
    """The agents whose homes exist on this machine."""
    found = []
    for agent in AGENTS:
        ctx = _context(environ, agent, {}, "none")
        if integration(agent).detect(ctx):
            found.append(agent)
    return found


def _run_steps(
    steps: Iterable[tuple[str, str]],
    environ: Mapping[str, str],
    scheduler: str,
    dry_run: bool,
    report: InstallReport,
) -> None:
    """Plan every step, then (unless ``dry_run``) apply them all or none.

    Each step is planned against the files as the earlier steps' edits leave them
    (:func:`~obsmem.integrations.edits.planning`), so nothing is written before every step is
    known to be possible: a step that cannot be planned (no crontab, a broken file) stops the
    command with no file changed. A write that fails while applying undoes the ones before it.
    """
    records = load_records(environ)
    diffs: list[str] = []
    with planning() as planned:
        for name, action in steps:
            ctx = _context(environ, name, records, scheduler)
            module = integration(name)
            plan: Plan = (
                module.plan_install(ctx) if action == "install" else module.plan_uninstall(ctx)
            )
            report.plans.append(plan)
            diffs.append(render_diff(plan.edits))
            planned.update({e.target.label: e.after for e in plan.edits if e.changed})
            if plan.record is None:
                records.pop(name, None)
            else:
                records[name] = plan.record
    report.diff = "".join(diffs)
    if dry_run:
        return
    written: list[Edit] = []
    steps_edits = [plan.edits for plan in report.plans]
    backup = apply_all(
        steps_edits, environ, folder=new_backup_folder(environ), run=False, written=written
    )
    try:
        save_records(records, environ)
    except OmError:
        undo(written)
        raise
    if backup is not None:
        report.backups.append(backup)
    run_commands(steps_edits, environ)


def install(
    agents: Sequence[str] = (),
    *,
    scheduler: str = "auto",
    dry_run: bool = False,
    environ: Mapping[str, str] | None = None,
) -> InstallReport:
    """Install om for ``agents`` (empty: every agent found on this machine) and the scheduler.

    An agent named explicitly is installed even when its home is missing (its files are
    created); agents picked by detection that are absent are reported as skipped.
    """
    import os

    env = os.environ if environ is None else environ
    if scheduler not in SCHEDULERS:
        raise UsageError(f"unknown scheduler {scheduler!r}", f"use one of {', '.join(SCHEDULERS)}")
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}", f"use one of {', '.join(AGENTS)}")
    report = InstallReport(dry_run=dry_run)
    chosen = [a for a in AGENTS if a in agents] if agents else detect_agents(env)
    if not agents:
        report.skipped = [a for a in AGENTS if a not in chosen]
    steps = [("migration", "install")] + [(a, "install") for a in chosen]
    if scheduler != "none":
        steps.append(("scheduler", "install"))
    report.extra_warnings = unknown_settings(env)
    _run_steps(steps, env, scheduler, dry_run, report)
    report.extra_notes = subscription_offer(env)
    return report


def installed(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The integrations ``om install`` recorded, by name."""
    return load_records(environ)


def uninstall(
    agents: Sequence[str] = (),
    *,
    dry_run: bool = False,
    purge: bool = False,
    environ: Mapping[str, str] | None = None,
) -> InstallReport:
    """Remove what ``om install`` added for ``agents`` (empty: everything it installed).

    The scheduler goes when no installed agent is left. ``purge`` also deletes the files om
    wrote: memory, state, index, logs, settings, records and backups (see
    :mod:`obsmem.integrations.purge`); anything else in those folders is kept and listed in
    ``report.purge.kept``. With ``dry_run`` it only lists them.
    """
    import os

    env = os.environ if environ is None else environ
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        raise UsageError(f"unknown agent {unknown[0]!r}", f"use one of {', '.join(AGENTS)}")
    records = load_records(env)
    report = InstallReport(dry_run=dry_run)
    targets = [a for a in AGENTS if a in records and (not agents or a in agents)]
    report.skipped = [a for a in agents if a not in records]
    remaining = [a for a in AGENTS if a in records and a not in targets]
    steps = [(a, "uninstall") for a in targets]
    if "scheduler" in records and not remaining:
        steps.append(("scheduler", "uninstall"))
    scheduler = str(records.get("scheduler", {}).get("kind", "auto"))
    _run_steps(steps, env, scheduler, dry_run, report)
    if purge:
        # Planned after the steps ran: they rewrite integrations.json.
        pending = dry_run and any(
            e.changed and e.before is not None for plan in report.plans for e in plan.edits
        )
        report.purge = plan_purge(env, backups_pending=pending)
        if not dry_run:
            apply_purge(report.purge)
    return report

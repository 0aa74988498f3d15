"""The scheduler on cron: one block between markers in the user's crontab.

The block holds one line per job; every other line of the crontab is left as it was, and
uninstall removes the block whole (see :func:`obsmem.integrations.edits.drop_block`). The
variables a job needs are written as ``NAME=value`` assignments in front of its command rather
than as crontab ``NAME=value`` lines, because those would also apply to every line below them,
including the user's own.
"""

from __future__ import annotations

from typing import Any

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations.base import InstallContext
from obsmem.integrations.edits import CrontabTarget, Edit, drop_block, has_block, set_block
from obsmem.integrations.scheduler_jobs import (
    MANAGED,
    Job,
    cadence,
    job_environment,
    shell_command,
)
from obsmem.paths import logs_dir

__all__ = ["BEGIN", "END", "checks", "cron_line", "plan_install", "plan_uninstall", "present"]

BEGIN = "# >>> om (managed by om install) >>>"
END = "# <<< om <<<"


def _when(job: Job) -> str:
    kind, a, b = cadence(job)
    if kind == "daily":
        return f"{b} {a} * * *"
    return "0 * * * *" if kind == "hourly" else f"*/{a} * * * *"


def cron_line(ctx: InstallContext, job: Job) -> str:
    """The crontab line of one job (``%`` escaped: cron turns a bare one into a newline)."""
    command = shell_command(ctx, job, job_environment(ctx.environ))
    return f"{_when(job)} {command.replace('%', chr(92) + '%')}"


def _target(ctx: InstallContext) -> CrontabTarget:
    return CrontabTarget(ctx.environ)


def present(ctx: InstallContext) -> bool:
    """True when the crontab holds om's block (False when there is no cron at all)."""
    try:
        return has_block(_target(ctx).read(), BEGIN, END)
    except IntegrationError:
        return False


def plan_install(ctx: InstallContext, jobs: list[Job]) -> tuple[list[Edit], dict[str, Any]]:
    """The crontab with om's block set to these jobs, and what to record."""
    target = _target(ctx)
    before = target.read()
    body = "\n".join(
        [f"# om scheduled jobs ({MANAGED}); logs in {logs_dir(ctx.environ)}"]
        + [cron_line(ctx, job) for job in jobs]
    )
    after = set_block(before, BEGIN, END, body)
    edit = Edit(target, before, after, why="om's scheduled jobs in the crontab")
    return [edit], {}


def plan_uninstall(ctx: InstallContext) -> list[Edit]:
    """The crontab without om's block; every other line as it was.

    A crontab that held nothing else is left empty rather than deleted (om never runs
    ``crontab -r``), which cron treats the same as having none.
    """
    target = _target(ctx)
    before = target.read()
    after = drop_block(before, BEGIN, END)
    return [Edit(target, before, after, why="remove om's scheduled jobs from the crontab")]


def checks(ctx: InstallContext, record: dict[str, Any]) -> list[Check]:
    """Is om's block in the crontab, and does the om it starts exist?"""
    try:
        text = _target(ctx).read()
    except IntegrationError as exc:
        return [Check("scheduler (cron)", "fail", exc.message, exc.hint or "")]
    if not has_block(text, BEGIN, END):
        return [
            Check(
                "scheduler (cron)",
                "fail",
                "om's block is missing from the crontab",
                "run: om install --scheduler cron",
            )
        ]
    return [Check("scheduler (cron)", "ok", "om's jobs are in the crontab")]

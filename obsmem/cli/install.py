"""``om install`` and ``om uninstall``: parse, ask unless told not to, call the library, report."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from obsmem.cli.main import cli

if TYPE_CHECKING:
    from pathlib import Path

    from obsmem.integrations.install import InstallReport
    from obsmem.integrations.purge import PurgePlan

AGENT_FLAGS = (
    ("claude", "Claude Code"),
    ("codex", "Codex CLI"),
    ("hermes", "Hermes Agent"),
    ("openclaw", "OpenClaw"),
)


def _agent_options(func: click.decorators.FC) -> click.decorators.FC:
    for name, label in reversed(AGENT_FLAGS):
        func = click.option(f"--{name}", is_flag=True, help=f"{label}.")(func)
    return click.option("--all", "all_", is_flag=True, help="Every agent found on this machine.")(
        func
    )


def _chosen(flags: dict[str, bool]) -> list[str]:
    return [name for name, _ in AGENT_FLAGS if flags.get(name)]


def _ask_llm(provider: str | None, model: str | None) -> None:
    """The interactive part of ``om install``: which LLM, and its key, into the settings file."""
    from obsmem.integrations.setup import KEY_VARIABLES, configure_llm, needs_base_url
    from obsmem.llm.cli import subscription_offer
    from obsmem.settings import PROVIDERS

    click.echo(
        "om can compress transcripts with an LLM of your choice, or with offline rules ('none')."
    )
    if not provider:
        # Said at the question, not only in the closing notes: this is where the user chooses.
        for line in subscription_offer(os.environ):
            click.echo(f"Note: {line}")
    provider = provider or click.prompt(
        "LLM provider", type=click.Choice(PROVIDERS), default="none", show_choices=True
    )
    base_url = ""
    if needs_base_url(provider):
        base_url = click.prompt(
            "Server address (OpenAI-compatible)", default="http://localhost:11434/v1"
        )
    key = ""
    if provider in KEY_VARIABLES and not (provider == "openai-compatible" and base_url):
        key = click.prompt(
            f"{KEY_VARIABLES[provider]} (input hidden; leave empty to set it later)",
            default="",
            hide_input=True,
            show_default=False,
        )
    model = model if model is not None else click.prompt("Model (empty: om's default)", default="")
    path = configure_llm(provider, model=model or "", api_key=key, base_url=base_url)
    click.echo(f"Settings written to {path} (mode 0600).")


def _interactive(non_interactive: bool, as_json: bool) -> bool:
    """Ask questions only of a person at a terminal."""
    return not non_interactive and not as_json and sys.stdin.isatty()


#: Kept paths listed one by one before the rest are summed up (a memory folder in ~ has many).
_KEPT_SHOWN = 20


def _paths(title: str, found: list[Path]) -> None:
    if not found:
        return
    click.echo(title)
    for path in found[:_KEPT_SHOWN]:
        click.echo(f"  {path}")
    if len(found) > _KEPT_SHOWN:
        click.echo(f"  ... and {len(found) - _KEPT_SHOWN} more")


def _purge_lines(purge: PurgePlan, dry_run: bool) -> None:
    if dry_run:
        would = purge.would_delete()
        _paths("Would delete (om's files):", would)
    else:
        _paths("Deleted (om's files):", purge.deleted)
    _paths("Kept, not om's:", purge.kept)
    if purge.backups is not None:
        click.echo(f"Kept: the backups of your agents' files in {purge.backups}")


def _report(report: InstallReport, as_json: bool) -> None:
    data = report.to_dict()
    if as_json:
        if report.dry_run:
            data["diff"] = report.diff
        click.echo(json.dumps(data, indent=2))
        return
    purge = report.purge
    purging = purge is not None and (
        purge.would_delete() if report.dry_run else purge.deleted or purge.kept
    )
    if report.dry_run:
        if report.diff:
            click.echo(report.diff, nl=False)
        elif not purging:
            click.echo("Nothing to change.")
    else:
        changed = report.changed
        if changed:
            click.echo(f"Changed: {', '.join(changed)}")
        elif not purging:
            click.echo("Nothing to change.")
        for path in data["files"]:
            click.echo(f"  {path}")
        for backup in report.backups:
            click.echo(f"Backup of the previous files: {backup}")
    for note in report.notes:
        click.echo(f"Note: {note}")
    for warning in report.warnings:
        click.echo(f"om: warning: {warning}", err=True)
    if purge is not None:
        _purge_lines(purge, report.dry_run)
    if report.skipped:
        click.echo(f"Skipped (not found or not installed): {', '.join(report.skipped)}")


@cli.command()
@_agent_options
@click.option(
    "--scheduler",
    type=click.Choice(["auto", "cron", "launchd", "systemd", "watch", "none"]),
    default="auto",
    show_default=True,
    help="What runs the periodic observe and the daily reflection (watch: om observe --watch "
    "as a user service instead of periodic observe jobs).",
)
@click.option(
    "--provider", help="LLM provider to write to the settings file (none: offline rules)."
)
@click.option("--llm-model", help="LLM model to write to the settings file.")
@click.option("--non-interactive", is_flag=True, help="Ask nothing (for scripts).")
@click.option("--dry-run", is_flag=True, help="Print every change as a diff; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def install(
    all_: bool,
    scheduler: str,
    provider: str | None,
    llm_model: str | None,
    non_interactive: bool,
    dry_run: bool,
    as_json: bool,
    **flags: bool,
) -> None:
    """Hook om into your agents (all found, or those named) and schedule the background jobs.

    Every file is merged, never replaced, and backed up first; running it again changes
    nothing; om uninstall removes exactly what it added.
    """
    from obsmem.integrations.install import install as run_install
    from obsmem.integrations.setup import configure_llm
    from obsmem.paths import env_file

    agents = [] if all_ else _chosen(flags)
    if not dry_run:
        if _interactive(non_interactive, as_json) and (provider or not env_file().exists()):
            _ask_llm(provider, llm_model)
        elif provider:
            configure_llm(provider, model=llm_model or "")
        elif llm_model:
            from obsmem.integrations.setup import update_env_file

            update_env_file({"OM_LLM_MODEL": llm_model}, env_file())
    report = run_install(agents, scheduler=scheduler, dry_run=dry_run)
    _report(report, as_json)


@cli.command()
@_agent_options
@click.option(
    "--purge",
    is_flag=True,
    help="Also delete the files om wrote: memory, state, logs, settings (asks first unless "
    "--non-interactive; files om did not write are kept).",
)
@click.option("--non-interactive", is_flag=True, help="Ask nothing (for scripts).")
@click.option("--dry-run", is_flag=True, help="Print every change as a diff; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def uninstall(
    all_: bool, purge: bool, non_interactive: bool, dry_run: bool, as_json: bool, **flags: bool
) -> None:
    """Remove exactly what om install added (for the agents named, or all of them).

    With --purge, also delete the files om wrote (memory, state, index, logs, settings); files
    om did not write are kept and listed, and a folder goes only once it is empty.
    """
    from obsmem.integrations.install import uninstall as run_uninstall

    agents = [] if all_ else _chosen(flags)
    if purge and not dry_run and not non_interactive and not _confirm_purge(agents):
        purge = False
        click.echo("Not purging: om's settings and memory stay; uninstalling the rest.", err=True)
    report = run_uninstall(agents, dry_run=dry_run, purge=purge)
    _report(report, as_json)


def _confirm_purge(agents: list[str]) -> bool:
    """Show what a purge would delete and keep, and ask (on stderr: stdout may be JSON)."""
    from obsmem.integrations.install import uninstall as run_uninstall

    preview = run_uninstall(agents, dry_run=True, purge=True).purge
    assert preview is not None
    would = preview.would_delete()
    if not would:
        return True  # nothing to lose: no question
    click.echo(f"--purge deletes these {len(would)} files and folders om wrote:", err=True)
    for path in would[:_KEPT_SHOWN]:
        click.echo(f"  {path}", err=True)
    if len(would) > _KEPT_SHOWN:
        click.echo(f"  ... and {len(would) - _KEPT_SHOWN} more", err=True)
    if preview.kept:
        click.echo(f"and keeps {len(preview.kept)} that are not om's.", err=True)
    return click.confirm("Delete them for good?", default=False, err=True)

"""``om reflect``: fold new observations into reflections.md and archive old observation days."""

from __future__ import annotations

import json
from datetime import date

import click

from obsmem.cli import render
from obsmem.cli.main import App, cli

pass_app = click.make_pass_decorator(App)


@cli.command()
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the diff of reflections.md and the days that would be archived; write nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@pass_app
def reflect(app: App, dry_run: bool, as_json: bool) -> None:
    """Update reflections.md from new observations and move old days to archive/."""
    from obsmem.integrations.logs import rotate_all
    from obsmem.reflect.offline import reflect as run_reflect

    if not dry_run:
        rotate_all()

    report = run_reflect(app.store, app.settings, today=date.today(), dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(render.reflect_report(report))

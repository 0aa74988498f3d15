"""``om observe`` and ``om backfill``: read transcripts and write what matters to memory."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from obsmem.cli import render
from obsmem.cli.main import App, cli
from obsmem.errors import UsageError

pass_app = click.make_pass_decorator(App)

SOURCES = ("claude", "codex", "hermes", "openclaw", "claude-memory", "all")
FORMATS = ("claude", "codex", "hermes", "openclaw", "text")


def _skipped_line(path: str, skipped: Counter[str]) -> str:
    parts = ", ".join(f"{n} {reason}" for reason, n in skipped.most_common())
    return f"om: skipped {sum(skipped.values())} record(s) in {path}: {parts}"


def _emit_turns(items: Iterator[tuple[object, object]], as_json: bool) -> tuple[int, int]:
    from obsmem.sources.capture import Pending
    from obsmem.sources.model import ReadResult

    files = turns = 0
    for pending, result in items:
        assert isinstance(pending, Pending) and isinstance(result, ReadResult)
        files += 1
        if result.skipped:
            click.echo(_skipped_line(pending.shown, result.skipped), err=True)
        if not as_json and result.turns:
            click.echo(
                f"\n== {pending.shown} ({pending.agent}, {pending.reason}, "
                f"from byte {pending.start_offset}) =="
            )
        for turn in result.turns:
            turns += 1
            if as_json:
                click.echo(json.dumps(turn.to_dict(), ensure_ascii=False))
            else:
                when = (turn.timestamp or "")[:16].replace("T", " ")
                text = " ".join(turn.text.split())
                click.echo(f"[{turn.role}] {when} {text[:300]}")
    return files, turns


@cli.command()
@click.option(
    "--source",
    type=click.Choice(SOURCES),
    default="all",
    show_default=True,
    help="Which agent's transcripts to read (with --transcript: force its format).",
)
@click.option(
    "--transcript",
    type=click.Path(path_type=Path),
    default=None,
    help="Read this one transcript file (format detected from its content).",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the turns that would be observed; write nothing."
)
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: one JSON object per turn.")
@click.option(
    "--min-new",
    type=click.IntRange(0),
    default=None,
    help="Bytes a file must have grown by before it is read (default: scales with size).",
)
@click.option(
    "--flush", is_flag=True, help="Read everything new, even a last line without newline."
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep running: observe the --source agents' sessions as they grow (needs obsmem[watch]).",
)
@pass_app
def observe(
    app: App,
    source: str,
    transcript: Path | None,
    dry_run: bool,
    as_json: bool,
    min_new: int | None,
    flush: bool,
    watch: bool,
) -> None:
    """Read new transcript content and turn it into observations."""
    if watch:
        given = [
            name
            for name, on in (
                ("--transcript", transcript is not None),
                ("--dry-run", dry_run),
                ("--json", as_json),
                ("--min-new", min_new is not None),
                ("--flush", flush),
            )
            if on
        ]
        if given:
            raise UsageError(
                f"--watch cannot be combined with {', '.join(given)}",
                "run om observe --watch [--source AGENT] alone",
            )
        from obsmem.integrations.watch import watch_main

        sys.exit(watch_main(sources=_watched(source)))
    if transcript is not None and source == "claude-memory":
        raise UsageError("--transcript cannot be combined with --source claude-memory")
    if transcript is not None and source not in (*FORMATS, "all"):
        raise UsageError(
            f"--source {source} is not a transcript format", f"use one of: {', '.join(FORMATS)}"
        )
    if not dry_run:
        from obsmem.integrations.logs import rotate_all
        from obsmem.observe.run import run_observe

        rotate_all()

        report = run_observe(
            app.store,
            app.settings,
            source=source,
            transcript=transcript,
            min_new=min_new,
            flush=flush,
        )
        if as_json:
            click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
        else:
            click.echo(render.observe_report(report))
        return
    from obsmem.sources.select import would_observe

    with would_observe(
        app.store,
        source="all" if source == "claude-memory" else source,
        transcript=transcript,
        min_new=min_new,
        flush=flush,
    ) as (found, read):
        files, turns = _emit_turns(read, as_json)
    if not as_json:
        click.echo(
            f"\n{turns} turn(s) from {files} file(s) would be observed "
            f"({found.unchanged} unchanged, {found.below_threshold} below the size "
            f"threshold; --flush takes everything)",
            err=True,
        )


def _watched(source: str) -> tuple[str, ...]:
    """The sources ``--watch`` follows: one, or every agent and Claude Code's auto-memory."""
    from obsmem.sources.registry import AGENTS

    return (*AGENTS, "claude-memory") if source == "all" else (source,)


@cli.command()
@click.option(
    "--source",
    type=click.Choice((*SOURCES[:-2], "all")),
    default="all",
    show_default=True,
    help="Which agent's transcripts to read.",
)
@click.option(
    "--since",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    help="Only transcripts modified on or after this day (YYYY-MM-DD).",
)
@click.option("--dry-run", is_flag=True, help="Count what would be observed; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@pass_app
def backfill(app: App, source: str, since: datetime | None, dry_run: bool, as_json: bool) -> None:
    """Observe every historical transcript not read yet (a progress bar on a terminal)."""
    day = since.date() if since is not None else None
    if dry_run:
        from obsmem.sources.select import would_observe

        with would_observe(app.store, source=source, flush=True, min_new=0, since=day) as (
            found,
            read,
        ):
            turns = sum(len(result.turns) for _, result in read)
        click.echo(
            f"{turns} turn(s) in {len(found.pending)} transcript(s) "
            f"({found.pending_bytes} bytes) would be observed"
        )
        return
    from obsmem.observe.run import run_observe

    with _progress() as progress:
        report = run_observe(
            app.store,
            app.settings,
            source=source,
            flush=True,
            min_new=0,
            since=day,
            progress=progress,
            reflect_new=True,
        )
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        click.echo(render.observe_report(report))


@contextmanager
def _progress() -> Iterator[Callable[[int, int, Any], None]]:
    """A progress callback: a rich bar on a terminal, plain numbered lines when piped."""
    if not sys.stderr.isatty():

        def plain(done: int, total: int, pending: Any) -> None:
            click.echo(f"[{done + 1}/{total}] {pending.shown}", err=True)

        yield plain
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("observing", total=None)

        def update(done: int, total: int, pending: Any) -> None:
            name = pending.shown.rsplit("/", 1)[-1]
            bar.update(task, completed=done, total=total, description=name[:40])

        yield update

"""The ``om`` subcommands. Each one parses its options, calls one library function and formats."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import click

from obsmem.cli import render
from obsmem.cli.main import App, cli
from obsmem.errors import UsageError

pass_app = click.make_pass_decorator(App)


def _kinds(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """``--kind`` values split at commas, each one of ``quick.KINDS``; a typo is a usage error."""
    from obsmem.cli.quick import KINDS, split_kinds

    kinds, unknown = split_kinds(values)
    if unknown:
        raise click.BadParameter(f"unknown kind {unknown[0]!r} (use {', '.join(KINDS)})")
    return tuple(kinds)


def _json(data: object) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_app
def status(app: App, as_json: bool) -> None:
    """Show the memory directory, what it holds, the index and the configured LLM."""
    from obsmem.settings import unknown_settings
    from obsmem.status import collect_status

    for line in unknown_settings():
        click.echo(f"om: warning: {line}", err=True)
    report = collect_status(app.store, app.settings)
    if as_json:
        _json(report.to_dict())
    else:
        click.echo(render.status(report))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of checks.")
@click.option("--validate-key", is_flag=True, help="Also make one tiny live call to the LLM.")
@click.option("--restore", is_flag=True, help="Put back observations missing from memory.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, validate_key: bool, restore: bool) -> None:
    """Check settings, memory files and the index; exit non-zero when something is broken."""
    from obsmem.doctor import run_checks
    from obsmem.memory.store import MemoryStore

    # Doctor must work even when settings do not load: that is one of the things it reports.
    checks = run_checks(MemoryStore(), validate_key=validate_key, restore=restore)
    if as_json:
        _json([c.to_dict() for c in checks])
    else:
        click.echo(render.checks(checks))
    if any(c.broken for c in checks):
        ctx.exit(1)


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option(
    "-n",
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="How many hits to show.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of hits.")
@click.option("--since", metavar="YYYY-MM-DD", help="Only entries dated on or after this day.")
@click.option("--until", metavar="YYYY-MM-DD", help="Only entries dated on or before this day.")
@click.option("--type", "type_", metavar="TYPE", help="Only observations of this type.")
@click.option("--min-importance", type=click.FloatRange(0, 1), help="Only entries this important.")
@click.option("--project", help="Only observations from this project's sessions.")
@click.option("--agent", help="Only observations from this agent's sessions (claude, codex, ...).")
@click.option(
    "--kind",
    multiple=True,
    callback=_kinds,
    help="Only these: observation, reflection, turn (repeat, or join with commas).",
)
@click.option("--raw", is_flag=True, help="Only the transcript turns (the same as --kind turn).")
@pass_app
def search(
    app: App,
    query: tuple[str, ...],
    limit: int,
    as_json: bool,
    since: str | None,
    until: str | None,
    type_: str | None,
    min_importance: float | None,
    project: str | None,
    agent: str | None,
    kind: tuple[str, ...],
    raw: bool,
) -> None:
    """Search everything om remembers: observations, reflections, profile, active, archive, vault,
    Claude Code's auto-memory, and the transcript turns capture kept (redacted), ranked in one
    list. --kind narrows it (observation, reflection, turn; repeat it or join with commas);
    --raw is --kind turn. Filters narrow the search (hybrid or BM25, as without them); --type
    and --min-importance apply to entries only.
    """
    # The same as the fast path ``om search`` usually takes (obsmem/cli/quick.py).
    from obsmem.cli.quick import search_output

    chosen = sorted(set(kind) | ({"turn"} if raw else set()))
    given = {"since": since, "until": until, "type": type_, "min_importance": min_importance,
             "project": project, "agent": agent}  # fmt: skip
    click.echo(
        search_output(
            app.store,
            app.settings,
            " ".join(query),
            limit=limit,
            as_json=as_json,
            filters=given,
            kinds=chosen or None,
        )
    )


@cli.command()
@click.option(
    "--for",
    "agent",
    type=click.Choice(["claude", "codex", "plain"]),
    default="plain",
    show_default=True,
    help="Output for this agent's SessionStart hook, or markdown.",
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False),
    default=None,
    help="The session's working directory (default: the hook payload's cwd on stdin, else the "
    "current directory).",
)
@click.option(
    "--budget",
    type=click.IntRange(200, 200_000),
    default=6000,
    show_default=True,
    help="Most tokens the context may take.",
)
def context(agent: str, cwd: str | None, budget: int) -> None:
    """Print the startup context for a new agent session (what SessionStart hooks run).

    Chooses what fits the budget by importance, recency and relevance to the project of --cwd,
    from files prepared after each observe and reflect; ends with how to search for more.
    """
    from obsmem.context.startup import run_context, stdin_cwd

    click.echo(run_context(agent, cwd=cwd or stdin_cwd(), budget=budget))


def _embedding_progress(what: str = "entries") -> Callable[[int, int], None]:
    """A ``progress(done, total)`` for embedding ``what``: one line on stderr, redrawn on a
    terminal; elsewhere (a log) the first and the last state only. Silent when nothing is
    missing."""
    tty = sys.stderr.isatty()
    shown = {"started": False}

    def show(done: int, total: int) -> None:
        if not shown["started"] and done >= total:
            return
        text = f"embedding: {done:,} of {total:,} {what} have a vector"
        if tty:
            click.echo(f"\r{text}", err=True, nl=done >= total)
        elif not shown["started"] or done >= total:
            click.echo(text, err=True)
        shown["started"] = True

    return show


@cli.command()
@click.option(
    "--embed",
    "embed_only",
    is_flag=True,
    help="No rebuild: bring the index up to date and embed the entries that have no vector.",
)
@pass_app
def reindex(app: App, embed_only: bool) -> None:
    """Rebuild the search index from the markdown memory files, and embed what needs it.

    Embedding shows its progress on stderr. --embed skips the rebuild: it only picks up what
    changed and embeds what has no vector yet (after a first hybrid setup, or a large backfill).
    A model that failed to load lately is tried again at once.
    """
    from obsmem.search import model_failures
    from obsmem.search.indexing import embed_index
    from obsmem.search.indexing import reindex as reindex_store

    model_failures.forget(app.settings)  # asked for now: a model that failed is tried again
    progress, words = _embedding_progress(), _embedding_progress("vocabulary items")
    if embed_only:
        vectors = embed_index(app.store, app.settings, progress, words)
    else:
        report, vectors = reindex_store(app.store, app.settings, progress, words)
        click.echo(
            f"indexed {report.entries} entries from {report.files_indexed} file(s) "
            f"into {app.store.index_path}"
        )
    if vectors.model is not None:
        click.echo(f"embedded {vectors.embedded} new text(s) with {vectors.model}")
        if vectors.words:
            click.echo(f"embedded {vectors.words} new vocabulary item(s) for the bridge")
    elif embed_only and not vectors.problem:
        click.echo(f"nothing to embed: {vectors.reason}")
    if vectors.problem:
        click.echo(f"om: embeddings not updated: {vectors.problem}", err=True)


@cli.command()
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Use this (empty or new) directory instead of a temporary one, and keep it.",
)
@click.option("--keep", is_flag=True, help="Keep the temporary directory afterwards.")
@click.pass_context
def demo(ctx: click.Context, home: Path | None, keep: bool) -> None:
    """Run om on bundled samples in a throw-away directory (no network, no key).

    Writes sample memory, observes two sample transcripts (Claude Code and Codex) with the
    offline rules, then shows the status, the observations and a few searches.
    """
    from obsmem.context.startup import run_context
    from obsmem.demo import SAMPLE_QUERIES, prepare
    from obsmem.observe.run import run_observe
    from obsmem.reflect.offline import reflect
    from obsmem.search import search as run_search
    from obsmem.settings import load_settings
    from obsmem.status import collect_status

    if home is not None and home.exists() and any(home.iterdir()):
        raise UsageError(f"{home} is not empty", "give an empty or new directory")
    # The demo's own root: memory/ (what om writes) and agents/ (the sample transcripts).
    target = home or Path(tempfile.mkdtemp(prefix="om-demo-"))
    try:
        demo_run = prepare(target / "memory", agents_dir=target / "agents")
        store = demo_run.store
        settings = load_settings(demo_run.environ)
        click.echo(render.banner(f"om observe (offline rules) into {store.home}"))
        report = run_observe(store, settings, environ=demo_run.environ, flush=True, provider=None)
        click.echo(render.observe_report(report))
        click.echo(render.banner("om reflect (offline rules)"))
        click.echo(render.reflect_report(reflect(store, settings, provider=None)))
        click.echo(render.banner("om status"))
        click.echo(render.status(collect_status(store, settings, demo_run.environ)))
        click.echo(render.banner("observations.md"))
        click.echo(store.observations_path.read_text(encoding="utf-8").rstrip())
        click.echo(render.banner("om context --for plain --budget 700 (what a new session sees)"))
        click.echo(
            run_context(
                "plain", cwd="/home/dev/atlas", budget=700, environ=demo_run.environ
            ).rstrip()
        )
        for query in SAMPLE_QUERIES:
            click.echo(render.banner(f"om search {query!r}"))
            click.echo(render.hits(run_search(store, query, limit=3)))
    finally:
        if home is None and not keep:
            shutil.rmtree(target, ignore_errors=True)
        elif home is None:
            click.echo(f"\n(kept {target}; run `OM_HOME={target}/memory om status` to look at it)")

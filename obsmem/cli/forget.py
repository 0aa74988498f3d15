"""``om forget``: remove memories everywhere om keeps them (an adapter over ``obsmem.forgetting``).

With ``--query`` the library plans (a dry run: the entries and the kept transcript turns holding
every word), the plan is listed and a confirmation is asked for (unless ``--yes``), then exactly
that plan is carried out, so what the user agreed to is what goes.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from obsmem.cli.main import App, cli
from obsmem.errors import UsageError

if TYPE_CHECKING:
    from obsmem.forgetting import ForgetReport

pass_app = click.make_pass_decorator(App)

_TEXT_CHARS = 100


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_CHARS else text[: _TEXT_CHARS - 1] + "…"


def _memories(count: int) -> str:
    return f"{count} memor{'y' if count == 1 else 'ies'}"


def render_plan(report: ForgetReport) -> str:
    """What goes (or would go), one line per id: the id, its text, and every place it is in."""
    groups: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    for line in report.lines:
        groups.setdefault(line.id, []).append(f"{line.file}:{line.line}")
        if line.id not in texts or line.file in ("observations.md", "reflections.md"):
            texts.setdefault(line.id, line.text)
    out = [f"  {i}  {_short(texts[i])}  ({', '.join(places)})" for i, places in groups.items()]
    out += [f"  {entry_id}  (already forgotten)" for entry_id in report.already_forgotten]
    out += [
        f"  {skipped['id']}  not forgotten: {skipped['reason']} ({skipped['file']})"
        for skipped in report.skipped
    ]
    out += [
        f"  turn  {turn.date or 'undated'}  session {turn.session or '?'}  {turn.role}: "
        f"{_short(turn.excerpt)}  ({turn.source_path}:{turn.line_start})"
        for turn in report.raw_turns
    ]
    return "\n".join(out)


def _headline(verb: str, report: ForgetReport) -> str:
    """``forgot N memories: ids, and M transcript turn(s) holding every word of 'Q'``."""
    turns = f"{len(report.raw_turns)} transcript turn(s) holding every word of {report.query!r}"
    if not report.ids:
        return f"{verb} {turns}"
    head = f"{verb} {_memories(len(report.ids))}: {', '.join(report.ids)}"
    return f"{head}, and {turns}" if report.raw_turns else head


def _what(report: ForgetReport) -> str:
    """``N memories`` and/or ``M transcript turn(s)``, for the question."""
    parts = [_memories(len(report.ids))] if report.ids or not report.raw_turns else []
    if report.raw_turns:
        parts.append(f"{len(report.raw_turns)} transcript turn(s)")
    return " and ".join(parts)


def render_done(report: ForgetReport) -> str:
    """What a real forget did, place by place."""
    if not report.ids and not report.raw_turns:
        done = f"; removed {report.turns} transcript turn(s) left behind" if report.turns else ""
        gone = ", ".join(report.already_forgotten)
        return f"nothing left to forget: {gone} already forgotten{done}"
    lines = [_headline("forgot", report), render_plan(report)]
    places = [
        f"{len(report.lines)} line(s) from {len(report.files)} file(s)",
        f"{report.turns} transcript turn(s)",
        f"{report.index_entries} index entr{'y' if report.index_entries == 1 else 'ies'}",
    ]
    if report.vectors:
        places.append(f"{report.vectors} vector(s)")
    if report.contexts:
        places.append(f"{len(report.contexts)} Current Context bullet(s) quoting it")
    lines.append("removed " + ", ".join(places))
    if report.derived:
        lines.append(f"regenerated {', '.join(report.derived)}")
    lines.append(
        "the ledger keeps a tombstone per id and a keyed hash per turn (no text), so capture "
        "does not bring it back"
    )
    for problem in report.problems:
        lines.append(f"om: {problem}")
    return "\n".join(line for line in lines if line)


@cli.command()
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--query", "-q", metavar="Q", help="Forget the entries the search finds for Q.")
@click.option(
    "-n",
    "--limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, 100),
    help="With --query: how many search hits to consider.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be forgotten; change nothing.")
@click.option("--yes", "-y", is_flag=True, help="With --query: do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_app
def forget(app: App, ids: tuple[str, ...], query: str | None, limit: int, dry_run: bool,
           yes: bool, as_json: bool) -> None:  # fmt: skip
    """Forget memories everywhere: observations, archive, reflections, vault, profile, active,
    the search index and the transcript turns they came from.

    ID is what `om search` and `om show` print. With --query, the search hits and the kept
    transcript turns holding every word of Q are listed and forgotten after you confirm. A
    tombstone (the id and the time, a keyed hash per turn, never the text) keeps a forgotten
    memory from being captured again, from a copy of its transcript too.
    """
    from obsmem.forgetting import forget as run_forget

    if query is not None and not dry_run and not yes:
        if not _interactive():
            raise UsageError(
                "--query asks for confirmation, and there is no terminal to ask on",
                "look with --dry-run first, then add --yes",
            )
        plan = run_forget(app.store, query=query, limit=limit, dry_run=True,
                          settings=app.settings)  # fmt: skip
        if not plan.ids and not plan.raw_turns:
            _show(plan, as_json, f"nothing to forget: no memory holds every word of {query!r}")
            return
        click.echo(f"these entries hold every word of {query!r}:")
        click.echo(render_plan(plan))
        if not click.confirm(f"forget {_what(plan)}?"):
            click.echo("nothing forgotten")
            return
        report = run_forget(app.store, plan=plan, settings=app.settings)
        _show(report, as_json, render_done(report))
        return
    report = run_forget(app.store, ids, query=query, limit=limit, dry_run=dry_run,
                        settings=app.settings)  # fmt: skip
    if report.empty:
        _show(report, as_json, f"nothing to forget: no memory holds every word of {query!r}")
    elif dry_run:
        text = (
            f"{_headline('would forget', report)}\n"
            f"{render_plan(report)}\n"
            f"and {report.turns} transcript turn(s); nothing was changed (--dry-run)"
        )
        _show(report, as_json, text)
    else:
        _show(report, as_json, render_done(report))


def _interactive() -> bool:
    return sys.stdin.isatty()


def _show(report: ForgetReport, as_json: bool, text: str) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        click.echo(text)

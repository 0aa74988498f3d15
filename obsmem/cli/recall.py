"""``om show``, ``om remember`` and ``om mcp``: citations, explicit memories, the MCP server.

Thin, like every command: parse, call one library function, format. ``om mcp`` imports the MCP
SDK only when it runs, so the rest of the command line never pays for it.
"""

from __future__ import annotations

import json
from typing import Any

import click

from obsmem.cli.main import App, cli
from obsmem.memory.model import OBSERVATION_TYPES

pass_app = click.make_pass_decorator(App)


def _json(data: object) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def render_entry(entry: dict[str, Any]) -> str:
    """An entry from ``show`` as text: the entry, its citation, its provenance and the excerpt."""
    when = " ".join(str(x) for x in (entry.get("date"), entry.get("time")) if x) or "-"
    flags = " ".join(str(x) for x in (entry.get("priority"), entry.get("type")) if x)
    importance = entry.get("importance")
    score = f"  i={importance:.2f}" if isinstance(importance, float) else ""
    lines = [f"{entry['id']}  {when}  {flags}{score}".rstrip(), f"  {entry['text']}"]
    where = f"  {entry['citation']}"
    if entry.get("section"):
        where += f"  ({entry['section']})"
    lines.append(where)
    prov = entry.get("provenance")
    if prov:
        about = ", ".join(
            f"{key} {prov[key]}" for key in ("agent", "project", "session") if prov.get(key)
        )
        if about:
            lines.append(f"  from {about}")
    excerpt = entry.get("excerpt")
    if excerpt:
        if excerpt.get("path"):
            span = f"{excerpt['line_start']}-{excerpt['line_end']}"
            lines.append(f"\nsource: {excerpt['path']}:{span}")
        if excerpt.get("note"):
            lines.append(f"  ({excerpt['note']})")
        width = max((len(str(item["line"])) for item in excerpt.get("lines", [])), default=1)
        for item in excerpt.get("lines", []):
            lines.append(f"  {item['line']:>{width}} | {item['text']}")
        if excerpt.get("truncated"):
            lines.append("  ... (more lines in the source; excerpt cut)")
    return "\n".join(lines)


@cli.command()
@click.argument("entry_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_app
def show(app: App, entry_id: str, as_json: bool) -> None:
    """Show one memory entry with the transcript lines it was observed from.

    ID comes from `om search --json` (or the trailing ^id of a line in observations.md). Secrets
    in the transcript are redacted; a moved or changed transcript is noted, not an error.
    """
    from obsmem.search.recall import show as run_show

    entry = run_show(app.store, entry_id)
    if as_json:
        _json(entry)
    else:
        click.echo(render_entry(entry))


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option(
    "--type",
    "obs_type",
    type=click.Choice(OBSERVATION_TYPES),
    default="fact",
    show_default=True,
    help="What kind of memory this is.",
)
@click.option(
    "--importance",
    type=click.FloatRange(0.0, 1.0),
    default=0.6,
    show_default=True,
    help="0.9+ critical, 0.6 useful, 0.3 minor (rules may raise it).",
)
@click.option("--project", default=None, help="The project it is about.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@pass_app
def remember(app: App, text: tuple[str, ...], obs_type: str, importance: float,
             project: str | None, as_json: bool) -> None:  # fmt: skip
    """Add an observation by hand (redacted and de-duplicated like observed ones)."""
    from obsmem.observe.remember import remember as run_remember

    done = run_remember(app.store, " ".join(text), type=obs_type, importance=importance,
                        agent="cli", project=project)  # fmt: skip
    if as_json:
        _json(done.to_dict())
    elif done.added:
        click.echo(f"remembered {done.id}: {done.priority} {done.type} {done.text}")
    else:
        click.echo(f"already remembered as {done.duplicate_of}; nothing added")


@cli.command()
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on with --http (loopback only unless --allow-remote).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on with --http (0: any free port, announced on stderr).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host (the bearer token is still required).",
)
@pass_app
def mcp(app: App, http: bool, host: str, port: int, allow_remote: bool) -> None:
    """Serve the memory to MCP clients (Claude Code, Codex, ...): over stdio by default.

    Tools: search, get, timeline, context, remember, forget. With --http the server requires
    `Authorization: Bearer <OM_MCP_TOKEN>`; without that setting a token is generated and
    printed to stderr once. See docs/mcp.md for registering it with your agents.
    """
    from obsmem.mcp import run

    run(http=http, host=host, port=port, allow_remote=allow_remote, token=app.settings.mcp_token)

"""OpenClaw: sessions read by the scheduler, startup instructions in the workspace's AGENTS.md.

OpenClaw has no session hooks om can use, so its transcripts
(``$OPENCLAW_HOME/agents/<agent>/sessions/*.jsonl``) are read by the scheduled
``om observe --source all``; the orchestrator installs the scheduler whenever OpenClaw is chosen.

What the agent needs at start is what the original OpenClaw skill asked users to add to the
"Every Session" list of their ``AGENTS.md`` (read the observations and reflections files). om
writes its own block instead, between markers, in the workspace's ``AGENTS.md`` (OpenClaw injects
that file into every session): read ``profile.md`` and ``active.md`` at start, ``om search`` for
more. The workspace is ``$OPENCLAW_WORKSPACE``, else the ``workspace`` set in
``openclaw.json``, else ``$OPENCLAW_HOME/workspace``.
"""

from __future__ import annotations

import json
from pathlib import Path

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.edits import Edit, FileTarget, drop_block, has_block, set_block
from obsmem.integrations.scheduler import sessions_check
from obsmem.paths import agent_home, memory_dir

__all__ = ["BEGIN", "END", "checks", "detect", "plan_install", "plan_uninstall", "workspace"]

NAME = "openclaw"
BEGIN = "<!-- >>> om (managed by om install) >>> -->"
END = "<!-- <<< om <<< -->"
#: OpenClaw needs the scheduler: its sessions are read only by the scheduled observe.
NEEDS_SCHEDULER = True


def _configured_workspace(home: Path) -> str | None:
    """``agents.defaults.workspace`` (or the older ``agent.workspace``) from ``openclaw.json``."""
    try:
        data = json.loads((home / "openclaw.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        # Missing, unreadable, or JSON5 with comments: the default workspace applies.
        return None
    for path in (("agents", "defaults", "workspace"), ("agent", "workspace")):
        node: object = data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str) and node.strip():
            return node.strip()
    return None


def workspace(ctx: InstallContext) -> Path:
    """The OpenClaw workspace whose ``AGENTS.md`` every session reads."""
    home = agent_home(NAME, ctx.environ)
    chosen = ctx.environ.get("OPENCLAW_WORKSPACE") or _configured_workspace(home)
    if chosen:
        path = Path(chosen).expanduser()
        return path if path.is_absolute() else home / path
    return home / "workspace"


def _shown(path: Path, ctx: InstallContext) -> str:
    try:
        return f"~/{path.relative_to(ctx.home)}"
    except ValueError:
        return str(path)


def block_body(ctx: InstallContext) -> str:
    """The instructions om puts in the workspace's AGENTS.md."""
    memory = memory_dir(ctx.environ)
    # The agent's shell may lack the install's OM_HOME: say it in the command to run.
    om = ctx.with_paths_command(["om"])
    return "\n".join(
        [
            "## Memory (om)",
            "",
            "At the start of every session, read these two short files. They are your long-term",
            "memory of the user and their work, kept up to date by om from past sessions of every",
            "agent on this machine:",
            "",
            f"1. `{_shown(memory / 'profile.md', ctx)}`: who the user is, stable preferences",
            f"2. `{_shown(memory / 'active.md', ctx)}`: what is going on now (projects, recent",
            "   decisions, next steps)",
            "",
            "To recall more (a past decision, an error already solved), run",
            f'`{om} search "<words>"`',
            "(`--since YYYY-MM-DD`, `--project NAME` narrow it). Everything om remembers is in",
            f"`{_shown(memory, ctx)}`: `reflections.md` (long-term), `observations.md` (recent).",
            "om writes these files itself; do not edit `observations.md`.",
        ]
    )


def _agents_md(ctx: InstallContext) -> Path:
    return workspace(ctx) / "AGENTS.md"


def detect(ctx: InstallContext) -> bool:
    """True when OpenClaw's home (``$OPENCLAW_HOME``, ``~/.openclaw``) exists."""
    return agent_home(NAME, ctx.environ).is_dir()


def plan_install(ctx: InstallContext) -> Plan:
    """om's block in the workspace's AGENTS.md (replaced in place on a second install).

    A missing AGENTS.md is not created: OpenClaw writes its own default one into a new
    workspace on first run, and only when none exists, so creating it first would cost the user
    OpenClaw's default instructions.
    """
    path = _agents_md(ctx)
    target = FileTarget(path)
    before = target.read()
    plan = Plan(NAME, record={"agents_md": str(path)})
    if before is None:
        plan.notes.append(
            f"{path} does not exist yet (OpenClaw writes it when it first runs in that "
            "workspace): start OpenClaw once, then run om install --openclaw again"
        )
    else:
        after = set_block(before, BEGIN, END, block_body(ctx))
        plan.edits.append(Edit(target, before, after, why="om's startup instructions for OpenClaw"))
    plan.notes.append(
        f"OpenClaw sessions in {agent_home(NAME, ctx.environ) / 'agents'} are read by the "
        "scheduled om observe (the scheduler is installed with OpenClaw)"
    )
    return plan


def plan_uninstall(ctx: InstallContext) -> Plan:
    """The workspace's AGENTS.md without om's block, every other byte as it was."""
    path = Path(ctx.record.get("agents_md") or _agents_md(ctx))
    target = FileTarget(path)
    before = target.read()
    after = drop_block(before, BEGIN, END)
    return Plan(NAME, [Edit(target, before, after, why="remove om's block for OpenClaw")])


def checks(ctx: InstallContext) -> list[Check]:
    """om doctor: om's block is in the workspace's AGENTS.md, and the scheduler reads sessions."""
    path = Path(ctx.record.get("agents_md") or _agents_md(ctx))
    try:
        text = FileTarget(path).read()
    except IntegrationError as exc:
        return [
            Check("openclaw AGENTS.md", "fail", exc.message, exc.hint or ""),
            sessions_check(ctx, NAME, "OpenClaw"),
        ]
    if text is None:
        block = Check(
            "openclaw AGENTS.md",
            "warn",
            f"{path} does not exist yet",
            "start OpenClaw once (it writes AGENTS.md), then run: om install --openclaw",
        )
    elif not has_block(text, BEGIN, END):
        block = Check(
            "openclaw AGENTS.md",
            "fail",
            f"om's block is missing from {path}",
            "run: om install --openclaw",
        )
    else:
        block = Check("openclaw AGENTS.md", "ok", str(path))
    return [block, sessions_check(ctx, NAME, "OpenClaw")]

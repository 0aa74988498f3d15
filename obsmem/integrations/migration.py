"""Migration from the original ``observational-memory`` tool: its hooks and jobs replaced by om's.

The original tool (also a command named ``om``, Python package ``observational_memory``) left
entries that would keep running beside om and write the same memory files. ``om install`` runs
this step before installing anything, and removes:

- Claude Code hooks in ``settings.json``: its scripts
  (``.../observational_memory/hooks/claude/session-start.sh``, ``session-end.sh``, optionally run
  through ``bash``) and its commands ``om context`` and ``om claude-checkpoint``;
- Codex hooks in ``hooks.json`` (``om context``, ``om codex-checkpoint``) and its fallback block
  in Codex's ``AGENTS.md`` (between two ``<!-- observational-memory -->`` markers);
- cron: its block (``# --- observational-memory ---`` to ``# --- end observational-memory ---``)
  and loose lines running its ``om observe`` or ``om reflect``;
- launchd: its LaunchAgents ``com.intertwine.observational-memory.*`` (booted out, then deleted).

om's own entries are never taken for the original's: om's hooks always pass arguments the
original never used (``context --for``, ``hook ...``), and om's jobs live inside om's own block.

Some leftovers belong to other programs' configuration, so they are only reported, with how to
remove them (:func:`find_legacy` lists them for ``om doctor``): the Hermes memory-provider plugin
``observational_memory``, the OpenClaw skill's ``observer-memory`` / ``reflector-memory`` cron
jobs and its folder, and systemd units with ``observational-memory`` in their name (the original
tool never wrote any; one there was made by hand).

What was removed is recorded; ``om uninstall`` does not put it back (the memory files are shared,
and om reads them as they are), it only says what had been replaced.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations import jsonedit, scheduler_cron
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.edits import CrontabTarget, Edit, FileTarget
from obsmem.integrations.openclaw import workspace
from obsmem.integrations.scheduler_launchd import agents_dir
from obsmem.integrations.scheduler_systemd import units_dir
from obsmem.paths import agent_home

__all__ = ["checks", "detect", "find_legacy", "plan_install", "plan_uninstall"]

NAME = "migration"
LEGACY_LABEL = "com.intertwine.observational-memory."
CRON_BEGIN = "# --- observational-memory ---"
CRON_END = "# --- end observational-memory ---"
AGENTS_MARKER = "<!-- observational-memory -->"

_SCRIPT = re.compile(
    r"""^(?:(?:/usr)?(?:/bin/)?(?:ba)?sh\s+)?['"]?[^;&|'"]*"""
    r"""observational_memory/hooks/claude/session-(?:start|end)\.sh['"]?$"""
)
# A cron command running some `om observe` / `om reflect` (the original tool's loose lines).
_CRON_OM = re.compile(r"""(?:^|[\s;&|'"/])om['"]?\s+(?:observe|reflect)\b""")


@dataclass
class _Found:
    """Everything of the original tool's found: edits that remove it, and what is left to do."""

    edits: list[Edit] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    manual: list[str] = field(default_factory=list)


def _legacy_om(command: object, subcommands: tuple[str, ...]) -> bool:
    """True for exactly ``<dir>/om <subcommand>``, the shape the original tool wrote."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (
        len(words) == 2
        and Path(words[0]).name.lower().removesuffix(".exe") == "om"
        and words[1] in subcommands
    )


def _claude_legacy(command: object) -> bool:
    if isinstance(command, str) and _SCRIPT.match(command.strip()):
        return True
    return _legacy_om(command, ("context", "claude-checkpoint"))


def _codex_legacy(command: object) -> bool:
    return _legacy_om(command, ("context", "codex-checkpoint"))


def _hooks_of(data: Any) -> dict[str, Any]:
    hooks = data.get("hooks") if isinstance(data, dict) else None
    return hooks if isinstance(hooks, dict) else {}


def _strip_hooks(
    text: str, is_legacy: Callable[[object], bool]
) -> tuple[str, list[tuple[str, str]]]:
    """``text`` without the matching hooks; groups and event lists they leave empty go too."""
    removed: list[tuple[str, str]] = []
    for event, groups in _hooks_of(jsonedit.parse(text)).items():
        if not isinstance(groups, list):
            continue
        here = 0
        for g in range(len(groups) - 1, -1, -1):
            inner = groups[g].get("hooks") if isinstance(groups[g], dict) else None
            drop = [
                h
                for h, hook in enumerate(inner if isinstance(inner, list) else [])
                if isinstance(hook, dict) and is_legacy(hook.get("command"))
            ]
            if not drop or not isinstance(inner, list):
                continue
            here += len(drop)
            removed += [(event, str(inner[h].get("command"))) for h in drop]
            if len(drop) == len(inner):
                text = jsonedit.remove_element(text, _at(text, ["hooks", event]), g)
                continue
            for h in reversed(drop):
                text = jsonedit.remove_element(text, _at(text, ["hooks", event, g, "hooks"]), h)
        if here and not jsonedit.elements(text, _at(text, ["hooks", event])):
            text = jsonedit.remove_member(text, _at(text, ["hooks"]), event)
    if removed and not jsonedit.members(text, _at(text, ["hooks"])):
        text = jsonedit.remove_member(text, jsonedit.root_span(text), "hooks")
    return text, removed


def _at(text: str, path: list[str | int]) -> tuple[int, int]:
    span = jsonedit.locate(text, path)
    assert span is not None, path
    return span


def _json_hooks(path: Path, agent: str, is_legacy: Callable[[object], bool], found: _Found) -> None:
    target = FileTarget(path)
    before = target.read()
    if before is None or not before.strip():
        return
    try:
        after, removed = _strip_hooks(before, is_legacy)
    except ValueError as exc:
        found.manual.append(f"{path} could not be read as JSON ({exc}); check it by hand")
        return
    if removed:
        found.edits.append(
            Edit(target, before, after, why=f"remove the original om's {agent} hooks")
        )
        found.removed += [f"{agent} {event} hook `{cmd}` in {path}" for event, cmd in removed]


def _codex_agents_md(ctx: InstallContext, found: _Found) -> None:
    path = agent_home("codex", ctx.environ) / "AGENTS.md"
    target = FileTarget(path)
    before = target.read()
    if before is None:
        return
    start = before.find(AGENTS_MARKER)
    stop = before.find(AGENTS_MARKER, start + len(AGENTS_MARKER)) if start >= 0 else -1
    if stop < 0:
        return
    # The original wrote its block as "\n\n" + block + "\n" after the user's stripped text.
    head = before[:start].rstrip()
    tail = before[stop + len(AGENTS_MARKER) :].lstrip("\n")
    if head and tail.strip():
        after = f"{head}\n\n{tail}"
    elif head:
        after = head + "\n"
    else:
        after = tail
    found.edits.append(Edit(target, before, after, why="remove the original om's Codex block"))
    found.removed.append(f"the original om's instructions block in {path}")


def _cron_lines(text: str) -> tuple[str, list[str]]:
    """The crontab without the original tool's block and loose job lines, and what went."""
    lines = text.splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    drop: set[int] = set()
    i = 0
    while i < len(lines):
        if stripped[i] == CRON_BEGIN and CRON_END in stripped[i + 1 :]:
            end = stripped.index(CRON_END, i + 1)
            drop.update(range(i, end + 1))
            i = end
        i += 1
    ours = False
    for i, line in enumerate(stripped):
        if line in (scheduler_cron.BEGIN, scheduler_cron.END):
            ours = line == scheduler_cron.BEGIN
            continue
        if line in (CRON_BEGIN, CRON_END):
            drop.add(i)  # a marker left without its pair
        elif not ours and not line.startswith("#") and _CRON_OM.search(line):
            drop.add(i)
    removed = [stripped[i] for i in sorted(drop) if stripped[i] and not stripped[i].startswith("#")]
    return "".join(line for i, line in enumerate(lines) if i not in drop), removed


def _crontab(ctx: InstallContext, found: _Found) -> None:
    target = CrontabTarget(ctx.environ)
    try:
        before = target.read()
    except IntegrationError:
        return  # no cron here: nothing of the original's can run through it
    if before is None:
        return
    after, removed = _cron_lines(before)
    if after != before:
        found.edits.append(Edit(target, before, after, why="remove the original om's cron jobs"))
        found.removed += [f"cron job `{line}`" for line in removed]


def _launchd(ctx: InstallContext, found: _Found) -> None:
    folder = agents_dir(ctx)
    if not folder.is_dir():
        return
    for path in sorted(folder.glob(f"{LEGACY_LABEL}*.plist")):
        label = path.name.removesuffix(".plist")
        try:
            before = FileTarget(path).read()
        except IntegrationError:
            found.manual.append(f"LaunchAgent {label}: remove {path} by hand")
            continue
        bootout = ("launchctl", "bootout", f"gui/{os.getuid()}/{label}")
        found.edits.append(
            Edit(FileTarget(path), before, None, why=f"remove LaunchAgent {label}", then=(bootout,))
        )
        found.removed.append(f"LaunchAgent {label}")


def _reported(ctx: InstallContext, found: _Found) -> None:
    """Leftovers in other programs' configuration: said, never changed."""
    units = units_dir(ctx)
    if units.is_dir():
        for path in sorted(units.glob("*observational-memory*")):
            found.manual.append(
                f"systemd unit {path.name} (not written by om: disable and remove it by hand)"
            )
    plugin = agent_home("hermes", ctx.environ) / "plugins" / "observational_memory"
    if plugin.is_dir():
        found.manual.append(
            "Hermes memory provider observational_memory, which writes beside om (run hermes "
            f"memory setup and choose built-in memory, then remove {plugin})"
        )
    openclaw = agent_home("openclaw", ctx.environ)
    for name in _openclaw_jobs(openclaw / "cron" / "jobs.json"):
        found.manual.append(
            f"OpenClaw cron job {name} of the original skill (run: openclaw cron delete {name})"
        )
    for skill in (openclaw / "skills", workspace(ctx) / "skills"):
        if (skill / "observational-memory").is_dir():
            found.manual.append(
                f"the original OpenClaw skill in {skill / 'observational-memory'} (remove it)"
            )


def _openclaw_jobs(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    jobs = data.get("jobs") if isinstance(data, dict) else data
    names = {job.get("name") for job in jobs or [] if isinstance(job, dict)}
    return sorted(n for n in names if n in ("observer-memory", "reflector-memory"))


def _scan(ctx: InstallContext) -> _Found:
    found = _Found()
    claude = agent_home("claude", ctx.environ) / "settings.json"
    _json_hooks(claude, "Claude Code", _claude_legacy, found)
    codex = agent_home("codex", ctx.environ) / "hooks.json"
    _json_hooks(codex, "Codex", _codex_legacy, found)
    _codex_agents_md(ctx, found)
    _crontab(ctx, found)
    _launchd(ctx, found)
    _reported(ctx, found)
    return found


def find_legacy(ctx: InstallContext) -> list[str]:
    """What of the original tool is still active, one human-readable line each (for om doctor)."""
    found = _scan(ctx)
    return found.removed + found.manual


def detect(ctx: InstallContext) -> bool:
    """True when anything of the original tool is still active."""
    return bool(find_legacy(ctx))


def plan_install(ctx: InstallContext) -> Plan:
    """Edits removing the original tool's hooks and jobs; the record keeps what they removed."""
    found = _scan(ctx)
    before = [str(item) for item in ctx.record.get("removed", [])]
    removed = before + [item for item in found.removed if item not in before]
    plan = Plan(NAME, found.edits, record={"removed": removed} if removed else None)
    plan.notes += [f"replaced the original observational-memory's {item}" for item in found.removed]
    if found.removed:
        plan.notes.append("the original tool's memory files are kept and read by om as they are")
    plan.notes += [f"left for you: {item}" for item in found.manual]
    return plan


def plan_uninstall(ctx: InstallContext) -> Plan:
    """Nothing is put back: the original tool's entries stay removed (om said what it replaced)."""
    plan = Plan(NAME, record=None)
    removed = list(ctx.record.get("removed", []))
    if removed:
        plan.notes.append(
            f"not restored ({len(removed)} item(s) of the original observational-memory tool "
            "that om install replaced): reinstall that tool if you want them back"
        )
    return plan


def checks(ctx: InstallContext) -> list[Check]:
    """om doctor: nothing of the original tool is still active."""
    found = find_legacy(ctx)
    if not found:
        return [Check("original om", "ok", "no hooks or jobs of the original tool are active")]
    return [
        Check(
            "original om",
            "warn",
            f"still active: {'; '.join(found)}",
            "run: om install (it replaces them), and do what each item says",
        )
    ]

"""``om context``: the hot path of every session start. Read prepared data, choose, print.

Imports only the standard library and ``obsmem.paths``: no click, no LLM SDK, no numpy, no
parser. The prepared ``context.json`` (written by ``obsmem.context.prepare``) holds entries with
their section, importance, date and project; this module picks what fits the budget by importance,
recency and relevance to the project of the working directory, and renders it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_BUDGET",
    "SECTION_ORDER",
    "ContextEntry",
    "build_context",
    "hook_output",
    "load_entries",
    "project_for",
]

DEFAULT_BUDGET = 6000
CHARS_PER_TOKEN = 4
#: Sections in the order a reader meets them; anything else goes last.
SECTION_ORDER = ("About the user", "This project", "Active projects", "Open loops", "Recent")
FOOTER = (
    "Search for more of what you remember about this user and their work: run "
    '`om search "<words>"` in a shell (add `--json` for ids, files and sources), or call the '
    "`search` tool of the `om` MCP server when it is available."
)


@dataclass(frozen=True)
class ContextEntry:
    """One line the startup context may include."""

    section: str
    text: str
    importance: float = 0.5
    date: str | None = None
    project: str | None = None
    id: str | None = None
    observed: bool = False  # from an observation (its date is when it happened)


def load_entries(path: Path) -> tuple[list[ContextEntry], str | None]:
    """The prepared entries and when they were prepared; ([], None) when there is no file yet."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return [], None
    entries: list[ContextEntry] = []
    for item in data.get("entries", []) if isinstance(data, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            entries.append(
                ContextEntry(
                    section=str(item.get("section") or "Recent"),
                    text=item["text"],
                    importance=float(item.get("importance") or 0.5),
                    date=item.get("date"),
                    project=item.get("project"),
                    id=item.get("id"),
                    observed=bool(item.get("observed")),
                )
            )
    return entries, data.get("generated_at") if isinstance(data, dict) else None


def project_for(cwd: str | None) -> str | None:
    """The project name of a working directory: its git repository's folder, else its own name."""
    if not cwd:
        return None
    path = Path(cwd)
    try:
        for candidate in (path, *path.parents):
            if (candidate / ".git").exists():
                return candidate.name or None
            if str(candidate) == os.path.expanduser("~"):
                break
    except OSError:
        pass
    return path.name or None


def _tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def _score(entry: ContextEntry, project: str | None, today: date) -> float:
    score = entry.importance
    if entry.date:
        try:
            age = (today - date.fromisoformat(entry.date[:10])).days
        except ValueError:
            age = 30
        score += 0.4 * math.exp(-max(age, 0) / 7)  # last week's work matters most
    if project and (
        (entry.project or "").lower() == project.lower() or project.lower() in entry.text.lower()
    ):
        score += 0.6
    if entry.section == "About the user":
        score += 0.5  # who the user is applies to every session
    return score


def build_context(
    entries: list[ContextEntry],
    *,
    budget: int = DEFAULT_BUDGET,
    project: str | None = None,
    today: date | None = None,
) -> str:
    """Markdown that fits ``budget`` tokens: the best entries by importance, recency and relevance
    to ``project``, grouped by section, ending with how to search for more."""
    today = today or date.today()
    header = "# What om remembers\n"
    used = _tokens(header) + _tokens(FOOTER) + 10
    chosen: list[ContextEntry] = []
    seen: set[str] = set()
    ranked = sorted(entries, key=lambda e: _score(e, project, today), reverse=True)
    for entry in ranked:
        section = _section_of(entry, project)
        key = " ".join(entry.text.lower().split())
        if key in seen:
            continue
        cost = (
            _tokens(entry.text)
            + 3
            + (_tokens(section) + 2 if not _has(chosen, section, project) else 0)
        )
        if used + cost > budget:
            continue
        seen.add(key)
        chosen.append(entry)
        used += cost
    groups: dict[str, list[ContextEntry]] = {}
    for entry in chosen:
        groups.setdefault(_section_of(entry, project), []).append(entry)
    parts = [header]
    order = [s for s in SECTION_ORDER if s in groups] + [
        s for s in groups if s not in SECTION_ORDER
    ]
    for section in order:
        title = f"This project ({project})" if section == "This project" and project else section
        parts.append(f"\n## {title}\n")
        for entry in groups[section]:
            # Dates only where they are the date of an event; elsewhere they mislead.
            when = f"{entry.date[:10]}: " if entry.date and entry.observed else ""
            parts.append(f"- {when}{entry.text}\n")
    if not chosen:
        parts.append("\nNothing remembered yet.\n")
    parts.append(f"\n{FOOTER}\n")
    return "".join(parts)


def _section_of(entry: ContextEntry, project: str | None) -> str:
    if (
        project
        and entry.section in ("Active projects", "Recent", "Open loops")
        and (entry.project or "").lower() == project.lower()
    ):
        return "This project"
    return entry.section


def _has(chosen: list[ContextEntry], section: str, project: str | None) -> bool:
    return any(_section_of(e, project) == section for e in chosen)


def hook_output(agent: str, text: str) -> str:
    """What the agent's SessionStart hook expects on stdout.

    Claude Code and Codex both read ``hookSpecificOutput.additionalContext`` (Codex validates the
    shape strictly, ``hookEventName`` included); ``plain`` is the markdown itself.
    """
    if agent == "plain":
        return text
    payload: Mapping[str, Any] = {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}
    }
    return json.dumps(payload, ensure_ascii=False)


AGENTS = ("claude", "codex", "plain")


def run_context(
    agent: str = "plain",
    *,
    cwd: str | None = None,
    budget: int = DEFAULT_BUDGET,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Everything ``om context`` prints: the startup context for ``cwd`` in ``agent``'s format.

    Reads the prepared ``context.json``; when there is none yet (a memory directory never
    observed since om was installed), prepares it once, which is slower but only happens once.
    """
    from obsmem import paths

    path = paths.context_path(environ)
    entries, _ = load_entries(path)
    if not entries and not path.exists() and paths.memory_dir(environ).is_dir():
        from obsmem.context.prepare import prepare_context
        from obsmem.memory.store import MemoryStore

        entries = prepare_context(MemoryStore(environ=environ)).entries
    project = project_for(cwd if cwd is not None else os.getcwd())
    return hook_output(agent, build_context(entries, budget=budget, project=project))


def fast_main(argv: list[str]) -> int | None:
    """``om context`` without click: parse the few options by hand and print.

    Returns the exit status, or None when the arguments need the full command line (help, an
    unknown option, a bad value): click then explains the problem properly. At a session start
    nothing may break the agent: an unexpected error still prints a valid, empty hook reply.
    """
    options = {"--for": "plain", "--cwd": None, "--budget": str(DEFAULT_BUDGET)}
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, sep, value = arg.partition("=")
        if name not in options:
            return None
        if not sep:
            if not args:
                return None
            value = args.pop(0)
        options[name] = value
    agent, budget = options["--for"] or "plain", options["--budget"] or ""
    if agent not in AGENTS or not budget.isdigit() or int(budget) < 200:
        return None
    try:
        text = run_context(agent, cwd=options["--cwd"], budget=int(budget))
    except Exception as exc:
        import sys

        print(f"om: context unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        text = hook_output(agent, "")
    print(text)
    return 0

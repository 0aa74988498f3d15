"""``om context``: read prepared data, choose, print. Session starts are served from what
``obsmem.context.rendered`` rendered ahead with this module's ``build_context``; this is the path
for everything else (another budget, day or project, or a memory changed since), and it must stay
quick too.

Imports only the standard library and ``obsmem.paths``: no click, no LLM SDK, no numpy, no
parser, not even ``dataclasses``, ``typing``, ``datetime`` or ``pathlib`` (each costs
milliseconds that every session start would pay).
The prepared ``context.json`` (written by ``obsmem.context.prepare``) holds entries with their
section, importance, date and project; this module picks what fits the budget by importance,
recency and relevance to the project of the working directory, and renders it the way a
colleague would brief someone: the project first (what it is, its decisions, where the last
session stopped, what is still open), then the user, then recent work, with dates relative to
today and other projects' entries labelled with their project.
"""

from __future__ import annotations

import json
import math
import os

from obsmem.context.rendered import (
    AGENTS,
    DEFAULT_BUDGET,
    Request,
    project_for,
    stdin_cwd,
)
from obsmem.context.when import ago, ordinal, today_ordinal, with_plan

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import date
    from pathlib import Path
    from typing import Any

__all__ = [
    "ABOUT",
    "AGENTS",
    "DECISIONS",
    "DEFAULT_BUDGET",
    "LAST",
    "LOOPS",
    "PROJECT",
    "RECENT",
    "SECTION_ORDER",
    "ContextEntry",
    "answer",
    "build_context",
    "hook_output",
    "load_entries",
    "project_for",
    "run_context",
    "startup_entries",
    "stdin_cwd",
]

CHARS_PER_TOKEN = 4

#: Prepared sections (``ContextEntry.section``).
ABOUT = "About the user"
PROJECT = "Project"  # what a project is: purpose, stack, architecture, lessons about it
DECISIONS = "Decisions"
LAST = "Last time here"  # the latest Current Context of a project: task, next step, questions
LOOPS = "Open loops"
RECENT = "Recent work"
ACTIVE = "Active projects"  # hand-written lines of active.md, and older prepared files

#: Rendered sections in the order a reader meets them; anything else goes last.
SECTION_ORDER = (
    "This project",
    DECISIONS,
    LAST,
    LOOPS,
    ABOUT,
    RECENT,
    "Other projects",
)
#: Sections whose dates are the date of an event, shown relative to today.
_DATED = (DECISIONS, LOOPS, RECENT, "Recent")
FOOTER = (
    "Search for more of what you remember about this user and their work: run "
    '`om search "<words>"` in a shell (add `--json` for ids, files and sources), or call the '
    "`search` tool of the `om` MCP server when it is available."
)
#: Most lines about other projects in the context of a project memory knows.
OTHER_LINES = 12


class ContextEntry:
    """One line the startup context may include.

    ``observed``: from an observation (its date is when it happened); ``kind``: the
    observation type when known; ``planned``: the date a plan is for; ``seen``: how many
    observations confirm it (a reflection's citations).
    """

    __slots__ = (
        "date",
        "id",
        "importance",
        "kind",
        "observed",
        "planned",
        "project",
        "section",
        "seen",
        "text",
    )

    def __init__(
        self,
        section: str,
        text: str,
        importance: float = 0.5,
        date: str | None = None,
        project: str | None = None,
        id: str | None = None,
        observed: bool = False,
        kind: str | None = None,
        planned: str | None = None,
        seen: int = 1,
    ) -> None:
        self.section = section
        self.text = text
        self.importance = importance
        self.date = date
        self.project = project
        self.id = id
        self.observed = observed
        self.kind = kind
        self.planned = planned
        self.seen = seen

    def as_dict(self) -> dict[str, Any]:
        """The entry as ``context.json`` stores it."""
        return {name: getattr(self, name) for name in _FIELDS}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContextEntry):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ContextEntry({self.section!r}, {self.text!r}, project={self.project!r})"


_FIELDS = (
    "section",
    "text",
    "importance",
    "date",
    "project",
    "id",
    "observed",
    "kind",
    "planned",
    "seen",
)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def load_entries(path: str | Path) -> tuple[list[ContextEntry], str | None]:
    """The prepared entries and when they were prepared; ([], None) when there is no file yet."""
    try:
        with open(path, "rb") as file:
            data = json.loads(file.read())
    except (OSError, ValueError):
        return [], None
    if not isinstance(data, dict):
        return [], None
    entries: list[ContextEntry] = []
    items = data.get("entries")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        try:
            importance = float(item.get("importance") or 0.5)
            seen = int(item.get("seen") or 1)
        except (TypeError, ValueError):
            importance, seen = 0.5, 1
        entries.append(
            ContextEntry(
                str(item.get("section") or RECENT),
                item["text"],
                importance,
                _str(item.get("date")),
                _str(item.get("project")),
                _str(item.get("id")),
                bool(item.get("observed")),
                _str(item.get("kind")),
                _str(item.get("planned")),
                seen,
            )
        )
    return entries, _str(data.get("generated_at"))


def _tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def _same(a: str | None, b: str | None) -> bool:
    return bool(a and b and a.casefold() == b.casefold())


def _key(project: str | None) -> str:
    return _KEYS.get(project) or _KEYS.setdefault(project, project.casefold()) if project else ""


_KEYS: dict[str, str] = {}


class _Plan:
    """How one context is laid out: the project, today, the memory's own last day."""

    def __init__(self, entries: list[ContextEntry], project: str | None, today: int) -> None:
        self.project = project
        self.today = today
        days = [d for d in (ordinal(e.date) for e in entries) if d is not None and d <= today]
        # Recency runs from the memory's last activity, so months-old history ranks as it did.
        self.anchor = max(days, default=today)
        known = {e.project.casefold() for e in entries if e.project}
        self.key = _key(project)
        # A project memory knows: its lines first, other projects' only a few.
        self.focused = bool(project) and self.key in known
        last = [e for e in entries if e.section == LAST]
        mine = [e for e in last if _same(e.project, project)]
        self.last_key: str | None = None  # whose last session this context shows
        if mine:
            self.last_key = _key(project)
        elif not (project and project.casefold() in known) and last:
            # A directory memory knows nothing of: where the user stopped last, anywhere.
            self.last_key = _key(max(last, key=lambda e: e.date or "").project)
        shown = [e for e in last if _key(e.project) == self.last_key]
        self.last_project = shown[0].project if shown else None
        self.last_date = max((e.date or "" for e in shown), default="")

    def ours(self, entry: ContextEntry) -> bool:
        return entry.project is not None and bool(self.key) and _key(entry.project) == self.key

    def other(self, entry: ContextEntry) -> bool:
        """True for a line about another project than this directory's (a known one)."""
        return self.focused and bool(entry.project) and not self.ours(entry)

    def section(self, entry: ContextEntry) -> str | None:
        """The rendered section of ``entry``; None when it does not belong in this context."""
        kind = entry.section
        if kind == LAST:
            return LAST if _key(entry.project) == self.last_key else None
        if kind in (PROJECT, ACTIVE, "This project") or (kind == DECISIONS and entry.project):
            if self.project and self.ours(entry):
                return "This project" if kind != DECISIONS else DECISIONS
            return "Other projects"
        if kind == "Recent":
            return RECENT
        return kind

    def score(self, entry: ContextEntry) -> float:
        score = entry.importance + 0.05 * min(entry.seen - 1, 4)
        day = ordinal(entry.date)
        if day is not None:
            score += 0.4 * math.exp(-max(self.anchor - day, 0) / 7)  # last week's work first
        if self.key and (self.ours(entry) or self.key in entry.text.casefold()):
            score += 0.6
        if entry.section == LAST:
            score += 1.0  # where the last session stopped is what a returning user needs
        elif entry.section == ABOUT:
            score += 0.5  # who the user is applies to every session
        elif entry.section == LOOPS:
            score += 0.3  # what is still open comes before what was done
        return score

    def line(self, entry: ContextEntry, section: str) -> str:
        text = with_plan(entry.text, entry.planned, self.today) if entry.planned else entry.text
        if section in _DATED and entry.observed and entry.date:
            text = f"{ago(entry.date, self.today)}: {text}"
        if entry.project and not self.ours(entry) and section != LAST:
            text = f"[{entry.project}] {text}"
        return f"- {text}\n"

    def title(self, section: str) -> str:
        if section == "This project":
            return f"This project ({self.project})"
        if section == "Other projects" and not self.project:
            return "Projects"
        if section == LAST:
            when = f"{self.last_date}, {ago(self.last_date, self.today)}" if self.last_date else ""
            if not _same(self.last_project, self.project):
                if self.last_project:
                    when = f"{self.last_project}, {when}" if when else self.last_project
                return f"Last session ({when})" if when else "Last session"
            return f"{LAST} ({when})" if when else LAST
        return section


def build_context(
    entries: list[ContextEntry],
    *,
    budget: int = DEFAULT_BUDGET,
    project: str | None = None,
    today: date | None = None,
) -> str:
    """Markdown that fits ``budget`` tokens: the best entries by importance, recency and relevance
    to ``project``, grouped by section, ending with how to search for more."""
    plan = _Plan(entries, project, today_ordinal(today))
    header = "# What om remembers\n"
    used = _tokens(header) + _tokens(FOOTER) + 10
    groups: dict[str, list[str]] = {}
    seen: set[str] = set()
    others = 0
    for entry in sorted(entries, key=plan.score, reverse=True):
        if budget - used < 4:
            break  # not even the shortest line fits any more
        if used + len(entry.text) // CHARS_PER_TOKEN + 2 > budget:
            continue  # too long for what is left, whatever its section and label
        section = plan.section(entry)
        if section is None:
            continue
        other = plan.other(entry)
        if other and others >= OTHER_LINES:
            continue
        key = " ".join(entry.text.casefold().split())
        if key in seen:
            continue
        line = plan.line(entry, section)
        cost = _tokens(line) + 1
        if section not in groups:
            cost += _tokens(plan.title(section)) + 2
        if used + cost > budget:
            continue
        seen.add(key)
        groups.setdefault(section, []).append(line)
        used += cost
        others += other
    parts = [header]
    order = [s for s in SECTION_ORDER if s in groups] + [
        s for s in groups if s not in SECTION_ORDER
    ]
    for section in order:
        parts.append(f"\n## {plan.title(section)}\n")
        parts.extend(groups[section])
    if not groups:
        parts.append("\nNothing remembered yet.\n")
    parts.append(f"\n{FOOTER}\n")
    return "".join(parts)


def hook_output(agent: str, text: str) -> str:
    """What the agent's SessionStart hook expects on stdout.

    Claude Code and Codex both read ``hookSpecificOutput.additionalContext`` (Codex validates the
    shape strictly, ``hookEventName`` included); ``plain`` is the markdown itself.
    """
    if agent == "plain":
        return text
    payload = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return json.dumps(payload, ensure_ascii=False)


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
    ``cwd`` None means the process's own directory (the command line first looks at the hook's
    payload on stdin, see ``stdin_cwd``).
    """
    project = project_for(cwd if cwd is not None else os.getcwd())
    entries = startup_entries(environ)
    return hook_output(agent, build_context(entries, budget=budget, project=project))


def startup_entries(environ: Mapping[str, str] | None = None) -> list[ContextEntry]:
    """What a startup context is chosen from: the prepared ``context.json``, prepared once when
    a memory directory has none yet (slower, but only the first time)."""
    from obsmem import paths

    path = paths.context_file(environ)
    entries, _ = load_entries(path)
    if not entries and not os.path.exists(path) and paths.memory_dir(environ).is_dir():
        from obsmem.context.prepare import prepare_context
        from obsmem.memory.store import MemoryStore

        entries = prepare_context(MemoryStore(environ=environ)).entries
    return entries


def answer(asked: Request) -> int:
    """Print ``run_context``'s answer to ``asked`` and return the exit status (0).

    At a session start nothing may break the agent: an unexpected error still prints a valid,
    empty hook reply, and says why on stderr."""
    try:
        if asked.error is not None:
            raise asked.error
        text = run_context(asked.agent, cwd=asked.cwd, budget=asked.budget)
    except Exception as exc:
        import sys

        print(f"om: context unavailable: {type(exc).__name__}: {exc}", file=sys.stderr)
        text = hook_output(asked.agent, "")
    print(text)
    return 0

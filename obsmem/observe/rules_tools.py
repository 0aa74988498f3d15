"""What tool calls and their outcomes are worth remembering, and what is routine.

Each outcome is paired with its own call: by the command an outcome quotes (Codex writes
``\\`npm test\\` exited 1``), else by the tool it names (``Write error: ...`` answers the last
unanswered ``Write`` call), else with the call just before it. Kept:

- a command that failed, with its real error line (not ``Exit code 1`` or ``Traceback (most
  recent call last):``), once however often it was repeated; a lesson when the same command
  later succeeds;
- a test run that passed (the runner's own counts: the evidence a milestone needs);
- the files written, without those whose write was rejected by the user or refused (a
  permission not granted), which are said to be not written.

Dropped as routine exploration: a read of a file not read yet or not there, a search with no
match, ``ls``/``cat``/``find``/``grep`` on a missing path, a tool called with a missing argument,
and every failure of a tool that only looks (Read, Glob, Grep, LS, TodoWrite, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from obsmem.observe.draft import Draft
from obsmem.observe.rules_text import shorten
from obsmem.sources.model import Turn

__all__ = ["ToolFindings", "activity", "error_line", "open_tasks", "planning", "read_tools"]

_CHANGE = re.compile(
    r"^(?:Edit|MultiEdit|Write|NotebookEdit|Patch|apply_patch|write_file|write|edit|patch"
    r"|str_replace_editor|create_file)\s*:\s*(.+)$"
)
_DESCRIPTION = re.compile(r"\s+\([^()]*\)$")
_TOOL_PREFIX = re.compile(r"^([\w.-]+)(?: error| exit -?\d+| interrupted| rejected by user)?:\s*")
_QUOTED = re.compile(r"^`([^`]+?)(?:…)?`")
_FAILED = re.compile(
    r"\b(?:error|failed|failure|exception|traceback|exit(?:ed)? (?:code |status )?[1-9]\d*"
    r"|fatal|denied|panic)\b",
    re.IGNORECASE,
)
_COUNTS = re.compile(r"\b(\d+) (passed|passing)\b", re.IGNORECASE)
_BAD_COUNTS = re.compile(r"\b([1-9]\d*) (?:failed|failing|errors?)\b", re.IGNORECASE)
_REJECTED = re.compile(r"\brejected by user\b|\binterrupted by user\b")
_REFUSED = re.compile(
    r"requested permissions? to|haven'?t granted|permission (?:was )?denied|not permitted"
    r"|operation not permitted|read-only file system",
    re.IGNORECASE,
)
#: Tools that only look: their failures are part of finding one's way, not events.
_LOOKING_TOOLS = frozenset(
    {
        "Read",
        "Glob",
        "Grep",
        "LS",
        "NotebookRead",
        "TodoWrite",
        "TodoRead",
        "update_plan",
        "read",
        "read_file",
        "list_dir",
        "search",
        "grep",
        "glob",
        "WebSearch",
        "ToolSearch",
    }
)
_LOOKING_COMMAND = re.compile(
    r"^(?:cd \S+ && )?(?:ls|lsd|ll|find|fd|grep|egrep|rg|ag|cat|bat|head|tail|sed -n|nl|stat"
    r"|tree|wc|file|which|type|pwd|echo|git (?:status|diff|log|show|branch|remote))\b"
)
_ROUTINE_ERROR = re.compile(
    r"File has not been read yet|File does not exist|No such file or directory"
    r"|no matches found|No files found|Directory not found|does not exist"
    r"|InputValidationError|required parameter|tool_use_error|is not a directory"
    r"|File content \(\d+ tokens\) exceeds|exceeds maximum allowed|String to replace not found"
    r"|Found \d+ matches of the string to replace",
    re.IGNORECASE,
)
#: Lines that open an error without saying what it is.
_BOILERPLATE = re.compile(
    r"^(?:exit(?:ed)? (?:code|status)? ?-?\d+:?|exited -?\d+|Traceback \(most recent call last\):"
    r"|error:?|errors?:|command failed.*|npm (?:ERR!|error) (?:code|path|errno|syscall).*"
    r"|npm (?:ERR!|error) A complete log.*|\s*at .*|={3,}.*|-{3,}.*|>.*|\d+ (?:failed|passed).*)$",
    re.IGNORECASE,
)
_NAMED_ERROR = re.compile(r"\b\w*(?:Error|Exception)\b:|^error(?:\[\w+\])?:|\bfatal:", re.I)
_ERROR_LINE = re.compile(
    r"\b\w*(?:Error|Exception|Failure)\b|\berror\b|\bFAIL(?:ED)?\b|\bfatal\b|\bpanic\b"
    r"|\bcannot\b|\bcan't\b|\bnot found\b|\bdenied\b|\bundefined\b",
)


#: Importance of a failure that blocks: 🔴 (``obsmem.memory.model.priority_for``).
BLOCKING = 0.8


@dataclass
class _Call:
    turn: Turn
    tool: str
    command: str
    answered: bool = False


@dataclass
class ToolFindings:
    """What the tool turns of a run said: drafts, the files changed, the files not written."""

    drafts: list[Draft] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def _tool_of(action: str) -> str:
    match = re.match(r"^([\w.-]+)\s*:", action)
    return match.group(1) if match else action.split(" ", 1)[0]


def _command_of(action: str) -> str:
    """``Bash: npm test (Run tests)`` -> ``npm test``: a retried command is the same command
    whatever the agent called it the second time."""
    return _DESCRIPTION.sub("", re.sub(r"^[\w.-]+\s*:\s*", "", action.strip(), count=1)).strip()


def _pair(outcome: Turn, calls: list[_Call]) -> _Call | None:
    """The call ``outcome`` answers: by the command it quotes, the tool it names, or the last."""
    text = outcome.text.strip()
    open_calls = [c for c in calls if not c.answered]
    quoted = _QUOTED.match(text)
    if quoted:
        # The command quoted is the surest link: the call still waiting first, else the latest.
        start = quoted.group(1)
        for call in [*open_calls, *reversed(calls)]:
            if call.command.startswith(start) or start.startswith(call.command):
                return call
    named = _TOOL_PREFIX.match(text)
    if named:
        for call in open_calls:
            if call.tool == named.group(1):
                return call
    if open_calls:
        return open_calls[-1]
    return calls[-1] if calls else None


def error_line(text: str) -> str:
    """The line of a failure's output that says what went wrong (not the exit code banner)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    first = _TOOL_PREFIX.sub("", lines[0], count=1)
    first = _QUOTED.sub("", first).strip(" :")
    first = re.sub(r"^exited -?\d+:?\s*", "", first)
    candidates = [first, *lines[1:]] if first else lines[1:]
    for pattern in (_NAMED_ERROR, _ERROR_LINE):
        for line in candidates:
            if not _BOILERPLATE.match(line) and pattern.search(line):
                return line
    for line in candidates:
        if not _BOILERPLATE.match(line):
            return line
    return first or lines[0]


def _routine(call: _Call, outcome: str) -> bool:
    if call.tool in _LOOKING_TOOLS or call.tool.startswith("mcp__"):
        return True
    if _LOOKING_COMMAND.match(call.command):
        return True
    return _ROUTINE_ERROR.search(outcome) is not None and not _REFUSED.search(outcome)


def _passed(text: str) -> str | None:
    """The counts of a test run that passed (``16 passed``), None when it did not pass."""
    if _BAD_COUNTS.search(text):
        return None
    match = _COUNTS.search(text)
    if match is None:
        return None
    counts = text[match.start() :].splitlines()[0]
    return counts.strip(" .")


_TODO_LIST = re.compile(r"^(?:TodoWrite|update_plan|todo_write|todowrite)\s*:\s*(.+)$", re.I)
_TODO_ITEM = re.compile(r"\[([ x>])\]\s*([^;]+)")


def open_tasks(turns: list[Turn]) -> Draft | None:
    """The agent's own task list as it last wrote it, when some of it is still to do."""
    last = next(
        (t for t in reversed(turns) if t.role == "action" and _TODO_LIST.match(t.text.strip())),
        None,
    )
    if last is None:
        return None
    after = turns[turns.index(last) + 1 :]
    if any(t.role == "assistant" and len(t.text) >= 200 for t in after):
        return None  # a recap came after the list: it says better what is left
    items = _TODO_ITEM.findall(_TODO_LIST.match(last.text.strip()).group(1))  # type: ignore[union-attr]
    doing = [text.strip(" …") for mark, text in items if mark == ">"]
    todo = [text.strip(" …") for mark, text in items if mark == " "]
    if not doing and not todo:
        return None
    parts = ([f"in progress: {'; '.join(doing)}"] if doing else []) + (
        [f"to do: {'; '.join(todo)}"] if todo else []
    )
    return Draft(shorten("Open tasks, " + "; ".join(parts)), "task", 0.55, 0.8, [last])


_READING = frozenset({"Read", "read", "read_file", "NotebookRead", "view", "cat", "WebFetch"})
_SEARCHING = frozenset({"Grep", "Glob", "LS", "grep", "glob", "search", "list_dir", "WebSearch"})
_DELEGATING = frozenset({"Task", "Agent", "spawn_agent", "delegate_task", "sessions_spawn"})
_PLANNING = frozenset({"TodoWrite", "update_plan", "todo_write", "todowrite"})


def planning(action: str) -> bool:
    """True for a call that only writes the agent's own task list (TodoWrite, update_plan)."""
    return _tool_of(action.strip()) in _PLANNING


def activity(action: str) -> str:
    """What the agent was doing with one call, as the end of "the agent was ...":
    ``Read: README.md`` -> ``reading README.md``, ``Bash: npm test (Run)`` -> ``running `npm
    test```."""
    tool = _tool_of(action.strip())
    what = shorten(_command_of(action), 100)
    if not what or what == tool:
        return f"calling {tool}"
    if _CHANGE.match(action.strip()):
        return f"editing {what}"
    if tool in _READING:
        return f"reading {what}"
    if tool in _SEARCHING:
        return f"searching ({what})"
    if tool in _DELEGATING:
        return f"waiting on a sub-agent ({what})"
    if planning(action):
        return "updating its task list"
    if tool in ("Bash", "Shell", "shell", "exec", "exec_command", "terminal", "run_command"):
        return f"running `{what}`"
    return f"calling {tool} ({what})"


def read_tools(turns: list[Turn]) -> ToolFindings:
    """The failures, fixes, passing test runs and file changes of a run of turns."""
    found = ToolFindings()
    calls: list[_Call] = []
    failures: dict[str, tuple[_Call, Turn, str, int]] = {}
    passes: dict[str, tuple[_Call, Turn, str]] = {}
    written: dict[str, bool] = {}  # path -> written (False while only refused)
    for turn in turns:
        if turn.role == "user" and not turn.subagent:
            calls = [c for c in calls if not c.answered][-8:]
        if turn.role == "action":
            action = turn.text.strip()
            calls.append(_Call(turn, _tool_of(action), _command_of(action)))
            change = _CHANGE.match(action)
            if change:
                written[_DESCRIPTION.sub("", change.group(1)).strip()] = True
            continue
        if turn.role != "outcome":
            continue
        paired = _pair(turn, calls)
        if paired is None:
            continue
        call = paired
        call.answered = True
        text = turn.text
        change = _CHANGE.match(call.turn.text.strip())
        path = _DESCRIPTION.sub("", change.group(1)).strip() if change else None
        if path is not None and (_REJECTED.search(text) or _REFUSED.search(text)):
            written[path] = False
            continue
        if _REJECTED.search(text):
            continue  # the user stopped it: their next words say why
        counts = _passed(text)
        if counts is not None and not re.search(r"exit(?:ed)? -?[1-9]", text):
            passes[call.command] = (call, turn, counts)
            if call.command in failures:
                failed_call, failed, line, _ = failures.pop(call.command)
                found.drafts.append(
                    Draft(
                        shorten(
                            f"Fixed: `{shorten(call.command, 90)}` passes now ({counts}); "
                            f"it had failed with: {line}"
                        ),
                        "lesson",
                        0.65,
                        0.7,
                        [failed_call.turn, failed, call.turn, turn],
                        completed=True,
                    )
                )
                del passes[call.command]
            continue
        if not _FAILED.search(text) or _routine(call, text):
            continue
        line = shorten(error_line(text), 160)
        if path is not None and written.get(path):
            written[path] = False  # not written until a later write succeeds
        seen = failures.get(call.command)
        failures[call.command] = (call, turn, line, (seen[3] + 1) if seen else 1)
        passes.pop(call.command, None)
    for command, (call, turn, counts) in passes.items():
        found.drafts.append(
            Draft(
                shorten(f"Tests pass: `{shorten(command, 100)}`: {counts}"),
                "milestone",
                0.6,
                0.85,
                [call.turn, turn],
                completed=True,
            )
        )
    for command, (call, turn, line, times) in failures.items():
        again = f" ({times} times)" if times > 1 else ""
        found.drafts.append(
            Draft(
                shorten(f"Failed{again}: `{shorten(command, 100)}`: {line}"),
                "error",
                # Run again and still failing when the run ends: the agent was stuck on it, a
                # blocker (🔴); a single failure the agent moved on from is context (🟡).
                BLOCKING if times > 1 else 0.6,
                0.8,
                [call.turn, turn],
            )
        )
    tasks = open_tasks([t for t in turns if not t.subagent])
    if tasks is not None:
        found.drafts.append(tasks)
    found.changed = [p for p, ok in written.items() if ok]
    found.refused = [p for p, ok in written.items() if not ok]
    return found

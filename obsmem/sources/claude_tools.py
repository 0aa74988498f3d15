"""Claude Code tool calls and results, reduced to what a memory needs.

A ``tool_use`` block becomes one ``action`` line (``Bash: npm test``, ``Edit: src/app.py``); a
``tool_result`` becomes an ``outcome`` only when it says something worth remembering: an error,
a rejection or interruption by the user, a failed command, test counts. Routine successes (a file
read, an edit applied, a glob listing) produce nothing: the action line already says it happened,
and whole outputs are never kept. A command that succeeded, or a file that was created, leaves a
short excerpt of its result on its action (``success_excerpt``).
"""

from __future__ import annotations

import re
from typing import Any

from obsmem.sources.normalise import clip
from obsmem.sources.outcomes import (
    EXCERPT_CHARS,
    find_test_counts,
    first_lines,
    result_excerpt,
    short,
)

__all__ = ["action_text", "guess_tool", "outcome_text", "success_excerpt"]

_EXIT = re.compile(r"^(?:Error: )?Exit code (-?\d+)")
_REJECTED = "The user doesn't want to proceed with this tool use"
_FEEDBACK = "the user said:"
_INTERRUPTED = "[Request interrupted by user"

_PATH_TOOLS = {name: "file_path" for name in ("Edit", "MultiEdit", "Write", "Read")}
_PATH_TOOLS |= {name: "notebook_path" for name in ("NotebookEdit", "NotebookRead")}
_TODO_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
_CREATED = "File created successfully at:"


def _relative(path: str, cwd: str | None) -> str:
    # Paths inside the project read better, and match across machines, relative to it.
    if cwd:
        root = cwd.rstrip("/")
        if path.rstrip("/") == root:
            return "."
        if path.startswith(root + "/"):
            return path[len(root) + 1 :]
    return path


def _scalar_args(args: dict[str, Any], limit: int = 3) -> str:
    parts: list[str] = []
    for key, value in args.items():
        if isinstance(value, str | int | float | bool) and str(value).strip():
            parts.append(f"{key}={short(str(value), 60)}")
            if len(parts) == limit:
                break
    return ", ".join(parts)


def _todos(todos: object) -> str:
    if not isinstance(todos, list):
        return ""
    items: list[str] = []
    for todo in todos:
        if isinstance(todo, dict):
            content = todo.get("content")
            if isinstance(content, str) and content.strip():
                mark = _TODO_MARKS.get(str(todo.get("status")), "[ ]")
                items.append(f"{mark} {content.strip()}")
        elif isinstance(todo, str) and todo.strip():
            items.append(todo.strip())
    return "; ".join(items)


def action_text(name: str, args: object, cwd: str | None = None) -> str:
    """One line saying what a tool call did: ``Bash: pytest -x (Run tests)``, ``Edit: app.py``."""
    if not isinstance(args, dict):
        return name
    detail = ""
    if name == "Bash":
        command = args.get("command")
        description = args.get("description")
        if isinstance(command, str) and command.strip():
            detail = short(command, 200)
            if isinstance(description, str) and description.strip():
                detail += f" ({short(description, 100)})"
        elif isinstance(description, str):
            detail = description
    elif name in _PATH_TOOLS:
        path = args.get(_PATH_TOOLS[name])
        detail = _relative(path, cwd) if isinstance(path, str) else ""
    elif name in ("Grep", "Glob"):
        pattern = args.get("pattern")
        detail = pattern if isinstance(pattern, str) else ""
        where = args.get("path")
        where = _relative(where, cwd) if isinstance(where, str) and where.strip() else "."
        if detail and where != ".":
            detail += f" in {where}"
    elif name in ("Task", "Agent"):
        description = args.get("description")
        kind = args.get("subagent_type")
        detail = description if isinstance(description, str) else ""
        if isinstance(kind, str) and kind.strip():
            detail = f"{detail} ({kind})" if detail else kind
    elif name == "TodoWrite":
        detail = _todos(args.get("todos"))
    elif name == "WebFetch":
        url = args.get("url")
        detail = url if isinstance(url, str) else ""
    elif name == "WebSearch":
        query = args.get("query")
        detail = query if isinstance(query, str) else ""
    elif name == "ExitPlanMode":
        plan = args.get("plan")
        detail = plan if isinstance(plan, str) else ""
    elif name == "AskUserQuestion":
        questions = args.get("questions")
        if isinstance(questions, list):
            asked = [q.get("question") for q in questions if isinstance(q, dict)]
            detail = " / ".join(q for q in asked if isinstance(q, str))
    if not detail:
        detail = _scalar_args(args)
    return short(f"{name}: {detail}" if detail else name)


def guess_tool(result: object) -> str | None:
    """The tool a structured ``toolUseResult`` came from, when its call was not read."""
    if not isinstance(result, dict):
        return None
    if "stdout" in result and "interrupted" in result:
        return "Bash"
    if "newTodos" in result:
        return "TodoWrite"
    if "answers" in result and "questions" in result:
        return "AskUserQuestion"
    return None


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        return "\n".join(texts)
    return ""


def _rejection(name: str, text: str) -> str:
    feedback = ""
    at = text.find(_FEEDBACK)
    if at >= 0:
        feedback = text[at + len(_FEEDBACK) :].strip()
    if feedback:
        return f"{name} rejected by user: {clip(feedback, EXCERPT_CHARS)}"
    return f"{name} rejected by user"


def _answers(result: dict[str, Any]) -> str | None:
    answers = result.get("answers")
    if not isinstance(answers, dict) or not answers:
        return None
    pairs = [f"{short(str(q), 160)} → {short(str(a), 160)}" for q, a in answers.items()]
    return "User answered: " + "; ".join(pairs)


def outcome_text(block: dict[str, Any], name: str | None, result: object) -> str | None:
    """What a ``tool_result`` block changed or showed, in a line or three; None when routine.

    ``name`` is the tool the result answers (None when its call was not read); ``result`` is the
    record's structured ``toolUseResult`` (a dict, or the error string for failures).
    """
    text = _result_text(block.get("content")).strip()
    tool = name or guess_tool(result) or "Tool"
    if text.startswith(_REJECTED):
        return _rejection(tool, text)
    if text.startswith(_INTERRUPTED):
        return f"{tool} interrupted by user"
    if block.get("is_error") is True:
        text = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
        if text.startswith("Error: "):
            text = text[len("Error: ") :]  # the outcome already says "error"
        match = _EXIT.match(text)
        if match:
            rest = text[match.end() :]
            detail = find_test_counts(rest) or first_lines(rest)
            head = f"{tool} exit {match.group(1)}"
        else:
            detail = first_lines(text)
            head = f"{tool} error"
        return f"{head}: {detail}" if detail else head
    if isinstance(result, dict):
        if result.get("interrupted") is True:
            return f"{tool} interrupted"
        if tool == "AskUserQuestion":
            return _answers(result)
    if tool in ("Bash", "BashOutput"):
        stdout = result.get("stdout") if isinstance(result, dict) else None
        counts = find_test_counts(stdout if isinstance(stdout, str) else text)
        if counts:
            return f"{tool}: {counts}"
    return None


def success_excerpt(
    block: dict[str, Any], name: str | None, args: object, result: object, cwd: str | None = None
) -> str | None:
    """A short excerpt of a successful ``tool_result`` for its action, or None.

    Only two kinds say more than their action line: a shell command (its output's first and
    last lines, unless the command only shows content; see ``outcomes.result_excerpt``) and a
    file the ``Write`` tool created (``File created successfully at: ...``). Reads, edits,
    searches and listings give nothing: their result is content, not what the call achieved.
    """
    if block.get("is_error") is True:
        return None
    if name == "Bash":
        command = args.get("command") if isinstance(args, dict) else None
        stdout = result.get("stdout") if isinstance(result, dict) else None
        output = stdout if isinstance(stdout, str) else _result_text(block.get("content"))
        return result_excerpt(output, command if isinstance(command, str) else "")
    if name == "Write":
        text = _result_text(block.get("content")).strip()
        if text.startswith(_CREATED):
            path = text[len(_CREATED) :].split("\n", 1)[0].strip()
            return result_excerpt(f"Created {_relative(path, cwd)}")
    return None

"""Tool calls in OpenAI-style transcripts (Codex CLI, Hermes Agent), summarised in one line.

A call becomes one ``action`` line (``Shell: npm test``, ``Patch: src/a.py``, ``terminal: ls``)
naming its most telling argument. What its result becomes (an ``outcome`` only when it says
something worth remembering) is worded by ``outcomes``, shared with the other readers so that
every agent's outcomes read the same way.
"""

from __future__ import annotations

import shlex
from typing import Any

from obsmem.sources.jsonl import loads_text
from obsmem.sources.outcomes import LINE_CHARS, short

__all__ = [
    "action_line",
    "call_detail",
    "call_summary",
    "command_text",
    "content_text",
    "parse_args",
    "patch_files",
    "relative",
]

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "cmd"})
_PATCH_MARKERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
#: Argument keys that best say what a call was about, most telling first.
_DETAIL_KEYS = (
    "command",
    "cmd",
    "pattern",
    "query",
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "url",
    "urls",
    "goal",
    "task",
    "prompt",
    "message",
    "action",
    "name",
    "code",
)


def parse_args(raw: object) -> dict[str, Any]:
    """A call's arguments as a dict (OpenAI sends a JSON string, some writers an object)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            value = loads_text(raw)
        except (ValueError, RecursionError):
            return {}
        if isinstance(value, dict):
            return value
    return {}


def command_text(value: object) -> str:
    """A shell command as typed: ``["bash", "-lc", "npm test"]`` is ``npm test``."""
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        return ""
    parts: list[str] = list(value)
    if len(parts) >= 3 and parts[0].rsplit("/", 1)[-1] in _SHELLS and parts[-2] in ("-c", "-lc"):
        return parts[-1].strip()
    return shlex.join(parts).strip()


def content_text(content: object) -> str:
    """The text of a message's or a tool result's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            value = content.get(key)
            if isinstance(value, str):
                return value
    return ""


def relative(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when inside it (reads better, matches across machines)."""
    if cwd and path.startswith("/"):
        prefix = cwd.rstrip("/") + "/"
        if path.startswith(prefix) and len(path) > len(prefix):
            return path[len(prefix) :]
    return path


def patch_files(patch: str, cwd: str | None = None) -> list[str]:
    """The files an ``apply_patch`` envelope touches (``*** Update File: src/a.py`` and friends)."""
    files: list[str] = []
    for line in patch.splitlines():
        if not line.startswith("*** "):
            continue
        for marker in _PATCH_MARKERS:
            if line.startswith(marker):
                name = relative(line[len(marker) :].strip(), cwd)
                if name and name not in files:
                    files.append(name)
                break
    return files


def _detail_value(value: object, cwd: str | None) -> str:
    if isinstance(value, str):
        return relative(value.strip(), cwd)
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return command_text(value) if value else ""
        return ", ".join(str(item) for item in value[:3] if isinstance(item, str | int | float))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def call_detail(args: dict[str, Any], cwd: str | None = None) -> str:
    """What a call with these arguments was about, in a few words (its most telling argument)."""
    return call_summary(args, cwd)[0]


def call_summary(args: dict[str, Any], cwd: str | None = None) -> tuple[str, bool]:
    """``call_detail(args, cwd)``, and whether it is one line as ``short`` leaves it (or empty).

    A detail made by ``short`` needs no second ``short`` once a plain tool name is put before it
    (see ``action_line``); one made of the arguments' ``key=value`` pairs may hold a key's
    spaces or line breaks.
    """
    for key in _DETAIL_KEYS:
        if key in args:
            value = args[key]
            if isinstance(value, str):  # most details: _detail_value's first case, without a call
                detail = value.strip()
                if cwd and detail[:1] == "/":
                    detail = relative(detail, cwd)
            else:
                detail = _detail_value(value, cwd)
            if detail:
                where = args.get("path") if key in ("pattern", "query") else None
                if isinstance(where, str) and where.strip():
                    detail += f" in {relative(where.strip(), cwd)}"  # a search says where too
                return short(detail), True
    parts: list[str] = []
    for key, value in args.items():
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value):
            parts.append(f"{key}={short(str(value), 60)}")
            if len(parts) == 3:
                break
    return ", ".join(parts), not parts


def action_line(name: str, detail: str, one_line: bool, plain_name: bool) -> str:
    """``short(f"{name}: {detail}" if detail else name)``, the action line of a call.

    ``one_line`` says ``detail`` is ``short``'s own output or empty (``call_summary``), and
    ``plain_name`` that ``name`` holds no whitespace (``name.split() == [name]``): then the line
    is already what ``short`` would make of it when it is not too long, and is not made again.
    """
    text = f"{name}: {detail}" if detail else name
    if one_line and plain_name and len(text) <= LINE_CHARS:
        return text
    return short(text)

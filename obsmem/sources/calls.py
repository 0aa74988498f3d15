"""Tool calls and their results in OpenAI-style transcripts (Codex CLI, Hermes Agent), summarised.

A call becomes one ``action`` line (``Shell: npm test``, ``Patch: src/a.py``, ``terminal: ls``);
a result becomes an ``outcome`` only when it says something worth remembering: a non-zero exit
(with the first error lines), a tool error, test counts. Routine successes give nothing: the
action line already says the call happened, and whole outputs are never kept. The test-count
parser and the one-line shortening are shared with the Claude Code reader (``claude_tools``), so
every agent's outcomes read the same way.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from obsmem.sources.claude_tools import find_test_counts, short, strip_ansi
from obsmem.sources.normalise import clip

__all__ = [
    "LABEL_CHARS",
    "call_detail",
    "command_outcome",
    "command_text",
    "content_text",
    "failure_outcome",
    "find_test_counts",
    "parse_args",
    "patch_files",
    "relative",
    "short",
]

#: Longest command or label quoted inside an outcome line.
LABEL_CHARS = 120
#: How many error lines an outcome keeps, and how long that excerpt may be.
ERROR_LINES = 3
EXCERPT_CHARS = 500
#: Error lines are looked for in this much of an output's head (runners print errors early,
#: and a multi-megabyte log is not worth scanning for three lines).
_SCAN_CHARS = 64 * 1024

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "cmd"})
# Searching tools exit 1 when nothing matched: that is an answer, not a failure.
_SEARCHERS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack"})
_ERROR_MARKERS = (
    "error",
    "Error",
    "ERROR",
    "FAIL",
    "Traceback",
    "Exception",
    "fatal",
    "panic",
    "denied",
    "No such file",
    "not found",
    "E   ",
)
_PATCH_MARKERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
_RULES = ("===", "___", "---", "⎯⎯⎯")
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
            value = json.loads(raw)
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
    for key in _DETAIL_KEYS:
        if key in args:
            detail = _detail_value(args[key], cwd)
            if detail:
                where = args.get("path") if key in ("pattern", "query") else None
                if isinstance(where, str) and where.strip():
                    detail += f" in {relative(where.strip(), cwd)}"  # a search says where too
                return short(detail)
    parts: list[str] = []
    for key, value in args.items():
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value):
            parts.append(f"{key}={short(str(value), 60)}")
            if len(parts) == 3:
                break
    return ", ".join(parts)


def _excerpt(text: str, *, errors_first: bool) -> str:
    """The first few lines worth quoting from a failure's output (error lines first if asked)."""
    lines = [line.rstrip() for line in strip_ansi(text[:_SCAN_CHARS]).splitlines() if line.strip()]
    if errors_first:
        marked = [
            line
            for line in lines
            if any(marker in line for marker in _ERROR_MARKERS)
            and not line.lstrip().startswith(_RULES)  # "===== FAILURES =====" says nothing
        ]
        if marked:
            lines = marked
        elif len(lines) > ERROR_LINES:
            lines = lines[-ERROR_LINES:]  # no error line: the end says most about how it ended
    picked = [short(line.strip(), 300) for line in lines[:ERROR_LINES]]
    return clip("\n".join(picked), EXCERPT_CHARS)


def _no_match(command: str | None, code: int, output: str) -> bool:
    if code != 1 or output.strip() or not command:
        return False
    words = command.split(maxsplit=2)
    first = words[0].rsplit("/", 1)[-1] if words else ""
    return first in _SEARCHERS or (first == "git" and len(words) > 1 and words[1] == "grep")


def command_outcome(
    command: str | None, code: int | None, output: str, stderr: str = ""
) -> str | None:
    """A shell command's result in one to four lines, or None when it is routine.

    Kept: a non-zero exit (``\\`npm test\\` exited 1: 3 failed, 10 passed`` and the first error
    lines, from stderr when there is any) and test counts. Dropped: exit 0 without test counts,
    and a search tool's exit 1 with no output (nothing matched).
    """
    counts = find_test_counts(output) if output else None
    if counts is None and stderr:
        counts = find_test_counts(stderr)  # some runners (jest) report on stderr
    label = f"`{short(command, LABEL_CHARS)}`" if command else "Command"
    if code is None or code == 0:
        return f"{label}: {counts}" if counts else None
    if _no_match(command, code, output + stderr):
        return None
    head = f"{label} exited {code}"
    if counts:
        head += f": {counts}"
    detail = _excerpt(stderr, errors_first=False) if stderr.strip() else ""
    if not detail:
        detail = _excerpt(output, errors_first=True)
    return f"{head}\n{detail}" if detail else head


def failure_outcome(label: str, text: str) -> str:
    """A failed tool call: ``write_file src/a.py failed: Permission denied`` (and a line or two)."""
    detail = _excerpt(text, errors_first=False)
    if not detail:
        return f"{label} failed"
    first, _, rest = detail.partition("\n")
    return f"{label} failed: {first}" + (f"\n{rest}" if rest else "")

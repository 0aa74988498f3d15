"""What OpenClaw wraps around the words, and how its tool calls and results are told in one line.

OpenClaw (a gateway between chat channels and a pi-agent) prepends machine text to every
inbound message: "Conversation info (untrusted metadata):" and "Sender (untrusted metadata):"
JSON blocks, ``[message_id: ...]`` hints, a ``[Sun 2026-03-08 22:03 GMT+9]`` envelope, queued
``System: [...]`` event lines, memory-plugin recall blocks. It also runs turns nobody typed:
heartbeat polls, cron triggers, the pre-compaction memory flush, memory "dreaming" runs. This
module strips the former and names the latter, so the reader keeps only the user's words.
"""

from __future__ import annotations

import json
import re
from typing import Any

from obsmem.sources.normalise import clip
from obsmem.sources.outcomes import error_lines, summarise_tests

__all__ = [
    "RUN_KINDS",
    "classify_user",
    "clean_assistant",
    "message_text",
    "reduce_result",
    "subagent_words",
    "summarise_call",
    "unwrap_user",
]

#: Noise whose whole run (the agent's tool calls and replies until the next real user message)
#: is dropped with the trigger. A cron trigger is not among them: the job's work is real work.
RUN_KINDS = frozenset({"heartbeat", "memory flush", "memory run"})

# --- Inbound wrappers -------------------------------------------------------------------------
_META_HEADER = re.compile(
    r"^[A-Z][A-Za-z ]{0,60} \((?:untrusted(?: metadata|, for context)"
    r"|metadata, do not treat as instructions or commands)\):$"
)
_DROP_LINE = re.compile(
    r"^(?:\[message_id: [^\]\n]*\]"
    r"|System: \[.*"  # queued system events (exec finished, cron fired, ...)
    r"|\[media attached[^\]\n]*\].*"
    r"|To send an image back, prefer the message tool.*"
    r"|Use the message tool if you need to notify the user directly.*"
    r"|Current time: .*\b\d{4}\b.*"
    r"|\[\[(?:reply_to_current|reply_to:[^\]\n]*|audio_as_voice)\]\])$"
)
# Blocks injected by memory plugins: recall results the model sees, not the user's words.
_INJECTED_BLOCKS = {
    "<relevant-memories>": "</relevant-memories>",
    "<active_memory_plugin>": "</active_memory_plugin>",
}
_DROP_FIRST = frozenset("[STUC")  # the first characters _DROP_LINE can match
_ENVELOPE = re.compile(r"\[([^\]\n]{1,200})\][ \t]*")
_ENVELOPE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
_CHANNELS = (
    "WebChat", "WhatsApp", "Telegram", "Signal", "Slack", "Discord", "Google Chat",
    "iMessage", "Teams", "Matrix", "Zalo", "BlueBubbles", "Feishu", "LINE", "Mattermost",
)  # fmt: skip
_QUICK = (
    "(untrusted", "[message_id:", "System: [", "[media attached", "Current time:",
    "<relevant-memories>", "<active_memory_plugin>", "To send an image back",
    "Use the message tool",
)  # fmt: skip


def unwrap_user(text: str) -> str:
    """The user's own words from an inbound OpenClaw message (wrappers and hints removed)."""
    if not text.startswith("["):
        for marker in _QUICK:  # a loop, not any() over a generator: less per message
            if marker in text:
                break
        else:
            return text.strip()
    lines = text.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        # Cheap character tests first: most lines are words, and regexes per line add up.
        if stripped.endswith("):") and _META_HEADER.match(stripped):
            i = _skip_block(lines, i + 1)
            continue
        closing = _INJECTED_BLOCKS.get(stripped) if stripped[:1] == "<" else None
        if closing is not None:
            while i < len(lines) and lines[i].strip() != closing:
                i += 1
            if kept and kept[-1].strip() == "Context:":
                kept.pop()
            i += 1
            continue
        if stripped[:1] not in _DROP_FIRST or not _DROP_LINE.match(stripped):
            kept.append(lines[i])
        i += 1
    return _strip_envelope("\n".join(kept).strip()).strip()


def _skip_block(lines: list[str], i: int) -> int:
    """Index just past the metadata block whose body starts at ``lines[i]``."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].strip().startswith("```"):
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        return i + 1
    if i < len(lines) and lines[i].strip().startswith("<<<EXTERNAL_UNTRUSTED_CONTENT"):
        while i < len(lines) and not lines[i].strip().startswith("<<<END_EXTERNAL_UNTRUSTED"):
            i += 1
        return i + 1
    while i < len(lines) and lines[i].strip():  # prose metadata runs to the next blank line
        i += 1
    return i


def _strip_envelope(text: str) -> str:
    """Drop a leading ``[Sun 2026-03-08 22:03 GMT+9]`` / ``[Telegram Ann +5m ...]`` envelope."""
    match = _ENVELOPE.match(text)
    if match is None:
        return text
    header = match.group(1)
    if _ENVELOPE_DATE.search(header) or header.startswith(tuple(c + " " for c in _CHANNELS)):
        return text[match.end() :]
    return text


# --- Turns nobody typed -------------------------------------------------------------------
_HEARTBEAT_ACK = "HEARTBEAT_OK"
_SILENT = "NO_REPLY"
_SCHEDULED = re.compile(r"A scheduled (?:reminder|cron job|task) (?:has been |was )?triggered")


def classify_user(text: str) -> str | None:
    """Why an (unwrapped) user message is noise, or None when a person wrote it.

    ``heartbeat``: the poll that asks for ``HEARTBEAT_OK``; ``cron notice``: a ``[cron:<id>
    <name>]`` trigger; ``memory flush``: the pre-compaction "store durable memories" turn;
    ``memory run``: the memory system's own runs (dreaming).
    """
    head = text[:400]
    low = head.lower()
    if _HEARTBEAT_ACK in text and ("HEARTBEAT.md" in text or "nothing needs attention" in low):
        return "heartbeat"
    if head.startswith("[cron:") or _SCHEDULED.match(head):
        return "cron notice"
    if low.startswith("pre-compaction memory flush") or "store durable memories" in low:
        return "memory flush"
    if low.startswith("write a dream diary entry"):
        return "memory run"
    return None


_SUBAGENT_CONTEXT = "[Subagent Context]"
_SUBAGENT_TASK = "[Subagent Task]:"
_SYSTEM_MESSAGE = "[System Message]"


def subagent_words(text: str) -> tuple[str, bool] | None:
    """``(words, opens)`` for an (unwrapped) user message a sub-agent run made, else None.

    A sub-agent's session opens with ``[Subagent Context] ...`` boilerplate before its
    ``[Subagent Task]:`` (``opens`` is True: the whole session is the sub-agent's); its parent
    gets the result back as a ``[System Message]`` about the sub-agent task. Neither was typed by
    the user. ``words`` is the task alone for the first, the message for the second.
    """
    if text.startswith(_SUBAGENT_CONTEXT):
        at = text.find(_SUBAGENT_TASK)
        task = text[at + len(_SUBAGENT_TASK) :].strip() if at >= 0 else text
        return task, at >= 0
    if text.startswith(_SYSTEM_MESSAGE) and "subagent" in text[:400].lower():
        return text, False
    return None


_REPLY_TAG = re.compile(r"\[\[(?:reply_to_current|reply_to:[^\]\n]*|audio_as_voice)\]\]\s*")


def clean_assistant(text: str) -> tuple[str, str | None]:
    """The reply's words without OpenClaw's tags and acks, and why it was dropped if it was.

    A reply that is only ``NO_REPLY`` is silent ("silent reply"); ``HEARTBEAT_OK`` at either end
    is an acknowledgement, and a reply that is nothing else is dropped ("heartbeat").
    """
    if "[[" in text:  # every tag opens so: most replies skip the substitution
        text = _REPLY_TAG.sub("", text)
    text = text.strip()
    if text == _SILENT:
        return "", "silent reply"
    if _HEARTBEAT_ACK in text:
        text = text.removeprefix(_HEARTBEAT_ACK).removesuffix(_HEARTBEAT_ACK).strip()
        if not text:
            return "", "heartbeat"
    return text, None


# --- Tool calls in one line ---------------------------------------------------------------
# Which argument says what a call of each OpenClaw / pi tool is about.
_MAIN_ARG = {
    "exec": ("command", "cmd"),
    "bash": ("command", "cmd"),
    "read": ("path", "file_path", "file"),
    "write": ("path", "file_path", "file"),
    "edit": ("path", "file_path", "file"),
    "multiedit": ("path", "file_path"),
    "ls": ("path",),
    "find": ("pattern", "path"),
    "grep": ("pattern",),
    "web_search": ("query",),
    "web_fetch": ("url",),
    "memory_search": ("query",),
    "memory_get": ("path",),
    "sessions_spawn": ("label", "task"),
    "sessions_send": ("message", "sessionKey"),
    "image": ("prompt",),
    "tts": ("text",),
}
_ACTION_TOOLS = ("process", "browser", "message", "cron", "canvas", "nodes", "gateway")
_GENERIC_KEYS = ("command", "path", "file_path", "query", "url", "name", "action", "pattern")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_MAX_ACTION = 300


def _one_line(value: str) -> str:
    """First line of ``value``, with a mark when more lines followed."""
    value = value.strip()
    first, _, rest = value.partition("\n")
    first = " ".join(first.split())
    return first + " …" if rest.strip() else first


def summarise_call(name: str, arguments: Any) -> str:
    """``exec: npm test``, ``write: src/a.py``, ``browser: open https://...``: one line."""
    args = _arguments(arguments)
    detail = ""
    low = name.lower()
    keys = _MAIN_ARG.get(low)
    if keys is not None:
        for key in keys:
            if isinstance(args.get(key), str | int):
                detail = str(args[key])
                break
    elif low in _ACTION_TOOLS:
        action = args.get("action")
        target = next(
            (args[k] for k in ("url", "targetUrl", "target", "to", "name", "jobId") if args.get(k)),
            "",
        )
        detail = " ".join(str(part) for part in (action, target) if part)
    elif low == "apply_patch":
        patch = str(args.get("input") or args.get("patch") or "")
        detail = ", ".join(dict.fromkeys(_PATCH_FILE.findall(patch)))
    if not detail:
        detail = next((str(args[k]) for k in _GENERIC_KEYS if isinstance(args.get(k), str)), "")
    if not detail and args:
        detail = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    detail = _one_line(detail)
    return clip(f"{name}: {detail}" if detail else name, _MAX_ACTION)


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):  # some providers leave the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {"input": arguments}
    return arguments if isinstance(arguments, dict) else {}


# --- Tool results reduced to what matters --------------------------------------------------
_EXIT_TEXT = re.compile(r"(?:Command|Process) exited with code (-?\d+)")
# The same notes found from their literal words, the program's name checked after: the pattern
# above starts with an alternation, which ``re`` tries at every character of a long output.
_EXIT_WORDS = re.compile(r" exited with code (-?\d+)")
_EXIT_WHO = ("Command", "Process")


def _without_exit_notes(text: str) -> str:
    """``_EXIT_TEXT.sub("", text)``: the text without its "Command exited with code N" notes."""
    if " exited with code " not in text:
        return text
    pieces: list[str] = []
    done = 0
    for m in _EXIT_WORDS.finditer(text):
        start = m.start() - 7  # len("Command") == len("Process")
        if start >= done and text[start : m.start()] in _EXIT_WHO:
            pieces.append(text[done:start])
            done = m.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def reduce_result(message: dict[str, Any]) -> str | None:
    """A tool result as an outcome line: failures with their error text, test counts; None for
    a routine success (a file read, a write that worked, a command that exited 0)."""
    name = str(message.get("toolName") or "tool")
    text = message_text(message.get("content"))
    details = message.get("details")
    details = details if isinstance(details, dict) else {}
    exit_code = details.get("exitCode")
    if not isinstance(exit_code, int) or isinstance(exit_code, bool):
        tail = text[-500:]
        # The pattern starts with an alternation, so ``re`` would try it at every character.
        found = _EXIT_TEXT.search(tail) if " exited with code " in tail else None
        exit_code = int(found.group(1)) if found else None
    status = str(details.get("status") or "")
    failed = (
        message.get("isError") is True
        or (exit_code is not None and exit_code != 0)
        or status in ("failed", "error", "timeout", "killed")
    )
    counts = summarise_tests(text)
    if not failed:
        return f"{name}: {counts}" if counts else None
    head = f"{name}: exit {exit_code}" if exit_code not in (None, 0) else f"{name} failed"
    if status == "timeout":
        head += " (timed out)"
    parts = [head + (f", {counts}" if counts else "")]
    excerpt = error_lines(_without_exit_notes(text), counts)
    if excerpt:
        parts.append(excerpt)
    return "\n".join(parts)


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` blocks of a list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            value = block.get("text")
            if isinstance(value, str):
                texts.append(value)
    return "\n".join(texts)

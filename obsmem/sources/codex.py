"""Codex CLI transcripts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``) as turns.

Three generations of files are read:

- rollouts of ``{timestamp, type, payload}`` lines (``session_meta``, ``turn_context``,
  ``response_item``, ``event_msg``, ``compacted``): every current release;
- older rollouts of flat records: a first line ``{id, timestamp, instructions}``, then response
  items as they are (``{type: "message", role, content}``, ``function_call``, ...);
- the first releases' ``.json`` files, one document ``{session: {...}, items: [...]}``, read
  whole (their turns cover the whole file; read again only when the file changed size).

What is kept: the user's words (injected ``AGENTS.md`` instructions, ``<environment_context>``,
``<user_instructions>`` and similar blocks removed; the IDE extension's and the Desktop app's
request without the open or attached files listed before it), the assistant's
text (commentary and final answers), each once although Codex writes both twice; every call of a
tool as an ``action`` line (``Shell: npm test``, ``Patch: src/a.py, src/b.py``, ``WebSearch: q``,
``update_plan: [x] step; [>] step``, ``<tool>: <main argument>``); failed commands (exit code and
first error lines), failed patches and tools, and test counts as ``outcome`` lines; ``compacted``
summaries as ``summary`` turns. How the twice-written facts are kept once: ``codex_records``.

A rollout Codex spawned for a sub-agent (``session_meta`` ``source: {"subagent": ...}``) gives
turns with ``subagent`` set: its user message is the parent agent's prompt, not the user's words.
A session belongs to one project, that of its first working directory, whatever folder a later
``turn_context`` names.

What is dropped (counted in ``skipped``): developer and system messages, encrypted reasoning,
``token_count``, ``task_started`` / ``task_complete`` and the other lifecycle events, polls of
running commands (``write_stdin``), routine outputs (exit 0 without test counts, a search that
matched nothing), and the second form of every twice-written message or result.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from obsmem.paths import observer_session
from obsmem.sources.codex_records import AGENT, TWIN_WINDOW, Rollout, SessionInfo
from obsmem.sources.jsonl import (
    Line,
    Records,
    decode_object,
    head_records,
    iter_lines,
    lines_before,
)
from obsmem.sources.model import ReadResult

__all__ = ["AGENT", "detect", "find_files", "read"]

_WRAPPER_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
#: How many lines at the file's start a read from further in looks at for the session's header.
_HEADER_LINES = 32
#: How far back from the start offset a read looks for the last ``turn_context`` (its cwd).
_CONTEXT_LOOKBACK = 4 * 1024 * 1024
_CONTEXT_MARKS = (b'"type":"turn_context"', b'"type": "turn_context"')


def _session_from_name(path: Path) -> str | None:
    # rollout-2025-05-07T17-24-21-<uuid>.jsonl: the uuid is the session id.
    stem = path.stem
    tail = stem[-36:]
    if len(tail) == 36 and tail.count("-") == 4:
        return tail
    return stem or None


def _learn_header(info: SessionInfo, record: dict[str, Any], rollout: Rollout) -> None:
    """Take what a header-region record says about the session (for reads starting mid-file)."""
    kind = record.get("type")
    payload = record.get("payload")
    if isinstance(payload, dict):
        if kind == "session_meta":
            info.learn_meta(payload, record.get("timestamp"))
        elif kind == "turn_context":
            info.learn_cwd(payload.get("cwd"))
        elif kind == "response_item" and info.cwd is None and payload.get("type") == "message":
            rollout.learn_env(payload)
    elif kind is None and "id" in record and "timestamp" in record:
        info.learn_meta(record)
    elif kind == "message" and info.cwd is None:
        rollout.learn_env(record)


def _prime(path: Path, start_offset: int, rollout: Rollout) -> None:
    """Recover the session id, time and cwd a read from ``start_offset`` cannot see."""
    info = rollout.info
    for record in head_records(path, start_offset, lines=_HEADER_LINES):
        _learn_header(info, record, rollout)
    # The cwd in force is the last turn_context's before the offset, not the first one's.
    for data in reversed(lines_before(path, start_offset, _CONTEXT_LOOKBACK)):
        if any(mark in data[:80] for mark in _CONTEXT_MARKS):
            context = decode_object(data)
            payload = context.get("payload") if context else None
            if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
                info.learn_cwd(payload["cwd"])
                break


class _Records(Records):
    """Records whose skips the rollout keeps by line: a read cut short drops those past the cut."""

    def __init__(self, rollout: Rollout, **where: Any) -> None:
        super().__init__(rollout.path, **where)
        self.rollout = rollout

    def skip(self, line: Line, reason: str) -> None:
        """Count ``line`` in the rollout, with its number."""
        self.rollout.skip(line, reason)


def _feed(rollout: Rollout, line: Line, record: dict[str, Any]) -> None:
    """Route one decoded line to the record kind it is."""
    kind = record.get("type")
    payload = record.get("payload")
    if isinstance(kind, str) and isinstance(payload, dict):
        rollout.wrapper(line, kind, payload, record.get("timestamp"))
    elif isinstance(kind, str) and (kind in _ITEM_TYPES or "role" in record):
        rollout.item(line, record, record.get("timestamp"))
    elif "record_type" in record:
        rollout.skip(line, "state")
    elif kind is None and "id" in record and ("instructions" in record or "timestamp" in record):
        rollout.info.learn_meta(record)
    elif kind is None:
        rollout.skip(line, "no type")
    else:
        rollout.skip(line, f"unknown type: {str(kind)[:40]}")


def _cut(rollout: Rollout, end_line: int) -> int | None:
    """The line to stop before so that no message's twin is read apart from it, or None.

    A message whose twin may still be written (fewer than ``TWIN_WINDOW`` lines follow it) is
    left for the next read, with everything after it; a pair already matched is never split.
    """
    waiting = [u.line for u in rollout.unpaired if end_line - u.line < TWIN_WINDOW]
    if not waiting:
        return None
    cut = min(waiting)
    moved = True
    while moved:
        moved = False
        for first, second in rollout.pairs:
            if first < cut <= second:
                cut, moved = first, True
    return cut


def _line_start(path: Path, start_offset: int, start_line: int, number: int) -> int:
    """The byte offset where line ``number`` starts (a second pass, only for the rare cut read)."""
    with path.open("rb") as handle:
        for line in iter_lines(
            handle, start_offset=start_offset, start_line=start_line, flush=True
        ):
            if line.number == number:
                return line.start
    return start_offset


def read(
    path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
) -> ReadResult:
    """The turns of a Codex CLI transcript from ``start_offset`` (a line start) to its end.

    Only complete lines are read (``flush`` also takes a last line without its newline); a
    message whose twin may still be written is left for the next read unless ``flush``. Bad
    lines and records are skipped and counted in ``skipped``, never raised.
    """
    if path.suffix == ".json":
        return _read_document(path, start_offset, start_line)
    rollout = Rollout(path, SessionInfo())
    if start_offset > 0:
        _prime(path, start_offset, rollout)
    records = _Records(rollout, start_offset=start_offset, start_line=start_line, flush=flush)
    for line, record in records:
        _feed(rollout, line, record)
    end_offset, end_line = records.end_offset, records.end_line
    session = rollout.info.session or _session_from_name(path)
    for turn in rollout.turns:
        if turn.session is None:
            turn.session = session
    if observer_session(rollout.info.root or rollout.info.cwd):
        rollout.turns = []  # om's own observer session
    cut = None if flush else _cut(rollout, end_line)
    if cut is not None:
        rollout.turns = [turn for turn in rollout.turns if turn.line_start < cut]
        end_offset, end_line = _line_start(path, start_offset, start_line, cut), cut - 1
    return ReadResult(
        turns=rollout.turns,
        start_offset=start_offset,
        end_offset=end_offset,
        end_line=end_line,
        skipped=rollout.skipped(before=end_line + 1),
    )


def _read_document(path: Path, start_offset: int, start_line: int) -> ReadResult:
    """An older ``.json`` session: one document, read whole; nothing new if its size is the same."""
    data = path.read_bytes()
    if start_offset > 0 and len(data) == start_offset:
        return ReadResult([], start_offset, start_offset, start_line)
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    whole = Line(number=1, start=0, end=len(data), data=b"")
    rollout = Rollout(path, SessionInfo())
    document = decode_object(data)
    items = document.get("items") if document else None
    session = document.get("session") if document else None
    if document is None:
        rollout.skip(whole, "broken json" if data.strip() else "empty file")
    elif not isinstance(items, list):
        rollout.skip(whole, "not a codex session")
    else:
        if isinstance(session, dict):
            rollout.info.learn_meta(session)
        for item in items:
            if isinstance(item, dict):
                rollout.item(whole, item, item.get("timestamp"))
            else:
                rollout.skip(whole, "not an object")
    if rollout.info.session is None:
        rollout.info.session = _session_from_name(path)
    for turn in rollout.turns:
        turn.session = rollout.info.session
        turn.line_end = max(lines, 1)
    return ReadResult(rollout.turns, start_offset, len(data), lines, rollout.skipped())


def _looks_like_codex(record: dict[str, Any]) -> bool:
    kind = record.get("type")
    payload = record.get("payload")
    if isinstance(kind, str) and kind in _WRAPPER_TYPES and isinstance(payload, dict):
        return True
    if isinstance(record.get("session"), dict) and isinstance(record.get("items"), list):
        return True  # an older .json document
    if kind is None and isinstance(record.get("id"), str) and "instructions" in record:
        return "timestamp" in record  # an older flat file's first line
    if kind in ("message", "function_call", "function_call_output", "reasoning"):
        # Older flat records: response items as they are, with no wrapper around them (OpenClaw's
        # messages carry their own message object and parent ids; Hermes's have no type at all).
        if "message" in record or "parentId" in record or "payload" in record:
            return False
        if kind == "message":
            return record.get("role") in (
                "user",
                "assistant",
                "developer",
                "system",
            ) and isinstance(record.get("content"), list)
        return "call_id" in record or kind == "reasoning"
    return "record_type" in record and len(record) <= 2


def detect(records: list[dict[str, Any]]) -> bool:
    """True when the first records of a file look like a Codex CLI transcript (any generation)."""
    return any(isinstance(record, dict) and _looks_like_codex(record) for record in records)


def find_files(home: Path) -> list[Path]:
    """Every session file under ``home/sessions`` (``home`` is ``$CODEX_HOME``, ``~/.codex``).

    Finds ``rollout-*.jsonl`` at any depth (``YYYY/MM/DD/`` now, flat in older releases) and the
    oldest releases' ``*.json`` sessions; missing or unreadable folders give nothing.
    """
    found: list[Path] = []
    stack = [str(home / "sessions")]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file() and (
                            (entry.name.startswith("rollout-") and entry.name.endswith(".jsonl"))
                            or entry.name.endswith(".json")
                        ):
                            found.append(Path(entry.path))
                    except OSError:
                        continue
        except OSError:
            continue
    return sorted(found)

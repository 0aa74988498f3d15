"""OpenClaw transcripts: ``~/.openclaw/agents/<agent>/sessions/<uuid>.jsonl`` (pi-agent format v3).

The first line is the session header (``type: session``: id, timestamp, cwd); then entries with
``id``/``parentId``: ``message`` (roles ``user``, ``assistant``, ``toolResult``, and pi's
``bashExecution`` / ``compactionSummary`` / ``branchSummary``), ``compaction`` and
``branch_summary`` (the agent's own summaries), and bookkeeping (``model_change``,
``thinking_level_change``, ``custom``, ...) that is skipped and counted.

What is kept: the user's words (unwrapped, see :mod:`obsmem.sources.openclaw_text`), the
assistant's text, one ``action`` per tool call, ``outcome`` lines for failures and test counts,
summaries. What is dropped: thinking, routine tool successes, and the turns nobody typed:
heartbeat polls and their ``HEARTBEAT_OK``, cron trigger notices, the pre-compaction memory
flush, memory "dreaming" runs (for those three, with the tool calls of their run), ``NO_REPLY``.

A session spawned for a sub-agent (its first user message is OpenClaw's ``[Subagent Context]``
boilerplate and ``[Subagent Task]:``) is the agent's work: all its turns have ``subagent`` set,
as has the ``[System Message]`` that brings a sub-agent's result back to its parent.

A session is a tree (``parentId``); entries are read in file order, abandoned branches included:
what the user said on a branch they left was still said.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.sources.jsonl import (
    Line,
    Needles,
    Records,
    decode_object,
    head_records,
    lines_before,
    paused_gc,
)
from obsmem.sources.model import ReadResult, Turn
from obsmem.sources.normalise import clip, file_time, iso_utc, project_of
from obsmem.sources.openclaw_text import (
    RUN_KINDS,
    classify_user,
    clean_assistant,
    message_text,
    reduce_result,
    subagent_words,
    summarise_call,
    unwrap_user,
)
from obsmem.sources.outcomes import result_excerpt

__all__ = ["AGENT", "detect", "find_files", "read"]

AGENT = "openclaw"

_MESSAGE_ROLES = frozenset(
    {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
    }
)
_BOOKKEEPING = frozenset(
    {"model_change", "thinking_level_change", "custom", "custom_message", "label", "session_info"}
)
_SUMMARY_TYPES = frozenset({"compaction", "branch_summary"})
_MAX_SUMMARY = 4000
#: How many lines at the file's start a read from further in looks at for the first user message.
_HEAD_LINES = 32
_HEADER_MAX = 1024 * 1024
# How far back to look for the user message that decides whether a read starting mid-file is
# inside a heartbeat / memory run; a run longer than this is treated as ended.
_LOOKBACK = 256 * 1024
_CUSTOM_PREFIX = b'{"type":"custom",'
# Anything that could make a tool result worth an outcome line (see reduce_result); a result
# whose raw line has none of these, no failing exit code and isError false is routine.
_NOT_ROUTINE = (
    b'"isError":true', b"passed", b"failed", b"passing", b"failing", b"exited with code",
    b'"status":"failed"', b'"status":"error"', b'"status":"timeout"', b'"status":"killed"',
)  # fmt: skip
#: The hints, then what else ``pass_over`` needs of a tool result's raw line, found in one pass.
_EXIT_KEY = b'"exitCode":'
_NOT_ERROR = b'"isError":false'
_LOOKED_FOR = Needles((*_NOT_ROUTINE, _EXIT_KEY, _NOT_ERROR))
_EXIT_AT = len(_NOT_ROUTINE)
_NOT_ERROR_AT = _EXIT_AT + 1


@dataclass
class _Session:
    """What the reader knows about the session while it reads: header facts and run state."""

    path: Path
    id: str | None = None
    cwd: str | None = None
    project: str | None = None
    timestamp: str | None = None
    run: str | None = None  # the noise run we are inside ("heartbeat", ...), if any
    #: The session is a sub-agent's (it opened with the sub-agent's task): all of it is the
    #: agent's work; ``reported`` marks the one message that brings a sub-agent's result back.
    subagent: bool = False
    reported: bool = False
    first_user: bool = True  # no user message read yet, and the read starts at the file's start
    turns: list[Turn] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    #: Shell calls by id, with their action and command: a successful result's excerpt joins it.
    shells: dict[str, tuple[Turn, str]] = field(default_factory=dict)
    _mtime: str | None = None
    _mtime_read: bool = False
    _source: str = ""  # str(path), made once rather than for every turn
    _stem: str = ""

    def __post_init__(self) -> None:
        self._source = str(self.path)
        self._stem = self.path.stem

    def header(self, record: dict[str, Any]) -> None:
        if record.get("id") is not None:
            self.id = str(record["id"])
        cwd = record.get("cwd")
        if isinstance(cwd, str) and cwd and self.cwd is None:  # one project per session
            self.cwd = cwd
            self.project = project_of(cwd)
        self.timestamp = iso_utc(record.get("timestamp")) or self.timestamp

    def time(self, value: object, fallback: object = None) -> str | None:
        """The first usable timestamp of ``value`` and ``fallback``, else the session's, else the
        file's."""
        stamp = iso_utc(value)
        if stamp is None and fallback is not None:
            stamp = iso_utc(fallback)
        if stamp is not None:
            return stamp
        if self.timestamp is not None:
            return self.timestamp
        if not self._mtime_read:
            self._mtime, self._mtime_read = file_time(self.path), True
        return self._mtime

    def add(self, role: str, text: str, line: Line, timestamp: str | None) -> None:
        text = text.strip()
        if not text:
            return
        number = line.number
        # Positional: keyword arguments cost more, at a Turn for most lines.
        self.turns.append(
            Turn(
                role,
                text,
                timestamp,
                self.id or self._stem,
                AGENT,
                self.project,
                self._source,
                number,
                number,
                line.start,
                line.end,
                self.subagent or self.reported,
            )
        )

    def pass_over(self, data: bytes) -> str | None:
        """Why to skip a raw line undecoded: extension state, or a routine tool success.

        Most tool output is routine, and deciding so from the bytes is far faster than decoding
        it. Conservative: any doubt (other key spacing, a hint inside the output) means "decode".
        """
        if data.startswith(_CUSTOM_PREFIX):
            return "custom"  # extension state, can be large: not worth decoding
        if data.find(b'"role":"toolResult"', 0, 400) == -1:
            return None
        # One pass for all of it: routine when "isError":false occurs, no hint does, and every
        # exit code is 0 (followed by "," or "}").
        not_error = False
        for index, end in _LOOKED_FOR.found(data):
            if index == _NOT_ERROR_AT:
                not_error = True
            elif index != _EXIT_AT:
                return None  # a hint
            elif data[end : end + 2] not in (b"0,", b"0}"):
                return None
        if not not_error:
            return None
        return f"in {self.run}" if self.run else "routine tool result"

    def drop_in_run(self) -> bool:
        """Count and drop what the agent does inside a noise run; False outside one."""
        if self.run is None:
            return False
        self.skipped[f"in {self.run}"] += 1
        return True


def read(
    path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
) -> ReadResult:
    """Normalised turns from the complete lines of ``path`` after ``start_offset``.

    Never raises on bad content (it is skipped and counted); OSError on open propagates.
    """
    session = _Session(path)
    if start_offset > 0:
        head = _first_record(path)
        if head is not None:
            session.header(head)
        session.run = _run_before(path, start_offset)
        session.subagent = _opened_by_subagent(path, start_offset)
        session.first_user = False
    records = Records(
        path,
        start_offset=start_offset,
        start_line=start_line,
        flush=flush,
        skipped=session.skipped,
        pass_over=session.pass_over,
    )
    with paused_gc():  # see paused_gc: the collector would walk every turn made so far
        for line, record in records:
            # Most lines are messages: routed here, without a call more through _record.
            if record.get("type") == "message":
                message = record.get("message")
                if isinstance(message, dict):
                    _message(message, record, line, session)
                else:
                    session.skipped["message without body"] += 1
            else:
                _record(record, line, session)
    return ReadResult(
        session.turns, start_offset, records.end_offset, records.end_line, session.skipped
    )


def _record(record: dict[str, Any], line: Line, session: _Session) -> None:
    kind = record.get("type")
    if not isinstance(kind, str):
        session.skipped[f"unknown type: {clip(str(kind), 40)}"] += 1
        return
    # Messages never come here: the read loop routes them to _message itself.
    if kind == "session":
        session.header(record)
    elif kind in _SUMMARY_TYPES:
        summary = record.get("summary")
        if isinstance(summary, str):
            session.add(
                "summary",
                clip(summary.strip(), _MAX_SUMMARY),
                line,
                session.time(record.get("timestamp")),
            )
    elif kind in _BOOKKEEPING:
        session.skipped[kind] += 1
    else:
        session.skipped[f"unknown type: {clip(str(kind), 40)}"] += 1


def _message(message: dict[str, Any], record: dict[str, Any], line: Line, s: _Session) -> None:
    role = message.get("role")
    # The entry's ISO time and the message's epoch milliseconds name the same moment; the ISO
    # string takes the fast path of iso_utc.
    stamp = s.time(record.get("timestamp"), message.get("timestamp"))
    if role == "user":
        raw = message_text(message.get("content"))
        text = unwrap_user(raw)
        if text:
            reason = classify_user(text)
        else:
            reason = "system event" if "System: [" in raw else "empty message"
        s.run = reason if reason in RUN_KINDS else None
        if reason is not None:
            s.skipped[reason] += 1
            return
        spawned = subagent_words(text)
        if spawned is not None:
            text, opens = spawned
            # Only the session's first message opens a sub-agent's session (a read from further
            # in knows that from the file's head).
            s.subagent = s.subagent or (opens and s.first_user)
            s.reported = True
        s.first_user = False
        s.add("user", text, line, stamp)
        s.reported = False
    elif role == "assistant":
        _assistant(message, line, s, stamp)
    elif role == "toolResult":
        if s.drop_in_run():
            return
        outcome = reduce_result(message)
        if outcome is None:
            s.skipped["routine tool result"] += 1
            call = s.shells.pop(str(message.get("toolCallId")), None)
            if call is not None:
                call[0].excerpt = result_excerpt(message_text(message.get("content")), call[1])
        else:
            s.add("outcome", outcome, line, stamp)
    elif role == "bashExecution":  # the user ran "!command" in pi's terminal
        s.run = None
        command = message.get("command")
        before = len(s.turns)
        if isinstance(command, str):
            s.add("action", summarise_call("bash", {"command": command}), line, stamp)
        outcome = reduce_result(
            {
                "toolName": "bash",
                "content": message.get("output") if isinstance(message.get("output"), str) else "",
                "details": {"exitCode": message.get("exitCode")},
                "isError": message.get("cancelled") is True,
            }
        )
        if outcome is not None:
            s.add("outcome", outcome, line, stamp)
        elif isinstance(command, str) and len(s.turns) > before:
            output = message.get("output")
            s.turns[-1].excerpt = result_excerpt(output if isinstance(output, str) else "", command)
    elif role in ("compactionSummary", "branchSummary"):
        summary = message.get("summary")
        if isinstance(summary, str):
            s.add("summary", clip(summary.strip(), _MAX_SUMMARY), line, stamp)
    elif role == "custom":
        s.skipped["custom message"] += 1
    else:
        s.skipped[f"unknown role: {clip(str(role), 40)}"] += 1


def _reply(texts: list[str], line: Line, s: _Session, stamp: str | None) -> None:
    """The assistant's text blocks since the last tool call, as one turn (or a skip count)."""
    text, reason = clean_assistant(texts[0] if len(texts) == 1 else "\n\n".join(texts))
    if reason is not None:
        s.skipped[reason] += 1
    elif s.run is not None and s.run != "heartbeat":
        s.drop_in_run()
    else:  # in a heartbeat run, a reply that is more than the ack is an alert the user got
        s.add("assistant", text, line, stamp)


def _assistant(message: dict[str, Any], line: Line, s: _Session, stamp: str | None) -> None:
    content = message.get("content")
    if isinstance(content, str):
        _reply([content], line, s, stamp)
    elif isinstance(content, list):
        _blocks(content, line, s, stamp)
    error = message.get("errorMessage")
    if message.get("stopReason") == "error" and isinstance(error, str) and error.strip():
        s.add("outcome", "model error: " + clip(error.strip().splitlines()[0], 300), line, stamp)


def _blocks(blocks: list[Any], line: Line, s: _Session, stamp: str | None) -> None:
    """An assistant message's blocks in order: its words between tool calls, and the calls."""
    texts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            value = block.get("text")
            if isinstance(value, str):
                texts.append(value)
        elif kind == "toolCall":
            if texts:
                _reply(texts, line, s, stamp)
                texts = []
            if not s.drop_in_run():
                name = block.get("name")
                args = block.get("arguments")
                before = len(s.turns)
                s.add("action", summarise_call(str(name or "tool"), args), line, stamp)
                command = args.get("command") if isinstance(args, dict) else None
                if isinstance(command, str) and command.strip() and len(s.turns) > before:
                    s.shells[str(block.get("id"))] = (s.turns[-1], command)
        elif kind == "thinking":
            s.skipped["thinking"] += 1
    if texts:
        _reply(texts, line, s, stamp)


def _first_record(path: Path) -> dict[str, Any] | None:
    """The header line, re-read when a read starts mid-file (its facts are needed)."""
    try:
        with path.open("rb") as handle:
            data = handle.readline(_HEADER_MAX + 1)
    except OSError:
        return None
    record = decode_object(data) if len(data) <= _HEADER_MAX else None
    return record if record is not None and record.get("type") == "session" else None


def _opened_by_subagent(path: Path, offset: int) -> bool:
    """Whether the session's first user message, before ``offset``, is a sub-agent's task."""
    try:
        records = list(head_records(path, offset, lines=_HEAD_LINES))
    except OSError:
        return False
    for record in records:
        message = record.get("message") if record.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "user":
            spawned = subagent_words(unwrap_user(message_text(message.get("content"))))
            return spawned is not None and spawned[1]
    return False


def _run_before(path: Path, offset: int) -> str | None:
    """The noise run open at ``offset``: decided by the last user message before it."""
    try:
        pieces = lines_before(path, offset, _LOOKBACK)
    except OSError:
        return None
    for raw in reversed(pieces):
        if b'"user"' not in raw and b'"bashExecution"' not in raw:
            continue
        record = decode_object(raw)
        if record is None or record.get("type") != "message":
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if message.get("role") == "bashExecution":
            return None
        if message.get("role") == "user":
            text = unwrap_user(message_text(message.get("content")))
            reason = classify_user(text) if text else None
            return reason if reason in RUN_KINDS else None
    return None


def detect(records: list[dict[str, Any]]) -> bool:
    """True when the first records look like a pi-agent / OpenClaw session file."""
    for record in records[:5]:
        if "traceSchema" in record:  # OpenClaw's trajectory traces are another file kind
            return False
        kind = record.get("type")
        if kind == "session" and "version" in record and "id" in record:
            return True
        message = record.get("message")
        if (
            kind == "message"
            and isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and message["role"] in _MESSAGE_ROLES
            and ("id" in record or "parentId" in record)
        ):
            return True
        if kind in ("model_change", "thinking_level_change") and "id" in record:
            return True
    return False


def find_files(home: Path) -> list[Path]:
    """Session files under ``home`` (``$OPENCLAW_HOME``): ``agents/*/sessions/*.jsonl``."""
    found: list[Path] = []
    try:
        agents = sorted((home / "agents").iterdir())
    except OSError:
        return []
    for agent in agents:
        try:
            entries = sorted((agent / "sessions").iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if not name.endswith(".jsonl") or name.endswith(".trajectory.jsonl"):
                continue
            try:
                if entry.is_file():
                    found.append(entry)
            except OSError:
                continue
    return found

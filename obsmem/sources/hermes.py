"""Hermes Agent transcripts (``$HERMES_HOME/sessions/<YYYYMMDD_HHMMSS_hex>.jsonl``) as turns.

A file starts with a ``session_meta`` line (``{"role": "session_meta", "tools", "model",
"platform", "timestamp"}``, or in older releases ``{"type": "session_meta", "session_id",
"timestamp"}``), then holds OpenAI chat messages, one a line.

What is kept: the user's words (the gateway's ``[Name] `` prefix removed), the assistant's text,
each tool call as an ``action`` line (``terminal: npm test``, ``write_file: src/a.py``), tool
results that matter as ``outcome`` lines (a non-zero exit with the first error lines, a tool's
``error``, ``success: false``, test counts), and context-compression summaries (the block ending
in ``--- END OF CONTEXT SUMMARY``) as ``summary`` turns; the words after such a block stay a
turn of the message's own role.

What is dropped (counted in ``skipped``): the session_meta line itself (its tools list is large),
``system`` messages, the assistant's ``reasoning``, routine tool results (exit 0, file contents,
listings), and messages with nothing left to say.

Times: a message's own ``timestamp`` (often missing), else the session's, else the file's
modification time. Hermes writes naive local times; they are taken as UTC, as ``iso_utc`` does.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from obsmem.sources.calls import action_line, call_summary, content_text, parse_args
from obsmem.sources.jsonl import Line, Records, head_records, loads_text, paused_gc
from obsmem.sources.model import ReadResult, Turn
from obsmem.sources.normalise import clip, file_time, iso_utc, project_of
from obsmem.sources.outcomes import (
    LABEL_CHARS,
    command_outcome,
    failure_outcome,
    find_test_counts,
    result_excerpt,
    short,
    shows_content,
)

__all__ = ["AGENT", "detect", "find_files", "read"]

AGENT = "hermes"

_ROLES = frozenset({"user", "assistant", "tool", "system"})
#: Keys that mark another agent's records (Claude Code, Codex, OpenClaw), never Hermes's.
_FOREIGN_KEYS = ("type", "payload", "message", "sessionId", "parentUuid", "parentId", "uuid")
_SHELL_TOOLS = frozenset({"terminal", "shell", "bash", "run_command", "execute_command"})
_SUMMARY_END = "--- END OF CONTEXT SUMMARY"
_SUMMARY_HEADS = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:", "[END OF PRIOR CONTEXT")
#: A summary is kept up to this long: it restates turns that were (or could have been) read.
_SUMMARY_CHARS = 4000
#: Tool results that open like this are errors even without a structured flag.
_ERROR_OPENINGS = ("Error", "error:", "ERROR", "Traceback", "Exception", "fatal:", "Failed")
#: A JSON result up to this long is first looked at undecoded (``_routine_json``); a longer one
#: (a file read) is decoded straight away: its nine substring searches over the whole text cost
#: more than decoding it and looking at its fields, which says the same.
_QUICK_LOOK_CHARS = 1024
#: How many lines a read that starts mid-file looks at for the session_meta line.
_HEADER_LINES = 8


def _time(value: object) -> str | None:
    """``iso_utc(value)``, with a shortcut for the naive local times Hermes writes.

    ``2026-04-12T09:15:21.104228`` is taken as UTC like ``iso_utc`` does, without its slower
    general path (converting and formatting a datetime for every message).
    """
    if (
        isinstance(value, str)
        and len(value) >= 19
        and value[10] == "T"
        and (len(value) == 19 or (value[19] == "." and value[20:].isdigit()))
    ):
        head = value[:19]
        try:
            datetime.fromisoformat(head)
        except ValueError:
            return None
        return head + "Z"
    return iso_utc(value)


def _strip_sender(text: str) -> str:
    """``[Alice] hello`` is ``hello``: the gateway names the sender in group chats.

    Only a short bracket without a colon counts as a name, so notes such as
    ``[System note: ...]`` or ``[Replying to: ...]`` are left alone.
    """
    if text.startswith("["):
        close = text.find("] ", 1, 66)
        if close > 1 and ":" not in text[1:close] and "\n" not in text[1:close]:
            return text[close + 2 :]
    return text


def _split_summary(text: str) -> tuple[str | None, str]:
    """``(summary, rest)`` of a message with a context-compression block, else ``(None, text)``."""
    at = text.find(_SUMMARY_END)
    if at < 0:
        return None, text
    end = text.find("\n", at)
    rest = text[end + 1 :] if end >= 0 else ""
    summary = text[:at].strip()
    for head in _SUMMARY_HEADS:
        if summary.startswith(head):
            first, _, rest_of_summary = summary.partition("\n")
            if head == "[CONTEXT COMPACTION":
                # That marker's line is Hermes's boilerplate ("treat it as background ...").
                summary = rest_of_summary.strip()
            else:
                summary = (first[len(head) :].lstrip(" :]") + "\n" + rest_of_summary).strip()
            break
    return clip(summary, _SUMMARY_CHARS), rest.strip()


class _Session:
    """The turns of one read, with the session's fields and the calls results refer to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.session: str | None = None
        self.timestamp: str | None = None
        self.cwd: str | None = None
        self.project: str | None = None
        self.turns: list[Turn] = []
        #: How many turns were made before the session id was known (they carry None).
        self.unnamed: int | None = None
        self.skipped: Counter[str] = Counter()
        # id -> (name, detail, command); the label results quote is made from the first two
        # only when a result needs it (most results are routine).
        self.calls: dict[str, tuple[str, str, str | None]] = {}
        self.shells: dict[str, tuple[Turn, str]] = {}  # call id -> its action, its command
        self._plain_names: dict[str, bool] = {}  # tool name -> it holds no whitespace
        self._file_time: str | None = None
        self._file_time_known = False
        self._source = str(path)
        # The record whose time was worked out last, and that time: a message often gives
        # several turns (words, actions), all at its one time.
        self._stamp_of: dict[str, Any] | None = None
        self._stamp: str | None = None

    def learn_meta(self, record: dict[str, Any]) -> None:
        """Take the session id, time and cwd a ``session_meta`` line gives (first one wins)."""
        if self.session is None:
            value = record.get("session_id") or record.get("id")
            if isinstance(value, str) and value:
                self.session = value
                self.unnamed = len(self.turns)
        if self.timestamp is None:
            self.timestamp = _time(record.get("timestamp"))
        if self.cwd is None:
            value = record.get("cwd")
            if isinstance(value, str) and value:
                self.cwd = value
                self.project = project_of(value)

    def _last_resort_time(self) -> str | None:
        """The file's modification time, looked up once (for turns without any other time)."""
        if not self._file_time_known:
            self._file_time, self._file_time_known = file_time(self.path), True
        return self._file_time

    def _turn(self, role: str, text: str, line: Line, record: dict[str, Any]) -> bool:
        # ``text`` comes stripped: most of it already is (words, actions), so it is not stripped
        # again here for every turn.
        if not text:
            return False
        if record is not self._stamp_of:
            # The message's own time, else the session's, else the file's.
            value = record.get("timestamp")
            found = _time(value) if value is not None else None
            self._stamp_of = record
            self._stamp = found or self.timestamp or self._last_resort_time()
        number = line.number
        # Positional: keyword arguments cost more, at one Turn for most lines.
        self.turns.append(
            Turn(
                role,
                text,
                self._stamp,
                self.session,
                AGENT,
                self.project,
                self._source,
                number,
                number,
                line.start,
                line.end,
            )
        )
        return True

    def add(self, line: Line, record: dict[str, Any]) -> None:
        """Turn one decoded line into turns (or a skip count)."""
        role = record.get("role")
        if role == "session_meta" or record.get("type") == "session_meta":
            self.learn_meta(record)
        elif role == "user" or role == "assistant":
            self._words(line, record, role)
        elif role == "tool":
            self._result(line, record)
        elif role == "system":
            self.skipped["system"] += 1
        elif role is None:
            self.skipped["no role"] += 1
        else:
            self.skipped[f"unknown role: {short(str(role), 40)}"] += 1

    def _words(self, line: Line, record: dict[str, Any], role: str) -> None:
        content = record.get("content")
        text = (content if isinstance(content, str) else content_text(content)).strip()
        said = False
        if _SUMMARY_END in text:
            summary, text = _split_summary(text)
            if summary:
                said = self._turn("summary", summary.strip(), line, record)
        if role == "user":
            if text[:1] == "[":
                text = _strip_sender(text).strip()
            said = self._turn(role, text, line, record) or said
        else:
            said = self._turn(role, text, line, record) or said
            if "tool_calls" in record:
                said = self._calls(line, record) or said
        if not said:
            self.skipped["empty message"] += 1

    def _calls(self, line: Line, record: dict[str, Any]) -> bool:
        calls = record.get("tool_calls")
        if not isinstance(calls, list):
            return False
        said = False
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            name = function.get("name")
            name = name if isinstance(name, str) and name else "tool"
            args = parse_args(function.get("arguments"))
            detail, one_line = call_summary(args, self.cwd)
            command = None
            if name in _SHELL_TOOLS:
                value = args.get("command", args.get("cmd"))
                command = (value.strip() or None) if isinstance(value, str) else None
            call_id = call.get("id") or call.get("call_id")
            if isinstance(call_id, str) and call_id:
                self.calls[call_id] = (name, detail, command)
            plain = self._plain_names.get(name)
            if plain is None:  # a session calls the same few tools again and again
                plain = self._plain_names[name] = name.split() == [name]
            text = action_line(name, detail, one_line, plain)
            added = self._turn("action", text, line, record)
            if added and command and isinstance(call_id, str) and not shows_content(command):
                self.shells[call_id] = (self.turns[-1], command)  # its result may say more
            said = added or said
        return said

    def _result(self, line: Line, record: dict[str, Any]) -> None:
        content = record.get("content")
        text = content if isinstance(content, str) else content_text(content)
        stripped = text.lstrip()
        if stripped[:1] == "{" and len(stripped) <= _QUICK_LOOK_CHARS and _routine_json(stripped):
            # Most results: routine, known before looking up the call they answer; only a shell
            # call still waiting for its result can take an excerpt.
            if self.shells:
                self._excerpt(record, text)
            self.skipped["routine tool output"] += 1
            return
        call_id = record.get("tool_call_id")
        known = self.calls.get(call_id) if isinstance(call_id, str) else None
        name = record.get("name")
        name = name if isinstance(name, str) and name else known[0] if known else "tool"
        outcome = _outcome(name, known, text, stripped)
        if not (outcome and self._turn("outcome", outcome.strip(), line, record)):
            if self.shells:
                self._excerpt(record, text)
            self.skipped["routine tool output"] += 1

    def _excerpt(self, record: dict[str, Any], text: str) -> None:
        """Put a successful shell command's excerpt on its action (see ``result_excerpt``)."""
        call_id = record.get("tool_call_id")
        shell = self.shells.pop(call_id, None) if isinstance(call_id, str) else None
        if shell is None:
            return
        output = text
        if text.lstrip().startswith("{"):
            try:
                data = loads_text(text)
            except (ValueError, RecursionError):
                data = None
            if isinstance(data, dict):
                code = data.get("exit_code", data.get("returncode"))
                if code not in (0, None):
                    return
                value = data.get("output", data.get("stdout", ""))
                output = value if isinstance(value, str) else ""
        shell[0].excerpt = result_excerpt(output, shell[1])


def _routine_json(text: str) -> bool:
    """True when a JSON tool result surely says nothing worth keeping (checked without decoding).

    Most results are file contents, listings and exit-0 outputs; a few substring searches rule
    them out far faster than decoding them. Anything that might be an error, a non-zero exit or
    a test summary is left for the full check.
    """
    if "pass" in text or "fail" in text or "PASS" in text or "FAIL" in text:
        return False  # TEST_WORDS, spelt out: any() over a generator costs more per result
    for key in ('"exit_code":', '"returncode":'):
        at = text.find(key)
        if at >= 0:
            value = text[at + len(key) : at + len(key) + 8].lstrip()
            if not value.startswith(("0,", "0}", "0 ", "null")):
                return False
    for key in ('"error":', '"stderr":', '"success":'):
        at = text.find(key)
        if at >= 0:
            value = text[at + len(key) : at + len(key) + 8].lstrip()
            if not value.startswith(("null", '""', "true")):
                return False
    return True


def _label(name: str, known: tuple[str, str, str | None] | None) -> str:
    """How an outcome names its call: the call's tool and detail, else the result's tool name.

    Made only for an outcome that quotes it: most results give none, and a shell command's
    outcome quotes the command.
    """
    return short(f"{known[0]} {known[1]}".strip(), LABEL_CHARS) if known else name


def _outcome(
    name: str, known: tuple[str, str, str | None] | None, text: str, stripped: str
) -> str | None:
    """What a tool result says worth remembering, or None when it is routine.

    ``known`` is the call the result answers (name, detail, command), when it was read.
    ``stripped`` is ``text`` without its leading whitespace, already found not routine by
    :func:`_routine_json` when it is a JSON object.
    """
    data: object = None
    if stripped.startswith("{"):
        try:
            data = loads_text(text)
        except (ValueError, RecursionError):
            data = None
    if not isinstance(data, dict):
        if stripped.startswith(_ERROR_OPENINGS):
            return failure_outcome(_label(name, known), text)
        counts = find_test_counts(text) if text else None
        return f"{_label(name, known)}: {counts}" if counts else None
    value = data.get("exit_code", data.get("returncode"))
    code = value if isinstance(value, int) and not isinstance(value, bool) else None
    error = data.get("error") or data.get("stderr")
    error = error if isinstance(error, str) else ""
    output = data.get("output", data.get("stdout", data.get("content", "")))
    output = output if isinstance(output, str) else ""
    if code is not None and (name in _SHELL_TOOLS or code != 0):
        command = known[2] if known else None
        return command_outcome(command or _label(name, known), code, output, error)
    if error.strip():
        return failure_outcome(_label(name, known), error)
    if data.get("success") is False:
        message = data.get("message")
        return failure_outcome(_label(name, known), message if isinstance(message, str) else output)
    counts = find_test_counts(output) if output else None
    return f"{_label(name, known)}: {counts}" if counts else None


def _read_header(path: Path, start_offset: int, session: _Session) -> None:
    """The session fields from the first lines, for a read that starts further in the file."""
    for record in head_records(path, start_offset, lines=_HEADER_LINES):
        if record.get("role") == "session_meta" or record.get("type") == "session_meta":
            session.learn_meta(record)
            return


def read(
    path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
) -> ReadResult:
    """The turns of a Hermes Agent transcript from ``start_offset`` (a line start) to its end.

    Only complete lines are read (``flush`` also takes a last line without its newline); bad
    lines and records are skipped and counted in ``skipped``, never raised.
    """
    session = _Session(path)
    if start_offset > 0:
        _read_header(path, start_offset, session)
    records = Records(
        path,
        start_offset=start_offset,
        start_line=start_line,
        flush=flush,
        skipped=session.skipped,
    )
    add, words, result = session.add, session._words, session._result
    with paused_gc():
        for line, record in records:
            # Most lines are messages: sent to their handler here, without a call more through
            # add (which takes the rest, and any record that calls itself a session_meta).
            role = record.get("role")
            if role == "tool" and record.get("type") != "session_meta":
                result(line, record)
            elif (role == "user" or role == "assistant") and record.get("type") != "session_meta":
                words(line, record, role)
            else:
                add(line, record)
    # Turns made before the session id was read carry None; a file without one is its stem.
    unnamed = session.turns if session.unnamed is None else session.turns[: session.unnamed]
    name = session.session or path.stem or None
    for turn in unnamed:
        turn.session = name
    return ReadResult(
        session.turns, start_offset, records.end_offset, records.end_line, records.skipped
    )


def _looks_like_hermes(record: dict[str, Any]) -> bool:
    if record.get("role") == "session_meta":
        return True
    if record.get("type") == "session_meta":
        # Codex's session_meta has its fields in a payload; Hermes's older one has them inline.
        return "payload" not in record and ("session_id" in record or "timestamp" in record)
    return False


def detect(records: list[dict[str, Any]]) -> bool:
    """True when the first records of a file look like a Hermes Agent transcript.

    Either the first record is a session_meta in one of Hermes's two shapes, or every record is
    a plain chat message (``role`` user/assistant/tool/system) with none of the wrapper fields
    Claude Code, Codex and OpenClaw records carry.
    """
    records = [record for record in records if isinstance(record, dict)]
    if not records:
        return False
    if _looks_like_hermes(records[0]):
        return True
    return all(
        isinstance(record.get("role"), str)
        and record["role"] in _ROLES
        and not any(key in record for key in _FOREIGN_KEYS)
        for record in records
    )


def find_files(home: Path) -> list[Path]:
    """Every session file under ``home/sessions`` (``home`` is ``$HERMES_HOME``, ``~/.hermes``).

    Also reads the sessions of Hermes profiles (``home/profiles/<name>/sessions``), each a
    separate Hermes home. ``sessions.json`` (the index) and other non-JSONL files are skipped.
    """
    folders = [home / "sessions"]
    try:
        with os.scandir(home / "profiles") as profiles:
            folders += [Path(entry.path) / "sessions" for entry in profiles if _is_dir(entry)]
    except OSError:
        pass
    found: list[Path] = []
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".jsonl") and _is_file(entry):
                        found.append(Path(entry.path))
        except OSError:
            continue
    return sorted(found)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False

"""Codex CLI records turned into turns: the part of the Codex reader that knows the record kinds.

``codex.py`` finds files, reads lines and keeps offsets; this module gets each decoded record
(a wrapper ``{timestamp, type, payload}`` line, an older flat record, or an item of an older
``.json`` document) and decides what it says.

Two schemes keep every fact once although Codex writes most of them twice:

- Words: user text arrives as an ``event_msg`` ``user_message`` and as a ``response_item`` user
  message, assistant text as ``agent_message`` and as a ``response_item`` message, next to each
  other. Whichever comes first becomes the turn; its twin (same role and text, the other form,
  at most ``TWIN_WINDOW`` lines later) only widens that turn's line range. Files with one form
  only (older flat records, the Desktop app's events) lose nothing.
- Tools: actions come only from the model's calls (``function_call``, ``custom_tool_call``,
  ``local_shell_call``, ``web_search_call``), which every Codex version writes; the end events
  (``exec_command_end``, ``patch_apply_end``, ``web_search_end``) never make actions. Outcomes
  come from whichever of the end event and the raw call output arrives first (the end events are
  only written in Codex's extended persistence mode), keyed by call id, or by process id for the
  unified exec's ``write_stdin`` polls; the other is dropped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.sources.calls import (
    call_detail,
    command_text,
    content_text,
    parse_args,
    patch_files,
    relative,
)
from obsmem.sources.jsonl import Line
from obsmem.sources.model import Turn
from obsmem.sources.normalise import file_time, iso_utc, project_of
from obsmem.sources.outcomes import (
    LABEL_CHARS,
    command_outcome,
    created_excerpt,
    failure_outcome,
    result_excerpt,
    short,
)

__all__ = ["TWIN_WINDOW", "Rollout", "SessionInfo"]

AGENT = "codex"
#: Twins (the event and the item form of one message) are at most this many lines apart.
TWIN_WINDOW = 2

#: Records that carry nothing to observe: skipped, and counted under their own name.
_SILENT_EVENTS = frozenset({
    "token_count", "task_started", "task_complete", "turn_started", "turn_complete",
    "agent_reasoning", "agent_reasoning_raw_content", "agent_reasoning_section_break",
    "exec_command_begin", "exec_command_output_delta", "patch_apply_begin", "web_search_begin",
    "web_search_end", "mcp_tool_call_begin", "mcp_tool_call_end", "context_compacted",
    "turn_aborted", "turn_diff", "entered_review_mode", "exited_review_mode", "thread_rolled_back",
    "undo_started", "undo_completed", "collab_agent_spawn_begin", "collab_agent_spawn_end",
    "collab_waiting_begin", "collab_waiting_end", "collab_close_begin", "collab_close_end",
    "plan_update", "error", "stream_error", "warning", "background_event", "view_image_tool_call",
    "item_started", "item_completed",
})  # fmt: skip
_SILENT_ITEMS = frozenset({"reasoning", "ghost_snapshot", "compaction", "compaction_summary"})
_SHELL_TOOLS = frozenset(
    {"shell", "exec_command", "shell_command", "container.exec", "local_shell", "unified_exec"}
)
#: Calls that only steer other calls (polling a running command, waiting for a sub-agent).
_QUIET_TOOLS = frozenset({"write_stdin", "wait_agent", "close_agent", "wait"})
_PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
# User-role text Codex injects itself: instructions, environment, notices. Never the user's words.
_INJECTED_PREFIXES = ("# AGENTS.md instructions for ", "<INSTRUCTIONS>", "# Context from my IDE")
_INJECTED_TAGS = frozenset({
    "environment_context", "user_instructions", "developer_instructions",
    "permissions instructions", "collaboration_mode", "skill", "turn_aborted",
    "subagent_notification", "user_shell_command", "model_switch", "personality_spec",
    "review_mode",
})  # fmt: skip
#: Preambles the IDE extension and the Desktop app put before the user's request (open files,
#: attached files); the request follows the last of these headings.
_PREAMBLES = ("# Context from my IDE", "# Files mentioned by the user:")
_REQUEST_HEADINGS = ("## My request for Codex:", "## My request:")
_RUNNING = "Process running with session ID "
_EXITED = "Process exited with code "
_EXIT_CODE = "Exit code: "


def _injected(text: str) -> bool:
    """True for a block Codex wrote into a user message itself (``<environment_context>`` ...)."""
    if text.startswith(_INJECTED_PREFIXES):
        return True
    if not text.startswith("<"):
        return False
    close = text.find(">")
    if close < 2:
        return False
    tag = text[1:close]
    if tag in _INJECTED_TAGS:
        return True
    # Newer releases add tags of the same shape (snake_case); a user rarely types one whole.
    return "_" in tag and " " not in tag and text.rstrip().endswith(f"</{tag}>")


def user_words(text: str) -> str:
    """The user's own words in a user message block ('' when Codex injected the block)."""
    text = text.strip()
    if text.startswith(_PREAMBLES):
        # Open or attached files first, the request after a fixed heading (none: no request).
        for heading in _REQUEST_HEADINGS:
            at = text.rfind(heading)
            if at >= 0:
                return text[at + len(heading) :].strip()
        return ""
    return "" if _injected(text) else text


def _env_cwd(text: str) -> str | None:
    """The working directory an ``<environment_context>`` block names."""
    for opening, closing in (("<cwd>", "</cwd>"), ("Current working directory: ", "\n")):
        at = text.find(opening)
        if at >= 0:
            end = text.find(closing, at + len(opening))
            value = text[at + len(opening) : end if end >= 0 else len(text)].strip()
            if value:
                return value
    return None


def _spawned(source: object) -> bool:
    """True for a ``session_meta`` ``source`` naming a sub-agent (``{"subagent": ...}``)."""
    return isinstance(source, dict) and any(
        isinstance(key, str) and key.lower() == "subagent" for key in source
    )


@dataclass
class SessionInfo:
    """What the file says about the session as a whole: id, start time, working directory.

    ``cwd`` is the directory in force (paths in calls are shown relative to it); ``root`` the
    session's first one, which names its project whatever folder a later turn runs in.
    ``subagent`` is True for a rollout that Codex spawned for a sub-agent.
    """

    session: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    root: str | None = None
    subagent: bool = False
    _project: tuple[str | None, str | None] = field(default=(None, None), init=False, repr=False)

    def learn_meta(self, meta: dict[str, Any], wrapper_time: object = None) -> None:
        """Take the id, time and cwd of a ``session_meta`` payload (or an old first line)."""
        if self.session is None:
            value = meta.get("id")
            if isinstance(value, str) and value:
                self.session = value
        if self.timestamp is None:
            self.timestamp = iso_utc(meta.get("timestamp")) or iso_utc(wrapper_time)
        if self.cwd is None:
            self.learn_cwd(meta.get("cwd"))
        if _spawned(meta.get("source")):
            self.subagent = True

    def learn_cwd(self, value: object) -> None:
        """A ``turn_context`` names the directory the next turns run in."""
        if isinstance(value, str) and value:
            self.cwd = value
            if self.root is None:
                self.root = value

    @property
    def project(self) -> str | None:
        """The session's project: that of its first working directory."""
        root = self.root or self.cwd
        if self._project[0] != root:
            self._project = (root, project_of(root) if root else None)
        return self._project[1]


@dataclass
class _Call:
    """A call seen in this read: what to call it in its outcome, and how to read its output."""

    kind: str  # "shell", "patch", "poll" or "tool"
    label: str
    key: str  # the outcome key: its own call id, or the polled command's
    command: str | None = None
    process: str | None = None  # the unified exec process a poll reads from
    turn: Turn | None = None  # a shell call's action, which a successful result's excerpt joins


@dataclass
class _Unpaired:
    """A message turn whose twin (its other form) may still follow."""

    role: str
    form: str
    text: str
    line: int
    turn: Turn


@dataclass
class Rollout:
    """The turns of one read of a Codex file, and what pairing twins and outcomes needs."""

    path: Path
    info: SessionInfo
    turns: list[Turn] = field(default_factory=list)
    skips: list[tuple[int, str]] = field(default_factory=list)
    #: (first line, second line) of every pair kept once: a read is never cut between them.
    pairs: list[tuple[int, int]] = field(default_factory=list)
    unpaired: list[_Unpaired] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)
    processes: dict[str, str] = field(default_factory=dict)  # unified exec process -> call id
    outcomes: dict[str, int] = field(default_factory=dict)  # outcome key -> line it came from
    _file_time: str | None = None
    _file_time_known: bool = False

    # -- turns -----------------------------------------------------------------------------

    def skip(self, line: Line, reason: str) -> None:
        """Count a record that gives no turn (kept per line, so a cut read can drop it again)."""
        self.skips.append((line.number, reason))

    def skipped(self, before: int | None = None) -> Counter[str]:
        """The skip counts, for lines before ``before`` (all lines when None)."""
        return Counter(r for n, r in self.skips if before is None or n < before)

    def _time(self, value: object) -> str | None:
        found = iso_utc(value) if value is not None else None
        if found or self.info.timestamp:
            return found or self.info.timestamp
        if not self._file_time_known:
            self._file_time, self._file_time_known = file_time(self.path), True
        return self._file_time

    def _turn(self, role: str, text: str, line: Line, when: object) -> Turn | None:
        text = text.strip()
        if not text:
            return None
        turn = Turn(
            role=role,
            text=text,
            timestamp=self._time(when),
            session=self.info.session,
            agent=AGENT,
            project=self.info.project,
            source_path=str(self.path),
            line_start=line.number,
            line_end=line.number,
            byte_start=line.start,
            byte_end=line.end,
            subagent=self.info.subagent,
        )
        self.turns.append(turn)
        return turn

    def _message(self, role: str, form: str, text: str, line: Line, when: object) -> None:
        text = text.strip()
        if not text:
            self.skip(line, "empty message")
            return
        self.unpaired = [u for u in self.unpaired if line.number - u.line <= TWIN_WINDOW]
        for twin in self.unpaired:
            if twin.role == role and twin.form != form and twin.text == text:
                self.unpaired.remove(twin)
                twin.turn.line_end, twin.turn.byte_end = line.number, line.end
                self.pairs.append((twin.line, line.number))
                self.skip(line, "duplicate message")
                return
        turn = self._turn(role, text, line, when)
        if turn is not None:
            self.unpaired.append(_Unpaired(role, form, text, line.number, turn))

    def _outcome(
        self, keys: list[str], text: str | None, line: Line, when: object, *, final: bool = True
    ) -> None:
        """Keep an outcome unless another form of the same result came first (same call or process).

        ``final`` says the result is definite (an exit code, a success flag): only then does it
        stand for the call, so a vaguer earlier form never hides a definite later one.
        """
        for key in keys:
            first = self.outcomes.get(key)
            if first is not None:
                self.pairs.append((first, line.number))
                self.skip(line, "duplicate outcome")
                return
        if final:
            for key in keys:
                self.outcomes[key] = line.number
        if text:
            self._turn("outcome", text, line, when)
        else:
            self.skip(line, "routine output")

    def _excerpt(self, keys: list[str], output: str, command: str | None) -> None:
        """Put a successful command's excerpt on its action (see ``_note``)."""
        call = self._call_of(keys)
        if call is not None:
            # The call's own command: an end event may name only the program.
            self._note(keys, result_excerpt(output, call.command or command or ""))

    def _call_of(self, keys: list[str]) -> _Call | None:
        return next((self.calls[k] for k in keys if k in self.calls), None)

    def _note(self, keys: list[str], excerpt: str | None) -> None:
        """Put ``excerpt`` on the action of the call ``keys`` name, unless an earlier form of the
        same result already stood for it (or the call was not read: nothing to put it on)."""
        call = self._call_of(keys)
        turn = call.turn if call is not None else None
        if excerpt and turn is not None and turn.excerpt is None:
            if any(key in self.outcomes for key in keys):
                return
            turn.excerpt = excerpt

    # -- records ---------------------------------------------------------------------------

    def learn_env(self, message: dict[str, Any]) -> None:
        """Take the cwd from a user message's ``<environment_context>``."""
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            return
        for block in content:
            text = content_text(block)
            if "<environment_context>" in text:
                self.info.learn_cwd(_env_cwd(text))
                return

    def wrapper(self, line: Line, kind: str, payload: dict[str, Any], when: object) -> None:
        """One ``{timestamp, type, payload}`` line."""
        if kind == "response_item":
            self.item(line, payload, when)
        elif kind == "event_msg":
            self.event(line, payload, when)
        elif kind == "session_meta":
            self.info.learn_meta(payload, when)
        elif kind == "turn_context":
            self.info.learn_cwd(payload.get("cwd"))
        elif kind == "compacted":
            message = payload.get("message")
            if not (isinstance(message, str) and self._turn("summary", message, line, when)):
                self.skip(line, "compacted")
        else:
            self.skip(line, f"unknown type: {short(kind, 40)}")

    def event(self, line: Line, payload: dict[str, Any], when: object) -> None:
        """An ``event_msg`` payload."""
        kind = payload.get("type")
        if kind == "user_message":
            message = payload.get("message")
            if payload.get("kind") not in (None, "plain") or not isinstance(message, str):
                self.skip(line, "injected text")
            else:
                self._message("user", "event", user_words(message), line, when)
        elif kind == "agent_message":
            message = payload.get("message")
            self._message(
                "assistant", "event", message if isinstance(message, str) else "", line, when
            )
        elif kind == "exec_command_end":
            self._exec_end(line, payload, when)
        elif kind == "patch_apply_end":
            self._patch_end(line, payload, when)
        elif isinstance(kind, str) and kind in _SILENT_EVENTS:
            self.skip(line, str(kind))
        else:
            self.skip(line, f"unknown type: {short(str(kind), 40)}")

    def item(self, line: Line, payload: dict[str, Any], when: object) -> None:
        """A ``response_item`` payload, a flat record, or an item of a ``.json`` document."""
        kind = payload.get("type")
        if kind == "message":
            self._item_message(line, payload, when)
        elif kind in ("function_call", "custom_tool_call"):
            name = payload.get("name")
            raw = payload.get("arguments") if kind == "function_call" else payload.get("input")
            self._call(line, name if isinstance(name, str) else "tool", raw, payload, when)
        elif kind == "local_shell_call":
            action = payload.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            self._call(line, "local_shell", {"command": command}, payload, when)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(line, payload, when)
        elif kind == "web_search_call":
            self._web_search(line, payload, when)
        elif isinstance(kind, str) and kind in _SILENT_ITEMS:
            self.skip(line, str(kind))
        else:
            self.skip(line, f"unknown type: {short(str(kind), 40)}")

    def _item_message(self, line: Line, payload: dict[str, Any], when: object) -> None:
        role = payload.get("role")
        content = payload.get("content")
        blocks = content if isinstance(content, list) else [content]
        if role == "user":
            words = []
            for block in blocks:
                text = content_text(block) if not isinstance(block, str) else block
                if self.info.cwd is None and "<environment_context>" in text:
                    self.info.learn_cwd(_env_cwd(text))  # older files say the cwd only here
                words.append(user_words(text))
            text = "\n\n".join(word for word in words if word)
            if text:
                self._message("user", "item", text, line, when)
            else:
                self.skip(line, "injected text")
        elif role == "assistant":
            texts = [content_text(block) for block in blocks]
            self._message("assistant", "item", "\n\n".join(t for t in texts if t), line, when)
        else:
            self.skip(line, f"{short(str(role), 40)} message")

    def _call(
        self, line: Line, name: str, raw: object, payload: dict[str, Any], when: object
    ) -> None:
        call_id = payload.get("call_id") or payload.get("id")
        key = call_id if isinstance(call_id, str) and call_id else f"line:{line.number}"
        cwd = self.info.cwd
        args = parse_args(raw)
        if name == "apply_patch" or (name in _SHELL_TOOLS and "*** Begin Patch" in str(raw)):
            value = args.get("input", args.get("command", args.get("cmd"))) if args else raw
            if isinstance(value, list):
                value = "\n".join(part for part in value if isinstance(part, str))
            files = patch_files(value if isinstance(value, str) else "", cwd)
            names = ", ".join(files) if files else "(no files)"
            action = self._turn("action", short(f"Patch: {names}"), line, when)
            self.calls[key] = _Call("patch", short(f"Patch {names}", LABEL_CHARS), key, turn=action)
            return
        if name in _SHELL_TOOLS:
            command = command_text(args.get("command", args.get("cmd")))
            action = self._turn("action", short(f"Shell: {command}"), line, when)
            self.calls[key] = _Call("shell", command, key, command or None, turn=action)
            if action is None:
                self.skip(line, "empty call")
            return
        if name in _QUIET_TOOLS:
            session = args.get("session_id")
            if name == "write_stdin" and isinstance(session, int | str):
                target = self.processes.get(str(session), f"process:{session}")
                polled = self.calls.get(target)
                label = polled.label if polled else ""
                polled_command = polled.command if polled else None
                self.calls[key] = _Call("poll", label, target, polled_command, str(session))
            self.skip(line, name)
            return
        if name == "update_plan":
            detail = self._plan(args)
        elif name == "spawn_agent" and isinstance(args.get("agent_type"), str):
            detail = f"{call_detail(args, cwd)} ({args['agent_type']})".strip()
        elif isinstance(raw, str) and not args:
            detail = short(raw)  # a custom tool's free-form input
        else:
            detail = call_detail(args, cwd)
        self.calls[key] = _Call("tool", short(f"{name} {detail}".strip(), LABEL_CHARS), key)
        self._turn("action", short(f"{name}: {detail}" if detail else name), line, when)

    @staticmethod
    def _plan(args: dict[str, Any]) -> str:
        steps = args.get("plan")
        if not isinstance(steps, list):
            return ""
        items = []
        for step in steps:
            if isinstance(step, dict) and isinstance(step.get("step"), str):
                mark = _PLAN_MARKS.get(str(step.get("status")), "[ ]")
                items.append(f"{mark} {step['step'].strip()}")
        return "; ".join(items)

    def _web_search(self, line: Line, payload: dict[str, Any], when: object) -> None:
        action = payload.get("action")
        action = action if isinstance(action, dict) else {}
        kind = action.get("type")
        query = action.get("query")
        if not isinstance(query, str) or not query.strip():
            queries = action.get("queries")
            query = queries[0] if isinstance(queries, list) and queries else None
        if kind == "open_page" and isinstance(action.get("url"), str):
            text = f"WebOpen: {action['url']}"
        elif kind == "find_in_page" and isinstance(action.get("pattern"), str):
            text = f"WebFind: {action['pattern']}"
        elif isinstance(query, str) and query.strip():
            text = f"WebSearch: {query}"
        else:
            self.skip(line, "web search without query")
            return
        self._turn("action", short(text), line, when)

    # -- results ---------------------------------------------------------------------------

    def _output(self, line: Line, payload: dict[str, Any], when: object) -> None:
        call_id = payload.get("call_id")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        raw = payload.get("output")
        success = raw.get("success") if isinstance(raw, dict) else None
        text = content_text(raw)
        code: int | None = None
        legacy = parse_args(text) if text.startswith('{"output"') else {}
        if legacy:  # {"output": "...", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}
            metadata = legacy.get("metadata")
            value = metadata.get("exit_code") if isinstance(metadata, dict) else None
            code = value if isinstance(value, int) and not isinstance(value, bool) else None
            body = legacy.get("output")
            text = body if isinstance(body, str) else ""
        else:
            text, code, running = _unified_output(text)
            if running is not None:
                if call is not None:
                    self.processes[running] = call.key
                self.skip(line, "command still running")
                return
        if call is not None and call.kind == "poll" and code is None:
            self.skip(line, "routine output")
            return
        keys = _keys(call.key if call is not None else call_id)
        if call is not None and call.process is not None:
            keys += _keys(f"process:{call.process}", self.processes.get(call.process))
        final = code is not None or success is not None
        if call is not None and call.kind in ("patch", "tool"):
            failed = success is False or (code is not None and code != 0)
            outcome = failure_outcome(call.label, text) if failed else None
            if not failed and call.kind == "patch":
                self._note(keys, created_excerpt(text))
            self._outcome(keys, outcome, line, when, final=final)
        elif call is not None or code is not None:
            command = call.command if call is not None else None
            outcome = command_outcome(command, code, text)
            if outcome is None and not code and success is not False:
                self._excerpt(keys, text, command)
            self._outcome(keys, outcome, line, when, final=final)
        elif success is False:
            self._outcome(keys, failure_outcome("Tool call", text), line, when)
        else:
            self.skip(line, "routine output")

    def _exec_end(self, line: Line, payload: dict[str, Any], when: object) -> None:
        call_id = payload.get("call_id")
        process = payload.get("process_id")
        keys = _keys(call_id)
        if isinstance(process, str | int) and str(process):
            keys += _keys(f"process:{process}")
            if isinstance(call_id, str) and call_id:
                self.processes[str(process)] = call_id
        command = command_text(payload.get("command"))
        parsed = payload.get("parsed_cmd")
        if not command and isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
            command = command_text(parsed[0].get("cmd"))
        value = payload.get("exit_code")
        code = value if isinstance(value, int) and not isinstance(value, bool) else None
        stderr = payload.get("stderr")
        output = payload.get("aggregated_output") or payload.get("stdout") or ""
        output = output if isinstance(output, str) else ""
        text = command_outcome(
            command or None, code, output, stderr if isinstance(stderr, str) else ""
        )
        if text is None and code == 0:
            self._excerpt(keys, output, command or None)
        self._outcome(keys, text, line, when, final=code is not None)

    def _patch_end(self, line: Line, payload: dict[str, Any], when: object) -> None:
        call_id = payload.get("call_id")
        keys = _keys(call_id)
        if payload.get("success") is not False:
            stdout = payload.get("stdout")
            self._note(keys, created_excerpt(stdout) if isinstance(stdout, str) else None)
            self._outcome(keys, None, line, when, final="success" in payload)
            return
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is not None:
            label = call.label
        else:
            changes = payload.get("changes")
            files = (
                [name for name in changes if isinstance(name, str)]
                if isinstance(changes, dict)
                else []
            )
            label = short(
                "Patch " + ", ".join(relative(name, self.info.cwd) for name in files), LABEL_CHARS
            )
        stderr = payload.get("stderr")
        stdout = payload.get("stdout")
        detail = stderr if isinstance(stderr, str) and stderr.strip() else stdout
        text = failure_outcome(label, detail if isinstance(detail, str) else "")
        self._outcome(keys, text, line, when)


def _keys(*values: object) -> list[str]:
    """The non-empty string keys among ``values`` (call ids can be missing in odd files)."""
    return [value for value in values if isinstance(value, str) and value]


def _unified_output(text: str) -> tuple[str, int | None, str | None]:
    """``(body, exit code, running process id)`` of a unified exec or freeform shell output.

    Unified exec writes ``Chunk ID: …`` / ``Wall time: …`` / ``Process exited with code N`` (or
    ``Process running with session ID N``) / ``Original token count: …`` / ``Output:`` then the
    output; the freeform shell writes ``Exit code: N`` / ``Wall time: …`` / ``Output:``.
    """
    head = text[:400]
    if _RUNNING in head:
        at = head.index(_RUNNING) + len(_RUNNING)
        process = head[at:].split("\n", 1)[0].strip()
        return "", None, process or None
    code: int | None = None
    for marker in (_EXITED, _EXIT_CODE):
        at = head.find(marker)
        if at >= 0 and (at == 0 or head[at - 1] == "\n"):
            digits = head[at + len(marker) :].split("\n", 1)[0].strip()
            if digits.lstrip("-").isdigit():
                code = int(digits)
            break
    if code is None:
        return text, None, None
    body_at = text.find("\nOutput:\n")
    return (text[body_at + 9 :] if body_at >= 0 else ""), code, None

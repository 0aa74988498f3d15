"""Real-format transcripts built from a short script of events, for the hostile-input tests.

One script (:class:`Event` list) is written the way each agent writes its sessions: Claude Code
(``projects/<cwd>/<session>.jsonl``), Codex CLI (``sessions/YYYY/MM/DD/rollout-...jsonl``),
Hermes Agent (``sessions/<stamp>.jsonl``) and OpenClaw (``agents/<agent>/sessions/<id>.jsonl``),
under the agent homes the test environment points at. The shapes follow the fixtures in
``tests/fixtures/transcripts`` (user text, assistant text, shell calls with their output, file
reads, web fetches), so the readers take the same paths they take on real sessions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["AGENT_HOME_VARS", "WRITERS", "Event", "write_transcript"]

#: The variable naming each agent's home (set by the autouse fixture in tests/conftest.py).
AGENT_HOME_VARS = {
    "claude": "CLAUDE_CONFIG_DIR",
    "codex": "CODEX_HOME",
    "hermes": "HERMES_HOME",
    "openclaw": "OPENCLAW_HOME",
}


@dataclass(frozen=True)
class Event:
    """One step of a session.

    ``kind``: ``user`` / ``assistant`` (``text``), ``shell`` (``text`` is the command,
    ``output`` what it printed, ``exit_code``), ``read`` (``text`` is a file path) or ``fetch``
    (``text`` is a URL).
    """

    kind: str
    text: str
    output: str = ""
    exit_code: int = 0


def _stamp(n: int) -> str:
    return f"2026-11-20T10:{n // 60:02d}:{n % 60:02d}.000Z"


def _lines(records: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _claude(events: Sequence[Event], session: str, cwd: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    base = {"sessionId": session, "cwd": cwd, "version": "2.0.76", "isSidechain": False}

    def add(n: int, kind: str, message: dict[str, Any], **extra: Any) -> None:
        out.append(
            {
                **base,
                "type": kind,
                "uuid": f"{session}-{n}-{len(out)}",
                "timestamp": _stamp(n),
                "message": message,
                **extra,
            }
        )

    for n, e in enumerate(events):
        if e.kind == "user":
            add(n, "user", {"role": "user", "content": e.text})
            continue
        if e.kind == "assistant":
            add(
                n,
                "assistant",
                {
                    "id": f"msg{n}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": e.text}],
                },
            )
            continue
        name, args = {
            "shell": ("Bash", {"command": e.text, "description": "Run it"}),
            "read": ("Read", {"file_path": e.text}),
            "fetch": ("WebFetch", {"url": e.text, "prompt": "Summarise the page"}),
        }[e.kind]
        tool_id = f"toolu_{n:04d}"
        add(
            n,
            "assistant",
            {
                "id": f"msg{n}",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": args}],
            },
        )
        failed = e.exit_code != 0
        content = f"Exit code {e.exit_code}\n{e.output}" if failed else (e.output or "ok")
        add(
            n,
            "user",
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": content,
                        "is_error": failed,
                    }
                ],
            },
            toolUseResult={"stdout": e.output, "stderr": "", "interrupted": False},
        )
    return out


def _codex(events: Sequence[Event], session: str, cwd: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "timestamp": _stamp(0),
            "type": "session_meta",
            "payload": {
                "id": session,
                "timestamp": _stamp(0),
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.56.0",
                "source": "cli",
                "model_provider": "openai",
            },
        },
        {
            "timestamp": _stamp(0),
            "type": "turn_context",
            "payload": {"cwd": cwd, "model": "gpt-5-codex", "approval_policy": "on-request"},
        },
    ]

    def item(n: int, kind: str, payload: dict[str, Any]) -> None:
        out.append({"timestamp": _stamp(n), "type": kind, "payload": payload})

    for n, e in enumerate(events):
        if e.kind == "user":
            item(
                n,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": e.text}],
                },
            )
            item(n, "event_msg", {"type": "user_message", "message": e.text, "images": []})
            continue
        if e.kind == "assistant":
            item(
                n,
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": e.text}],
                },
            )
            item(n, "event_msg", {"type": "agent_message", "message": e.text})
            continue
        call = f"call_{n:04d}"
        if e.kind == "shell":
            args: dict[str, Any] = {"command": ["bash", "-lc", e.text], "workdir": cwd}
            name = "shell"
            output = f"Exit code: {e.exit_code}\nWall time: 0.4 seconds\nOutput:\n{e.output}"
        elif e.kind == "read":
            args, name, output = {"path": e.text}, "read_file", "file contents"
        else:
            args, name, output = {"url": e.text}, "fetch", "page text"
        item(
            n,
            "response_item",
            {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": call},
        )
        item(
            n, "response_item", {"type": "function_call_output", "call_id": call, "output": output}
        )
    return out


def _hermes(events: Sequence[Event], session: str, cwd: str) -> list[dict[str, Any]]:
    del session, cwd  # Hermes names the session by its file and records no working directory
    out: list[dict[str, Any]] = [
        {
            "role": "session_meta",
            "tools": [],
            "model": "openai/gpt-5",
            "platform": "cli",
            "timestamp": "2026-11-20T10:00:00.000000",
        },
    ]
    for n, e in enumerate(events):
        stamp = _stamp(n).replace("Z", "")
        if e.kind in ("user", "assistant"):
            out.append({"role": e.kind, "content": e.text, "timestamp": stamp})
            continue
        call = f"call_{n:04d}"
        if e.kind == "shell":
            name, args = "terminal", {"command": e.text}
            content = json.dumps({"output": e.output, "exit_code": e.exit_code, "error": None})
        elif e.kind == "read":
            name, args, content = "read_file", {"path": e.text}, json.dumps({"content": "text"})
        else:
            name, args, content = "web_extract", {"urls": [e.text]}, json.dumps({"results": []})
        out.append(
            {
                "role": "assistant",
                "content": "",
                "timestamp": stamp,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        out.append(
            {
                "role": "tool",
                "tool_call_id": call,
                "name": name,
                "content": content,
                "timestamp": stamp,
            }
        )
    return out


def _openclaw(events: Sequence[Event], session: str, cwd: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": session, "timestamp": _stamp(0), "cwd": cwd}
    ]
    parent: str | None = None

    def message(n: int, body: dict[str, Any]) -> None:
        nonlocal parent
        ident = f"m{len(out):05d}"
        out.append(
            {
                "type": "message",
                "id": ident,
                "parentId": parent,
                "timestamp": _stamp(n),
                "message": {**body, "timestamp": 1_795_000_000_000 + n * 1000},
            }
        )
        parent = ident

    for n, e in enumerate(events):
        if e.kind in ("user", "assistant"):
            message(n, {"role": e.kind, "content": [{"type": "text", "text": e.text}]})
            continue
        call = f"toolu_{n:04d}"
        if e.kind == "shell":
            name, args, text = "exec", {"command": e.text, "workdir": cwd}, e.output
        elif e.kind == "read":
            name, args, text = "read", {"path": e.text}, "file contents"
        else:
            name, args, text = "web_fetch", {"url": e.text}, "page text"
        message(
            n,
            {
                "role": "assistant",
                "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": call, "name": name, "arguments": args}],
            },
        )
        failed = e.kind == "shell" and e.exit_code != 0
        if failed:
            text = f"{text}\n\n(Command exited with code {e.exit_code})"
        message(
            n,
            {
                "role": "toolResult",
                "toolCallId": call,
                "toolName": name,
                "content": [{"type": "text", "text": text}],
                "isError": failed,
            },
        )
    return out


def _claude_path(home: Path, session: str, cwd: str) -> Path:
    # Claude Code's folder name: every character but an ASCII letter or digit becomes a dash.
    return home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd) / f"{session}.jsonl"


def _codex_path(home: Path, session: str, cwd: str) -> Path:
    return home / "sessions/2026/11/20" / f"rollout-2026-11-20T10-00-00-{session}.jsonl"


def _hermes_path(home: Path, session: str, cwd: str) -> Path:
    return home / "sessions" / f"20261120_100000_{session[:6]}.jsonl"


def _openclaw_path(home: Path, session: str, cwd: str) -> Path:
    return home / "agents" / "main" / "sessions" / f"{session}.jsonl"


Builder = Callable[[Sequence[Event], str, str], list[dict[str, Any]]]
Placer = Callable[[Path, str, str], Path]

#: For each agent: how its records are built and where its session file goes under its home.
WRITERS: dict[str, tuple[Builder, Placer]] = {
    "claude": (_claude, _claude_path),
    "codex": (_codex, _codex_path),
    "hermes": (_hermes, _hermes_path),
    "openclaw": (_openclaw, _openclaw_path),
}


def write_transcript(
    agent: str,
    home: Path,
    events: Sequence[Event],
    *,
    session: str = "5f1d8a2e-3b4c-4d5e-8f90-a1b2c3d4e5f6",
    cwd: str = "/home/dev/atlas",
) -> Path:
    """Write ``events`` as ``agent`` writes a session, under ``home``; return the file."""
    build, place = WRITERS[agent]
    path = place(home, session, cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_lines(build(events, session, cwd)), encoding="utf-8")
    return path

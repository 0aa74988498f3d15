"""What the agents' hooks run: ``om hook session-end``, ``om hook checkpoint`` and
``om hook prompt``.

Each reads the hook's JSON payload on stdin (``session_id``, ``transcript_path``, ``cwd``),
queues a job for the background worker and returns at once. ``session-end`` asks for a
``--flush`` observe of the whole session; ``checkpoint`` (compaction, a Codex turn stopping) is
throttled per transcript by ``OM_SESSION_OBSERVER_INTERVAL_SECONDS``. Both print nothing.
``prompt`` (UserPromptSubmit) is a checkpoint and per-prompt recall in one process: it prints
the hook JSON that adds the memories relevant to the payload's ``prompt``
(:mod:`obsmem.context.prompt_recall`), or nothing when none is; one command per event, so the agent
starts one process per prompt.

A hook must never break the agent: whatever goes wrong, it exits 0 and says why on stderr.
This module is dispatched before click is imported (see ``obsmem.cli.entry``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from obsmem.integrations.queue import Job, enqueue, throttled
from obsmem.paths import OBSERVER_SESSION_ENV, agent_home
from obsmem.records import dataclass  # not dataclasses': every prompt starts a hook

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py (every prompt starts this module)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from obsmem.settings import Settings

__all__ = [
    "EVENTS",
    "HookResult",
    "fast_main",
    "find_transcript",
    "handle_hook",
    "prompt_reply",
    "read_payload",
]

EVENTS = ("session-end", "checkpoint", "prompt")
AGENTS = ("claude", "codex", "hermes", "openclaw")

#: A hook payload larger than this is not a hook payload.
_MAX_PAYLOAD = 1 << 20


@dataclass(frozen=True)
class HookResult:
    """What a hook did: ``queued``, ``throttled`` or ``skipped``, and why."""

    action: str
    detail: str = ""
    transcript: str = ""
    worker_started: bool = False


def read_payload(stream: TextIO) -> dict[str, Any]:
    """The hook's JSON object from ``stream``; empty when there is none or it is not JSON."""
    if stream.isatty():
        return {}
    try:
        text = stream.read(_MAX_PAYLOAD)
        data = json.loads(text) if text.strip() else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def find_transcript(
    agent: str, session_id: str, environ: Mapping[str, str] | None = None
) -> Path | None:
    """A session's transcript from its id, for payloads that carry no ``transcript_path``."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    if agent == "claude":
        pattern = f"projects/*/{session_id}.jsonl"
    elif agent == "codex":
        pattern = f"sessions/*/*/*/rollout-*{session_id}.jsonl"
    else:
        return None
    found = sorted(agent_home(agent, environ).glob(pattern))
    return found[-1] if found else None


def handle_hook(
    event: str,
    agent: str,
    payload: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    interval: float | None = None,
    spawn: bool = True,
    now: float | None = None,
) -> HookResult:
    """Queue the observe a hook asks for and make sure a worker will do it."""
    raw = payload.get("transcript_path")
    transcript = Path(raw).expanduser() if isinstance(raw, str) and raw else None
    if transcript is None:
        transcript = find_transcript(agent, str(payload.get("session_id") or ""), environ)
    if transcript is None:
        return HookResult("skipped", "the hook payload names no transcript")
    if not transcript.is_file():
        return HookResult("skipped", f"transcript not found: {transcript}", str(transcript))
    path = str(transcript.resolve())
    if event in ("checkpoint", "prompt"):
        if interval is None:
            from obsmem.settings import load_settings

            interval = load_settings(environ).session_observer_interval_seconds
        if throttled(path, interval, environ, now):
            return HookResult("throttled", "checkpointed recently", path)
    enqueue(Job(transcript=path, agent=agent, flush=event == "session-end"), environ)
    started = False
    if spawn:
        from obsmem.integrations.worker import start_worker

        started = start_worker(environ)
    return HookResult("queued", "", path, started)


def prompt_reply(
    agent: str,
    payload: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> str:
    """What ``om hook prompt`` prints: the UserPromptSubmit JSON adding the memories relevant
    to the payload's ``prompt``, or "" when there are none (the prompt goes on unchanged)."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or agent not in ("claude", "codex"):
        return ""
    from obsmem.context.prompt_recall import hook_reply, recall_for_prompt

    session = payload.get("session_id")
    cwd = payload.get("cwd")
    found = recall_for_prompt(
        prompt,
        session=session if isinstance(session, str) else "",
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        settings=settings,
        environ=environ,
    )
    if not found.text:
        if os.environ.get("OM_DEBUG"):
            print(f"om: hook prompt: nothing added ({found.reason})", file=sys.stderr)
        return ""
    return hook_reply(found.text)


def _usage() -> int:
    print(
        "usage: om hook session-end|checkpoint|prompt [--agent claude|codex|hermes|openclaw] "
        "(reads the hook's JSON payload on stdin)",
        file=sys.stderr,
    )
    return 2


def fast_main(argv: list[str], stdin: TextIO | None = None) -> int:
    """``om hook EVENT [--agent A]``: parse by hand, handle, always exit 0 once understood."""
    args = list(argv)
    if not args or args[0] not in EVENTS:
        return _usage()
    event, agent = args.pop(0), "claude"
    while args:
        name, sep, value = args.pop(0).partition("=")
        if name != "--agent":
            return _usage()
        if not sep:
            if not args:
                return _usage()
            value = args.pop(0)
        agent = value
    if agent not in AGENTS:
        return _usage()
    if os.environ.get(OBSERVER_SESSION_ENV):
        return 0  # the session om's observer runs: never captured
    try:
        payload = read_payload(stdin or sys.stdin)
    except Exception as exc:  # never fail the agent's hook
        print(f"om: hook {event}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    interval: float | None = None
    if event == "prompt":
        try:
            from obsmem.settings import load_settings

            settings = load_settings()  # read once for the recall and the checkpoint
            interval = settings.session_observer_interval_seconds
            reply = prompt_reply(agent, payload, settings=settings)
        except Exception as exc:  # recall is a bonus: the prompt goes on without it
            print(f"om: hook prompt: recall: {type(exc).__name__}: {exc}", file=sys.stderr)
            reply = ""
        if reply:
            print(reply)  # a reader gone: entry.main ends quietly, status 0
    try:
        result = handle_hook(event, agent, payload, interval=interval)
    except Exception as exc:  # never fail the agent's hook
        print(f"om: hook {event}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    if result.action == "skipped" and os.environ.get("OM_DEBUG"):
        print(f"om: hook {event}: {result.detail}", file=sys.stderr)
    return 0

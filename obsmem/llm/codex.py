"""The ``codex`` provider: the observer through the Codex CLI, on the user's ChatGPT plan (or
whatever login Codex has), no API key of om's.

One call is one ``codex exec --json`` run (see :mod:`obsmem.llm.cli` for the lock, the timeout
and the marking of om's own sessions):

- ``codex exec`` has no system-prompt option, so the prompt on stdin (``-``) is the observer's
  instructions followed by the transcript excerpt;
- ``--ephemeral`` (no rollout file written), ``--sandbox read-only`` in om's empty observer
  directory (``--cd``, ``--skip-git-repo-check``), om's hooks and MCP servers off
  (``-c features.hooks=false``, ``-c mcp_servers={}``);
- no shell: ``codex exec`` has no ``--tools`` option, but its shell tools are features that
  config turns off (``features.shell_tool``, ``features.unified_exec``), as are sub-agents
  (``features.multi_agent``) and web search (``web_search="disabled"``: the excerpt must not
  become a search query). A Codex that does not know a feature key warns and goes on. A
  built-in tool with no such switch stays, bounded by the read-only sandbox (no writes);
- the output is JSON Lines: the text is the last ``item.completed`` whose ``item.type`` is
  ``agent_message`` (``item.text``), the tokens are ``turn.completed``'s ``usage``
  (``input_tokens``, which includes ``cached_input_tokens``, and ``output_tokens``); a
  ``turn.failed`` (``error.message``) or ``error`` (``message``) event says what went wrong.
"""

from __future__ import annotations

import json
from typing import Any

from obsmem.llm.base import Completion
from obsmem.llm.cli import CLIFailure, CLIProvider, classify_message

__all__ = ["CodexProvider", "parse_events"]

_MESSAGES = ("agent_message", "assistant_message")
_OFF = (
    "features.hooks=false",
    "features.codex_hooks=false",
    "mcp_servers={}",
    "features.shell_tool=false",
    "features.unified_exec=false",
    "features.multi_agent=false",
    'web_search="disabled"',
)


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue  # progress text some versions print
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def parse_events(stdout: str, model: str) -> Completion:
    """The completion in ``codex exec --json`` output; ``CLIFailure`` when it reports an error."""
    text: str | None = None
    input_tokens = output_tokens = cached_tokens = 0
    for event in _events(stdout):
        kind = event.get("type")
        if kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") in _MESSAGES:
                value = item.get("text")
                text = value if isinstance(value, str) else text
        elif kind == "turn.completed":
            usage = event.get("usage")
            if isinstance(usage, dict):
                input_tokens += max(0, int(usage.get("input_tokens") or 0))
                output_tokens += max(0, int(usage.get("output_tokens") or 0))
                cached_tokens += max(0, int(usage.get("cached_input_tokens") or 0))
        elif kind in ("turn.failed", "error"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else event.get("message")
            raise CLIFailure(classify_message(str(message or "an error without a message")))
    if text is None:
        raise ValueError("no agent_message in the output")
    return Completion(
        text=text,
        provider="codex",
        model=model or "codex default",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        stop_reason="stop",
        cached_input_tokens=min(cached_tokens, input_tokens),
    )


class CodexProvider(CLIProvider):
    """``codex exec`` as an LLM: instructions and excerpt together on stdin."""

    program = "codex"

    def argv(self, system: str, *, json_mode: bool) -> list[str]:
        """``exec --json``, read-only and ephemeral, in the observer directory; prompt on stdin."""
        del system, json_mode  # both reach the model through stdin
        args = ["exec", "--json", "--ephemeral", "--skip-git-repo-check"]
        args += ["--sandbox", "read-only", "--cd", str(self.workdir)]
        if self.model:
            args += ["--model", self.model]
        for override in _OFF:
            args += ["-c", override]
        return [*args, "-"]

    def stdin(self, system: str, user: str) -> str:
        """The observer's instructions, then the excerpt."""
        return f"{system.rstrip()}\n\n{user}"

    def parse(self, stdout: str) -> Completion:
        """See :func:`parse_events`."""
        return parse_events(stdout, self.model)

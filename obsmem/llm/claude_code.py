"""The ``claude-code`` provider: the observer through Claude Code's own CLI, on the user's Claude
subscription (no API key).

One call is one ``claude -p --output-format json`` run (see :mod:`obsmem.llm.cli` for the lock,
the timeout and the marking of om's own sessions):

- the observer's instructions replace Claude Code's system prompt (``--system-prompt``), the
  transcript excerpt is the prompt on stdin;
- no tools (``--tools ""``), no MCP server (``--strict-mcp-config`` with none given), no hooks
  (``--settings '{"disableAllHooks": true}'``), and no transcript written
  (``--no-session-persistence``);
- the reply is one JSON object: ``result`` holds the text, ``usage`` the tokens
  (``input_tokens`` plus the cache's ``cache_creation_input_tokens`` and
  ``cache_read_input_tokens``, and ``output_tokens``), ``modelUsage`` the model that answered;
  ``total_cost_usd`` what the call cost in US dollars (at API prices, also on a
  subscription); ``is_error`` with ``result`` or ``subtype`` says what went wrong.
"""

from __future__ import annotations

import json
from typing import Any

from obsmem.llm.base import Completion, Failure, known_cost
from obsmem.llm.cli import CLIFailure, CLIProvider, classify_message

__all__ = ["ClaudeCodeProvider", "parse_result"]

_NO_HOOKS = json.dumps({"disableAllHooks": True})


def _last_object(stdout: str) -> dict[str, Any]:
    """The result object: the whole output, or (stream or verbose output) its last result."""
    text = stdout.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]
    if isinstance(data, list):
        results = [d for d in data if isinstance(d, dict) and d.get("type") == "result"]
        if not results:
            raise ValueError("no result object in the output")
        data = results[-1]
    if not isinstance(data, dict):
        raise ValueError("the output is not a JSON object")
    return data


def _count(usage: dict[str, Any], *keys: str) -> int:
    return sum(max(0, int(usage.get(key) or 0)) for key in keys)


def parse_result(stdout: str, model: str) -> Completion:
    """The completion in ``claude -p --output-format json`` output; ``CLIFailure`` on an error."""
    data = _last_object(stdout)
    if data.get("is_error") or data.get("subtype") not in (None, "success"):
        message = str(data.get("result") or data.get("subtype") or "an error without a message")
        failure = classify_message(message)
        status = data.get("api_error_status")
        if isinstance(status, int) and failure.kind == "status":
            failure = Failure("status", failure.detail, status=status)
        raise CLIFailure(failure)
    text = data["result"]
    if not isinstance(text, str):
        raise ValueError('"result" is not text')
    found = data.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    used = data.get("modelUsage")
    answered = next(iter(used), model) if isinstance(used, dict) and used else model
    return Completion(
        text=text,
        provider="claude-code",
        model=str(answered),
        input_tokens=_count(
            usage, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
        ),
        output_tokens=_count(usage, "output_tokens"),
        stop_reason=str(data.get("stop_reason") or "end_turn"),
        cost_usd=known_cost(data.get("total_cost_usd")),
        cached_input_tokens=_count(usage, "cache_read_input_tokens"),
    )


class ClaudeCodeProvider(CLIProvider):
    """``claude -p`` as an LLM: instructions as the system prompt, the excerpt on stdin."""

    program = "claude"

    def argv(self, system: str, *, json_mode: bool) -> list[str]:
        """``-p`` with JSON output, the model, the system prompt, and everything else off."""
        del json_mode  # the JSON instruction is already in ``system``
        args = ["-p", "--output-format", "json"]
        if self.model:
            args += ["--model", self.model]
        return [
            *args,
            "--system-prompt",
            system,
            "--tools",
            "",
            "--strict-mcp-config",
            "--no-session-persistence",
            "--settings",
            _NO_HOOKS,
        ]

    def stdin(self, system: str, user: str) -> str:
        """The transcript excerpt (the instructions went in ``--system-prompt``)."""
        del system
        return user

    def parse(self, stdout: str) -> Completion:
        """See :func:`parse_result`."""
        return parse_result(stdout, self.model)

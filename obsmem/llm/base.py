"""The one small interface every LLM provider offers, and the retry policy they all share.

A provider turns ``(system, user)`` into a ``Completion`` (text plus token usage). The SDK-specific
modules (``anthropic.py``, ``openai.py``) only know how to make *one* request and how to describe
what went wrong; ``BaseProvider.complete`` owns the retries, so every provider behaves the same:

- retried: HTTP 408, 429, 500, 502, 503, 504, 529, connection errors and timeouts, up to
  ``OM_LLM_MAX_RETRIES`` times, with exponential backoff and full jitter, or exactly the wait the
  server asked for in ``Retry-After`` / ``retry-after-ms``. A server asking for more than
  ``RetryPolicy.max_retry_after`` (60 s) is not waited for: the call fails at once with a
  retryable ``ProviderError``, because blocking an observer for minutes is worse than letting it
  fall back and try again on its next run.
- not retried: every other status (400, 401, 403, 404, ...) and replies that are not the API's
  JSON; an OpenAI 429 ``insufficient_quota`` too, since waiting does not add credit.
- the SDKs' own retries are disabled (``max_retries=0``) so the budget above is the only one.

Every failure ends as one ``ProviderError`` naming the provider, the model, what happened and
the fix; its ``retryable`` attribute tells the observer whether trying later can help.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from obsmem.errors import ProviderError

__all__ = [
    "RETRYABLE_STATUSES",
    "BaseProvider",
    "Completion",
    "Failure",
    "Hints",
    "InvalidReply",
    "Provider",
    "RetryPolicy",
    "add_json_instructions",
    "error_detail",
    "estimate_tokens",
    "failure_from_sdk",
    "json_instructions",
    "known_cost",
    "parse_retry_after",
    "strip_thinking",
]

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
_DETAIL_CHARS = 200


@dataclass(frozen=True)
class Completion:
    """One model reply and what it cost. ``model`` is the model the server says answered."""

    text: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    stop_reason: str = ""  # "end_turn"/"stop", "max_tokens"/"length", "refusal", ...
    cost_usd: float | None = None  # what the provider says the call cost, when it says
    #: Of ``input_tokens``, those read from the provider's prompt cache (billed more cheaply).
    cached_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens: what the daily budget counts."""
        return self.input_tokens + self.output_tokens


class Provider(Protocol):
    """What the observer and the reflector need from an LLM."""

    @property
    def name(self) -> str:
        """The provider's name (``anthropic``, ``openai-compatible``, ...)."""
        ...

    @property
    def model(self) -> str:
        """The model requests are sent to."""
        ...

    def complete(
        self,
        system: str,
        user: str,
        *,
        purpose: str,
        max_tokens: int = 4096,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Ask the model; ``json_schema`` (even ``{}``) asks for one JSON object as the reply."""
        ...


@dataclass(frozen=True)
class Failure:
    """One failed attempt, in terms the retry loop understands."""

    kind: Literal["status", "connection", "timeout", "invalid", "credentials"]
    detail: str = ""
    status: int | None = None
    retry_after: float | None = None  # seconds the server asked us to wait
    code: str = ""  # the API's error code or type, e.g. "insufficient_quota"

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed."""
        if self.kind in ("connection", "timeout"):
            return True
        if self.kind == "status":
            return self.status in RETRYABLE_STATUSES and self.code != "insufficient_quota"
        return False


class InvalidReply(Exception):
    """Raised by a provider module when a 200 reply is not the API's response object."""


@dataclass
class RetryPolicy:
    """How often and how long to retry. ``sleep`` and ``jitter`` are injectable for tests."""

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0  # cap of one exponential backoff wait
    max_retry_after: float = 60.0  # longest Retry-After honoured; longer ones fail fast
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def backoff(self, retry: int) -> float:
        """Full jitter: uniform in ``[0, min(max_delay, base_delay * 2**retry)]``."""
        return self.jitter() * min(self.max_delay, self.base_delay * (2.0**retry))


@dataclass(frozen=True)
class Hints:
    """How to fix each kind of failure, worded for this provider and configuration."""

    auth: str
    unreachable: str
    endpoint: str  # shown in messages: the base URL, or the service's host
    api: str = "chat-completions"  # the protocol, for "the reply is not a valid ... response"
    not_found: str = ""  # what to do about HTTP 404; a generic hint when empty
    extra: Mapping[int, str] = field(default_factory=dict)  # status-specific overrides


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def error_detail(body: object, fallback: str = "") -> tuple[str, str]:
    """``(message, code)`` from an API error body (OpenAI's or Anthropic's shape), on one line."""
    data = body
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        data = data["error"]
    message, code = "", ""
    if isinstance(data, Mapping):
        message = str(data.get("message") or "")
        code = str(data.get("code") or data.get("type") or "")
    elif isinstance(data, str | bytes):
        message = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = " ".join((message or fallback).split())
    if len(text) > _DETAIL_CHARS:
        text = text[: _DETAIL_CHARS - 1] + "…"
    return text, code


def failure_from_sdk(
    exc: BaseException,
    *,
    timeout: type[BaseException],
    connection: type[BaseException],
    status: type[BaseException],
    invalid: tuple[type[BaseException], ...],
) -> Failure | None:
    """Describe an exception raised by one of the (Stainless-generated) SDKs; None if foreign.

    Both SDKs share their error shapes (``status_code``, ``response.headers``, ``body``), so one
    function serves both; each module passes its own SDK's classes.
    """
    if isinstance(exc, timeout):
        return Failure("timeout", "the request timed out")
    if isinstance(exc, connection):
        cause = exc.__cause__ or exc.__context__
        detail = error_detail(None, str(cause) if cause else str(exc))[0]
        return Failure("connection", detail)
    if isinstance(exc, status):
        code_value = getattr(exc, "status_code", None)
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        message, code = error_detail(getattr(exc, "body", None), str(exc))
        return Failure(
            "status",
            message,
            status=code_value if isinstance(code_value, int) else None,
            retry_after=parse_retry_after(headers),
            code=code,
        )
    if isinstance(exc, invalid):
        return Failure("invalid", error_detail(None, str(exc))[0])
    return None


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token), for budgets and servers that report none."""
    return (len(text) + 3) // 4


def known_cost(value: object) -> float | None:
    """A cost in US dollars read from JSON (a provider's reply, a usage line): a number of 0 or
    more, else None (missing, a string, a boolean, negative: not known)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def json_instructions(schema: Mapping[str, Any] | None) -> str:
    """The instruction that asks for JSON; it also satisfies OpenAI's rule that a JSON-mode
    request must mention JSON."""
    text = (
        "Reply with one JSON object and nothing else: no prose before or after it, no code fences."
    )
    if schema:
        text += " It must match this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False)
    return text


def add_json_instructions(system: str, schema: Mapping[str, Any] | None) -> str:
    """``system`` followed by the JSON instruction."""
    return (system.rstrip() + "\n\n" + json_instructions(schema)).lstrip()


_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


def strip_thinking(text: str) -> str:
    """Drop a leading ``<think>...</think>`` block (local reasoning models put it in the text)."""
    return _THINK.sub("", text, count=1)


class BaseProvider(ABC):
    """A provider whose subclass makes one request; this class retries and reports failures."""

    def __init__(
        self, *, name: str, model: str, timeout: float, policy: RetryPolicy, hints: Hints
    ) -> None:
        self.name = name
        self.model = model
        self.timeout = timeout
        self.policy = policy
        self.hints = hints

    @abstractmethod
    def _complete_once(
        self, system: str, user: str, *, max_tokens: int, json_mode: bool
    ) -> Completion:
        """Make exactly one request (SDK retries off) and return its completion."""

    @abstractmethod
    def _classify(self, exc: Exception) -> Failure | None:
        """Describe an SDK exception as a ``Failure``; None for anything foreign (a bug)."""

    def complete(
        self,
        system: str,
        user: str,
        *,
        purpose: str,
        max_tokens: int = 4096,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Ask the model, retrying transient failures; ``ProviderError`` when it cannot answer.

        ``purpose`` (``observer``, ``reflector``, ...) is for the caller's accounting; the request
        does not depend on it.
        """
        del purpose
        json_mode = json_schema is not None
        if json_mode:
            system = add_json_instructions(system, json_schema)
        retry = 0
        while True:
            try:
                return self._complete_once(system, user, max_tokens=max_tokens, json_mode=json_mode)
            except ProviderError:
                raise
            except Exception as exc:
                failure = self._classify(exc)
                if failure is None:
                    raise
                cause: Exception = exc
            attempts = retry + 1
            if not failure.retryable or retry >= self.policy.max_retries:
                raise self.error(failure, attempts) from cause
            wait = failure.retry_after
            if wait is not None and wait > self.policy.max_retry_after:
                raise self.error(failure, attempts, refused_wait=wait) from cause
            self.policy.sleep(wait if wait is not None else self.policy.backoff(retry))
            retry += 1

    def error(
        self, failure: Failure, attempts: int = 1, *, refused_wait: float | None = None
    ) -> ProviderError:
        """The one-line ``ProviderError`` for ``failure``: provider, model, what, and the fix."""
        hints = self.hints
        after = f" after {attempts} attempts" if attempts > 1 else ""
        detail = f": {failure.detail}" if failure.detail else ""
        status = failure.status
        if failure.kind == "timeout":
            what = f"no reply within {self.timeout:g} s{after}"
            hint = "raise OM_LLM_TIMEOUT_SECONDS, choose a faster model, or try later"
        elif failure.kind == "connection":
            what = f"cannot connect to {hints.endpoint}{after}{detail}"
            hint = hints.unreachable
        elif failure.kind == "credentials":
            what = f"no usable credentials{detail}"
            hint = hints.auth
        elif failure.kind == "invalid":
            what = f"the reply is not a valid {hints.api} response{detail}"
            hint = f"check that {hints.endpoint} serves the {hints.api} API"
        else:
            what = f"HTTP {status}{after}{detail}"
            hint = self._status_hint(failure)
        if refused_wait is not None:
            what += f" (the server asks to wait {refused_wait:.0f} s; om waits at most "
            what += f"{self.policy.max_retry_after:.0f} s)"
        return ProviderError(
            f"{self.name} ({self.model}): {what}",
            hint,
            provider=self.name,
            model=self.model,
            status=status,
            retryable=failure.retryable,
        )

    def _status_hint(self, failure: Failure) -> str:
        hints, status = self.hints, failure.status or 0
        if status in hints.extra:
            return hints.extra[status]
        if status == 401:
            return hints.auth
        if status == 403:
            return f"the key may not use this model or endpoint: {hints.auth}, or set OM_LLM_MODEL"
        if status == 404:
            return hints.not_found or (
                f"check OM_LLM_MODEL ({self.model!r} may not exist there) and the URL "
                f"{hints.endpoint}"
            )
        if status == 413:
            return "the request is too large: lower OM_OBSERVER_MAX_INPUT_TOKENS"
        if status == 429 and failure.code == "insufficient_quota":
            return "the account has no credit left: add credit, or choose another provider"
        if status == 429:
            return "rate-limited: try later or lower the frequency"
        if status >= 500:
            return "the provider is failing or overloaded: try later"
        return (
            "the provider rejected the request: check OM_LLM_MODEL, or lower "
            "OM_OBSERVER_MAX_INPUT_TOKENS if the input is too long"
        )

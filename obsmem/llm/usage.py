"""Token usage of every LLM call, and the daily budget that stops observation from overspending.

Each successful call appends one JSON line to ``<state dir>/usage.jsonl``::

    {"ts": "2026-03-02T14:30:05+01:00", "provider": "anthropic", "model": "claude-haiku-5-5",
     "purpose": "observer", "in": 5120, "out": 380}

Days and months are local (the timestamp carries its offset), as a user reading "today" means.
The log is append-only and durable (``append_line`` fsyncs); a torn or foreign line is skipped.
Totals read the file backwards and stop at the first line older than what they need, so the
check before every call costs about one day's lines, however old the log.

``OM_DAILY_TOKEN_BUDGET`` (input + output tokens a day, 0 for no limit) is enforced by
``MeteredProvider`` *before* each request: when today's spend has reached it, or when the
request's estimated input alone would pass what is left, ``BudgetExceeded`` is raised and nothing
is sent. Processes observing at the same moment can each make one last call, so the budget can be
passed by at most one call per concurrent process; never silently by more.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from obsmem import paths
from obsmem.errors import BudgetExceeded
from obsmem.llm.base import Completion, Provider, estimate_tokens
from obsmem.memory.atomic import append_line
from obsmem.settings import Settings

__all__ = [
    "USAGE_FILE",
    "MeteredProvider",
    "UsageRecord",
    "budget_left",
    "read_usage",
    "record_usage",
    "usage_path",
    "usage_totals",
]

USAGE_FILE = "usage.jsonl"
_BLOCK = 64 * 1024


@dataclass(frozen=True)
class UsageRecord:
    """One call's usage."""

    when: datetime  # timezone-aware
    provider: str
    model: str
    purpose: str
    input_tokens: int
    output_tokens: int

    @property
    def day(self) -> date:
        """The local calendar day of the call."""
        return self.when.astimezone().date()

    def to_json(self) -> str:
        """The record as one JSON line (without the newline)."""
        return json.dumps(
            {
                "ts": self.when.isoformat(timespec="seconds"),
                "provider": self.provider,
                "model": self.model,
                "purpose": self.purpose,
                "in": self.input_tokens,
                "out": self.output_tokens,
            },
            ensure_ascii=False,
        )


def usage_path(environ: Mapping[str, str] | None = None) -> Path:
    """``<state dir>/usage.jsonl``."""
    return paths.usage_path(environ)


def record_usage(
    path: Path, completion: Completion, *, purpose: str, when: datetime | None = None
) -> UsageRecord:
    """Append one call's usage to the log (durably) and return the record written."""
    stamp = (when or datetime.now()).astimezone()
    record = UsageRecord(
        stamp,
        completion.provider,
        completion.model,
        purpose,
        completion.input_tokens,
        completion.output_tokens,
    )
    append_line(path, record.to_json())
    return record


def _parse(line: bytes) -> UsageRecord | None:
    try:
        data: Any = json.loads(line)
        when = datetime.fromisoformat(data["ts"])
        if when.tzinfo is None:
            when = when.astimezone()  # a hand-written naive time: read it as local
        return UsageRecord(
            when,
            str(data.get("provider", "")),
            str(data.get("model", "")),
            str(data.get("purpose", "")),
            max(0, int(data.get("in", 0))),
            max(0, int(data.get("out", 0))),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _lines_backwards(path: Path) -> Iterator[bytes]:
    """The file's lines, last first, read in blocks from the end."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        position = handle.seek(0, os.SEEK_END)
        rest = b""
        while position > 0:
            size = min(_BLOCK, position)
            position -= size
            handle.seek(position)
            lines = (handle.read(size) + rest).split(b"\n")
            rest = lines.pop(0)  # may continue in the previous block
            yield from reversed(lines)
        yield rest


def read_usage(path: Path, since: date | None = None) -> Iterator[UsageRecord]:
    """Records, newest first; with ``since``, stops once the log is past that (local) day.

    Lines are appended in about time order; a day of slack absorbs processes whose appends
    interleave, and records before ``since`` are never yielded.
    """
    stop_before = since - timedelta(days=1) if since is not None else None
    for line in _lines_backwards(path):
        if not line.strip():
            continue
        record = _parse(line)
        if record is None:
            continue
        day = record.day
        if stop_before is not None and day < stop_before:
            return
        if since is None or day >= since:
            yield record


def usage_totals(path: Path, today: date) -> dict[str, dict[str, int]]:
    """Tokens in, tokens out and calls for ``today`` and for its month (local days)."""
    totals = {period: {"in": 0, "out": 0, "calls": 0} for period in ("today", "month")}
    for record in read_usage(path, since=today.replace(day=1)):
        if record.day > today:
            continue  # a clock that went backwards; "today" means up to today
        periods = ("today", "month") if record.day == today else ("month",)
        for period in periods:
            totals[period]["in"] += record.input_tokens
            totals[period]["out"] += record.output_tokens
            totals[period]["calls"] += 1
    return totals


def _spent_today(path: Path, today: date) -> int:
    return sum(
        r.input_tokens + r.output_tokens for r in read_usage(path, since=today) if r.day == today
    )


def budget_left(settings: Settings, path: Path, today: date) -> int | None:
    """Tokens left of today's ``OM_DAILY_TOKEN_BUDGET``; None when there is no budget."""
    if settings.daily_token_budget <= 0:
        return None
    return max(0, settings.daily_token_budget - _spent_today(path, today))


class MeteredProvider:
    """A provider that checks the daily budget before each call and records usage after it."""

    def __init__(
        self,
        provider: Provider,
        usage_path: Path,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.provider = provider
        self.usage_path = usage_path
        self.settings = settings
        self._clock = clock

    @property
    def name(self) -> str:
        """The wrapped provider's name."""
        return self.provider.name

    @property
    def model(self) -> str:
        """The wrapped provider's model."""
        return self.provider.model

    def complete(
        self,
        system: str,
        user: str,
        *,
        purpose: str,
        max_tokens: int = 4096,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Check the budget (``BudgetExceeded``: nothing sent), call, record the usage."""
        now = self._clock().astimezone()
        self.check_budget(system, user, today=now.date())
        completion = self.provider.complete(
            system, user, purpose=purpose, max_tokens=max_tokens, json_schema=json_schema
        )
        record_usage(self.usage_path, completion, purpose=purpose, when=self._clock())
        return completion

    def check_budget(self, system: str, user: str, *, today: date) -> None:
        """Raise ``BudgetExceeded`` if a request with this prompt must not be sent today."""
        budget = self.settings.daily_token_budget
        if budget <= 0:
            return
        spent = _spent_today(self.usage_path, today)
        left = budget - spent
        hint = (
            "raise OM_DAILY_TOKEN_BUDGET (0: no limit) or wait until tomorrow; meanwhile "
            f"OM_FALLBACK={self.settings.fallback} applies"
        )
        if left <= 0:
            raise BudgetExceeded(
                f"daily LLM token budget spent: {spent:,} of {budget:,} tokens used today",
                hint,
                spent=spent,
                budget=budget,
            )
        needed = estimate_tokens(system) + estimate_tokens(user)
        if needed > left:
            raise BudgetExceeded(
                f"daily LLM token budget nearly spent: this request needs about {needed:,} "
                f"tokens and {left:,} of {budget:,} are left today",
                hint,
                spent=spent,
                budget=budget,
            )

"""Token usage of every LLM call, and the daily budget that stops observation from overspending.

Each successful call appends one JSON line to ``<state dir>/usage.jsonl``::

    {"ts": "2026-03-02T14:30:05+01:00", "provider": "anthropic", "model": "claude-haiku-5-5",
     "purpose": "observer", "in": 5120, "out": 380, "usd": 0.0069}

``usd``, what the call cost in US dollars, is there when it is known: the provider reported it
(the ``claude`` CLI's ``total_cost_usd``), or ``OM_LLM_PRICE_INPUT`` and ``OM_LLM_PRICE_OUTPUT``
(dollars per million tokens) were both set when the call was made. A line without it (older
lines, and calls with no price) is a call of unknown cost: totals count those calls apart rather
than guess, and a price set later does not rewrite what earlier calls cost.

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
    "call_cost",
    "cost_text",
    "cost_totals",
    "dollars",
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
    cost_usd: float | None = None  # None: not known

    @property
    def day(self) -> date:
        """The local calendar day of the call."""
        return self.when.astimezone().date()

    def to_json(self) -> str:
        """The record as one JSON line (without the newline)."""
        data: dict[str, Any] = {
            "ts": self.when.isoformat(timespec="seconds"),
            "provider": self.provider,
            "model": self.model,
            "purpose": self.purpose,
            "in": self.input_tokens,
            "out": self.output_tokens,
        }
        if self.cost_usd is not None:
            data["usd"] = round(self.cost_usd, 6)
        return json.dumps(data, ensure_ascii=False)


def usage_path(environ: Mapping[str, str] | None = None) -> Path:
    """``<state dir>/usage.jsonl``."""
    return paths.usage_path(environ)


def call_cost(completion: Completion, settings: Settings | None) -> float | None:
    """What one call cost in US dollars: the provider's own figure, else the tokens at
    ``OM_LLM_PRICE_INPUT`` / ``OM_LLM_PRICE_OUTPUT``; None when neither is known."""
    if completion.cost_usd is not None:
        return completion.cost_usd
    if settings is None or settings.llm_price_input is None or settings.llm_price_output is None:
        return None
    return (
        completion.input_tokens * settings.llm_price_input
        + completion.output_tokens * settings.llm_price_output
    ) / 1_000_000


def record_usage(
    path: Path,
    completion: Completion,
    *,
    purpose: str,
    when: datetime | None = None,
    settings: Settings | None = None,
) -> UsageRecord:
    """Append one call's usage to the log (durably) and return the record written.

    ``settings`` gives the prices of a call whose provider reports no cost (``call_cost``).
    """
    stamp = (when or datetime.now()).astimezone()
    record = UsageRecord(
        stamp,
        completion.provider,
        completion.model,
        purpose,
        completion.input_tokens,
        completion.output_tokens,
        call_cost(completion, settings),
    )
    append_line(path, record.to_json())
    return record


def _parse(line: bytes) -> UsageRecord | None:
    try:
        data: Any = json.loads(line)
        when = datetime.fromisoformat(data["ts"])
        if when.tzinfo is None:
            when = when.astimezone()  # a hand-written naive time: read it as local
        usd = data.get("usd")
        known = isinstance(usd, int | float) and not isinstance(usd, bool) and usd >= 0
        return UsageRecord(
            when,
            str(data.get("provider", "")),
            str(data.get("model", "")),
            str(data.get("purpose", "")),
            max(0, int(data.get("in", 0))),
            max(0, int(data.get("out", 0))),
            float(usd) if known else None,
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


def cost_totals(path: Path, today: date) -> dict[str, dict[str, float]]:
    """Dollars spent ``today`` and in its month on the calls of known cost (``usd``), and how
    many calls of unknown cost there were besides (``unpriced``)."""
    totals = {period: {"usd": 0.0, "unpriced": 0} for period in ("today", "month")}
    for record in read_usage(path, since=today.replace(day=1)):
        if record.day > today:
            continue  # as in usage_totals
        for period in ("today", "month") if record.day == today else ("month",):
            if record.cost_usd is None:
                totals[period]["unpriced"] += 1
            else:
                totals[period]["usd"] += record.cost_usd
    return totals


def dollars(amount: float) -> str:
    """``$1.25``, or four decimals under a dollar (one observer call costs a fraction of a cent)."""
    return f"${amount:,.2f}" if amount >= 1 or amount == 0 else f"${amount:.4f}"


def cost_text(cost: Mapping[str, float], calls: int, *, fix: bool = True) -> str:
    """A period's cost (a ``cost_totals`` row) over its ``calls``: ``$0.4200``, ``$0.4200 + 3
    calls of unknown cost``, or ``unknown`` (with the fix, unless ``fix`` is false) when no
    call's cost is known."""
    unpriced = int(cost.get("unpriced", 0))
    if calls and unpriced >= calls:
        return "unknown (set OM_LLM_PRICE_INPUT and OM_LLM_PRICE_OUTPUT)" if fix else "unknown"
    shown = dollars(float(cost.get("usd", 0.0)))
    if unpriced:
        shown += f" + {unpriced} call{'s' if unpriced != 1 else ''} of unknown cost"
    return shown


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
        record_usage(
            self.usage_path, completion, purpose=purpose, when=self._clock(), settings=self.settings
        )
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

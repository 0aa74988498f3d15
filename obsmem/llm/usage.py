"""Token usage of every LLM call, and the daily budget that stops observation from overspending.

Each successful call appends one JSON line to ``<state dir>/usage.jsonl``::

    {"ts": "2026-03-02T14:30:05+01:00", "provider": "anthropic", "model": "claude-haiku-5-5",
     "purpose": "observer", "in": 5120, "cached": 4096, "out": 380, "usd": 0.0069}

``in`` counts every input token, ``cached`` (absent: 0, as in lines written before it was kept)
those of them the provider read from its prompt cache, which it bills more cheaply.

``usd``, what the call cost in US dollars, is there when it is known: the provider reported it
(the ``claude`` CLI's ``total_cost_usd``), or an input and an output price (dollars per million
tokens, ``prices_for``: ``OM_LLM_PRICE_*``, for reflector calls ``OM_LLM_REFLECTOR_PRICE_*``)
were set when the call was made. Cached tokens cost ``OM_LLM_PRICE_CACHED_INPUT``; with that
unset they are charged the input price and the line says ``"usd_upper_bound": true``. A line
without ``usd`` (older lines, and calls with no price) is a call of unknown cost: totals count
those calls apart rather than guess, and a price set later does not rewrite what earlier calls
cost.

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
from obsmem.llm.base import Completion, Provider, estimate_tokens, known_cost
from obsmem.memory.atomic import append_line
from obsmem.settings import Settings

__all__ = [
    "TOTAL_KEYS",
    "USAGE_FILE",
    "MeteredProvider",
    "Prices",
    "UsageRecord",
    "budget_left",
    "call_cost",
    "cost_text",
    "daily_totals",
    "dollars",
    "period_totals",
    "prices_for",
    "read_usage",
    "record_usage",
    "usage_path",
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
    cached_input_tokens: int = 0  # of input_tokens; 0 in lines written before it was kept
    cost_upper_bound: bool = False  # cached tokens priced at the full input price

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
        if self.cached_input_tokens:
            data["cached"] = self.cached_input_tokens
        if self.cost_usd is not None:
            data["usd"] = round(self.cost_usd, 6)
            if self.cost_upper_bound:
                data["usd_upper_bound"] = True
        return json.dumps(data, ensure_ascii=False)


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens for one call."""

    input: float
    output: float
    cached_input: float | None  # None: cached input costs the input price, at most


def usage_path(environ: Mapping[str, str] | None = None) -> Path:
    """``<state dir>/usage.jsonl``."""
    return paths.usage_path(environ)


def prices_for(settings: Settings | None, purpose: str) -> Prices | None:
    """The prices of a ``purpose`` call; None when its input or output price is unknown.

    Reflector calls take ``OM_LLM_REFLECTOR_PRICE_*`` where set, else the shared prices, but
    only when the reflector runs the observer's model: another model's calls are left unpriced
    rather than charged at a price that is not theirs.
    """
    if settings is None:
        return None
    shared = (settings.llm_price_input, settings.llm_price_output, settings.llm_price_cached_input)
    chosen: tuple[float | None, ...] = shared
    if purpose == "reflector":
        own = (
            settings.llm_reflector_price_input,
            settings.llm_reflector_price_output,
            settings.llm_reflector_price_cached_input,
        )
        same_model = (settings.llm_reflector_model or settings.llm_model) == (
            settings.llm_observer_model or settings.llm_model
        )
        fallback = shared if same_model else (None, None, None)
        chosen = tuple(o if o is not None else f for o, f in zip(own, fallback, strict=True))
    price_in, price_out, price_cached = chosen
    if price_in is None or price_out is None:
        return None
    return Prices(price_in, price_out, price_cached)


def call_cost(
    completion: Completion, settings: Settings | None, purpose: str = "observer"
) -> tuple[float | None, bool]:
    """What one call cost in US dollars, and whether that is only an upper bound.

    The provider's own figure when it gives one, else the tokens at ``prices_for(purpose)``:
    cached input at its own price, or at the input price (an upper bound) when that is unset.
    None when neither is known.
    """
    if completion.cost_usd is not None:
        return completion.cost_usd, False
    prices = prices_for(settings, purpose)
    if prices is None:
        return None, False
    cached = min(completion.cached_input_tokens, completion.input_tokens)
    cached_price = prices.input if prices.cached_input is None else prices.cached_input
    usd = (
        (completion.input_tokens - cached) * prices.input
        + cached * cached_price
        + completion.output_tokens * prices.output
    ) / 1_000_000
    return usd, bool(cached) and prices.cached_input is None


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
    usd, upper = call_cost(completion, settings, purpose)
    record = UsageRecord(
        stamp,
        completion.provider,
        completion.model,
        purpose,
        completion.input_tokens,
        completion.output_tokens,
        usd,
        min(completion.cached_input_tokens, completion.input_tokens),
        upper,
    )
    append_line(path, record.to_json())
    return record


def _count(data: Any, key: str) -> int:
    return max(0, int(data.get(key, 0)))


def _parse(line: bytes) -> UsageRecord | None:
    try:
        data: Any = json.loads(line)
        when = datetime.fromisoformat(data["ts"])
        if when.tzinfo is None:
            when = when.astimezone()  # a hand-written naive time: read it as local
        usd = known_cost(data.get("usd"))
        return UsageRecord(
            when,
            str(data.get("provider", "")),
            str(data.get("model", "")),
            str(data.get("purpose", "")),
            _count(data, "in"),
            _count(data, "out"),
            usd,
            _count(data, "cached"),
            usd is not None and data.get("usd_upper_bound") is True,
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


#: The sums of one day's (or period's) calls: tokens in (of them cached) and out, calls, the
#: dollars of the calls of known cost, how many were of unknown cost, and how many of the known
#: costs are upper bounds (cached input at the input price).
TOTAL_KEYS = ("in", "cached", "out", "calls", "usd", "unpriced", "upper")


def _empty() -> dict[str, float]:
    return dict.fromkeys(TOTAL_KEYS, 0) | {"usd": 0.0}


def daily_totals(path: Path, since: date, until: date) -> dict[date, dict[str, float]]:
    """The ``TOTAL_KEYS`` sums of every local day from ``since`` to ``until``, newest first
    (days without a call are zeros; a record after ``until``, a clock that went back, is left
    out)."""
    days = {until - timedelta(days=n): _empty() for n in range((until - since).days + 1)}
    for record in read_usage(path, since=since):
        row = days.get(record.day)
        if row is None:
            continue
        row["in"] += record.input_tokens
        row["cached"] += record.cached_input_tokens
        row["out"] += record.output_tokens
        row["calls"] += 1
        if record.cost_usd is None:
            row["unpriced"] += 1
        else:
            row["usd"] += record.cost_usd
            row["upper"] += record.cost_upper_bound
    return days


def period_totals(path: Path, today: date) -> dict[str, dict[str, float]]:
    """``daily_totals`` of ``today`` and summed over its month: ``{"today": ..., "month": ...}``."""
    days = daily_totals(path, today.replace(day=1), today)
    month = _empty()
    for row in days.values():
        for key in TOTAL_KEYS:
            month[key] += row[key]
    return {"today": days[today], "month": month}


def dollars(amount: float) -> str:
    """``$1.25``, or four decimals under a dollar (one observer call costs a fraction of a cent)."""
    return f"${amount:,.2f}" if amount >= 1 or amount == 0 else f"${amount:.4f}"


def cost_text(totals: Mapping[str, float], *, fix: bool = True) -> str:
    """A ``daily_totals`` row's cost: ``$0.4200``, ``at most $0.4200`` (cached input priced
    as input), ``... + 3 calls of unknown cost``, or ``unknown`` when no call's cost is known;
    with ``fix``, the setting that would make it exact is named."""
    calls, unpriced = int(totals.get("calls", 0)), int(totals.get("unpriced", 0))
    if calls and unpriced >= calls:
        return "unknown (set OM_LLM_PRICE_INPUT and OM_LLM_PRICE_OUTPUT)" if fix else "unknown"
    shown = dollars(float(totals.get("usd", 0.0)))
    if totals.get("upper", 0):
        shown = "at most " + shown
        if fix:
            shown += " (cached input at the input price: set OM_LLM_PRICE_CACHED_INPUT)"
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

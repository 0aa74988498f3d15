"""Usage accounting and the daily token budget, with real SDK calls to the fake server."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from fakes.llm_server import ErrorReply, FakeLLMServer, Reply

from obsmem import paths
from obsmem.errors import BudgetExceeded, ProviderError
from obsmem.llm import get_metered_provider, get_provider
from obsmem.llm.base import Completion
from obsmem.llm.usage import (
    MeteredProvider,
    Prices,
    budget_left,
    call_cost,
    cost_text,
    daily_totals,
    period_totals,
    prices_for,
    read_usage,
    record_usage,
    usage_path,
)
from obsmem.settings import Settings

TODAY = date(2026, 3, 14)


def at(day: date, hour: int = 12) -> datetime:
    """A local, timezone-aware moment on ``day``."""
    return datetime(day.year, day.month, day.day, hour).astimezone()


def completion(tokens_in: int, tokens_out: int, model: str = "m") -> Completion:
    return Completion("text", "anthropic", model, tokens_in, tokens_out)


def tokens(path: Path, today: date = TODAY) -> dict[str, dict[str, float]]:
    """``period_totals`` cut to tokens and calls."""
    return {
        period: {key: row[key] for key in ("in", "out", "calls")}
        for period, row in period_totals(path, today).items()
    }


def costs(path: Path, period: str) -> dict[str, float]:
    """``period_totals`` of one period cut to its cost."""
    return {key: period_totals(path, TODAY)[period][key] for key in ("usd", "unpriced", "upper")}


def compat_settings(fake: FakeLLMServer, **overrides: object) -> Settings:
    options: dict[str, object] = {
        "llm_provider": "openai-compatible",
        "llm_base_url": fake.base_url_openai,
        "llm_model": "test-model",
        "llm_max_retries": 0,
        **overrides,
    }
    return Settings(**options)  # type: ignore[arg-type]


def metered(fake: FakeLLMServer, path: Path, now: datetime, **overrides: object) -> MeteredProvider:
    settings = compat_settings(fake, **overrides)
    provider = get_provider(settings)
    assert provider is not None
    return MeteredProvider(provider, path, settings, clock=lambda: now)


def test_usage_path_is_in_the_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert usage_path() == paths.state_dir() / "usage.jsonl"
    monkeypatch.setenv("OM_STATE_DIR", str(tmp_path / "state"))
    assert usage_path() == tmp_path / "state" / "usage.jsonl"


def test_record_writes_one_json_line(tmp_path: Path) -> None:
    path = tmp_path / "state" / "usage.jsonl"
    record_usage(
        path, completion(100, 20, "claude-haiku-5-5"), purpose="observer", when=at(TODAY, 9)
    )
    [line] = path.read_text().splitlines()
    data = json.loads(line)
    assert data == {
        "ts": at(TODAY, 9).isoformat(timespec="seconds"),
        "provider": "anthropic",
        "model": "claude-haiku-5-5",
        "purpose": "observer",
        "in": 100,
        "out": 20,
    }
    assert path.stat().st_mode & 0o777 == 0o600


def test_cost_is_the_providers_own_else_the_tokens_at_the_set_prices(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    priced = Settings(llm_price_input=3.0, llm_price_output=15.0)
    reported = Completion("t", "claude-code", "m", 4000, 100, cost_usd=0.0123)
    record_usage(path, reported, purpose="observer", when=at(TODAY, 8), settings=priced)
    record_usage(path, completion(1_000_000, 200_000), purpose="observer", when=at(TODAY, 9),
                 settings=priced)  # fmt: skip
    record_usage(path, completion(10, 1), purpose="observer", when=at(TODAY, 10))  # no price
    only_input = Settings(llm_price_input=3.0)
    record_usage(path, completion(10, 1), purpose="observer", when=at(TODAY, 11),
                 settings=only_input)  # fmt: skip
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("usd") for line in lines] == [0.0123, 6.0, None, None]
    assert "usd" not in lines[2]  # an unknown cost is left out, as in lines written before
    assert [r.cost_usd for r in read_usage(path)] == [None, None, 6.0, 0.0123]
    assert costs(path, "today") == {"usd": pytest.approx(6.0123), "unpriced": 2, "upper": 0}
    assert tokens(path)["today"] == {"in": 1_004_020, "out": 200_102, "calls": 4}


CODEX_TURN = (
    '{"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "ok"}}\n'
    '{"type": "turn.completed", "usage": {"input_tokens": 20000, "cached_input_tokens": 18000,'
    ' "output_tokens": 500}}\n'
)


def test_cached_input_has_its_own_price(tmp_path: Path) -> None:
    from obsmem.llm.codex import parse_events

    path = tmp_path / "usage.jsonl"
    call = parse_events(CODEX_TURN, "gpt-5.4-mini")
    assert (call.input_tokens, call.cached_input_tokens, call.output_tokens) == (20000, 18000, 500)
    full = Settings(llm_price_input=1.25, llm_price_output=10.0)
    cheap = Settings(llm_price_input=1.25, llm_price_output=10.0, llm_price_cached_input=0.125)
    assert call_cost(call, full) == (pytest.approx(0.03), True)  # cached at the input price
    assert call_cost(call, cheap) == (pytest.approx(0.00975), False)
    record_usage(path, call, purpose="observer", when=at(TODAY, 8), settings=full)
    record_usage(path, call, purpose="observer", when=at(TODAY, 9), settings=cheap)
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first | second == first | {"ts": second["ts"], "usd": 0.00975}
    assert (first["cached"], first["usd_upper_bound"], "usd_upper_bound" in second) == (
        18000,
        True,
        False,
    )
    today = period_totals(path, TODAY)["today"]
    assert (today["in"], today["cached"], today["upper"]) == (40000, 36000, 1)
    assert cost_text(today, fix=False) == "at most $0.0398"
    # No cached tokens: the input price is exact, not a bound.
    plain = Completion("t", "codex", "m", 20000, 500)
    assert call_cost(plain, full) == (pytest.approx(0.03), False)


def test_reflector_calls_take_their_own_prices() -> None:
    shared = {"llm_price_input": 1.0, "llm_price_output": 2.0, "llm_price_cached_input": 0.1}
    same = Settings(**shared)  # type: ignore[arg-type]
    assert prices_for(same, "reflector") == prices_for(same, "observer")
    own = Settings(**shared, llm_reflector_price_input=5.0)  # type: ignore[arg-type]
    assert prices_for(own, "reflector") == Prices(5.0, 2.0, 0.1)
    assert prices_for(own, "observer") == Prices(1.0, 2.0, 0.1)
    other_model = Settings(**shared, llm_reflector_model="big")  # type: ignore[arg-type]
    assert prices_for(other_model, "reflector") is None  # not another model's price
    assert prices_for(other_model, "observer") == Prices(1.0, 2.0, 0.1)
    priced = Settings(  # type: ignore[arg-type]
        **shared,
        llm_reflector_model="big",
        llm_reflector_price_input=5.0,
        llm_reflector_price_output=25.0,
    )
    assert prices_for(priced, "reflector") == Prices(5.0, 25.0, None)
    call = Completion("t", "anthropic", "big", 1_000_000, 100_000, cached_input_tokens=0)
    assert call_cost(call, priced, "reflector") == (pytest.approx(7.5), False)
    assert call_cost(call, other_model, "reflector") == (None, False)


def test_lines_without_a_cost_read_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    old = {"ts": at(TODAY, 8).isoformat(), "provider": "anthropic", "model": "m",
           "purpose": "observer", "in": 5, "out": 1}  # fmt: skip
    bad = {**old, "usd": "free"}
    negative = {**old, "usd": -1}
    path.write_text("".join(json.dumps(d) + "\n" for d in (old, bad, negative)))
    assert [r.cost_usd for r in read_usage(path)] == [None, None, None]
    assert costs(path, "month") == {"usd": 0.0, "unpriced": 3, "upper": 0}
    assert [r.cached_input_tokens for r in read_usage(path)] == [0, 0, 0]


def test_cost_text_says_what_is_known() -> None:
    assert cost_text({"usd": 0.0021, "unpriced": 0, "calls": 1}) == "$0.0021"
    assert cost_text({"usd": 12.5, "unpriced": 0, "calls": 9}) == "$12.50"
    part = {"usd": 0.5, "unpriced": 2, "calls": 5}
    assert cost_text(part) == "$0.5000 + 2 calls of unknown cost"
    none = {"usd": 0.0, "unpriced": 3, "calls": 3}
    assert cost_text(none).startswith("unknown (set OM_LLM_PRICE_")
    assert cost_text(none, fix=False) == "unknown"
    assert cost_text({"usd": 0.0, "unpriced": 0, "calls": 0}) == "$0.00"
    bound = {"usd": 0.03, "unpriced": 1, "calls": 3, "upper": 1}
    assert cost_text(bound, fix=False) == "at most $0.0300 + 1 call of unknown cost"
    assert cost_text(bound).startswith("at most $0.0300 (cached input at the input price: set ")


def test_totals_by_day_and_month(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(1000, 1), purpose="observer", when=at(date(2026, 1, 31)))
    record_usage(path, completion(500, 5), purpose="observer", when=at(date(2026, 2, 28), 23))
    record_usage(path, completion(100, 10), purpose="observer", when=at(date(2026, 3, 1), 0))
    record_usage(path, completion(200, 20), purpose="reflector", when=at(TODAY - timedelta(days=1)))
    record_usage(path, completion(300, 30), purpose="observer", when=at(TODAY, 8))
    record_usage(path, completion(400, 40), purpose="observer", when=at(TODAY, 23))
    assert tokens(path) == {
        "today": {"in": 700, "out": 70, "calls": 2},
        "month": {"in": 1000, "out": 100, "calls": 4},
    }
    assert tokens(path, date(2026, 2, 28)) == {
        "today": {"in": 500, "out": 5, "calls": 1},
        "month": {"in": 500, "out": 5, "calls": 1},
    }
    assert tokens(tmp_path / "missing.jsonl")["month"]["calls"] == 0
    days = daily_totals(path, TODAY - timedelta(days=2), TODAY)
    assert [(day, row["in"], row["calls"]) for day, row in days.items()] == [
        (TODAY, 700, 2),
        (TODAY - timedelta(days=1), 200, 1),
        (TODAY - timedelta(days=2), 0, 0),  # a day without calls is there, as zeros
    ]


def test_torn_and_foreign_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(10, 1), purpose="observer", when=at(TODAY, 1))
    with path.open("a") as handle:
        handle.write(
            '{"ts": "not a time", "in": 5}\n[1, 2]\n\n{"ts": "2026-03-14T02:00:00+00:00", "in": '
        )
    record_usage(path, completion(20, 2), purpose="observer", when=at(TODAY, 3))
    assert tokens(path)["today"] == {"in": 30, "out": 3, "calls": 2}


def test_reading_backwards_across_blocks_stops_at_the_month(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    old = at(date(2025, 6, 1))
    lines = [
        json.dumps(
            {
                "ts": (old + timedelta(minutes=i)).isoformat(),
                "provider": "p",
                "model": "m",
                "in": 1,
                "out": 1,
            }
        )
        for i in range(6000)  # several 64 KiB blocks of older history
    ]
    # A stray record of today at the very start: far out of order, so past the point where the
    # reader stops (it relies on appends being in about time order, with a day of slack).
    stray = json.dumps({"ts": at(TODAY).isoformat(), "in": 1000, "out": 1000})
    path.write_text("\n".join([stray, *lines]) + "\n")
    for hour in range(10):
        record_usage(path, completion(7, 3), purpose="observer", when=at(TODAY, hour))
    assert tokens(path)["today"] == {"in": 70, "out": 30, "calls": 10}
    assert tokens(path)["month"]["calls"] == 10
    # Everything is still there for a reader that wants it all.
    assert sum(1 for _ in read_usage(path)) == 6011


def test_budget_left(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(600, 100), purpose="observer", when=at(TODAY, 9))
    record_usage(
        path, completion(5000, 5000), purpose="observer", when=at(TODAY - timedelta(days=1))
    )
    assert budget_left(Settings(), path, TODAY) is None
    assert budget_left(Settings(daily_token_budget=1000), path, TODAY) == 300
    assert budget_left(Settings(daily_token_budget=500), path, TODAY) == 0


def test_metered_provider_prices_an_api_call_from_the_settings(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "usage.jsonl"
    fake_llm.push(Reply("a", input_tokens=2000, output_tokens=500))
    provider = metered(fake_llm, path, at(TODAY, 10), llm_price_input=0.5, llm_price_output=4.0)
    provider.complete("s", "u", purpose="observer")
    [record] = read_usage(path)
    assert record.cost_usd == pytest.approx((2000 * 0.5 + 500 * 4.0) / 1_000_000)
    # The prompt cache's share of an OpenAI-style prompt_tokens is priced apart.
    fake_llm.push(Reply("b", input_tokens=2000, cached_tokens=1500, output_tokens=500))
    provider = metered(fake_llm, path, at(TODAY, 11), llm_price_input=0.5, llm_price_output=4.0,
                       llm_price_cached_input=0.05)  # fmt: skip
    provider.complete("s", "u", purpose="reflector")
    record = next(read_usage(path))
    assert (record.input_tokens, record.cached_input_tokens) == (2000, 1500)
    assert record.cost_usd == pytest.approx((500 * 0.5 + 1500 * 0.05 + 500 * 4.0) / 1_000_000)


def test_metered_provider_records_every_call(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    fake_llm.push(
        Reply("a", input_tokens=120, output_tokens=30),
        Reply("b", input_tokens=80, output_tokens=20),
    )
    provider = metered(fake_llm, path, at(TODAY, 10))
    assert (provider.name, provider.model) == ("openai-compatible", "test-model")
    provider.complete("s", "u", purpose="observer")
    provider.complete("s", "u", purpose="reflector")
    records = list(read_usage(path))[::-1]
    assert [(r.purpose, r.input_tokens, r.output_tokens, r.model) for r in records] == [
        ("observer", 120, 30, "test-model"),
        ("reflector", 80, 20, "test-model"),
    ]
    assert tokens(path)["today"] == {"in": 200, "out": 50, "calls": 2}


def test_failed_calls_record_nothing(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    fake_llm.push(ErrorReply(401, "bad key"))
    with pytest.raises(ProviderError):
        metered(fake_llm, path, at(TODAY)).complete("s", "u", purpose="observer")
    assert not path.exists()


def test_spent_budget_stops_the_call_before_any_request(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(900, 100), purpose="observer", when=at(TODAY, 8))
    provider = metered(fake_llm, path, at(TODAY, 10), daily_token_budget=1000)
    with pytest.raises(BudgetExceeded) as caught:
        provider.complete("s", "u", purpose="observer")
    assert (caught.value.spent, caught.value.budget) == (1000, 1000)
    assert "1,000 of 1,000 tokens used today" in str(caught.value)
    assert "OM_DAILY_TOKEN_BUDGET" in str(caught.value)
    assert fake_llm.requests == []
    # Tomorrow the budget is fresh.
    fake_llm.push(Reply("new day"))
    tomorrow = metered(fake_llm, path, at(TODAY + timedelta(days=1), 0), daily_token_budget=1000)
    assert tomorrow.complete("s", "u", purpose="observer").text == "new day"


def test_a_request_larger_than_what_is_left_is_not_sent(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(900, 0), purpose="observer", when=at(TODAY, 8))
    provider = metered(fake_llm, path, at(TODAY, 9), daily_token_budget=1000)
    with pytest.raises(BudgetExceeded, match="needs about 500 tokens and 100 of 1,000 are left"):
        provider.complete("s" * 1000, "u" * 1000, purpose="observer")
    assert fake_llm.requests == []
    fake_llm.push(Reply("small", input_tokens=10, output_tokens=5))
    assert provider.complete("s", "u", purpose="observer").text == "small"
    assert budget_left(provider.settings, path, TODAY) == 85


def test_get_metered_provider(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OM_STATE_DIR", str(tmp_path / "state"))
    provider = get_metered_provider(compat_settings(fake_llm))
    assert isinstance(provider, MeteredProvider)
    provider.complete("s", "u", purpose="observer")
    assert (tmp_path / "state" / "usage.jsonl").is_file()
    assert get_metered_provider(Settings()) is None

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
    budget_left,
    cost_text,
    cost_totals,
    read_usage,
    record_usage,
    usage_path,
    usage_totals,
)
from obsmem.settings import Settings

TODAY = date(2026, 3, 14)


def at(day: date, hour: int = 12) -> datetime:
    """A local, timezone-aware moment on ``day``."""
    return datetime(day.year, day.month, day.day, hour).astimezone()


def completion(tokens_in: int, tokens_out: int, model: str = "m") -> Completion:
    return Completion("text", "anthropic", model, tokens_in, tokens_out)


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
    assert cost_totals(path, TODAY)["today"] == {"usd": pytest.approx(6.0123), "unpriced": 2}
    assert usage_totals(path, TODAY)["today"] == {"in": 1_004_020, "out": 200_102, "calls": 4}


def test_lines_without_a_cost_read_as_unknown(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    old = {"ts": at(TODAY, 8).isoformat(), "provider": "anthropic", "model": "m",
           "purpose": "observer", "in": 5, "out": 1}  # fmt: skip
    bad = {**old, "usd": "free"}
    negative = {**old, "usd": -1}
    path.write_text("".join(json.dumps(d) + "\n" for d in (old, bad, negative)))
    assert [r.cost_usd for r in read_usage(path)] == [None, None, None]
    assert cost_totals(path, TODAY)["month"] == {"usd": 0.0, "unpriced": 3}


def test_cost_text_says_what_is_known() -> None:
    assert cost_text({"usd": 0.0021, "unpriced": 0}, 1) == "$0.0021"
    assert cost_text({"usd": 12.5, "unpriced": 0}, 9) == "$12.50"
    assert cost_text({"usd": 0.5, "unpriced": 2}, 5) == "$0.5000 + 2 calls of unknown cost"
    assert cost_text({"usd": 0.0, "unpriced": 3}, 3).startswith("unknown (set OM_LLM_PRICE_")
    assert cost_text({"usd": 0.0, "unpriced": 3}, 3, fix=False) == "unknown"
    assert cost_text({"usd": 0.0, "unpriced": 0}, 0) == "$0.00"


def test_totals_by_day_and_month(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(1000, 1), purpose="observer", when=at(date(2026, 1, 31)))
    record_usage(path, completion(500, 5), purpose="observer", when=at(date(2026, 2, 28), 23))
    record_usage(path, completion(100, 10), purpose="observer", when=at(date(2026, 3, 1), 0))
    record_usage(path, completion(200, 20), purpose="reflector", when=at(TODAY - timedelta(days=1)))
    record_usage(path, completion(300, 30), purpose="observer", when=at(TODAY, 8))
    record_usage(path, completion(400, 40), purpose="observer", when=at(TODAY, 23))
    assert usage_totals(path, TODAY) == {
        "today": {"in": 700, "out": 70, "calls": 2},
        "month": {"in": 1000, "out": 100, "calls": 4},
    }
    assert usage_totals(path, date(2026, 2, 28)) == {
        "today": {"in": 500, "out": 5, "calls": 1},
        "month": {"in": 500, "out": 5, "calls": 1},
    }
    assert usage_totals(tmp_path / "missing.jsonl", TODAY)["month"]["calls"] == 0


def test_torn_and_foreign_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    record_usage(path, completion(10, 1), purpose="observer", when=at(TODAY, 1))
    with path.open("a") as handle:
        handle.write(
            '{"ts": "not a time", "in": 5}\n[1, 2]\n\n{"ts": "2026-03-14T02:00:00+00:00", "in": '
        )
    record_usage(path, completion(20, 2), purpose="observer", when=at(TODAY, 3))
    assert usage_totals(path, TODAY)["today"] == {"in": 30, "out": 3, "calls": 2}


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
    assert usage_totals(path, TODAY)["today"] == {"in": 70, "out": 30, "calls": 10}
    assert usage_totals(path, TODAY)["month"]["calls"] == 10
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
    assert usage_totals(path, TODAY)["today"] == {"in": 200, "out": 50, "calls": 2}


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

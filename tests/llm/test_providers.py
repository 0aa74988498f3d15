"""LLM providers end to end: the real ``openai`` and ``anthropic`` SDKs against the fake server.

Retries never really wait: ``sleep`` is a recorder, so the tests assert the waits that *would*
have happened. The only real wait is the timeout test's one second.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from fakes.llm_server import (
    Delay,
    Drop,
    ErrorReply,
    FakeLLMServer,
    InvalidBody,
    Reply,
    SlowBody,
)

from obsmem.errors import ProviderError, SettingsError
from obsmem.llm import (
    GEMINI_BASE_URL,
    OLLAMA_BASE_URL,
    get_provider,
    resolve_model,
    validate_key,
)
from obsmem.llm.base import Provider, parse_retry_after
from obsmem.settings import Settings, load_settings


class Sleeps(list[float]):
    """Records the waits the retry loop asks for, without waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def compat(fake: FakeLLMServer, sleeps: Sleeps, **overrides: Any) -> Provider:
    """An openai-compatible provider pointed at the fake server."""
    options: dict[str, Any] = {
        "llm_provider": "openai-compatible",
        "llm_base_url": fake.base_url_openai,
        "llm_model": "test-model",
        **overrides,
    }
    provider = get_provider(Settings(**options), sleep=sleeps)
    assert provider is not None
    return provider


def claude(fake: FakeLLMServer, sleeps: Sleeps, **overrides: Any) -> Provider:
    """An anthropic provider pointed at the fake server."""
    options: dict[str, Any] = {
        "llm_provider": "anthropic",
        "anthropic_api_key": "sk-ant-test",
        "llm_base_url": fake.base_url_anthropic,
        **overrides,
    }
    provider = get_provider(Settings(**options), sleep=sleeps)
    assert provider is not None
    return provider


# -- happy paths ---------------------------------------------------------------------------------


def test_openai_compatible_round_trip(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Reply("observed: tests pass", input_tokens=42, output_tokens=7))
    reply = compat(fake_llm, sleeps).complete(
        "You are the observer.", "user: make the tests pass", purpose="observer", max_tokens=300
    )
    assert reply.text == "observed: tests pass"
    assert (reply.input_tokens, reply.output_tokens, reply.total_tokens) == (42, 7, 49)
    assert (reply.provider, reply.model, reply.stop_reason) == (
        "openai-compatible",
        "test-model",
        "stop",
    )
    [request] = fake_llm.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == [
        {"role": "system", "content": "You are the observer."},
        {"role": "user", "content": "user: make the tests pass"},
    ]
    assert request.body["max_tokens"] == 300
    assert "response_format" not in request.body
    assert request.headers["authorization"] == "Bearer not-needed"
    assert request.headers["x-stainless-retry-count"] == "0"  # the SDK's own retries are off
    assert sleeps == []


def test_anthropic_round_trip(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Reply(lambda req: f"echo: {req.user}", input_tokens=11, output_tokens=5))
    reply = claude(fake_llm, sleeps).complete(
        "You are the observer.", "turn 1", purpose="observer", max_tokens=200
    )
    assert reply.text == "echo: turn 1"
    assert (reply.input_tokens, reply.output_tokens) == (11, 5)
    assert (reply.provider, reply.model, reply.stop_reason) == (
        "anthropic",
        "claude-haiku-5-5",
        "end_turn",
    )
    [request] = fake_llm.requests
    assert request.path == "/v1/messages"
    assert request.body["system"] == "You are the observer."
    assert request.body["messages"] == [{"role": "user", "content": "turn 1"}]
    assert request.body["max_tokens"] == 200
    # Newer Claude models reject sampling parameters; none are sent.
    assert not {"temperature", "top_p", "top_k"} & set(request.body)
    assert "sk-ant-test" in (
        request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    )


def test_anthropic_joins_text_blocks_and_skips_thinking(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-5-5",
        "content": [
            {"type": "thinking", "thinking": "let me think", "signature": "sig"},
            {"type": "text", "text": "part one, "},
            {"type": "text", "text": "part two"},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 10},
    }
    fake_llm.push(InvalidBody(json.dumps(body).encode()))
    reply = claude(fake_llm, sleeps).complete("s", "u", purpose="observer")
    assert reply.text == "part one, part two"
    assert reply.input_tokens == 13  # cached prompt tokens are billed, so they count
    assert reply.cached_input_tokens == 10  # ... at their own price


def test_json_mode_openai_asks_for_a_json_object(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    schema = {"type": "object", "properties": {"observations": {"type": "array"}}}
    fake_llm.push(Reply('{"observations": []}'))
    reply = compat(fake_llm, sleeps).complete(
        "Observe.", "u", purpose="observer", json_schema=schema
    )
    assert json.loads(reply.text) == {"observations": []}
    [request] = fake_llm.requests
    assert request.body["response_format"] == {"type": "json_object"}
    assert "JSON" in request.system and '"observations"' in request.system


def test_json_mode_falls_back_when_the_server_rejects_response_format(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    fake_llm.push(
        ErrorReply(400, "'response_format.type' must be 'json_schema' or 'text'"),
        Reply('{"a": 1}'),
        Reply('{"b": 2}'),
    )
    provider = compat(fake_llm, sleeps)
    assert provider.complete("s", "u", purpose="observer", json_schema={}).text == '{"a": 1}'
    assert provider.complete("s", "u", purpose="observer", json_schema={}).text == '{"b": 2}'
    first, second, third = fake_llm.requests
    assert "response_format" in first.body
    assert "response_format" not in second.body and "response_format" not in third.body
    assert "JSON" in third.system  # the instruction remains
    assert sleeps == []  # an adaptation, not a retry


def test_output_limit_parameter_adapts_to_the_server(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    fake_llm.push(
        ErrorReply(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        ),
        Reply("ok"),
    )
    assert (
        compat(fake_llm, sleeps).complete("s", "u", purpose="observer", max_tokens=99).text == "ok"
    )
    first, second = fake_llm.requests
    assert first.body["max_tokens"] == 99
    assert second.body["max_completion_tokens"] == 99 and "max_tokens" not in second.body


def test_anthropic_json_is_asked_in_the_prompt_without_prefill(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    fake_llm.push(Reply('{"ok": true}'))
    claude(fake_llm, sleeps).complete(
        "Observe.", "u", purpose="observer", json_schema={"type": "object"}
    )
    [request] = fake_llm.requests
    assert request.system.startswith("Observe.") and "JSON Schema" in request.system
    assert [m["role"] for m in request.body["messages"]] == ["user"]  # no assistant prefill


def test_leading_think_block_is_stripped(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Reply('<think>\nreasoning...\n</think>\n{"x": 1}'))
    assert compat(fake_llm, sleeps).complete("s", "u", purpose="observer").text == '{"x": 1}'


def test_missing_usage_is_estimated(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "abcdefgh"},
                "finish_reason": "stop",
            }
        ],
    }
    fake_llm.push(InvalidBody(json.dumps(body).encode()))
    reply = compat(fake_llm, sleeps).complete("s" * 40, "u" * 40, purpose="observer")
    assert (reply.input_tokens, reply.output_tokens) == (20, 2)


def test_slow_streamed_body_is_read_whole(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(SlowBody(Reply("slow but complete"), chunks=5, interval=0.05))
    assert (
        compat(fake_llm, sleeps).complete("s", "u", purpose="observer").text == "slow but complete"
    )


# -- resolution ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"anthropic_api_key": "a"}, ("anthropic", "claude-haiku-5-5")),
        ({"openai_api_key": "o"}, ("openai", "gpt-5.4-mini")),
        ({"gemini_api_key": "g"}, ("gemini", "gemini-3.5-flash-lite")),
        (
            {"anthropic_api_key": "a", "openai_api_key": "o", "gemini_api_key": "g"},
            ("anthropic", "claude-haiku-5-5"),
        ),
        ({"openai_api_key": "o", "gemini_api_key": "g"}, ("openai", "gpt-5.4-mini")),
        (
            {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "qwen3"},
            ("openai-compatible", "qwen3"),
        ),
        ({}, None),
        ({"llm_provider": "none", "anthropic_api_key": "a"}, None),
    ],
)
def test_auto_resolution(options: dict[str, Any], expected: tuple[str, str] | None) -> None:
    provider = get_provider(Settings(**options))
    assert (None if provider is None else (provider.name, provider.model)) == expected


def test_auto_resolution_from_the_settings_file(tmp_path: Any) -> None:
    env_file = tmp_path / "env"
    env_file.write_text("OPENAI_API_KEY=sk-file\nOM_LLM_MODEL=gpt-5.4\n")
    provider = get_provider(load_settings({"OM_ENV_FILE": str(env_file)}))
    assert provider is not None and (provider.name, provider.model) == ("openai", "gpt-5.4")


def test_model_by_purpose() -> None:
    settings = Settings(
        anthropic_api_key="a",
        llm_model="general",
        llm_observer_model="small",
        llm_reflector_model="big",
    )
    assert resolve_model(settings, "anthropic", "observer") == "small"
    assert resolve_model(settings, "anthropic", "reflector") == "big"
    assert resolve_model(settings, "anthropic", "validate") == "general"
    assert resolve_model(Settings(), "ollama", "reflector") == "llama3.2"
    provider = get_provider(settings, "reflector")
    assert provider is not None and provider.model == "big"


def test_presets_for_ollama_and_gemini() -> None:
    ollama = get_provider(Settings(llm_provider="ollama"))
    assert ollama is not None and ollama.model == "llama3.2"
    assert str(vars(ollama)["_client"].base_url).rstrip("/") == OLLAMA_BASE_URL
    # Ollama's URL given without its /v1 path still reaches the OpenAI API.
    custom = get_provider(Settings(llm_provider="ollama", llm_base_url="http://gpu-box:11434/"))
    assert custom is not None
    assert str(vars(custom)["_client"].base_url).rstrip("/") == "http://gpu-box:11434/v1"
    gemini = get_provider(Settings(llm_provider="gemini", gemini_api_key="g"))
    assert gemini is not None
    assert str(vars(gemini)["_client"].base_url) == GEMINI_BASE_URL


def test_cloud_clients_are_built_from_their_environment(tmp_path: Any) -> None:
    env_file = tmp_path / "env"
    env_file.write_text("CLOUD_ML_REGION=us-east5\n")
    vertex = get_provider(
        Settings(llm_provider="anthropic-vertex", env_file=env_file),
        environ={"ANTHROPIC_VERTEX_PROJECT_ID": "proj-1"},
    )
    assert vertex is not None and (vertex.name, vertex.model) == (
        "anthropic-vertex",
        "claude-haiku-5-5",
    )
    assert type(vars(vertex)["_client"]).__name__ == "AnthropicVertex"
    bedrock = get_provider(
        Settings(llm_provider="anthropic-bedrock"), environ={"AWS_REGION": "us-west-2"}
    )
    assert bedrock is not None and bedrock.model == "anthropic.claude-haiku-5-5"
    assert type(vars(bedrock)["_client"]).__name__ == "AnthropicBedrock"


@pytest.mark.parametrize(
    ("name", "blocked", "environ", "extra"),
    [
        ("anthropic-vertex", "google.auth", {"CLOUD_ML_REGION": "us-east5"}, "anthropic[vertex]"),
        ("anthropic-bedrock", "botocore", {"AWS_REGION": "us-west-2"}, "anthropic[bedrock]"),
    ],
)
def test_missing_cloud_auth_library_says_which_extra(
    fake_llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    blocked: str,
    environ: dict[str, str],
    extra: str,
) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # as if not installed
    settings = Settings(llm_provider=name, llm_base_url=fake_llm.base_url_anthropic)
    provider = get_provider(settings, environ={"ANTHROPIC_VERTEX_PROJECT_ID": "p", **environ})
    assert provider is not None
    with pytest.raises(ProviderError) as caught:
        provider.complete("s", "u", purpose="observer")
    assert str(caught.value).startswith(f"{name} (")
    assert str(caught.value).endswith(f"(pip install '{extra}')")
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"llm_provider": "anthropic"}, "ANTHROPIC_API_KEY is not set"),
        ({"llm_provider": "openai"}, "OPENAI_API_KEY is not set"),
        ({"llm_provider": "gemini", "openai_api_key": "o"}, "GEMINI_API_KEY is not set"),
        ({"llm_provider": "openai-compatible"}, "needs OM_LLM_BASE_URL"),
        (
            {"llm_provider": "openai-compatible", "llm_base_url": "http://x:1/v1"},
            "no default model",
        ),
        ({"llm_base_url": "http://x:1/v1"}, "no default model"),
        ({"llm_provider": "anthropic-vertex"}, "needs CLOUD_ML_REGION"),
    ],
)
def test_a_provider_chosen_without_what_it_needs_says_what_to_set(
    options: dict[str, Any], needle: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        get_provider(Settings(**options), environ={})
    message = str(caught.value)
    assert needle in message
    assert "set " in message and "\n" not in message


def test_missing_sdk_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(ProviderError, match=r"pip install 'obsmem\[llm\]'"):
        get_provider(Settings(openai_api_key="o"))
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ProviderError, match=r"anthropic package is not installed"):
        get_provider(Settings(anthropic_api_key="a"))


def test_importing_providers_loads_no_sdk() -> None:
    code = (
        "import sys, obsmem.llm, obsmem.llm.usage\n"
        "loaded = [m for m in ('anthropic', 'openai', 'httpx', 'httpx2') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


# -- retries -------------------------------------------------------------------------------------


def test_429_without_retry_after_backs_off_with_jitter(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    fake_llm.push(
        ErrorReply(429, "slow down"), ErrorReply(429, "slow down"), ErrorReply(429), Reply("ok")
    )
    assert compat(fake_llm, sleeps).complete("s", "u", purpose="observer").text == "ok"
    assert len(fake_llm.requests) == 4
    assert len(sleeps) == 3
    for retry, wait in enumerate(sleeps):
        assert 0.0 <= wait <= 2.0**retry  # full jitter below the exponential cap


def test_429_honours_retry_after_seconds_and_ms(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(
        ErrorReply(429, headers={"Retry-After": "3"}),
        ErrorReply(429, headers={"retry-after-ms": "1500"}),
        Reply("ok"),
    )
    assert claude(fake_llm, sleeps).complete("s", "u", purpose="observer").text == "ok"
    assert sleeps == [3.0, 1.5]


def test_retry_after_past_the_cap_fails_fast(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(ErrorReply(429, "quota", headers={"Retry-After": "3600"}))
    with pytest.raises(ProviderError) as caught:
        compat(fake_llm, sleeps).complete("s", "u", purpose="observer")
    assert caught.value.retryable
    assert "asks to wait 3600 s" in str(caught.value) and "try later" in str(caught.value)
    assert sleeps == [] and len(fake_llm.requests) == 1


def test_parse_retry_after_http_date() -> None:
    now = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "Mon, 02 Mar 2026 12:00:30 GMT"}, now=now) == 30.0
    assert parse_retry_after({"retry-after": "Mon, 02 Mar 2026 11:00:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_server_errors_then_success(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(ErrorReply(500), ErrorReply(503), ErrorReply(529, "Overloaded"), Reply("ok"))
    assert claude(fake_llm, sleeps).complete("s", "u", purpose="observer").text == "ok"
    assert len(fake_llm.requests) == 4 and len(sleeps) == 3


def test_dropped_connection_then_success(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Drop(), Reply("ok"))
    assert compat(fake_llm, sleeps).complete("s", "u", purpose="observer").text == "ok"
    assert len(fake_llm.completion_requests()) == 2 and len(sleeps) == 1


def test_timeout_then_success(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(Delay(2.0, Reply("too late")), Reply("in time"))
    provider = claude(fake_llm, sleeps, llm_timeout_seconds=1.0)
    started = time.monotonic()
    assert provider.complete("s", "u", purpose="observer").text == "in time"
    assert 0.9 <= time.monotonic() - started < 1.9
    assert len(sleeps) == 1


def test_retries_exhausted_names_provider_model_and_fix(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    fake_llm.push(*[ErrorReply(503, "upstream unavailable")] * 3)
    provider = compat(fake_llm, sleeps, llm_max_retries=2)
    with pytest.raises(ProviderError) as caught:
        provider.complete("s", "u", purpose="observer")
    err = caught.value
    assert str(err) == (
        "openai-compatible (test-model): HTTP 503 after 3 attempts: upstream unavailable "
        "(the provider is failing or overloaded: try later)"
    )
    assert (err.provider, err.model, err.status, err.retryable) == (
        "openai-compatible",
        "test-model",
        503,
        True,
    )
    assert len(fake_llm.requests) == 3 and len(sleeps) == 2


def test_rate_limit_exhausted_says_to_slow_down(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.default = ErrorReply(429, "rate limit reached")
    with pytest.raises(ProviderError, match="rate-limited: try later or lower the frequency"):
        claude(fake_llm, sleeps, llm_max_retries=1).complete("s", "u", purpose="observer")
    assert len(fake_llm.requests) == 2


def test_401_is_not_retried(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(ErrorReply(401, "invalid x-api-key"))
    with pytest.raises(ProviderError) as caught:
        claude(fake_llm, sleeps).complete("s", "u", purpose="observer")
    message = str(caught.value)
    assert message.startswith(
        "anthropic (claude-haiku-5-5): HTTP 401: invalid x-api-key (check ANTHROPIC_API_KEY in "
    )
    assert message.endswith("/env)")
    assert not caught.value.retryable
    assert len(fake_llm.requests) == 1 and sleeps == []


@pytest.mark.parametrize("status", [400, 403, 404])
def test_other_client_errors_are_not_retried(
    fake_llm: FakeLLMServer, sleeps: Sleeps, status: int
) -> None:
    fake_llm.push(ErrorReply(status, "nope"))
    with pytest.raises(ProviderError, match=f"HTTP {status}: nope"):
        compat(fake_llm, sleeps).complete("s", "u", purpose="observer")
    assert len(fake_llm.requests) == 1 and sleeps == []


def test_insufficient_quota_is_not_retried(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(
        ErrorReply(429, "You exceeded your current quota", error_type="insufficient_quota")
    )
    with pytest.raises(ProviderError, match="no credit left") as caught:
        compat(fake_llm, sleeps).complete("s", "u", purpose="observer")
    assert not caught.value.retryable and sleeps == []


def test_ollama_404_says_to_pull_the_model(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    fake_llm.push(ErrorReply(404, 'model "llama3.2" not found, try pulling it first'))
    settings = Settings(
        llm_provider="ollama", llm_base_url=fake_llm.base_url_openai, openai_api_key="sk-real"
    )
    provider = get_provider(settings, sleep=sleeps)
    assert provider is not None
    with pytest.raises(ProviderError, match=r"ollama pull llama3\.2"):
        provider.complete("s", "u", purpose="observer")
    # A real OpenAI key in the environment is never sent to an Ollama server.
    assert fake_llm.requests[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize(
    "step",
    [
        InvalidBody(b'{"id": "x", "choices": ['),
        InvalidBody(b"<html>Bad gateway</html>", content_type="text/html"),
    ],
    ids=["truncated-json", "html-page"],
)
def test_invalid_body_is_a_provider_error(
    fake_llm: FakeLLMServer, sleeps: Sleeps, step: InvalidBody
) -> None:
    fake_llm.push(step)
    with pytest.raises(
        ProviderError, match="not a valid OpenAI chat-completions response"
    ) as caught:
        compat(fake_llm, sleeps).complete("s", "u", purpose="observer")
    assert not caught.value.retryable and sleeps == []


def test_invalid_anthropic_body_is_a_provider_error(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    fake_llm.push(InvalidBody(b"not json at all", content_type="text/plain"))
    with pytest.raises(ProviderError, match="not a valid Messages response"):
        claude(fake_llm, sleeps).complete("s", "u", purpose="observer")


def test_unreachable_server(sleeps: Sleeps) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(
        llm_provider="openai-compatible",
        llm_base_url=f"http://127.0.0.1:{port}/v1",
        llm_model="m",
        llm_max_retries=2,
    )
    provider = get_provider(settings, sleep=sleeps)
    assert provider is not None
    with pytest.raises(ProviderError) as caught:
        provider.complete("s", "u", purpose="observer")
    message = str(caught.value)
    assert f"cannot connect to http://127.0.0.1:{port}/v1 after 3 attempts" in message
    assert "is unreachable: start it or change the URL" in message
    assert caught.value.retryable and len(sleeps) == 2


# -- om doctor --validate-key --------------------------------------------------------------------


def test_validate_key(fake_llm: FakeLLMServer, sleeps: Sleeps) -> None:
    settings = Settings(
        llm_provider="openai-compatible", llm_base_url=fake_llm.base_url_openai, llm_model="m"
    )
    verdict = validate_key(settings, sleep=sleeps)
    assert verdict.startswith("openai-compatible works: m answered in ")
    [request] = fake_llm.requests
    assert request.body["max_tokens"] <= 16


def test_validate_key_reports_a_bad_key_and_retries_at_most_once(
    fake_llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    settings = Settings(
        llm_provider="anthropic", anthropic_api_key="bad", llm_base_url=fake_llm.base_url_anthropic
    )
    fake_llm.push(ErrorReply(401, "invalid x-api-key"))
    with pytest.raises(ProviderError, match="HTTP 401"):
        validate_key(settings, sleep=sleeps)
    fake_llm.script(ErrorReply(503), ErrorReply(503), Reply("ok"))
    with pytest.raises(ProviderError, match="after 2 attempts"):
        validate_key(settings, sleep=sleeps)


def test_validate_key_without_provider() -> None:
    assert "offline rules" in validate_key(Settings())
    assert validate_key(Settings(llm_provider="none", openai_api_key="o")).startswith(
        "OM_LLM_PROVIDER=none"
    )

"""The claude-code and codex providers: the agents' own CLIs (fakes on PATH) as the observer.

The fakes record their argv, stdin, working directory and environment marker, and print the
JSON the real CLIs print (see tests/fakes/agent_cli.py). Retries never really wait.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fakes.agent_cli import FakeAgentCLI, make_agent_cli

from obsmem import paths
from obsmem.errors import ProviderError, SettingsError
from obsmem.llm import get_metered_provider, get_provider
from obsmem.llm.cli import CLIProvider
from obsmem.llm.usage import period_totals, usage_path
from obsmem.settings import load_settings

KINDS = {"claude-code": "claude", "codex": "codex"}


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def fake(fake_bin: Path, provider: str) -> FakeAgentCLI:
    return make_agent_cli(fake_bin, fake_bin.parent / f"{provider}-records", KINDS[provider])


def provider_for(name: str, sleeps: Sleeps | None = None, **env: str) -> CLIProvider:
    environ = {**os.environ, "OM_LLM_PROVIDER": name, **env}
    sleep = Sleeps() if sleeps is None else sleeps
    found = get_provider(load_settings(environ), environ=environ, sleep=sleep)
    assert isinstance(found, CLIProvider)
    return found


@pytest.mark.parametrize("name", list(KINDS))
def test_the_prompt_goes_on_stdin_with_no_tools_and_the_model(name: str, fake_bin: Path) -> None:
    cli = fake(fake_bin, name)
    cli.behave(reply='{"observations": [{"text": "kept"}]}', usage={"in": 900, "out": 120})
    provider = provider_for(name, OM_LLM_MODEL="small-model")
    reply = provider.complete("SYSTEM RULES", "[1] user: hello", purpose="observer")
    assert reply.text == '{"observations": [{"text": "kept"}]}'
    assert (reply.provider, reply.input_tokens, reply.output_tokens) == (name, 900, 120)
    [call] = cli.calls
    argv = call["argv"]
    assert "[1] user: hello" in call["stdin"]
    assert not any("[1] user: hello" in arg for arg in argv)
    assert argv[argv.index("--model") + 1] == "small-model"
    if name == "claude-code":
        assert argv[:3] == ["-p", "--output-format", "json"]
        assert argv[argv.index("--system-prompt") + 1] == "SYSTEM RULES"
        assert argv[argv.index("--tools") + 1] == ""
        assert {"--strict-mcp-config", "--no-session-persistence"} <= set(argv)
        assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
        assert reply.model == "claude-haiku-5-5"  # the model that answered, from modelUsage
    else:
        assert argv[:2] == ["exec", "--json"] and argv[-1] == "-"
        assert argv[argv.index("--sandbox") + 1] == "read-only"
        assert "--ephemeral" in argv
        assert "features.hooks=false" in argv and "mcp_servers={}" in argv
        # No shell, no sub-agents, no web search: the run only answers.
        overrides = {argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"}
        assert {
            "features.shell_tool=false",
            "features.unified_exec=false",
            "features.multi_agent=false",
            'web_search="disabled"',
        } <= overrides
        assert call["stdin"].startswith("SYSTEM RULES")
    # Marked as om's own: the hooks' switch, and a directory the readers skip.
    assert call["marker"] == "1"
    assert Path(call["cwd"]) == paths.observer_dir()
    assert paths.observer_session(call["cwd"])


@pytest.mark.parametrize("name", list(KINDS))
def test_usage_from_the_cli_reaches_the_usage_log(name: str, fake_bin: Path) -> None:
    cli = fake(fake_bin, name)
    cli.behave(usage={"in": 1000, "cached": 600, "out": 50})
    environ = {**os.environ, "OM_LLM_PROVIDER": name}
    metered = get_metered_provider(load_settings(environ), environ=environ)
    assert metered is not None
    metered.complete("s", "u", purpose="observer")
    totals = period_totals(usage_path(), datetime.now().astimezone().date())
    assert {k: totals["today"][k] for k in ("in", "cached", "out", "calls")} == {
        "in": 1000 if name == "codex" else 1600,  # Codex's input_tokens holds the cached ones
        "cached": 600,
        "out": 50,
        "calls": 1,
    }
    line = json.loads(usage_path().read_text().splitlines()[0])
    assert line["provider"] == name
    # Claude Code reports what the call cost (total_cost_usd); Codex reports tokens only.
    assert line.get("usd") == (0.0021 if name == "claude-code" else None)
    from obsmem.memory.store import MemoryStore
    from obsmem.status import collect_status

    shown = collect_status(MemoryStore().ensure(), load_settings(environ), environ)
    assert shown.provider["effective"] == name
    assert shown.usage["today"] == {
        "in": 1000 if name == "codex" else 1600,
        "cached": 600,
        "out": 50,
        "calls": 1,
    }


def test_claude_cache_tokens_count_as_input(fake_bin: Path) -> None:
    fake(fake_bin, "claude-code").behave(usage={"in": 10, "cached": 4000, "out": 7})
    reply = provider_for("claude-code").complete("s", "u", purpose="observer")
    assert (reply.input_tokens, reply.output_tokens) == (4010, 7)


@pytest.mark.parametrize("name", list(KINDS))
def test_a_hung_cli_is_killed_at_its_timeout_with_its_children(name: str, fake_bin: Path) -> None:
    cli = fake(fake_bin, name)
    cli.behave(hang=True)
    sleeps = Sleeps()
    provider = provider_for(name, sleeps, OM_LLM_CLI_TIMEOUT_SECONDS="5", OM_LLM_MAX_RETRIES="0")
    with pytest.raises(ProviderError) as caught:
        provider.complete("s", "u", purpose="observer")
    assert caught.value.retryable
    assert "killed" in caught.value.message and "OM_LLM_CLI_TIMEOUT_SECONDS" in (
        caught.value.hint or ""
    )
    for pid in cli.pids():
        assert _ends(pid), pid


def _ends(pid: int) -> bool:
    """True once ``pid`` is gone (a signal takes a moment to end a process it was sent to)."""
    deadline = time.monotonic() + 30
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead but not yet reaped by its parent.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


@pytest.mark.parametrize("name", list(KINDS))
def test_a_rate_limit_is_retried_twice_with_backoff_then_left_for_later(
    name: str, fake_bin: Path
) -> None:
    cli = fake(fake_bin, name)
    cli.behave(error="Claude AI usage limit reached|1764633600")
    sleeps = Sleeps()
    provider = provider_for(name, sleeps, OM_LLM_MAX_RETRIES="10")
    with pytest.raises(ProviderError) as caught:
        provider.complete("s", "u", purpose="observer")
    assert caught.value.retryable
    assert len(cli.calls) == 3  # however high OM_LLM_MAX_RETRIES: each try is a whole agent
    assert len(sleeps) == 2


@pytest.mark.parametrize("name", list(KINDS))
def test_a_login_problem_is_not_retried(name: str, fake_bin: Path) -> None:
    cli = fake(fake_bin, name)
    cli.behave(error="Invalid API key · Please run /login")
    with pytest.raises(ProviderError) as caught:
        provider_for(name).complete("s", "u", purpose="observer")
    assert not caught.value.retryable and "log in" in (caught.value.hint or "")
    assert len(cli.calls) == 1


@pytest.mark.parametrize("name", list(KINDS))
def test_output_that_is_not_the_cli_json_is_a_clear_error(name: str, fake_bin: Path) -> None:
    cli = fake(fake_bin, name)
    cli.behave(garbage=True, exit=1)
    with pytest.raises(ProviderError) as caught:
        provider_for(name).complete("s", "u", purpose="observer")
    assert KINDS[name] in caught.value.message and len(cli.calls) == 1


def test_a_missing_cli_says_how_to_fix_it(fake_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(fake_bin))
    with pytest.raises(ProviderError) as caught:
        provider_for("codex").complete("s", "u", purpose="observer")
    assert "not on PATH" in caught.value.message and not caught.value.retryable


@pytest.mark.parametrize("name", list(KINDS))
def test_never_more_than_one_observer_process_at_a_time(name: str, fake_bin: Path) -> None:
    cli = fake(fake_bin, name)
    cli.behave(sleep=0.4)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            provider_for(name).complete("s", "u", purpose="observer")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    runs = sorted((c["start"], c["end"]) for c in cli.calls)
    assert len(runs) == 3
    for (_, end), (start, _) in itertools.pairwise(runs):
        assert start >= end  # each run began after the one before it ended


def test_a_held_lock_fails_retryable_without_starting_the_cli(fake_bin: Path) -> None:
    cli = fake(fake_bin, "claude-code")
    lock = paths.observer_lock_path()
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        provider = provider_for("claude-code", OM_LLM_CLI_TIMEOUT_SECONDS="5")
        started = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            provider.complete("s", "u", purpose="observer")
        assert time.monotonic() - started < 60
    finally:
        os.close(fd)
    assert caught.value.retryable and "one observer CLI at a time" in (caught.value.hint or "")
    assert cli.calls == []


def test_the_cli_timeout_setting_is_validated() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OM_LLM_CLI_TIMEOUT_SECONDS": "1"})
    assert "OM_LLM_CLI_TIMEOUT_SECONDS" in caught.value.message


def test_auto_never_picks_a_cli(fake_bin: Path) -> None:
    fake(fake_bin, "claude-code")
    environ: dict[str, Any] = {**os.environ}
    assert get_provider(load_settings(environ), environ=environ) is None


def test_a_failing_cli_is_tried_once_per_run_and_the_cursor_waits(
    fake_bin: Path, tmp_path: Path
) -> None:
    """No storm: the first failure ends the CLI's part of the run; the content stays pending."""
    from obsmem.demo import prepare
    from obsmem.observe.run import run_observe
    from obsmem.sources.select import open_state

    run = prepare(tmp_path / "mem")
    store = run.store
    store.observations_path.unlink()
    cli = fake(fake_bin, "claude-code")
    cli.behave(error="API Error: 529 overloaded")
    environ = {
        **run.environ,
        "PATH": os.environ["PATH"],
        "OM_LLM_PROVIDER": "claude-code",
        "OM_LLM_MAX_RETRIES": "0",
        "OM_FALLBACK": "defer",
    }
    settings = load_settings(environ)
    report = run_observe(store, settings, source="all", environ=environ, flush=True)
    assert report.deferred and report.written == 0
    assert len(cli.calls) == 1  # two sessions pending, one CLI run
    with open_state(store) as state:
        assert all(c.offset == 0 for c in state.cursors().values())

"""``run_observe`` end to end: transcripts in, memory out, cursors moved only after writing.

Uses the demo's Claude Code transcript (it carries a decision, a preference, a failing test run
and its fix, a commitment and two fake secrets) and the fake LLM server for the LLM paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from obsmem.demo import prepare
from obsmem.memory.store import MemoryStore
from obsmem.observe.run import run_observe
from obsmem.settings import Settings, load_settings
from obsmem.sources.select import open_state
from tests.fakes.llm_server import ErrorReply, FakeLLMServer, InvalidBody, Reply

SECRETS = ("hunter2-staging-Xy9!", "ghp_R4nd0mT0k3nV4lu3F0rD3m0Purp0s3s12345")


@pytest.fixture
def demo(tmp_path: Path) -> tuple[MemoryStore, dict[str, str]]:
    run = prepare(tmp_path / "mem")
    store = run.store
    store.observations_path.unlink()  # start from empty observations, keep the rest
    return store, run.environ


def settings_for(environ: dict[str, str], **extra: str) -> Settings:
    return load_settings({**environ, "OM_LLM_PROVIDER": "none", **extra})


def all_memory_bytes(store: MemoryStore) -> bytes:
    return b"".join(p.read_bytes() for p in store.home.rglob("*") if p.is_file())


def test_rules_observe_writes_prioritised_observations(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, env = demo
    report = run_observe(store, settings_for(env), source="claude", environ=env, flush=True)
    assert report.files_read == 1 and report.written >= 4 and report.provider == "rules"
    doc = store.read_observations()
    texts = [o.text for o in doc.observations]
    assert any("one Redis database per worker" in t for t in texts), texts
    assert any(o.type == "preference" and "fixtures" in o.text for o in doc.observations)
    assert any(o.type == "commitment" and "migration guide" in o.text for o in doc.observations)
    assert any(o.type == "lesson" and "pytest -n 4" in o.text for o in doc.observations)
    assert all(o.block_id and o.tagged for o in doc.observations)
    # Every observation is traceable to its transcript lines.
    ledger = store.provenance()
    assert all(o.id in ledger for o in doc.observations)
    assert all(
        ledger[o.id].path.endswith(".jsonl") and ledger[o.id].line_start for o in doc.observations
    )
    # Secrets never reach memory, the ledger or the index.
    for secret in SECRETS:
        assert secret.encode() not in all_memory_bytes(store)
    with open_state(store) as state:
        (cursor,) = state.cursors().values()
        assert cursor.offset == Path(cursor.path).stat().st_size


def test_observing_twice_writes_nothing_the_second_time(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, env = demo
    first = run_observe(store, settings_for(env), source="all", environ=env, flush=True)
    before = store.observations_path.read_bytes()
    second = run_observe(store, settings_for(env), source="all", environ=env, flush=True)
    assert first.written > 0 and second.written == 0 and second.files_read == 0
    assert store.observations_path.read_bytes() == before


def test_forgotten_cursor_rereads_but_duplicates_nothing(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, env = demo
    run_observe(store, settings_for(env), source="claude", environ=env, flush=True)
    before = store.observations_path.read_bytes()
    with open_state(store) as state:
        for path in state.cursors():
            state.forget(path)
    again = run_observe(store, settings_for(env), source="claude", environ=env, flush=True)
    assert again.files_read == 1 and again.written == 0
    assert store.observations_path.read_bytes() == before


def llm_reply(request: object) -> str:
    body = request.body  # type: ignore[attr-defined]
    user = body["messages"][-1]["content"]
    assert "<transcript>" in user
    return json.dumps(
        {
            "observations": [
                {
                    "time": "14:05",
                    "type": "decision",
                    "importance": 0.9,
                    "confidence": 0.95,
                    "text": "Uses one Redis database per xdist worker (replacing shared db 0)",
                    "turns": [1],
                },
                {
                    "type": "bogus-type",
                    "text": "  an item with an unknown type becomes a fact  ",
                    "turns": [999],
                },
                {"text": ""},
                "not an object",
            ],
            "current_context": {
                "active_task": "Fix flaky Redis tests",
                "key_entities": ["Redis", "xdist"],
            },
            "unknown_field": True,
        }
    )


def test_llm_observe_through_the_real_sdk(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = Reply(llm_reply)
    settings = load_settings(
        {
            **env,
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_BASE_URL": fake_llm.base_url_openai,
            "OM_LLM_MODEL": "test-model",
            "OM_OBSERVER_MAX_INPUT_TOKENS": "1000",
        }
    )
    report = run_observe(store, settings, source="claude", environ=env, flush=True)
    assert report.chunks_llm >= 2 and report.chunks_rules == 0, report
    completions = [r for r in fake_llm.requests if r.api == "openai"]
    assert len(completions) == report.chunks_llm
    for request in completions:
        sent = json.dumps(request.body)
        assert all(secret not in sent for secret in SECRETS)
        user = request.body["messages"][-1]["content"]
        assert len(user) <= 1000 * 4 + 2000  # the chunk bound, plus the recent-observations tail
    doc = store.read_observations()
    decisions = [o for o in doc.observations if o.type == "decision"]
    assert len(decisions) == 1 and decisions[0].importance == 0.9  # de-duplicated across chunks
    assert any(
        o.type == "fact" and o.text == "an item with an unknown type becomes a fact"
        for o in doc.observations
    )
    day = doc.days[-1]
    assert day.context["Active task"] == "Fix flaky Redis tests"
    assert store.provenance()[decisions[0].id].line_start is not None


@pytest.mark.parametrize("failure", ["500s", "not json"])
def test_provider_failure_falls_back_to_rules(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer, failure: str
) -> None:
    store, env = demo
    fake_llm.default = (
        ErrorReply(500)
        if failure == "500s"
        else InvalidBody(body=b'{"choices": [{"message": {"content": "not json at all"}}]}')
    )
    if failure == "not json":
        fake_llm.default = Reply("I think the user wants Redis. Sure!")
    settings = load_settings(
        {
            **env,
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_MAX_RETRIES": "1",
            "OM_LLM_BASE_URL": fake_llm.base_url_openai,
            "OM_LLM_MODEL": "m",
        }
    )
    report = run_observe(store, settings, source="claude", environ=env, flush=True)
    assert report.problems and report.chunks_rules >= 1 and report.written > 0
    assert not report.deferred


def test_provider_failure_with_defer_leaves_content_pending(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = ErrorReply(503)
    settings = load_settings(
        {
            **env,
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_MAX_RETRIES": "0",
            "OM_FALLBACK": "defer",
            "OM_LLM_BASE_URL": fake_llm.base_url_openai,
            "OM_LLM_MODEL": "m",
        }
    )
    report = run_observe(store, settings, source="all", environ=env, flush=True)
    assert report.deferred and report.written == 0 and report.problems
    assert not store.observations_path.exists()
    with open_state(store) as state:
        assert all(c.offset == 0 for c in state.cursors().values())
    # The provider is back: the pending content is observed, once.
    fake_llm.default = Reply(llm_reply)
    later = run_observe(store, settings, source="all", environ=env, flush=True)
    assert later.written > 0 and not later.deferred


def test_second_run_sends_only_new_turns(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = Reply(llm_reply)
    settings = load_settings(
        {
            **env,
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_BASE_URL": fake_llm.base_url_openai,
            "OM_LLM_MODEL": "m",
        }
    )
    run_observe(store, settings, source="claude", environ=env, flush=True)
    first_count = len(fake_llm.requests)
    (transcript,) = Path(env["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl")
    last = json.loads(transcript.read_bytes().splitlines()[-1])
    new = {
        **last,
        "type": "user",
        "uuid": "new-1",
        "timestamp": "2026-11-26T15:00:00.000Z",
        "message": {"role": "user", "content": "Zebra-stripe the dashboard tables please."},
    }
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(new) + "\n")
    run_observe(store, settings, source="claude", environ=env, flush=True)
    later = fake_llm.requests[first_count:]
    assert len(later) == 1
    sent = later[0].body["messages"][-1]["content"]
    transcript_part = sent.split("<transcript>", 1)[1]
    assert "Zebra-stripe the dashboard tables" in transcript_part
    assert "CI keeps failing" not in transcript_part  # old turns are not sent again


def _interrupted_session(folder: Path) -> Path:
    """A Claude Code session whose agent was still running a command when it ended."""
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": "s-int",
            "cwd": "/home/ana/ledger",
            "timestamp": "2026-03-02T09:00:00Z",
            "message": {"role": "user", "content": "Run the migration against the test db"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s-int",
            "cwd": "/home/ana/ledger",
            "timestamp": "2026-03-02T09:00:05Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "alembic upgrade head", "description": "Migrate"},
                    }
                ],
            },
        },
    ]
    path = folder / "s-int.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_where_an_interrupted_session_stopped_is_written_once_it_is_over(
    store: MemoryStore, tmp_path: Path
) -> None:
    path = _interrupted_session(tmp_path)
    settings = load_settings({"OM_LLM_PROVIDER": "none"})
    # Read while it may still be running: nothing says it stopped.
    run_observe(store, settings, transcript=path, min_new=0, provider=None)
    assert not [o for o in store.read_observations().observations if "stopped" in o.text]
    # Over (read to its end with --flush, as the session-end hook and backfill do).
    with open_state(store) as state:
        state.forget(str(path))
    run_observe(store, settings, transcript=path, flush=True, provider=None)
    doc = store.read_observations()
    (stopped,) = [o for o in doc.observations if "stopped" in o.text]
    assert stopped.text.endswith("the agent was running `alembic upgrade head`")
    # "Last time here" reads it from the day's Current Context.
    day = doc.day(stopped.date)
    assert day is not None
    assert day.context["Suggested next"] == (
        "pick up where work stopped: the agent was running `alembic upgrade head`"
    )

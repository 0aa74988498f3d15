"""The LLM observer end to end through the real SDKs and the fake servers: JSON mode, continuity
(the previous Current Context and recent observations of the same project) and tool excerpts."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import ErrorReply, FakeLLMServer, RecordedRequest, Reply

from obsmem.demo import prepare
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.llm import CONTINUATION, RESULT_MARK, SEEN_HEADING
from obsmem.observe.observer import continuity, continuity_budget, estimate_tokens
from obsmem.observe.run import run_observe
from obsmem.settings import load_settings

DECISION = "Uses one Redis database per xdist worker (replacing shared db 0)"


@pytest.fixture
def demo(tmp_path: Path) -> tuple[MemoryStore, dict[str, str]]:
    run = prepare(tmp_path / "mem")
    run.store.observations_path.unlink()  # start from empty observations, keep the rest
    return run.store, run.environ


def reply(request: RecordedRequest) -> str:
    del request
    return json.dumps(
        {
            "observations": [{"type": "decision", "importance": 0.9, "text": DECISION}],
            "current_context": {"active_task": "Fix flaky Redis tests"},
        }
    )


def observe(
    store: MemoryStore, env: dict[str, str], fake: FakeLLMServer, api: str, **more: str
) -> Any:
    extra = (
        {"OM_LLM_PROVIDER": "openai-compatible", "OM_LLM_BASE_URL": fake.base_url_openai}
        if api == "openai"
        else {
            "OM_LLM_PROVIDER": "anthropic",
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "OM_LLM_BASE_URL": fake.base_url_anthropic,
        }
    )
    settings = load_settings(
        {**env, **extra, "OM_LLM_MODEL": "m", "OM_LLM_MAX_RETRIES": "0", **more}
    )
    return run_observe(store, settings, source="claude", environ=env, flush=True)


def system_of(request: RecordedRequest) -> str:
    body = request.body
    if request.api == "anthropic":
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    return str(body["messages"][0]["content"])


def test_openai_requests_ask_for_a_json_object(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = Reply(reply)
    report = observe(store, env, fake_llm, "openai")
    requests = fake_llm.completion_requests()
    assert report.chunks_llm == len(requests) >= 1 and report.chunks_rules == 0
    assert all(r.body["response_format"] == {"type": "json_object"} for r in requests)
    assert DECISION in [o.text for o in store.read_observations().observations]


def test_a_server_rejecting_json_mode_is_asked_again_without_it(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.push(ErrorReply(400, "'response_format.type' must be 'json_schema' or 'text'"))
    fake_llm.default = Reply(reply)
    report = observe(store, env, fake_llm, "openai")
    first, *rest = fake_llm.completion_requests()
    assert "response_format" in first.body and rest
    assert all("response_format" not in r.body for r in rest)
    assert report.chunks_rules == 0 and not report.problems, report
    assert DECISION in [o.text for o in store.read_observations().observations]


def test_anthropic_requests_ask_for_json_in_the_system_prompt_without_prefill(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = Reply(reply)
    report = observe(store, env, fake_llm, "anthropic")
    requests = fake_llm.completion_requests()
    assert report.chunks_llm == len(requests) >= 1 and report.chunks_rules == 0
    for request in requests:
        assert "Reply with one JSON object and nothing else" in system_of(request)
        assert [m["role"] for m in request.body["messages"]] == ["user"]  # no prefill
    assert DECISION in [o.text for o in store.read_observations().observations]


def append_user_turn(env: dict[str, str], text: str) -> None:
    (transcript,) = Path(env["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl")
    last = json.loads(transcript.read_bytes().splitlines()[-1])
    new = {
        **last,
        "type": "user",
        "uuid": "new-1",
        "timestamp": "2026-11-26T15:00:00.000Z",
        "message": {"role": "user", "content": text},
    }
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(new) + "\n")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_later_run_carries_the_project_context_and_only_its_observations(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer, api: str
) -> None:
    store, env = demo
    fake_llm.default = Reply(reply)
    observe(store, env, fake_llm, api)
    other = new_observation(
        "Billing service moved to Kafka",
        date="2026-11-27",
        provenance=Provenance(path="/elsewhere.jsonl", project="billing"),
    )
    store.add_observations([other])
    before = len(fake_llm.completion_requests())
    append_user_turn(env, "Zebra-stripe the dashboard tables please.")
    observe(store, env, fake_llm, api)
    (later,) = fake_llm.completion_requests()[before:]
    user = later.body["messages"][-1]["content"]
    head = user.split("<transcript>", 1)[0]
    assert "Active task: Fix flaky Redis tests" in head  # the previous Current Context
    assert DECISION in head  # an observation of the same project
    assert "Kafka" not in user  # another project's observation is not sent
    assert "Zebra-stripe" in user.split("<transcript>", 1)[1]


def test_continuity_stays_within_its_share_of_the_input_bound(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = demo
    project = "atlas"
    many = [
        new_observation(
            f"Observation number {n} about the atlas project, long enough to cost tokens",
            date="2026-11-20",
            provenance=Provenance(path="/a.jsonl", project=project),
        )
        for n in range(200)
    ]
    store.add_observations(many)
    carried = continuity(store, project, 4000)
    spent = sum(estimate_tokens(o.text) + 6 for o in carried.recent)
    assert 0 < spent <= continuity_budget(4000)
    assert carried.recent[-1].text == many[-1].text  # the newest are kept
    assert continuity(store, "other", 4000).recent == []
    assert continuity(store, None, 4000).recent == []


def test_the_prompt_sent_covers_what_a_coding_observer_must_tell_apart(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = Reply(reply)
    observe(store, env, fake_llm, "openai")
    system = " ".join(system_of(fake_llm.completion_requests()[0]).split())  # lines wrap anywhere
    for needle in (
        "(sub-agent)",  # who said it
        "Requests:",
        "Assertions:",
        "becomes a decision only when the user accepts it",
        "rejected",
        '"completed": true',
        "(meaning 2026-03-06)",
        "(estimated 2026-03-16)",
        "Current Context",
        "Intent is not a question",  # requests, assertions and intent apart
        "A proposal nobody answered stays a proposal",
        "keep what tells each one apart",  # distinguishing details of the agent's output
        "✅",
        "Not completed:",
        'vague "recently"',  # no made-up dates
        "One observation, one event",
        "Routine exploration",  # what not to keep
        "Tool noise",
        "already observed",  # the overlap with the previous chunk
        "→ result:",  # the excerpt under a successful call
    ):
        assert needle in system, needle


def seen_and_new(user: str) -> tuple[list[str], list[str]]:
    """The numbered turn lines of a request: those repeated as already observed, the new ones."""
    before, _, after = user.rpartition("New turns to observe")
    numbered = re.compile(r"^\[\d+\] ")
    seen = [line for line in before.split("\n") if numbered.match(line)] if before else []
    new = [line for line in after.split("\n") if numbered.match(line)]
    return seen, new


def overlapping_reply(request: RecordedRequest) -> str:
    """A model that observes the repeated turns again, in other words, beside a new turn."""
    user = request.body["messages"][-1]["content"]
    seen, new = seen_and_new(user)
    first_new = len(seen) + 1
    items: list[dict[str, Any]] = [
        {"text": f"New work at {new[0].split()[2]} in this chunk", "turns": [first_new]}
    ]
    if seen:
        time = seen[0].split()[2]
        items.append({"text": f"Observed again in other words at {time}", "turns": [1]})
        if time not in " ".join(line.split()[2] for line in new):
            items.append({"text": f"Again by its time only {time}", "time": time})
    return json.dumps({"observations": items})


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_chunks_overlap_without_duplicating_observations(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer, api: str
) -> None:
    store, env = demo
    fake_llm.default = Reply(overlapping_reply)
    report = observe(store, env, fake_llm, api, OM_OBSERVER_MAX_INPUT_TOKENS="1000")
    requests = [r.body["messages"][-1]["content"] for r in fake_llm.completion_requests()]
    assert report.chunks_llm == len(requests) >= 2, report
    assert SEEN_HEADING not in requests[0]
    for previous, request in pairwise(requests):
        seen, _ = seen_and_new(request)
        _, before = seen_and_new(previous)
        assert SEEN_HEADING in request and 1 <= len(seen) <= 3
        # The repeated turns are the previous chunk's last ones, as they were sent then.
        strip = re.compile(r"^\[\d+\] ")
        tail = [strip.sub("", line) for line in before[-len(seen) :]]
        assert [strip.sub("", line) for line in seen] == tail
    texts = [o.text for o in store.read_observations().observations]
    assert len([t for t in texts if t.startswith("New work at")]) >= 2
    assert not [t for t in texts if "again" in t.lower()], texts
    assert report.duplicates >= len(requests) - 1


def test_no_overlap_when_the_setting_is_zero(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    fake_llm.default = Reply(overlapping_reply)
    observe(
        store,
        env,
        fake_llm,
        "openai",
        OM_OBSERVER_MAX_INPUT_TOKENS="1000",
        OM_OBSERVER_OVERLAP_TURNS="0",
    )
    requests = [r.body["messages"][-1]["content"] for r in fake_llm.completion_requests()]
    assert len(requests) >= 2 and not [r for r in requests if SEEN_HEADING in r]


def append_commit(env: dict[str, str], output: str) -> None:
    """A ``git commit`` call and its successful result, at the end of the demo transcript."""
    (transcript,) = Path(env["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl")
    last = json.loads(transcript.read_bytes().splitlines()[-1])
    call = {"type": "tool_use", "id": "toolu_commit", "name": "Bash"}
    call["input"] = {"command": "git commit -am 'One Redis db per worker'"}
    result = {"type": "tool_result", "tool_use_id": "toolu_commit", "content": output}
    records = [
        {**last, "type": "assistant", "uuid": "c-1", "timestamp": "2026-11-26T15:00:00.000Z",
         "message": {"id": "msg-c", "role": "assistant", "content": [call]}},
        {**last, "type": "user", "uuid": "c-2", "timestamp": "2026-11-26T15:00:05.000Z",
         "message": {"role": "user", "content": [result]},
         "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False}},
    ]  # fmt: skip
    with transcript.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_successful_calls_excerpt_is_sent_under_the_call(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer, api: str
) -> None:
    store, env = demo
    token = "ghp_" + "Z9y8X7w6V5" * 4
    append_commit(
        env, f"[main 4f5e6d7] One Redis db per worker\nGITHUB_TOKEN={token}\n 2 files changed"
    )
    fake_llm.default = Reply(reply)
    observe(store, env, fake_llm, api)
    (request,) = fake_llm.completion_requests()
    lines = request.body["messages"][-1]["content"].split("\n")
    at = next(n for n, line in enumerate(lines) if "action: Bash: git commit" in line)
    assert lines[at + 1] == f"{CONTINUATION}{RESULT_MARK}[main 4f5e6d7] One Redis db per worker"
    assert lines[at + 2] == f"{CONTINUATION}… 2 files changed"
    assert token[:10] not in json.dumps(request.body)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_reply_wrapped_in_prose_and_a_fence_is_read(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer, api: str
) -> None:
    store, env = demo

    def wrapped(request: RecordedRequest) -> str:
        return f"Here they are:\n```json\n{reply(request)}\n```\nI skipped {{routine}} reads."

    fake_llm.default = Reply(wrapped)
    report = observe(store, env, fake_llm, api)
    assert report.chunks_llm >= 1 and report.chunks_rules == 0 and not report.problems, report
    assert DECISION in [o.text for o in store.read_observations().observations]

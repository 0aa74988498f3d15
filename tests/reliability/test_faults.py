"""Provider faults: a matrix of failures of the fake LLM server, through observe and reflect.

Every fault the server can stage (429 with and without ``Retry-After``, 500, 503, a timeout, a
dropped connection, a stream that stalls, a slow stream, a body that is not the API's JSON, a
reply that is not JSON, a reply that breaks the schema) is tried three ways: once (transient: the
retry budget absorbs it), and for good (persistent) with ``OM_FALLBACK=defer`` and with
``OM_FALLBACK=rules``. After a persistent fault the server recovers and the command runs again.

Checked each time: nothing lost (every turn observed, every observation reflected, the cursor never
past unobserved content), nothing duplicated on the retry run, the retry budget respected
(requests counted: ``OM_LLM_MAX_RETRIES`` + 1 at most per request, none after the provider failed
for good), and the user told in one line naming the provider and what happens next. Waits
between retries are recorded instead of slept (``Retry-After`` must be the wait asked for).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import (
    Delay,
    Drop,
    ErrorReply,
    FakeLLMServer,
    InvalidBody,
    RecordedRequest,
    Reply,
    SlowBody,
    Step,
)
from hostile_figures import record
from hostile_transcripts import Event, write_transcript

from obsmem.llm import get_provider
from obsmem.llm.usage import MeteredProvider
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.run import ObserveReport, run_observe
from obsmem.reflect.facts import home_for
from obsmem.reflect.offline import ReflectReport, reflect
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.settings import Settings, load_settings
from obsmem.sources.select import open_state

MAX_RETRIES = 2
BUDGET = MAX_RETRIES + 1  # requests one call may make
TURNS = 18  # per transcript: three chunks at the bound below
OBSERVATIONS = 9  # reflected, across three sections


# --- a healthy model -----------------------------------------------------------------------------

_TURN = re.compile(r"^\[(\d+)\] \S+ \S+ user: .*?\b(zk\d+)\b", re.MULTILINE)
_OBS = re.compile(r"^- ([0-9a-z]{10}) \S+ \[[^\]]*\] .*?\b(zk\d+)\b", re.MULTILINE)


def healthy(request: RecordedRequest) -> str:
    """What a working model answers: one observation per user turn, one line per observation."""
    if "reflector" in request.system:
        label = re.search(r"^Section: (.*)$", request.user, re.MULTILINE)
        return json.dumps(
            {
                "operations": [
                    {
                        "op": "add",
                        "section": label.group(1) if label else "",
                        "cites": [oid],
                        "text": f"Reflected {marker}",
                    }
                    for oid, marker in _OBS.findall(request.user.split("<observations>")[-1])
                ]
            }
        )
    turns = _TURN.findall(request.user.split("<transcript>")[-1])
    return json.dumps(
        {
            "observations": [
                {
                    "type": "decision",
                    "importance": 0.9,
                    "text": f"Noted {marker}",
                    "turns": [int(n)],
                }
                for n, marker in turns
            ]
        }
    )


# --- the faults ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One way the server fails: the step it plays, whether a retry may cure it, and whether
    it fails at all (a slow stream is only slow)."""

    name: str
    step: Callable[[], Step]
    retryable: bool
    fails: bool = True
    retry_after: float | None = None


FAULTS = (
    Fault(
        "429 with Retry-After",
        lambda: ErrorReply(429, headers={"Retry-After": "1"}),
        True,
        retry_after=1.0,
    ),
    Fault("429 without Retry-After", lambda: ErrorReply(429), True),
    Fault("500", lambda: ErrorReply(500), True),
    Fault("503", lambda: ErrorReply(503, "overloaded"), True),
    Fault("timeout", lambda: Delay(4.0, then=Reply(healthy)), True),
    Fault("dropped connection", lambda: Drop(), True),
    Fault("stalled stream", lambda: SlowBody(Reply(healthy), chunks=3, interval=2.5), True),
    Fault(
        "slow stream", lambda: SlowBody(Reply(healthy), chunks=4, interval=0.2), True, fails=False
    ),
    Fault("invalid JSON body", lambda: InvalidBody(), False),
    Fault("reply not JSON", lambda: Reply("Sure! The user wants Redis, I think."), False),
    Fault(
        "schema-violating reply",
        lambda: Reply('{"observations": "none", "operations": {"op": "drop everything"}}'),
        False,
    ),
)
#: A quick subset for ``make test``: a 429 absorbed by a retry, a 503 that outlasts the budget
#: (deferred), a reply that breaks the schema (the rules take over).
QUICK = (
    ("429 with Retry-After", "transient"),
    ("503", "defer"),
    ("schema-violating reply", "rules"),
)
MODES = ("transient", "defer", "rules")


def _cases(only: tuple[tuple[str, str], ...] | None = None) -> list[tuple[Fault, str]]:
    out = []
    for fault in FAULTS:
        for mode in MODES:
            if only is not None and (fault.name, mode) not in only:
                continue
            if mode == "transient" and fault.fails and not fault.retryable:
                continue  # nothing to absorb: such a reply is never retried
            if mode != "transient" and not fault.fails:
                continue  # a slow stream cannot fail for good
            out.append((fault, mode))
    return out


# --- plumbing ------------------------------------------------------------------------------------


def _settings(server: FakeLLMServer, fallback: str) -> Settings:
    return load_settings(
        {
            **os.environ,
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_BASE_URL": server.base_url_openai,
            "OM_LLM_MODEL": "fault-model",
            "OM_LLM_MAX_RETRIES": str(MAX_RETRIES),
            "OM_LLM_TIMEOUT_SECONDS": "1",
            "OM_OBSERVER_MAX_INPUT_TOKENS": "1000",
            "OM_FALLBACK": fallback,
        }
    )


def _provider(settings: Settings, store: MemoryStore, purpose: str, waits: list[float]) -> Any:
    inner = get_provider(settings, purpose, sleep=waits.append)
    assert inner is not None
    return MeteredProvider(inner, store.usage_path, settings)


def _script(server: FakeLLMServer, fault: Fault, mode: str, *, first_ok: int) -> None:
    """``first_ok`` healthy replies, then the fault once (transient) or for a whole retry
    budget (persistent); after that the server is healthy again."""
    times = 1 if mode == "transient" or not fault.retryable else BUDGET
    server.script(*([Reply(healthy)] * first_ok), *(fault.step() for _ in range(times)))


def _one_line(message: str) -> None:
    assert message and "\n" not in message, message
    assert "openai-compatible" in message or "observer model" in message or "reply" in message


@dataclass
class Row:
    """One line of the table in docs/reliability.md."""

    fault: str
    stage: str
    mode: str
    requests: int
    allowed: int
    waits: str
    lost: int
    duplicated: int
    message: str

    def text(self) -> str:
        return (
            f"{self.fault} | {self.stage} | {self.mode} | {self.requests} requests "
            f"(at most {self.allowed}) | waits {self.waits} | lost {self.lost} | "
            f"duplicated {self.duplicated} | told: {self.message[:110]}"
        )


def _waits(waits: list[float]) -> str:
    return "[" + ", ".join(f"{w:.2f}" for w in waits) + "]"


# --- observe -------------------------------------------------------------------------------------


def _sessions() -> list[Path]:
    paths = []
    for number, agent in enumerate(("claude", "codex")):
        events = [
            Event("user", f"Let's go with option zk{number * 100 + i} for the cache layer.")
            for i in range(TURNS)
        ]
        home = Path(os.environ["CLAUDE_CONFIG_DIR" if agent == "claude" else "CODEX_HOME"])
        paths.append(write_transcript(agent, home, events, session=f"sess-{number}-0000"))
    return paths


def _observer_requests(server: FakeLLMServer) -> list[RecordedRequest]:
    # Observing also runs the missed daily reflection; only the observer's requests count here.
    return [r for r in server.completion_requests() if r.system.startswith("You are the observer")]


def _all_observations(store: MemoryStore) -> list[Any]:
    from obsmem.memory.observations import parse_observations

    docs = [store.read_observations()] + [
        parse_observations(path.read_bytes()) for path in sorted(store.archive_dir.rglob("*.md"))
    ]
    return [obs for doc in docs for obs in doc.observations]


def _markers(store: MemoryStore) -> Counter[str]:
    found: Counter[str] = Counter()
    for obs in _all_observations(store):
        for marker in set(re.findall(r"\bzk\d+\b", obs.text)):
            found[marker] += 1
    return found


def run_observe_case(fault: Fault, mode: str, store: MemoryStore) -> Row:
    paths = _sessions()
    expected = {f"zk{n * 100 + i}" for n in range(len(paths)) for i in range(TURNS)}
    fallback = "rules" if mode == "rules" else "defer"
    with FakeLLMServer(default=Reply(healthy)) as server:
        settings = _settings(server, fallback)
        waits: list[float] = []
        llm = _provider(settings, store, "observer", waits)
        _script(server, fault, mode, first_ok=1)  # chunk 1 answers; chunk 2 meets the fault
        first = run_observe(store, settings, source="all", flush=True, provider=llm)
        first_requests = len(_observer_requests(server))
        message = first.problems[0] if first.problems else ""
        chunks = first.chunks_llm + first.chunks_rules
        allowed = _allowed_observe(fault, mode, chunks)
        assert first_requests == allowed, (first_requests, allowed, first)
        if mode == "transient":
            _check_transient(fault, first, waits)
        else:
            _check_persistent(mode, first, store, paths)
        # The provider is back: the run after sends only what is still pending.
        server.script()
        second = run_observe(store, settings, source="all", flush=True, provider=llm)
        resent = [
            r for r in _observer_requests(server) if "zk0 " in r.user.split("<transcript>")[-1]
        ]
        assert not resent, "the first chunk, observed already, was sent again"
        assert not second.problems and not second.deferred, second
    found = _markers(store)
    lost = len(expected - set(found))
    duplicated = sum(1 for m in expected if found[m] > 1) if mode != "rules" else 0
    if mode == "rules":
        # The rules word things their own way (and a session's first request twice: as a
        # decision and as the session's request); what matters is that the retry run added
        # nothing it had observed already.
        duplicated = second.written
    with open_state(store) as state:
        cursors = state.cursors()
        assert all(c.offset == Path(c.path).stat().st_size for c in cursors.values())
    return Row(
        fault.name,
        "observe",
        mode,
        first_requests,
        allowed,
        _waits(waits),
        lost,
        duplicated,
        message,
    )


def _allowed_observe(fault: Fault, mode: str, chunks: int) -> int:
    """Observer requests a run may make: one per chunk plus the one retry a transient fault
    costs; after a persistent fault, none beyond the failing call's budget."""
    if mode == "transient":
        return chunks + (1 if fault.fails else 0)
    return 1 + (BUDGET if fault.retryable else 1)


def _check_transient(fault: Fault, report: ObserveReport, waits: list[float]) -> None:
    assert not report.problems and report.chunks_rules == 0, report
    assert report.chunks_llm >= 2 * 2, report  # several chunks per transcript
    if fault.retry_after is not None:
        assert waits == [fault.retry_after]  # exactly the wait the server asked for
    elif fault.fails and fault.retryable:
        assert len(waits) == 1 and 0 <= waits[0] <= 1.0  # the first backoff: at most 1 s


def _check_persistent(
    mode: str, report: ObserveReport, store: MemoryStore, paths: list[Path]
) -> None:
    assert len(report.problems) == 1, report.problems
    _one_line(report.problems[0])
    with open_state(store) as state:
        cursors = state.cursors()
    if mode == "defer":
        assert report.deferred and report.chunks_rules == 0
        # The cursor stopped after the chunk that was written, before the one that failed.
        first = cursors.get(str(paths[0]))
        assert first is not None and 0 < first.offset < paths[0].stat().st_size
        assert str(paths[1]) not in cursors or cursors[str(paths[1])].offset == 0
    else:
        assert not report.deferred and report.chunks_rules >= 1
        assert all(c.offset == Path(c.path).stat().st_size for c in cursors.values())


# --- reflect -------------------------------------------------------------------------------------

_TYPES = ("decision", "preference", "fact")


def _seed_observations(store: MemoryStore, day: date) -> tuple[list[str], int]:
    """Observations to reflect, and how many sections (requests) they make."""
    batch = []
    for i in range(OBSERVATIONS):
        obs = new_observation(
            f"Chose option zk{900 + i} for the {('queue', 'editor', 'office')[i % 3]}",
            date=(day - timedelta(days=i % 3)).isoformat(),
            time="10:00",
            type=_TYPES[i % 3],
            importance=0.9,
        )
        obs.provenance = Provenance(
            path="/t.jsonl",
            line_start=i + 1,
            line_end=i + 1,
            session="s",
            agent="claude",
            project="atlas",
        )
        batch.append(obs)
    sections = len({home_for(o, "atlas") for o in batch})
    return [o.id for o in store.add_observations(batch)], sections


def _citations(store: MemoryStore) -> Counter[str]:
    doc = ReflectionsDoc(store.read_bytes(store.home / "reflections.md"))
    return Counter(cite for place in doc.places() for cite in place.line.cites)


def run_reflect_case(fault: Fault, mode: str, store: MemoryStore) -> Row:
    today = date(2026, 11, 25)
    ids, sections = _seed_observations(store, today - timedelta(days=2))
    assert sections >= 2
    fallback = "rules" if mode == "rules" else "defer"
    with FakeLLMServer(default=Reply(healthy)) as server:
        settings = _settings(server, fallback)
        waits: list[float] = []
        llm = _provider(settings, store, "reflector", waits)
        _script(server, fault, mode, first_ok=1)  # one section answers; the next meets the fault
        first = reflect(store, settings, today=today, provider=llm)
        requests = len(server.completion_requests())
        notes = [n for n in first.notes if "failed" in n or "not a JSON" in n]
        message = notes[0] if notes else ""
        if mode == "transient":
            assert first.llm_failed == 0 and first.llm_applied == OBSERVATIONS, first.notes
            assert requests == sections + (1 if fault.fails else 0)
            if fault.retry_after is not None:
                assert waits == [fault.retry_after]
            allowed = sections + 1
        else:
            _check_reflect_failure(fault, mode, first, requests, sections)
            allowed = _allowed_reflect(fault, sections)
        server.script()
        second = reflect(store, settings, today=today, provider=llm)
        assert second.llm_failed == 0, second.notes
    cites = _citations(store)
    lost = sum(1 for i in ids if cites[i] == 0)
    duplicated = sum(1 for i in ids if cites[i] > 1)
    return Row(
        fault.name, "reflect", mode, requests, allowed, _waits(waits), lost, duplicated, message
    )


def _allowed_reflect(fault: Fault, sections: int) -> int:
    if fault.retryable:
        return 1 + BUDGET  # no request after the provider failed for good
    if isinstance(fault.step(), InvalidBody):
        return 1 + 1
    return sections  # an unusable reply is that section's problem; the others still ask


def _check_reflect_failure(
    fault: Fault, mode: str, report: ReflectReport, requests: int, sections: int
) -> None:
    assert requests == _allowed_reflect(fault, sections), (requests, report.notes)
    assert report.llm_failed >= 1
    notes = [n for n in report.notes if n.startswith("LLM reflector:")]
    assert notes and all("\n" not in n for n in notes)
    wanted = "left for the next run" if mode == "defer" else "reflected by the offline rules"
    assert all(wanted in n for n in notes), notes


# --- the tests -----------------------------------------------------------------------------------


def _run_matrix(
    tmp_path: Path, only: tuple[tuple[str, str], ...] | None, monkeypatch: pytest.MonkeyPatch
) -> list[Row]:
    rows = []
    for number, (fault, mode) in enumerate(_cases(only)):
        for stage, run in (("observe", run_observe_case), ("reflect", run_reflect_case)):
            store = MemoryStore(tmp_path / f"{stage}-{number}").ensure()
            for agent_home in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
                monkeypatch.setenv(agent_home, str(tmp_path / f"{stage}-{number}-{agent_home}"))
            row = run(fault, mode, store)
            assert row.lost == 0 and row.duplicated == 0, row
            assert row.requests <= row.allowed, row
            rows.append(row)
    return rows


def test_quick_fault_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _run_matrix(tmp_path, QUICK, monkeypatch)
    assert len(rows) == 2 * len(QUICK)


@pytest.mark.slow
def test_full_fault_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _run_matrix(tmp_path, None, monkeypatch)
    for row in rows:
        record("Provider faults", row.text())
    record(
        "Provider faults",
        f"{len(rows)} cases ({len(FAULTS)} faults x observe/reflect x transient/defer/rules "
        f"where they apply): lost {sum(r.lost for r in rows)}, duplicated "
        f"{sum(r.duplicated for r in rows)}, "
        f"over budget {sum(r.requests > r.allowed for r in rows)}",
    )

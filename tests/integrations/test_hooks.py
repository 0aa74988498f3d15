"""Hooks queue work and return at once; one worker takes it; checkpoints are throttled."""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from obsmem.integrations import queue
from obsmem.integrations.hooks import fast_main, find_transcript, handle_hook, read_payload
from obsmem.integrations.queue import Job
from obsmem.integrations.worker import run_worker, worker_running
from obsmem.paths import agent_home, queue_dir, state_dir

DEMO = Path(__file__).resolve().parents[2] / "obsmem" / "demo" / "data" / "transcripts"
CLAUDE_SESSION = "7d3f2c1e-5b8a-4e6f-9a2d-1c4b7e8f0a3d"
CODEX_SESSION = "019e2b44-1c2d-7e3f-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def agents() -> None:
    """The demo's Claude Code and Codex sessions in the agents' (temporary) homes."""
    shutil.copytree(DEMO / "claude", agent_home("claude"))
    shutil.copytree(DEMO / "codex", agent_home("codex"))


def claude_transcript() -> Path:
    return next(agent_home("claude").glob(f"projects/*/{CLAUDE_SESSION}.jsonl"))


def test_session_end_queues_a_flush_of_that_transcript(agents: None) -> None:
    path = claude_transcript()
    result = handle_hook(
        "session-end", "claude", {"transcript_path": str(path), "session_id": "x"}, spawn=False
    )
    assert result.action == "queued" and result.transcript == str(path.resolve())
    batch = queue.take()
    assert batch.jobs == [
        Job(str(path.resolve()), "claude", flush=True, queued_at=batch.jobs[0].queued_at)
    ]


def test_checkpoints_are_throttled_per_transcript(agents: None) -> None:
    payload = {"transcript_path": str(claude_transcript())}
    first = handle_hook("checkpoint", "claude", payload, interval=900, spawn=False, now=1000.0)
    again = handle_hook("checkpoint", "claude", payload, interval=900, spawn=False, now=1500.0)
    later = handle_hook("checkpoint", "claude", payload, interval=900, spawn=False, now=2000.0)
    assert [first.action, again.action, later.action] == ["queued", "throttled", "queued"]
    assert len(queue.pending()) == 2
    # One marker per transcript, named by checksums of its path, the same in every version.
    key = zlib.crc32(first.transcript.encode()), zlib.adler32(first.transcript.encode())
    marker = queue_dir() / "throttle" / "{:08x}{:08x}".format(*key)
    assert [p.name for p in marker.parent.iterdir()] == [marker.name]
    job = queue.take().jobs[0]
    assert not job.flush  # a checkpoint leaves the incomplete tail for later


def test_session_end_is_never_throttled(agents: None) -> None:
    payload = {"transcript_path": str(claude_transcript())}
    handle_hook("checkpoint", "claude", payload, interval=900, spawn=False)
    assert handle_hook("session-end", "claude", payload, spawn=False).action == "queued"


def test_transcript_found_from_the_session_id(agents: None) -> None:
    assert find_transcript("claude", CLAUDE_SESSION) == claude_transcript()
    codex = find_transcript("codex", CODEX_SESSION)
    assert codex is not None and codex.name.endswith(f"{CODEX_SESSION}.jsonl")
    result = handle_hook("checkpoint", "codex", {"session_id": CODEX_SESSION}, spawn=False)
    assert result.action == "queued"


@pytest.mark.parametrize(
    "payload",
    [{}, {"session_id": "../../etc/passwd"}, {"transcript_path": "/nonexistent/x.jsonl"}],
)
def test_payloads_without_a_usable_transcript_are_skipped(payload: dict[str, str]) -> None:
    assert handle_hook("session-end", "claude", payload, spawn=False).action == "skipped"
    assert queue.pending() == []


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", "\x00\xff"])
def test_bad_payloads_read_as_empty(text: str) -> None:
    assert read_payload(io.StringIO(text)) == {}


def test_jobs_for_one_transcript_coalesce(tmp_path: Path) -> None:
    queue.enqueue(Job("/t/a.jsonl", "claude", flush=False))
    queue.enqueue(Job("/t/a.jsonl", "claude", flush=True))
    queue.enqueue(Job("/t/b.jsonl", "codex", flush=False))
    (queue.pending()[0].parent / "0-broken.json").write_text("{")
    batch = queue.take()
    assert {(j.transcript, j.flush) for j in batch.jobs} == {
        ("/t/a.jsonl", True),
        ("/t/b.jsonl", False),
    }
    assert len(batch.files) == 4  # the broken file is taken too, so it cannot block the queue
    batch.done()
    assert queue.pending() == []


def test_worker_takes_every_job_once_and_survives_a_failing_one() -> None:
    for name in ("a", "b", "bad", "a"):
        queue.enqueue(Job(f"/t/{name}.jsonl", "claude"))
    seen: list[str] = []

    def observe(job: Job) -> None:
        seen.append(job.transcript)
        if "bad" in job.transcript:
            raise RuntimeError("boom")

    lines: list[str] = []
    report = run_worker(max_seconds=60, observe=observe, log=lines.append)
    assert sorted(seen) == ["/t/a.jsonl", "/t/b.jsonl", "/t/bad.jsonl"]
    assert report.failed == ["/t/bad.jsonl"] and sorted(report.observed) == [
        "/t/a.jsonl",
        "/t/b.jsonl",
    ]
    assert any("boom" in line for line in lines)
    assert queue.pending() == [] and report.left == 0


def test_only_one_worker_at_a_time() -> None:
    queue.enqueue(Job("/t/a.jsonl"))
    lock = state_dir() / "worker.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert worker_running()
        report = run_worker(max_seconds=60, observe=lambda job: None)
        assert report.busy and not report.observed
        assert len(queue.pending()) == 1  # left for the worker holding the lock
    finally:
        os.close(fd)
    assert not worker_running()


def test_a_spent_time_budget_leaves_jobs_queued() -> None:
    queue.enqueue(Job("/t/a.jsonl"))
    report = run_worker(max_seconds=0, observe=lambda job: None)
    assert report.observed == [] and report.left == 1


def _om(args: list[str], stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "obsmem", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_hook_command_prints_nothing_and_always_exits_zero(agents: None) -> None:
    env = dict(os.environ, OM_WORKER_MAX_SECONDS="10")
    bad = _om(["hook", "checkpoint", "--agent", "claude"], "{broken", env)
    assert (bad.returncode, bad.stdout) == (0, "")
    assert _om(["hook", "bogus"], "{}", env).returncode == 2  # a wrong command line is reported
    assert fast_main(["checkpoint", "--agent", "nobody"], io.StringIO("{}")) == 2


def test_session_end_hook_observes_in_the_background(agents: None) -> None:
    """The real thing: the hook returns, a worker starts, the session lands in memory."""
    payload = json.dumps(
        {
            "session_id": CLAUDE_SESSION,
            "transcript_path": str(claude_transcript()),
            "cwd": "/home/dev/atlas",
            "hook_event_name": "SessionEnd",
        }
    )
    done = _om(["hook", "session-end", "--agent", "claude"], payload, dict(os.environ))
    assert (done.returncode, done.stdout) == (0, "")
    observations = Path(os.environ["OM_HOME"]) / "observations.md"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (queue.pending() or worker_running()):
        time.sleep(0.1)
    assert not queue.pending()
    assert observations.exists() and "- " in observations.read_text()
    log = Path(os.environ["OM_HOME"]) / "logs" / "worker.log"
    assert "observed" in log.read_text()


def test_hooks_of_the_observer_cli_session_do_nothing(
    agents: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent CLI om runs as its observer starts om's hooks too: its session is never queued."""
    payload = json.dumps({"transcript_path": str(claude_transcript()), "session_id": "x"})
    monkeypatch.setenv("OM_OBSERVER_SESSION", "1")
    assert fast_main(["session-end", "--agent", "claude"], io.StringIO(payload)) == 0
    assert queue.pending() == []

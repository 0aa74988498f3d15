"""``om observe --watch`` as a real process over a temporary agent home.

The observer is the fake LLM server with a reply that makes one observation per user message,
worded differently for every request: a message observed twice (by the watcher and a concurrent
``om observe``) would show as two observations and as a message sent twice. Every wait polls with
a generous deadline; nothing asserts how fast anything happened.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakes.llm_server import Delay, FakeLLMServer, RecordedRequest, Reply

from obsmem.integrations.watch import CLAUDE_MEMORY, Root, source_of, watch_roots

pytest.importorskip("watchfiles")  # in the dev extra: every test run has it

ROOT = Path(__file__).resolve().parents[2]
TOKEN = re.compile(r"\bw\d{4}\b")
TURN = re.compile(r"^\[(\d+)\] \S+ \S+ (\w+): (.*)$")
SESSION = "5e1f0c2a-7b3d-4e5f-8a9b-0c1d2e3f4a5b"
DEADLINE = 90.0


def _echo() -> Reply:
    """One observation per user message of the request, worded per request."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def reply(request: RecordedRequest) -> str:
        with lock:
            number = next(counter)
        part = request.user[request.user.find("<transcript>") :]
        out = []
        for line in part.splitlines():
            match = TURN.match(line)
            if match and match.group(2) == "user":
                for token in TOKEN.findall(match.group(3)):
                    out.append(
                        {
                            "text": f"Decided {token} in request {number}",
                            "type": "decision",
                            "importance": 0.8,
                            "confidence": 0.9,
                            "turns": [int(match.group(1))],
                        }
                    )
        return json.dumps({"observations": out, "current_context": {}})

    return Reply(reply)


class Session:
    """A Claude Code transcript written a message at a time."""

    def __init__(self, claude_home: Path) -> None:
        self.path = claude_home / "projects" / "-home-dev-atlas" / f"{SESSION}.jsonl"
        self.count = 0

    def add(self, messages: int) -> list[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tokens, lines = [], []
        for _ in range(messages):
            token = f"w{self.count:04d}"
            self.count += 1
            tokens.append(token)
            for kind, content in (
                ("user", f"We decided to use the {token} parser for the importer."),
                ("assistant", [{"type": "text", "text": f"Noted {token}."}]),
            ):
                lines.append(
                    json.dumps(
                        {
                            "type": kind,
                            "sessionId": SESSION,
                            "cwd": "/home/dev/atlas",
                            "uuid": f"{token}-{kind}",
                            "timestamp": f"2026-11-30T10:{self.count % 60:02d}:00.000Z",
                            "message": {"role": kind, "content": content},
                        }
                    )
                )
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        return tokens


def _env(llm: FakeLLMServer | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OM_")}
    env.update(
        {
            "OM_HOME": os.environ["OM_HOME"],
            "OM_CONFIG_DIR": os.environ["OM_CONFIG_DIR"],
            "OM_SEARCH_BACKEND": "bm25",
            "OM_WATCH_DEBOUNCE_SECONDS": "0.2",
            "OM_IDLE_FLUSH_MINUTES": "0.02",
            "OM_LLM_PROVIDER": "none",
            "PYTHONPATH": str(ROOT),
        }
    )
    if llm is not None:
        env |= {
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_BASE_URL": llm.base_url_openai,
            "OM_LLM_MODEL": "fake-observer",
            "OM_LLM_MAX_RETRIES": "0",
            "OM_FALLBACK": "defer",
        }
    return env


@pytest.fixture
def watcher(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(env: dict[str, str]) -> subprocess.Popen[str]:
        log = (tmp_path / "watch.err").open("w")
        process = subprocess.Popen(
            [sys.executable, "-m", "obsmem", "observe", "--watch"],
            env=env,
            stdout=log,
            stderr=log,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def _wait_for(what: Callable[[], bool], why: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {why}")
        time.sleep(0.2)


def _observed(tokens: list[str]) -> Callable[[], bool]:
    path = Path(os.environ["OM_HOME"]) / "observations.md"

    def check() -> bool:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return all(token in text for token in tokens)

    return check


def _log(tmp_path: Path) -> str:
    return (tmp_path / "watch.err").read_text(encoding="utf-8")


def test_watcher_observes_a_session_that_appears_and_grows_beside_other_runs(
    tmp_path: Path,
    fake_llm: FakeLLMServer,
    watcher: Callable[[dict[str, str]], subprocess.Popen[str]],
) -> None:
    fake_llm.default = _echo()
    env = _env(fake_llm)
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    assert not claude.exists()  # the agent is "installed" after the watcher started
    process = watcher(env)
    _wait_for(lambda: "watching" in _log(tmp_path), "the watcher's first log line")

    session = Session(claude)
    tokens = session.add(3)
    _wait_for(_observed(tokens), "the new session observed")

    # The session grows while scheduled-style runs go on beside the watcher.
    stop = threading.Event()
    runs: list[subprocess.CompletedProcess[str]] = []

    def observe_in_a_loop() -> None:
        while not stop.is_set():
            runs.append(
                subprocess.run(
                    [sys.executable, "-m", "obsmem", "observe", "--min-new", "0"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                    check=False,
                )
            )

    other = threading.Thread(target=observe_in_a_loop)
    other.start()
    try:
        for _ in range(6):
            tokens += session.add(2)
            time.sleep(0.3)
        _wait_for(_observed(tokens), "every message observed")
    finally:
        stop.set()
        other.join()
    assert runs and all(run.returncode == 0 for run in runs), [r.stderr for r in runs]

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    log = _log(tmp_path)
    assert "Traceback" not in log and "SIGTERM: stopping" in log and "stopped:" in log

    sent: Counter[str] = Counter()
    for request in fake_llm.completion_requests():
        part = request.user[request.user.find("<transcript>") :]
        for line in part.splitlines():
            match = TURN.match(line)
            if match and match.group(2) == "user":
                sent.update(set(TOKEN.findall(match.group(3))))
    assert sent == Counter({token: 1 for token in tokens})
    text = (Path(os.environ["OM_HOME"]) / "observations.md").read_text(encoding="utf-8")
    written = Counter(TOKEN.findall(text))
    assert written == Counter({token: 1 for token in tokens})


def test_a_second_sigterm_abandons_a_batch_safely(
    tmp_path: Path,
    fake_llm: FakeLLMServer,
    watcher: Callable[[dict[str, str]], subprocess.Popen[str]],
) -> None:
    """Stopped twice while the observer is still answering: the watcher leaves at once, exits 0,
    and the next run observes every message once."""
    fake_llm.default = Delay(600, then=_echo())
    env = _env(fake_llm)
    process = watcher(env)
    _wait_for(lambda: "watching" in _log(tmp_path), "the watcher's first log line")
    tokens = Session(Path(os.environ["CLAUDE_CONFIG_DIR"])).add(3)
    _wait_for(lambda: bool(fake_llm.completion_requests()), "a request to the observer")
    process.send_signal(signal.SIGTERM)
    _wait_for(lambda: "stopping after the current batch" in _log(tmp_path), "the first stop")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    log = _log(tmp_path)
    assert "Traceback" not in log and "last batch abandoned" in log

    fake_llm.default = _echo()
    done = subprocess.run(
        [sys.executable, "-m", "obsmem", "observe", "--flush"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = (Path(os.environ["OM_HOME"]) / "observations.md").read_text(encoding="utf-8")
    assert Counter(TOKEN.findall(text)) == Counter({token: 1 for token in tokens})


def test_sigint_while_idle_ends_the_watcher_cleanly(
    tmp_path: Path, watcher: Callable[[dict[str, str]], subprocess.Popen[str]]
) -> None:
    process = watcher(_env())
    _wait_for(lambda: "watching" in _log(tmp_path), "the watcher's first log line")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0
    log = _log(tmp_path)
    assert "Traceback" not in log and "SIGINT: stopping" in log


def test_an_idle_session_is_read_to_its_end(
    tmp_path: Path, watcher: Callable[[dict[str, str]], subprocess.Popen[str]]
) -> None:
    """A last line without its newline is left by a growing session and taken once it is idle
    (OM_IDLE_FLUSH_MINUTES), as a scheduled run takes it."""
    session = Session(Path(os.environ["CLAUDE_CONFIG_DIR"]))
    session.add(1)
    process = watcher(_env())
    _wait_for(lambda: "watching" in _log(tmp_path), "the watcher's first log line")
    line = json.dumps(
        {
            "type": "user",
            "sessionId": SESSION,
            "cwd": "/home/dev/atlas",
            "uuid": "last-user",
            "timestamp": "2026-11-30T11:00:00.000Z",
            "message": {"role": "user", "content": "We decided to use the w9999 format."},
        }
    )
    with session.path.open("a", encoding="utf-8") as handle:
        handle.write(line)  # no newline: only the idle rule reads it
    _wait_for(_observed(["w0000", "w9999"]), "the idle session's last line observed")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0


def test_changed_files_map_to_their_source(tmp_path: Path) -> None:
    roots = watch_roots()
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    codex = Path(os.environ["CODEX_HOME"]) / "sessions"
    assert Root("claude", claude) in roots and Root("codex", codex) in roots
    assert source_of(str(claude / "-home-x" / "a.jsonl"), roots) == "claude"
    assert source_of(str(claude / "-home-x" / "memory" / "MEMORY.md"), roots) == CLAUDE_MEMORY
    assert source_of(str(claude / "-home-x" / "notes.txt"), roots) is None
    assert source_of(str(codex / "2026" / "11" / "rollout-1.jsonl"), roots) == "codex"
    assert source_of(str(tmp_path / "elsewhere.jsonl"), roots) is None
    only_codex = watch_roots(sources=("codex",))
    assert [root.agent for root in only_codex] == ["codex"]


def test_the_watcher_reopens_its_log_after_rotating_it(tmp_path: Path) -> None:
    """A service's stderr is ``>> watch.log``: once rotated, later lines go to a new watch.log."""
    logs = tmp_path / "logs"
    logs.mkdir()
    script = (
        "import os, sys\n"
        "from obsmem.integrations.watch import WatchReport, _batch\n"
        f"fd = os.open({str(logs / 'watch.log')!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)\n"
        "os.dup2(fd, 2)\n"
        "sys.stderr.write('x' * (1024 * 1024) + '\\n'); sys.stderr.flush()\n"
        "_batch(['claude'], lambda s: None, print, WatchReport(), None)\n"
        "print('after the rotation', file=sys.stderr, flush=True)\n"
    )
    env = {**os.environ, "OM_LOG_DIR": str(logs), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (logs / "watch.log").read_text() == "after the rotation\n"
    assert (logs / "watch.log.1").stat().st_size > 1024 * 1024


def test_sources_are_due_when_changed_or_idle() -> None:
    from obsmem.integrations.watch import _due

    wanted = ("claude", "codex", CLAUDE_MEMORY)
    touched = {"codex": time.time() - 400.0, "claude": time.time()}
    # codex went quiet longer ago than the idle time: observed once more, then forgotten
    assert _due({"", "hermes"}, wanted, touched, idle_after=300.0) == ["codex"]
    assert set(touched) == {"claude"}
    assert _due({"claude-memory"}, wanted, touched, idle_after=300.0) == [CLAUDE_MEMORY]
    assert _due(set(), wanted, touched, idle_after=300.0) == []
    assert _due({"claude"}, wanted, touched, idle_after=0) == ["claude"] and touched == {}

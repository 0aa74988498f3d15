"""The concurrency run: eight ``om observe`` processes started together over transcripts that keep
growing (whole lines, and lines written halfway and finished later), with ``om search`` and
``om context`` running beside them; then one ``om observe --flush`` and the checks.

Every user message carries a unique token (``crash_corpus``). With the fake LLM server, the reply
to each request makes one observation per user message it was sent, with words that depend on
the request, so a message observed twice gives two different observations instead of being
hidden by de-duplication; the server's request log also shows any message sent twice. With the
offline rules (no server) the same checks run, but a second read would write the same id again
and be skipped, so only losses and torn files can show.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from crash_corpus import (
    TOKEN,
    TURN,
    Transcripts,
    build_memory,
    cursor_problems,
    doctor_failures,
    echo_observer,
    om_command,
    om_env,
    run_om,
    snapshot,
    vocabulary,
)
from fakes.llm_server import FakeLLMServer

from obsmem.memory.store import MemoryStore

#: What no process may print: a torn or unreadable file, a locked database, a crash.
BAD_OUTPUT = re.compile(
    r"database is locked|locked|Traceback|torn|not understood|malformed|corrupt"
    r"|context unavailable|not refreshed|timed out",
    re.IGNORECASE,
)


@dataclass
class ConcurrencyReport:
    """What the run did and found."""

    observers: int = 0
    transcripts: int = 0
    messages: int = 0
    whole_appends: int = 0
    partial_appends: int = 0
    observe_runs: int = 0
    search_runs: int = 0
    context_runs: int = 0
    llm_requests: int = 0
    sent_twice: int = 0
    seconds: float = 0.0
    observer: str = "rules"
    failures: list[str] = field(default_factory=list)  # exit codes and printed errors
    violations: list[str] = field(default_factory=list)  # memory checks

    def summary(self) -> str:
        """The figures, one line each."""
        return "\n".join(
            [
                f"concurrency ({self.observer}): {self.observers} observers started together, "
                f"{self.observe_runs} om observe runs, {self.search_runs} om search and "
                f"{self.context_runs} om context calls in parallel, {self.seconds:.0f} s",
                f"  transcripts: {self.transcripts} growing ({self.whole_appends} whole-line and "
                f"{self.partial_appends} partial-line appends), {self.messages} user messages",
                f"  observer requests: {self.llm_requests}; messages sent twice: {self.sent_twice}",
                f"  failed processes or printed errors: {len(self.failures)}",
                f"  violations (lost, duplicated, cursor, ledger, doctor): {len(self.violations)}",
                *(f"    {v}" for v in (self.failures + self.violations)[:20]),
            ]
        )


class ConcurrencyRun:
    """One memory directory, growing transcripts, and the processes working on them."""

    def __init__(
        self,
        root: Path,
        *,
        claude: int,
        codex: int,
        observers: int = 8,
        llm: FakeLLMServer | None = None,
        seed: int = 9,
    ) -> None:
        self.root = root
        self.rng = random.Random(seed)
        extra = {"OM_OBSERVER_MAX_INPUT_TOKENS": "1500", "OM_LOCK_TIMEOUT_SECONDS": "300"}
        if llm is not None:
            extra |= {
                "OM_LLM_PROVIDER": "openai-compatible",
                "OM_LLM_BASE_URL": llm.base_url_openai,
                "OM_LLM_MODEL": "fake-observer",
                "OM_LLM_MAX_RETRIES": "0",
                "OM_FALLBACK": "defer",
            }
        self.env = om_env(root, **extra)
        self.llm = llm
        self.store = MemoryStore(root / "mem", environ=self.env)
        self.transcripts = Transcripts(root, self.rng)
        self.observers = observers
        self.report = ConcurrencyReport(observers=observers, observer="llm" if llm else "rules")
        self.sizes = (claude, codex)
        self._lock = threading.Lock()

    def setup(self, memory: int = 500) -> None:
        """A memory to search, the first messages of each transcript, a first reflection."""
        build_memory(self.store, memory, 30, self.rng)
        claude, codex = self.sizes
        self.transcripts.create(claude, codex, messages=2)
        done = run_om({**self.env, "OM_LLM_PROVIDER": "none"}, "reflect")
        if done.returncode != 0:
            raise RuntimeError(f"om reflect failed during set-up: {done.stderr[-2000:]}")
        if self.llm is not None:
            self.llm.default = echo_observer(vocabulary(random.Random(1)))

    # -- processes ----------------------------------------------------------------------------
    def _call(self, kind: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=600, check=False
        )
        bad = [line for line in (done.stdout + done.stderr).splitlines() if BAD_OUTPUT.search(line)]
        with self._lock:
            if done.returncode != 0:
                self.report.failures.append(f"{kind} exit {done.returncode}: {done.stderr[-300:]}")
            self.report.failures += [f"{kind} printed: {line[:200]}" for line in bad]
        return done

    def _observer(self, start: threading.Barrier, stop: threading.Event, rounds: int) -> None:
        start.wait()
        done = 0
        while done < rounds or not stop.is_set():
            self._call("om observe", om_command("observe", "--min-new", "0"))
            done += 1
            with self._lock:
                self.report.observe_runs += 1

    def _reader(self, stop: threading.Event, seed: int, pause: float) -> None:
        rng = random.Random(seed)
        words = vocabulary(random.Random(2))
        while not stop.is_set():
            if rng.random() < 0.5:
                done = self._call("om search", om_command("search", rng.choice(words), "--json"))
                if done.returncode == 0:
                    _json_or_fail(self, "om search", done.stdout)
                with self._lock:
                    self.report.search_runs += 1
            else:
                done = self._call("om context", om_command("context", "--for", "claude"))
                if done.returncode == 0:
                    _json_or_fail(self, "om context", done.stdout)
                with self._lock:
                    self.report.context_runs += 1
            stop.wait(pause)

    def _writer(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            item = self.rng.choice(self.transcripts.files)
            roll = self.rng.random()
            if roll < 0.3:
                self.transcripts.append(item, self.rng.randint(1, 2), partial=True)
                self.report.partial_appends += 1
            elif roll < 0.4:
                self.transcripts.complete(item)
            else:
                self.transcripts.append(item, self.rng.randint(1, 3))
                self.report.whole_appends += 1
            time.sleep(self.rng.uniform(0.005, 0.05))

    def run(
        self,
        *,
        writer_seconds: float,
        rounds: int = 1,
        readers: int = 2,
        reader_pause: float = 0.0,
    ) -> ConcurrencyReport:
        """Start everything together, wait for it, flush, and check. ``readers`` threads call
        ``om search`` and ``om context`` one after the other, ``reader_pause`` seconds apart."""
        started = time.monotonic()
        start = threading.Barrier(self.observers + 1)
        writing_done = threading.Event()
        observers_done = threading.Event()
        threads = [
            threading.Thread(target=self._observer, args=(start, writing_done, rounds))
            for _ in range(self.observers)
        ]
        readers_list = [
            threading.Thread(target=self._reader, args=(observers_done, n, reader_pause))
            for n in range(readers)
        ]
        for thread in threads + readers_list:
            thread.start()
        start.wait()
        self._writer(writer_seconds)
        writing_done.set()
        for thread in threads:
            thread.join()
        observers_done.set()
        for thread in readers_list:
            thread.join()
        self.transcripts.complete_all()
        self._call("om observe --flush", om_command("observe", "--flush", "--min-new", "0"))
        self.report.seconds = time.monotonic() - started
        self._check()
        return self.report

    # -- checks -------------------------------------------------------------------------------
    def _check(self) -> None:
        snap = snapshot(self.store)
        self.report.transcripts = len(self.transcripts.files)
        self.report.messages = len(self.transcripts.messages)
        problems = [f"does not parse: {p}" for p in snap.problems]
        problems += [f"^{i} written {n} times" for i, n in sorted(snap.ids.items()) if n > 1]
        problems += [
            f"reflection ^{i} kept {n} times" for i, n in sorted(snap.reflections.items()) if n > 1
        ]
        problems += cursor_problems(self.store, self.transcripts, snap, final=True)
        problems += doctor_failures(self.env)
        if self.llm is not None:
            sent: Counter[str] = Counter()
            requests = self.llm.completion_requests()
            self.report.llm_requests = len(requests)
            for request in requests:
                # The new turns' block is the last: the one before repeats turns already seen.
                part = request.user[request.user.rfind("<transcript>") :]
                for line in part.splitlines():
                    match = TURN.match(line)
                    if match and match.group(2) == "user":
                        sent.update(set(TOKEN.findall(match.group(3))))
            twice = sorted(t for t, n in sent.items() if n > 1)
            self.report.sent_twice = len(twice)
            problems += [f"{t} sent to the observer {sent[t]} times" for t in twice]
        self.report.violations += problems


def _json_or_fail(run: ConcurrencyRun, kind: str, text: str) -> None:
    try:
        json.loads(text)
    except ValueError:
        with run._lock:
            run.report.failures.append(f"{kind} printed something that is not JSON: {text[:200]}")

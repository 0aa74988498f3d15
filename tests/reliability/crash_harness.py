"""The crash campaign: run ``om observe``, ``om reflect``, ``om reindex`` and a store-write driver
as real subprocesses against a memory of realistic size, SIGKILL each at a random moment, run it
again to completion, and check the invariants every time.

After each kill (before running again): every memory file parses; every observation that was on
disk before the command started, and every batch the driver acknowledged, is still there (with
its ledger entry); no cursor has passed a message that is not in memory.

After running again: the files parse; nothing acknowledged is lost; no observation id appears
twice (in ``observations.md`` and the archive together); every transcript message was observed
exactly once, with ledger provenance on its own lines and no line claimed by two observations;
each cursor sits at the end of its file; ``om doctor --json`` reports no failed check.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from crash_corpus import (
    Snapshot,
    Transcripts,
    build_memory,
    cursor_problems,
    doctor_failures,
    echo_observer,
    om_command,
    om_env,
    snapshot,
    vocabulary,
)
from fakes.llm_server import FakeLLMServer

from obsmem.memory.ledger import read_ledger
from obsmem.memory.store import MemoryStore

COMMANDS = ("observe", "reflect", "reindex", "store")
DRIVER = Path(__file__).with_name("crash_driver.py")


@dataclass
class CrashReport:
    """What a campaign did and found."""

    kills: Counter[str] = field(default_factory=Counter)
    mid_write: Counter[str] = field(default_factory=Counter)  # memory had changed at the kill
    finished_first: Counter[str] = field(default_factory=Counter)  # ended before the kill came
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0
    observations: int = 0
    transcripts: int = 0
    messages: int = 0
    temp_files: set[str] = field(default_factory=set)  # seen right after a kill
    temp_files_left: int = 0  # still there at the end

    @property
    def total_kills(self) -> int:
        """Kills across all commands."""
        return sum(self.kills.values())

    def summary(self) -> str:
        """The figures, one line each."""
        per = ", ".join(f"{c} {self.kills[c]} ({self.mid_write[c]} mid-write)" for c in COMMANDS)
        return "\n".join(
            [
                f"crash safety: {self.total_kills} SIGKILLs in {self.seconds:.0f} s: {per}",
                f"  runs that finished before their kill: {sum(self.finished_first.values())}",
                f"  memory at the end: {self.observations} observations, "
                f"{self.transcripts} transcripts, {self.messages} transcript messages",
                f"  violations: {len(self.violations)}",
                f"  temporary files left by kills: {len(self.temp_files)} "
                f"({self.temp_files_left} at the end: om doctor removes them once 5 minutes old)",
                *(f"    {v}" for v in self.violations[:20]),
            ]
        )


class Campaign:
    """One memory directory, its transcripts, and the kill loop over them."""

    def __init__(
        self,
        root: Path,
        *,
        observations: int,
        claude: int,
        codex: int,
        llm: FakeLLMServer | None = None,
        seed: int = 8,
    ) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.env = om_env(root, OM_OBSERVER_MAX_INPUT_TOKENS="1000", OM_LOCK_TIMEOUT_SECONDS="60")
        # With the fake LLM, observe words each observation per request: a chunk observed twice
        # shows as two observations of one message instead of one id written twice and skipped.
        self.observe_env = dict(self.env)
        if llm is not None:
            llm.default = echo_observer(vocabulary(random.Random(1)))
            self.observe_env |= {
                "OM_LLM_PROVIDER": "openai-compatible",
                "OM_LLM_BASE_URL": llm.base_url_openai,
                "OM_LLM_MODEL": "fake-observer",
            }
        self.store = MemoryStore(root / "mem", environ=self.env)
        self.transcripts = Transcripts(root, self.rng)
        self.report = CrashReport()
        self.estimate: dict[str, float] = {}
        self.driver_seed = 0
        self._last: Snapshot | None = None
        self._acknowledged: set[str] = set()
        self.sizes = (observations, claude, codex)

    # -- set-up -------------------------------------------------------------------------------
    def setup(self) -> None:
        """Build the memory and transcripts, then run each command once, timing it."""
        count, claude, codex = self.sizes
        build_memory(self.store, count, 60, self.rng)
        self.transcripts.create(claude, codex, messages=6)
        for command in ("observe", "reflect", "reindex", "store"):
            argv = self._prepare(command)
            started = time.monotonic()
            done = subprocess.run(
                argv, env=self._env(command), capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise RuntimeError(f"{command} failed during set-up: {done.stderr[-2000:]}")
            self.estimate[command] = time.monotonic() - started

    def _env(self, command: str) -> dict[str, str]:
        return self.observe_env if command == "observe" else self.env

    def _prepare(self, command: str) -> list[str]:
        """New work for ``command`` and its argv."""
        if command == "observe":
            for item in self.rng.sample(
                self.transcripts.files, max(1, len(self.transcripts.files) // 3)
            ):
                self.transcripts.append(item, self.rng.randint(3, 10))
            return om_command("observe", "--min-new", "0")
        if command == "store":
            self.driver_seed += 1
            return [
                sys.executable,
                str(DRIVER),
                str(self.store.home),
                "--seed",
                str(self.driver_seed),
                "--batches",
                "25",
                "--size",
                "8",
            ]
        return om_command(command)

    # -- the loop -----------------------------------------------------------------------------
    def run(
        self, kills: int, *, deadline: float | None = None, log: TextIO | None = None
    ) -> CrashReport:
        """Kill until ``kills`` kills have landed (or ``deadline``, a ``time.monotonic`` value);
        ``log`` gets a line per kill and every violation as it is found."""
        started = time.monotonic()
        while self.report.total_kills < kills:
            if log is not None:
                landed = self.report.total_kills
                found = len(self.report.violations)
            if deadline is not None and time.monotonic() > deadline:
                self.report.violations.append(
                    f"stopped at the deadline after {self.report.total_kills} kills"
                )
                break
            # Observe (cursors, ledger, memory) and the store's writes (the smallest window) get
            # a larger share.
            command = self.rng.choice((*COMMANDS, "observe", "store"))
            self._round(command)
            if log is not None and self.report.total_kills > landed:
                elapsed = time.monotonic() - started
                log.write(f"kill {self.report.total_kills} ({command}) at {elapsed:.0f} s\n")
                for violation in self.report.violations[found:]:
                    log.write(f"  VIOLATION {violation}\n")
                log.flush()
        self.report.seconds = time.monotonic() - started
        final = snapshot(self.store)
        self.report.observations = sum(final.ids.values())
        self.report.transcripts = len(self.transcripts.files)
        self.report.messages = len(self.transcripts.messages)
        self.report.temp_files_left = len(list(self.store.home.rglob("*.tmp")))
        return self.report

    def _round(self, command: str) -> None:
        argv = self._prepare(command)
        # What the last round's checks read is still what is on disk (transcripts and the
        # driver's arguments change, memory does not), so it is not parsed again.
        before = self._last if self._last is not None else snapshot(self.store)
        marks = self._marks()
        proc = subprocess.Popen(
            argv, env=self._env(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        delay = self._kill_when_due(proc, command)
        out, err = proc.communicate()
        self._last = None  # the command ran: memory may have changed
        where = f"{command} #{sum(self.report.kills.values()) + 1}"
        if proc.returncode != -signal.SIGKILL:
            self.report.finished_first[command] += 1
            if proc.returncode != 0:
                self.report.violations.append(f"{where}: exit {proc.returncode}: {err[-300:]}")
            self.estimate[command] = max(self.estimate[command], delay)
            return
        self.report.kills[command] += 1
        self.report.temp_files |= {p.name for p in self.store.home.rglob("*.tmp")}
        if self._marks() != marks:
            self.report.mid_write[command] += 1
        acked = {
            i for line in out.splitlines() if line.startswith("ack ") for i in line.split()[1:]
        }
        self._check_after_kill(where, before, acked)
        again = subprocess.run(
            argv, env=self._env(command), capture_output=True, text=True, check=False
        )
        if again.returncode != 0 or "Traceback" in again.stderr:
            self.report.violations.append(
                f"{where}: the run after the kill failed ({again.returncode}): "
                f"{again.stderr[-300:]}"
            )
        self._check_final(where, before, acked, argv if command == "store" else None)

    def _kill_when_due(self, proc: subprocess.Popen[str], command: str) -> float:
        """SIGKILL ``proc`` at a random moment; return how long after its start.

        Half the kills land anywhere in the command's usual run time. The other half wait until
        it starts writing (a watched file changes) and land within the second after: most of a
        run is reading and thinking, and uniform timing alone would rarely hit a write.
        """
        started = time.monotonic()
        if self.rng.random() < 0.5:
            delay = self.rng.uniform(0.05, 1.0) * self.estimate[command]
        else:
            watched = self._watched()
            while proc.poll() is None and self._watched() == watched:
                time.sleep(0.005)
            delay = time.monotonic() - started + self.rng.uniform(0.0, 1.0)
        try:
            proc.wait(timeout=max(0.0, started + delay - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        return delay

    def _watched(self) -> list[tuple[int, int]]:
        """Size and mtime of the files every command's first write touches."""
        out = []
        for path in (
            self.store.observations_path,
            self.store.home / "reflections.md",
            self.store.ledger_path,
            self.store.state_db_path.with_name(self.store.state_db_path.name + "-wal"),
            self.store.index_path,
            self.store.index_path.with_name(self.store.index_path.name + "-wal"),
            self.store.archive_dir / "observations",
        ):
            try:
                st = path.stat()
            except FileNotFoundError:
                out.append((-1, -1))
                continue
            out.append((st.st_size, st.st_mtime_ns))
        return out

    def _marks(self) -> list[tuple[str, int, int]]:
        """Size and mtime of every file of the memory directory: did the command write?"""
        out = []
        for path in sorted(self.store.home.rglob("*")):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            out.append((str(path), st.st_size, st.st_mtime_ns))
        return out

    # -- checks -------------------------------------------------------------------------------
    def _check_after_kill(self, where: str, before: Snapshot, acked: set[str]) -> None:
        now = snapshot(self.store)
        problems = [f"does not parse: {p}" for p in now.problems]
        problems += [f"lost ^{i}" for i in sorted(set(before.ids) - set(now.ids))]
        problems += [f"acknowledged but missing ^{i}" for i in sorted(acked - set(now.ids))]
        ledger, _ = read_ledger(self.store.ledger_path)
        problems += [f"acknowledged without provenance ^{i}" for i in sorted(acked - set(ledger))]
        problems += cursor_problems(self.store, self.transcripts, now, final=False)
        self.report.violations += [f"{where} after the kill: {p}" for p in problems]
        self._acknowledged = set(before.ids) | set(now.ids) | acked

    def _check_final(
        self, where: str, before: Snapshot, acked: set[str], driver: list[str] | None
    ) -> None:
        now = self._last = snapshot(self.store)
        problems = [f"does not parse: {p}" for p in now.problems]
        problems += [f"lost ^{i}" for i in sorted(self._acknowledged - set(now.ids))]
        problems += [f"^{i} written {n} times" for i, n in sorted(now.ids.items()) if n > 1]
        problems += [
            f"reflection ^{i} kept {n} times" for i, n in sorted(now.reflections.items()) if n > 1
        ]
        if driver is not None:
            from crash_driver import batch

            seed, batches, size = (int(driver[i]) for i in (4, 6, 8))
            wanted = {o.id for b in range(batches) for o in batch(seed, b, size)}
            problems += [f"driver batch never written ^{i}" for i in sorted(wanted - set(now.ids))]
        problems += cursor_problems(self.store, self.transcripts, now, final=True)
        problems += doctor_failures(self.env)
        self.report.violations += [f"{where} after running again: {p}" for p in problems]

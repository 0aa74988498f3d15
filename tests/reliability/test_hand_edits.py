"""Hand-edit races: an editor saving ``observations.md`` while ``om observe`` and ``om remember``
write to it, counting lines lost.

The editor does what editors do, without om's lock: in-place saves (truncate, write a part
(often cut inside a UTF-8 character), pause, write the rest) and stale-buffer saves (load the
file, wait while om writes, save the old buffer with a line typed meanwhile). Each save adds a
hand line with a unique token. Afterwards:

- every older memory line, every hand line and every remembered line is in memory or the
  archive (the in-place race used to merge into the half file and lose them);
- what a stale save dropped is what ``om doctor`` reports ("N observations known to the ledger
  are missing from memory"), and ``om doctor --restore`` puts it back, so in the end every
  transcript message is observed exactly once and nothing is lost.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from crash_corpus import (
    Transcripts,
    build_memory,
    cursor_problems,
    om_command,
    om_env,
    run_om,
    snapshot,
)
from hostile_figures import record

from obsmem.memory.store import MemoryStore

HAND = re.compile(r"hand-note-\d{4}")


@dataclass
class RaceReport:
    """What the race did and found."""

    seconds: float = 0.0
    in_place: int = 0
    stale: int = 0
    observe_runs: int = 0
    remembers: int = 0
    missing_reported: int = 0
    restored: int = 0
    lost: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line of figures."""
        return (
            f"hand-edit races: {self.in_place} in-place and {self.stale} stale-buffer saves "
            f"against {self.observe_runs} om observe and {self.remembers} om remember runs in "
            f"{self.seconds:.0f} s; lines lost: {len(self.lost)}; observations dropped by stale "
            f"saves and reported by om doctor: {self.missing_reported}, restored: {self.restored}"
        )


class HandEditRace:
    """One memory directory, growing transcripts, observers, and an editor."""

    def __init__(self, root: Path, *, seed: int = 13) -> None:
        self.rng = random.Random(seed)
        self.env = om_env(root, OM_LOCK_TIMEOUT_SECONDS="300")
        self.store = MemoryStore(root / "mem", environ=self.env)
        self.transcripts = Transcripts(root, self.rng)
        self.report = RaceReport()
        self.hand: list[str] = []
        self.remembered: list[str] = []
        self._lock = threading.Lock()

    def setup(self) -> None:
        """Older memory and the first messages of each transcript."""
        self.old = set(build_memory(self.store, 40, 3, self.rng))
        self.transcripts.create(6, 2, messages=2)

    # -- the editor ---------------------------------------------------------------------------
    def _hand_line(self) -> str:
        token = f"hand-note-{len(self.hand):04d}"
        self.hand.append(token)
        return f"- 🟢 {token} typed by hand: café, naïve, déjà vu ✓\n"

    def _in_place(self) -> None:
        path = self.store.observations_path
        data = path.read_bytes() + self._hand_line().encode("utf-8")
        cut = self.rng.randrange(1, len(data))
        with path.open("r+b") as handle:
            handle.truncate(0)
            handle.write(data[:cut])
            handle.flush()
            time.sleep(self.rng.uniform(0.0, 0.08))
            handle.write(data[cut:])
        self.report.in_place += 1

    def _stale(self, stop: threading.Event) -> None:
        path = self.store.observations_path
        buffer = path.read_bytes()
        stop.wait(self.rng.uniform(0.3, 1.5))  # om writes meanwhile
        data = buffer + self._hand_line().encode("utf-8")
        if self.rng.random() < 0.5:
            tmp = path.with_name(".observations.md.swp")
            tmp.write_bytes(data)
            os.replace(tmp, path)  # an editor that saves by rename
        else:
            with path.open("r+b") as handle:
                handle.truncate(0)
                handle.write(data)
        self.report.stale += 1

    def _editor(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if self.rng.random() < 0.6:
                self._in_place()
            else:
                self._stale(stop)
            stop.wait(self.rng.uniform(0.05, 0.4))

    # -- om -------------------------------------------------------------------------------------
    def _call(self, kind: str, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            om_command(*args), env=self.env, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            with self._lock:
                self.report.failures.append(f"{kind} exit {done.returncode}: {done.stderr[-300:]}")
        return done

    def _observer(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._call("om observe", "observe", "--min-new", "0")
            with self._lock:
                self.report.observe_runs += 1

    def _rememberer(self, stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            token = f"remembered-{n:04d}"
            done = self._call("om remember", "remember", f"Decided {token} by hand", "--json")
            if done.returncode == 0:
                with self._lock:
                    self.remembered.append(token)
                    self.report.remembers += 1
            n += 1
            stop.wait(0.2)

    def _growth(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.transcripts.append(self.rng.choice(self.transcripts.files), 1)
            stop.wait(self.rng.uniform(0.05, 0.3))

    def run(self, seconds: float) -> RaceReport:
        """Race for ``seconds``, then flush, doctor, restore, and count what was lost."""
        started = time.monotonic()
        stop = threading.Event()
        threads = [
            threading.Thread(target=self._editor, args=(stop,)),
            threading.Thread(target=self._observer, args=(stop,)),
            threading.Thread(target=self._observer, args=(stop,)),
            threading.Thread(target=self._rememberer, args=(stop,)),
            threading.Thread(target=self._growth, args=(stop,)),
        ]
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join()
        self.transcripts.complete_all()
        self._call("om observe --flush", "observe", "--flush", "--min-new", "0")
        self.report.seconds = time.monotonic() - started
        self._doctor()
        self._count()
        return self.report

    def _doctor(self) -> None:
        def kept(*args: str) -> dict[str, str]:
            done = run_om(self.env, "doctor", *args, "--json")
            try:
                checks = json.loads(done.stdout)
            except ValueError:
                return {"verdict": "no JSON", "detail": done.stderr[-200:]}
            found = [c for c in checks if c["name"] == "observations kept"]
            return found[0] if found else {"verdict": "absent", "detail": ""}

        before = kept()
        if before["verdict"] == "fail":
            self.report.missing_reported = int(before["detail"].split()[0])
        fixed = kept("--restore")
        if fixed["verdict"] == "repaired":
            match = re.search(r"put back (\d+)", fixed["detail"])
            self.report.restored = int(match.group(1)) if match else 0
        after = kept()
        if after["verdict"] != "ok":
            self.report.lost.append(f"om doctor after --restore: {after}")

    def _count(self) -> None:
        snap = snapshot(self.store)
        files = [self.store.observations_path, *sorted(self.store.archive_dir.rglob("*.md"))]
        text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
        self.report.lost += [f"older memory ^{i} lost" for i in sorted(self.old - set(snap.ids))]
        found = set(HAND.findall(text))
        self.report.lost += [f"{t} lost" for t in self.hand if t not in found]
        self.report.lost += [f"{t} lost" for t in self.remembered if t not in text]
        self.report.lost += cursor_problems(self.store, self.transcripts, snap, final=True)
        self.report.lost += [f"a split character in {p.name}" for p in files if _split(p)]


def _split(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@pytest.mark.slow
def test_hand_edit_races_lose_nothing(tmp_path: Path) -> None:
    race = HandEditRace(tmp_path)
    race.setup()
    report = race.run(seconds=25)
    print(report.summary())
    record("Hand-edit races", report.summary())
    assert report.failures == [], report.failures
    assert report.in_place > 10 and report.stale > 3
    assert report.lost == [], report.lost[:20]
    assert report.restored == report.missing_reported

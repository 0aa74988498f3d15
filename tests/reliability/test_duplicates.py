"""Exactly once whatever the timing: the same content observed again after its day was archived,
as a second copy of a session, and by eight observers at once while ``om reflect`` archives days
in between, is written once.

The transcripts' messages are ten days old but one session's, which is today's, and
``OM_ARCHIVE_AFTER_DAYS=1``, so the catch-up reflection at the end of each ``om observe`` (and the
``om reflect`` runs beside them) move the older days to ``archive/`` (days are archived by the
memory's own clock: today's session is its last activity) while other observers are still
writing. The offline rules make the same
observation of the same message every time, so a second write shows as an id counted twice, and
the total must equal what one run over the originals writes.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from crash_corpus import Transcripts, om_command, om_env, run_om
from hostile_figures import record

from obsmem.memory.store import MemoryStore


def _sessions(root: Path, count: int, seed: int) -> Transcripts:
    """``count`` Claude Code sessions whose messages are ten days old, but the first's: today."""
    transcripts = Transcripts(root, random.Random(seed))
    transcripts.create(count, 0, messages=0)
    for n, item in enumerate(transcripts.files):
        item.moment = datetime.now(UTC) - timedelta(days=10 if n else 0)
        transcripts.append(item, 5)
    return transcripts


def _copies(transcripts: Transcripts) -> None:
    """A second copy of every session, in another project folder (a moved or synced copy)."""
    for item in transcripts.files:
        folder = item.path.parent.with_name(item.path.parent.name + "-copy")
        folder.mkdir(exist_ok=True)
        shutil.copy(item.path, folder / ("c" + item.path.name[1:]))


def _ids(store: MemoryStore) -> Counter[str]:
    ids: Counter[str] = Counter(o.id for o in store.read_observations().observations)
    folder = store.archive_dir / "observations"
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        ids.update(o.id for o in store.read_observations(path).observations)
    return ids


def _home(root: Path, sessions: int, seed: int) -> tuple[dict[str, str], MemoryStore, Transcripts]:
    env = om_env(root, OM_ARCHIVE_AFTER_DAYS="1", OM_LOCK_TIMEOUT_SECONDS="300")
    return env, MemoryStore(root / "mem", environ=env), _sessions(root, sessions, seed)


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr[-2000:]


def _one_run(root: Path, sessions: int, seed: int) -> int:
    env, store, _ = _home(root, sessions, seed)
    _ok(run_om(env, "observe", "--flush", "--min-new", "0"))
    ids = _ids(store)
    assert ids and max(ids.values()) == 1
    return len(ids)


def _eight_at_once(root: Path, sessions: int, seed: int, rounds: int) -> tuple[Counter[str], int]:
    env, store, transcripts = _home(root, sessions, seed)
    _copies(transcripts)
    failures: list[str] = []
    start = threading.Barrier(9)

    def call(*args: str) -> None:
        done = subprocess.run(
            om_command(*args), env=env, capture_output=True, text=True, timeout=600, check=False
        )
        if done.returncode != 0:
            failures.append(done.stderr[-500:])

    def observer() -> None:
        start.wait()
        for _ in range(rounds):
            call("observe", "--flush", "--min-new", "0")

    def reflector() -> None:
        start.wait()
        for _ in range(rounds * 2):
            call("reflect")

    threads = [threading.Thread(target=observer) for _ in range(8)]
    threads.append(threading.Thread(target=reflector))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _ok(run_om(env, "observe", "--flush", "--min-new", "0"))
    assert failures == []
    archived = store.archive_dir / "observations"
    return _ids(store), len(list(archived.glob("*.md"))) if archived.is_dir() else 0


def _one_after_the_other(root: Path, sessions: int, seed: int) -> Counter[str]:
    env, store, transcripts = _home(root, sessions, seed)
    _ok(run_om(env, "observe", "--flush", "--min-new", "0"))  # catch-up archives old days
    today = max(o.date for o in store.read_observations().observations)
    assert all(o.date == today for o in store.read_observations().observations)
    assert (store.archive_dir / "observations").is_dir()
    _copies(transcripts)
    _ok(run_om(env, "observe", "--flush", "--min-new", "0"))
    return _ids(store)


def _check(root: Path, sessions: int, seed: int, rounds: int) -> None:
    single = _one_run(root / "single", sessions, seed)
    serial = _one_after_the_other(root / "serial", sessions, seed)
    together, months = _eight_at_once(root / "together", sessions, seed, rounds)
    twice_serial = sum(1 for n in serial.values() if n > 1)
    twice_together = sum(1 for n in together.values() if n > 1)
    record(
        "Duplicates",
        f"{sessions} sessions and a copy of each: one run writes {single} observations; "
        f"observed again after archiving: {sum(serial.values())} lines, {twice_serial} ids "
        f"twice; 8 observers at once with om reflect archiving in between ({rounds} rounds, "
        f"{months} archive month file(s)): {sum(together.values())} lines, {twice_together} "
        "ids twice",
    )
    assert twice_serial == 0 and sum(serial.values()) == single
    assert twice_together == 0 and sum(together.values()) == single


def test_archived_days_and_copies_are_written_once(tmp_path: Path) -> None:
    _check(tmp_path, sessions=4, seed=3, rounds=1)


@pytest.mark.slow
def test_eight_observers_with_archiving_in_between_write_each_observation_once(
    tmp_path: Path,
) -> None:
    _check(tmp_path, sessions=20, seed=5, rounds=3)

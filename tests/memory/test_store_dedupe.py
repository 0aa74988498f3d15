"""Exactly once whatever the timing: de-duplication runs under the lock, against observations.md,
the archived days a batch touches, and the ids the ledger saw written."""

from __future__ import annotations

import multiprocessing
import os
from datetime import date
from pathlib import Path

from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.scoring import Deduper, without_near_duplicates
from obsmem.reflect.archive import archive_observations
from obsmem.settings import load_settings

_fork = multiprocessing.get_context("fork")
DAY = "2026-02-10"
LONG = (
    "Decided to ship the new CSV importer behind a feature flag so that support can turn it "
    "on account by account, starting with the beta"
)


def _obs(text: str, time: str = "10:00", day: str = DAY):  # type: ignore[no-untyped-def]
    return new_observation(text, date=day, time=time, type="decision", importance=0.8)


def _archive_everything(store: MemoryStore) -> None:
    # Days are archived by the memory's own clock: work on a later day moves it on.
    store.add_observations([new_observation("Work on a later day", date="2026-06-01")])
    settings = load_settings({"OM_HOME": str(store.home), "OM_LLM_PROVIDER": "none"})
    report = archive_observations(store, settings, today=date(2026, 6, 1))
    assert report.days


def _of_day(store: MemoryStore) -> list[object]:
    return [o for o in store.read_observations().observations if o.date == DAY]


def test_an_archived_day_is_not_written_again(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    batch = [_obs(f"Chose option {n} for the gateway cache") for n in range(5)]
    assert len(store.add_observations(batch)) == 5
    _archive_everything(store)
    assert _of_day(store) == []
    again = [_obs(f"Chose option {n} for the gateway cache") for n in range(5)]
    assert store.add_observations(again, near=without_near_duplicates) == []
    assert _of_day(store) == []


def test_a_near_duplicate_of_an_archived_observation_is_dropped(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.add_observations([_obs(LONG + " users")])
    _archive_everything(store)
    reworded = _obs(LONG + " customers", "10:05")
    assert store.add_observations([reworded], near=without_near_duplicates) == []
    # Only the batch's days are read from the archive: the same words on a later day are new.
    other_day = _obs(LONG + " customers", day="2026-05-30")
    assert store.add_observations([other_day], near=without_near_duplicates) == [other_day]


def test_near_duplicates_are_judged_against_memory_at_write_time_not_a_snapshot(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path)
    first = Deduper(store.recent_observations())  # two runs take their snapshots at start
    second = Deduper(store.recent_observations())
    a = _obs(LONG + " users")
    b = _obs(LONG + " customers", "10:01")
    assert first.admit(a) and second.admit(b)  # neither snapshot knows the other's line
    assert store.add_observations([a], near=without_near_duplicates) == [a]
    assert store.add_observations([b], near=without_near_duplicates) == []


def _writer(home: str, n: int, start: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    store = MemoryStore(home)
    words = ["users", "people", "testers", "clients", "teams", "staff", "folks", "accounts"]
    mine = _obs(f"{LONG} {words[n]}")
    Deduper(store.recent_observations()).admit(mine)  # the snapshot every run takes at start
    start.wait()
    store.add_observations([mine], near=without_near_duplicates)
    os._exit(0)


def test_eight_processes_writing_the_same_decision_at_once_write_it_once(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path).ensure()
    start = _fork.Event()
    procs = [_fork.Process(target=_writer, args=(str(tmp_path), n, start)) for n in range(8)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    texts = [o.text for o in parse_observations(store.observations_path.read_bytes()).observations]
    assert len(texts) == 1, texts


def test_ids_the_ledger_saw_written_are_not_added_again_unless_asked(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    kept = _obs("Chose Redis streams for the job queue")
    store.add_observations([kept])
    store.observations_path.write_text("# Observations\n", encoding="utf-8")  # a stale save
    assert store.add_observations([_obs("Chose Redis streams for the job queue")]) == []
    again = store.add_observations([_obs("Chose Redis streams for the job queue")], again=True)
    assert [o.id for o in again] == [kept.id]

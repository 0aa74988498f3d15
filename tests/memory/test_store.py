"""MemoryStore: places, reading, and merging observations safely from many writers at once."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import stat
import threading
from collections import Counter
from pathlib import Path

import pytest

from obsmem.errors import LockTimeout, MemoryFileError, UsageError
from obsmem.memory.ledger import read_ledger
from obsmem.memory.markdown import split_lines
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"
_fork = multiprocessing.get_context("fork")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def obs(text: str, date: str = "2026-02-10", **kwargs: object) -> Observation:
    return new_observation(text, date=date, **kwargs)  # type: ignore[arg-type]


def is_subsequence(old: list[str], new: list[str]) -> bool:
    remaining = iter(new)
    return all(any(line == candidate for candidate in remaining) for line in old)


# -- places ---------------------------------------------------------------------------------------


def test_default_home_comes_from_the_environment() -> None:
    store = MemoryStore()
    assert store.home == Path(os.environ["OM_HOME"])
    assert store.state_dir == store.home / ".om"
    assert store.ledger_path == store.home / ".om" / "provenance.jsonl"
    assert store.lock_path == store.home / ".om" / "memory.lock"
    assert not str(store.home).startswith(str(Path("~").expanduser()) + "/.local")


def test_explicit_home_and_environ(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem")
    assert store.state_dir == tmp_path / "mem" / ".om"
    assert store.index_path == tmp_path / "mem" / ".om" / "index.sqlite3"
    other = MemoryStore(
        environ={"OM_HOME": str(tmp_path / "m2"), "OM_STATE_DIR": str(tmp_path / "s")}
    )
    assert other.home == tmp_path / "m2"
    assert other.ledger_path == tmp_path / "s" / "provenance.jsonl"
    # An explicit home wins over OM_HOME, but a separately set state dir is kept.
    both = MemoryStore(
        tmp_path / "m3", environ={"OM_HOME": "/elsewhere", "OM_STATE_DIR": str(tmp_path / "s")}
    )
    assert both.home == tmp_path / "m3"
    assert both.state_dir == tmp_path / "s"


def test_ensure_creates_private_directories(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem").ensure()
    assert mode(store.home) == 0o700
    assert mode(store.state_dir) == 0o700


def test_memory_files_and_relative(store: MemoryStore) -> None:
    assert store.memory_files() == []
    store.observations_path.write_text("# Observations\n")
    (store.home / "active.md").write_text("# Active\n")
    (store.home / "reflections.md").write_text("# Reflections\n")
    (store.home / "notes.md").write_text("not a memory file\n")
    (store.home / ".observations.md.abc123.tmp").write_text("stray")
    month = store.archive_dir / "observations" / "2026-01.md"
    month.parent.mkdir(parents=True)
    month.write_text("# Observations\n")
    page = store.vault_dir / "people" / "dana.md"
    page.parent.mkdir(parents=True)
    page.write_text("# Dana\n")
    (store.vault_dir / "people" / ".dana.md.x.tmp").write_text("stray")
    (store.vault_dir / "folder.md").mkdir()
    files = store.memory_files()
    assert files == [
        store.observations_path,
        store.home / "reflections.md",
        store.home / "active.md",
        month,
        page,
    ]
    assert [store.relative(p) for p in files] == [
        "observations.md",
        "reflections.md",
        "active.md",
        "archive/observations/2026-01.md",
        "vault/people/dana.md",
    ]
    assert store.relative(Path("/somewhere/else.md")) == "/somewhere/else.md"


# -- reading --------------------------------------------------------------------------------------


def test_reading_missing_files(store: MemoryStore) -> None:
    doc = store.read_observations()
    assert (doc.lines, doc.days, doc.issues) == ([], [], [])
    sections = store.read_sections("reflections.md")
    assert sections.entries == [] and sections.title is None
    assert store.provenance() == {}


def test_reading_a_directory_is_a_clear_error(store: MemoryStore) -> None:
    store.observations_path.mkdir()
    with pytest.raises(MemoryFileError, match="is a directory"):
        store.read_observations()


def test_original_files_are_read_as_they_are(store: MemoryStore) -> None:
    for path in (FIXTURES / "original").iterdir():
        shutil.copy(path, store.home / path.name)
    doc = store.read_observations()
    assert len(doc.observations) == 20 and doc.issues == []
    reflections = store.read_sections("reflections.md")
    assert reflections.last_reflected == "2026-02-11"
    assert "Active Projects / om" in reflections.sections()
    (store.home / "profile.md").write_text("# P\n## S\n- shared line\n")
    (store.home / "active.md").write_text("# A\n## S\n- shared line\n")
    profile = store.read_sections("profile.md").entries
    active = store.read_sections("active.md").entries
    assert profile[0].text == active[0].text and profile[0].id != active[0].id


# -- writing --------------------------------------------------------------------------------------


def test_add_observations_is_idempotent(store: MemoryStore) -> None:
    prov = Provenance(path="/t/s1.jsonl", line_start=3, line_end=9, session="s1", agent="claude")
    batch = [
        obs(
            "Chose PostgreSQL",
            time="14:30",
            type="decision",
            importance=0.9,
            confidence=0.95,
            provenance=prov,
        ),
        obs("Likes short commits", time="15:00", type="preference", importance=0.6),
    ]
    added = store.add_observations(batch)
    assert added == batch
    first = store.observations_path.stat()
    ledger_bytes = store.ledger_path.read_bytes()
    assert store.add_observations(batch) == []
    again = [obs("chose   postgresql", time="16:00")]  # same day, same normalised text
    assert store.add_observations(again) == []
    second = store.observations_path.stat()
    assert (second.st_ino, second.st_mtime_ns, second.st_size) == (
        first.st_ino,
        first.st_mtime_ns,
        first.st_size,
    )
    assert store.ledger_path.read_bytes() == ledger_bytes
    doc = store.read_observations()
    assert [o.id for o in doc.observations] == [o.id for o in batch]
    assert doc.observations[0].type == "decision"
    assert doc.observations[0].confidence == 0.95


def test_a_batch_is_parsed_once_and_written_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many days at once (existing, new before, between and after them) plus a Current Context:
    # the file is read and parsed once and replaced once, however many days the batch touches.
    store.add_observations([obs("first", date="2026-02-10"), obs("third", date="2026-02-20")])
    import obsmem.memory.observations as observations_module
    import obsmem.memory.store as store_module

    calls: Counter[str] = Counter()
    real_parse, real_write = observations_module.parse_observations, store_module.atomic_write

    def parse(*args: object, **kwargs: object) -> object:
        calls["parse"] += 1
        return real_parse(*args, **kwargs)  # type: ignore[arg-type]

    def write(*args: object, **kwargs: object) -> None:
        calls["write"] += 1
        real_write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(observations_module, "parse_observations", parse)
    monkeypatch.setattr(store_module, "parse_observations", parse)
    monkeypatch.setattr(store_module, "atomic_write", write)
    days = ["2026-02-01", "2026-02-10", "2026-02-15", "2026-02-20", "2026-02-25", "2026-03-01"]
    batch = [obs(f"note {n} on {day}", date=day, time=f"1{n}:00") for day in days for n in range(5)]
    context = {"2026-02-15": {"Active task": "Bulk writes"}, "2026-02-10": {"Active task": "x"}}
    added = store.add_observations(batch, context=context)
    assert calls == Counter(parse=1, write=1)
    assert added == batch
    monkeypatch.undo()
    doc = store.read_observations()
    assert [d.date for d in doc.days] == sorted(set(days) | {"2026-02-20"})
    assert len(doc.observations) == 2 + len(batch)
    day = doc.day("2026-02-15")
    assert day is not None and day.context == {"Active task": "Bulk writes"}
    assert doc.issues == []


def test_files_are_private(store: MemoryStore) -> None:
    store.add_observations([obs("x", provenance=Provenance(path="/t/a.jsonl"))])
    assert mode(store.home) == 0o700
    assert mode(store.state_dir) == 0o700
    assert mode(store.observations_path) == 0o600
    assert mode(store.ledger_path) == 0o600
    assert mode(store.lock_path) == 0o600


def test_an_existing_files_mode_is_kept(store: MemoryStore) -> None:
    store.observations_path.write_text("# Observations\n")
    store.observations_path.chmod(0o644)
    store.add_observations([obs("x")])
    assert mode(store.observations_path) == 0o644


def test_nothing_to_add_writes_nothing(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem")
    assert store.add_observations([]) == []
    assert not store.home.exists()


def test_ledger_gets_provenance(store: MemoryStore) -> None:
    with_prov = obs("traced", provenance=Provenance(path="/t/a.jsonl", line_start=1, line_end=4))
    without = obs("untraced")
    store.add_observations([with_prov, without])
    assert store.provenance() == {with_prov.id: with_prov.provenance}
    entries, bad = read_ledger(store.ledger_path)
    assert bad == 0 and list(entries) == [with_prov.id]


def test_torn_ledger_line_does_not_break_adding(store: MemoryStore) -> None:
    first = obs("one", provenance=Provenance(path="/t/a.jsonl"))
    store.add_observations([first])
    with store.ledger_path.open("ab") as handle:
        handle.write(b'{"id": "torn", "prov')
    second = obs("two", provenance=Provenance(path="/t/b.jsonl"))
    store.add_observations([second])
    entries, bad = read_ledger(store.ledger_path)
    assert entries == {first.id: first.provenance, second.id: second.provenance}
    assert bad == 1


def test_adding_to_the_original_tools_file_changes_no_line(store: MemoryStore) -> None:
    original = (FIXTURES / "original" / "observations.md").read_bytes()
    store.observations_path.write_bytes(original)
    new = [
        obs("Reviewed the auth tests", date="2026-02-12", time="18:30", importance=0.6),
        obs("Demo day", date="2026-02-13", time="10:00", importance=0.9),
    ]
    assert store.add_observations(new) == new
    data = store.observations_path.read_bytes()
    assert is_subsequence(split_lines(original.decode()), split_lines(data.decode()))
    doc = store.read_observations()
    assert doc.issues == []
    assert len(doc.observations) == 22


def test_write_file_waits_for_the_lock(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", lock_timeout=0.2).ensure()
    target = store.home / "reflections.md"
    store.write_file(target, b"# Reflections\n")
    assert target.read_bytes() == b"# Reflections\n"
    assert mode(target) == 0o600
    ready, release = _fork.Event(), _fork.Event()
    holder = _fork.Process(target=_hold, args=(str(store.home), ready, release))
    holder.start()
    try:
        assert ready.wait(5)
        with pytest.raises(LockTimeout):
            store.write_file(target, b"lost\n")
        with pytest.raises(LockTimeout):
            store.add_observations([obs("blocked")])
    finally:
        release.set()
        holder.join(5)
    assert target.read_bytes() == b"# Reflections\n"
    assert not store.observations_path.exists()


def _hold(home: str, ready: object, release: object) -> None:
    with MemoryStore(home).lock():
        ready.set()  # type: ignore[attr-defined]
        release.wait(10)  # type: ignore[attr-defined]


# -- many writers at once -------------------------------------------------------------------------

WORKERS = 6
PER_WORKER = 30


def _expected(worker: int) -> list[Observation]:
    return [
        obs(
            f"worker {worker} observation {i}",
            date=f"2026-02-{10 + (i + worker) % 4:02d}",
            time=f"{8 + worker:02d}:{i:02d}",
            importance=(i % 10) / 10,
            provenance=Provenance(path=f"/t/worker{worker}.jsonl", line_start=i, line_end=i),
        )
        for i in range(PER_WORKER)
    ]


def _add_one_at_a_time(home: str, worker: int, start: object) -> None:
    start.wait(10)  # type: ignore[attr-defined]
    store = MemoryStore(home)
    for observation in _expected(worker):
        if store.add_observations([observation]) != [observation]:
            os._exit(3)


def test_concurrent_processes_lose_nothing(store: MemoryStore) -> None:
    start = _fork.Event()
    procs = [
        _fork.Process(target=_add_one_at_a_time, args=(str(store.home), w, start))
        for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(60)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    expected = [o for w in range(WORKERS) for o in _expected(w)]
    doc = store.read_observations()
    assert doc.issues == []
    counts = Counter(o.id for o in doc.observations)
    assert counts == Counter({o.id: 1 for o in expected})
    assert [d.date for d in doc.days] == ["2026-02-10", "2026-02-11", "2026-02-12", "2026-02-13"]
    for day in doc.days:
        times = [o.time for o in day.observations]
        assert times == sorted(times)  # type: ignore[type-var]
    entries, bad = read_ledger(store.ledger_path)
    assert bad == 0
    assert entries == {o.id: o.provenance for o in expected}
    lines = store.ledger_path.read_bytes().splitlines()
    assert sum(1 for line in lines if line.startswith(b'{"written"')) == WORKERS * PER_WORKER
    assert len(lines) == 2 * WORKERS * PER_WORKER  # an entry, then its written note


def test_concurrent_threads_lose_nothing(store: MemoryStore) -> None:
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            mine = MemoryStore(store.home)
            for observation in _expected(worker)[:15]:
                mine.add_observations([observation])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    ids = [o.id for o in store.read_observations().observations]
    assert sorted(ids) == sorted(o.id for w in range(4) for o in _expected(w)[:15])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "   "}, "needs some text"),
        ({"date": "2026-2-1"}, "is not YYYY-MM-DD"),
        ({"date": "2026-13-01"}, "is not YYYY-MM-DD"),
        ({"time": "25:00"}, "is not HH:MM"),
        ({"importance": 1.5}, "between 0 and 1"),
        ({"confidence": -0.1}, "between 0 and 1"),
    ],
)
def test_new_observation_rejects_bad_fields(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"text": "fine", "date": "2026-02-01", **kwargs}
    with pytest.raises(UsageError, match=message):
        new_observation(**args)  # type: ignore[arg-type]


def test_observation_files_are_the_file_then_the_archive_months_newest_first(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path / "mem")
    assert store.observation_files() == [store.observations_path]  # nothing written yet
    for name in ("2025-11.md", "2026-01.md", "2025-12.md", "notes.txt"):
        path = store.observations_archive_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Observations\n", encoding="utf-8")
    months = [store.archive_month(m) for m in ("2026-01", "2025-12", "2025-11")]
    assert store.observation_files() == [store.observations_path, *months]

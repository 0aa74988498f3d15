"""Archiving observation days: moved whole, byte for byte, in date order, crash-safe, searchable."""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pytest

import obsmem.reflect.archive as archive_module
from obsmem.errors import MemoryFileError
from obsmem.memory.markdown import body, split_lines
from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.archive import archive_observations, archived_ids, merge_day
from obsmem.search import search
from obsmem.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"
SETTINGS = Settings(llm_provider="none")
#: Every day before the memory's last day of activity goes (that day always stays).
SETTINGS0 = Settings(llm_provider="none", archive_after_days=0)


def content(data: bytes) -> list[str]:
    """Lines that carry memory: not blank, not separators, not titles or day headings."""
    text = data.decode("utf-8", "surrogateescape")
    out = []
    for line in split_lines(text):
        stripped = body(line).strip()
        if stripped and stripped != "---" and not stripped.startswith(("# ", "## ")):
            out.append(body(line))
    return out


def month(store: MemoryStore, name: str) -> Path:
    return store.archive_dir / "observations" / f"{name}.md"


def active(store: MemoryStore, day: str) -> None:
    """Some work on ``day``: the memory's last activity moves there."""
    add(store, day, f"work done on {day}")


def add(store: MemoryStore, day: str, *texts: str) -> None:
    store.add_observations(
        new_observation(text, date=day, time=f"1{n}:00", type="fact", importance=0.5)
        for n, text in enumerate(texts)
    )


@pytest.fixture
def original(store: MemoryStore) -> MemoryStore:
    shutil.copy(FIXTURES / "original" / "observations.md", store.observations_path)
    return store


def test_old_days_move_byte_for_byte_with_their_context(original: MemoryStore) -> None:
    before = original.observations_path.read_bytes()
    ids = original.read_observations().ids()
    report = archive_observations(original, SETTINGS0, today=date(2026, 2, 19))
    # 2026-02-12 is the last day of activity: it stays; the two days before it move.
    assert (report.cutoff, report.last_activity) == ("2026-02-12", "2026-02-12")
    assert report.days == ["2026-02-10", "2026-02-11"]
    assert report.files == ["archive/observations/2026-02.md"]
    archived = month(original, "2026-02").read_bytes()
    kept = original.observations_path.read_bytes()
    # Every content line is in exactly one of the two files, unchanged.
    assert Counter(content(archived)) + Counter(content(kept)) == Counter(content(before))
    assert "- **Active task:** Setting up FastAPI project for task manager app" in content(archived)
    assert parse_observations(archived).issues == []
    assert [d.date for d in parse_observations(archived).days] == ["2026-02-10", "2026-02-11"]
    assert [d.date for d in parse_observations(kept).days] == ["2026-02-12"]
    assert archived_ids(original) | original.read_observations().ids() == ids
    assert kept.startswith(b"# Observations\n\n## 2026-02-12\n")


def test_nothing_to_archive_writes_nothing(original: MemoryStore) -> None:
    before = original.observations_path.read_bytes()
    report = archive_observations(original, SETTINGS, today=date(2026, 2, 13))
    assert report.days == [] and report.files == []
    assert original.observations_path.read_bytes() == before
    assert not original.archive_dir.exists()


def test_dry_run_writes_nothing(original: MemoryStore) -> None:
    before = original.observations_path.read_bytes()
    report = archive_observations(original, SETTINGS0, today=date(2026, 3, 30), dry_run=True)
    assert report.days == ["2026-02-10", "2026-02-11"]
    assert report.observations == 14
    assert original.observations_path.read_bytes() == before
    assert not original.archive_dir.exists()


def test_a_month_file_keeps_days_in_date_order(store: MemoryStore) -> None:
    active(store, "2026-05-01")
    add(store, "2026-04-20", "late april fact")
    add(store, "2026-04-02", "early april fact")
    archive_observations(store, SETTINGS, today=date(2026, 5, 1))
    add(store, "2026-04-10", "mid april fact, backfilled after the others were archived")
    add(store, "2026-03-31", "end of march fact")
    report = archive_observations(store, SETTINGS, today=date(2026, 5, 1))
    assert report.days == ["2026-03-31", "2026-04-10"]
    april = parse_observations(month(store, "2026-04").read_bytes())
    assert [d.date for d in april.days] == ["2026-04-02", "2026-04-10", "2026-04-20"]
    assert april.issues == []
    march = parse_observations(month(store, "2026-03").read_bytes())
    assert [o.text for o in march.observations] == ["end of march fact"]
    assert [d.date for d in store.read_observations().days] == ["2026-05-01"]


def test_setting_changes_the_age(store: MemoryStore) -> None:
    add(store, "2026-04-27", "three days before the last activity")
    add(store, "2026-04-29", "one day before")
    add(store, "2026-04-30", "the last day of activity")
    report = archive_observations(
        store, Settings(llm_provider="none", archive_after_days=2), today=date(2026, 5, 1)
    )
    assert report.days == ["2026-04-27"]
    report = archive_observations(store, SETTINGS0, today=date(2026, 5, 1))
    assert report.days == ["2026-04-29"]
    assert [d.date for d in store.read_observations().days] == ["2026-04-30"]


def test_days_are_archived_by_the_memory_clock_not_the_wall_clock(store: MemoryStore) -> None:
    # Months-old history (a backfill) with the wall clock far ahead: the newest week of
    # activity stays in observations.md, only what is older than that goes.
    for day in ("2025-09-01", "2025-09-20", "2025-09-25", "2025-09-27"):
        add(store, day, f"fact of {day}")
    report = archive_observations(store, SETTINGS, today=date(2026, 12, 1))
    assert (report.last_activity, report.cutoff) == ("2025-09-27", "2025-09-20")
    assert report.days == ["2025-09-01"]
    kept = [d.date for d in store.read_observations().days]
    assert kept == ["2025-09-20", "2025-09-25", "2025-09-27"]
    # A day dated after today (a skewed clock) does not move the memory's clock past today.
    add(store, "2027-01-01", "from a clock in the future")
    report = archive_observations(store, SETTINGS, today=date(2025, 10, 10))
    assert report.last_activity == "2025-10-10"
    assert report.days == ["2025-09-20", "2025-09-25", "2025-09-27"]


def test_crash_between_the_two_writes_loses_and_duplicates_nothing(
    original: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = original.read_observations().ids()
    before = original.observations_path.read_bytes()
    real = archive_module.atomic_write

    def dies_on_observations(path: Path, data: bytes) -> None:
        if path == original.observations_path:
            raise MemoryFileError("simulated crash after the archive was written")
        real(path, data)

    monkeypatch.setattr(archive_module, "atomic_write", dies_on_observations)
    with pytest.raises(MemoryFileError):
        archive_observations(original, SETTINGS0, today=date(2026, 3, 1))
    # The archive month is written; observations.md is untouched: the days are in both places.
    assert original.observations_path.read_bytes() == before
    last_day = {o.id for o in original.read_observations().observations if o.date == "2026-02-12"}
    moved = ids - last_day
    assert archived_ids(original) == moved
    first = month(original, "2026-02").read_bytes()
    monkeypatch.setattr(archive_module, "atomic_write", real)
    report = archive_observations(original, SETTINGS0, today=date(2026, 3, 1))
    assert report.recovered == ["2026-02-10", "2026-02-11"]
    assert report.files == []  # nothing new to add to the archive
    assert month(original, "2026-02").read_bytes() == first
    assert original.read_observations().ids() == last_day
    archived = parse_observations(first)
    assert len(archived.observations) == len(moved)  # no duplicate lines
    assert archived.ids() == moved


def test_partial_day_in_archive_gets_only_missing_lines(store: MemoryStore) -> None:
    active(store, "2026-05-01")
    add(store, "2026-04-02", "first fact", "second fact")
    archive_observations(store, SETTINGS, today=date(2026, 5, 1))
    # A backfill brings the same day again: one known line, one new, and a new context.
    store.add_observations(
        [
            new_observation("first fact", date="2026-04-02", time="10:00", type="fact"),
            new_observation("third fact", date="2026-04-02", time="12:00", type="fact"),
        ],
        context={"2026-04-02": {"Active task": "backfill"}},
    )
    report = archive_observations(store, SETTINGS, today=date(2026, 5, 1))
    assert report.days == ["2026-04-02"] and report.recovered == []
    april = parse_observations(month(store, "2026-04").read_bytes())
    texts = [o.text for o in april.observations]
    assert sorted(texts) == ["first fact", "second fact", "third fact"]
    assert [d.date for d in april.days] == ["2026-04-02", "2026-04-02"]
    assert april.days[1].context == {"Active task": "backfill"}
    assert april.issues == []


def test_merge_day_reports_present_partial_added() -> None:
    block = ["## 2026-04-02\n", "\n", "### Observations\n", "\n", "- 🟡 one\n", "- 🟡 two\n"]
    lines, outcome = merge_day([], "2026-04-02", block, "\n", "# T")
    assert outcome == "added"
    assert lines[0] == "# T\n"
    same, outcome = merge_day(lines, "2026-04-02", block, "\n", "# T")
    assert (same, outcome) == (lines, "present")
    more = [*block, "- 🟡 three\n"]
    grown, outcome = merge_day(lines, "2026-04-02", more, "\n", "# T")
    assert outcome == "partial"
    assert [o.text for o in parse_observations("".join(grown)).observations] == [
        "one",
        "two",
        "three",
    ]


def test_crlf_and_missing_final_newline_survive(store: MemoryStore) -> None:
    data = (FIXTURES / "broken" / "crlf-observations.md").read_bytes()
    store.observations_path.write_bytes(data.rstrip(b"\r\n"))
    doc = store.read_observations()
    ids = {o.id for o in doc.observations if o.date != doc.days[-1].date}
    assert ids
    archive_observations(store, SETTINGS0, today=date(2099, 1, 1))
    archived = archived_ids(store)
    assert archived == ids
    for path in (store.archive_dir / "observations").glob("*.md"):
        raw = path.read_bytes()
        assert b"\r\n" in raw  # the moved lines keep their own endings
        assert parse_observations(raw).issues == []


def test_archived_observations_stay_searchable(original: MemoryStore) -> None:
    assert search(original, "Tortoise nested prefetch")[0].kind == "observation"
    archive_observations(original, SETTINGS0, today=date(2026, 3, 30))
    hits = search(original, "Tortoise nested prefetch")
    assert hits and hits[0].kind == "archive"
    assert hits[0].file == "archive/observations/2026-02.md"
    assert "nested prefetch" in hits[0].text


def test_observation_written_again_after_its_day_was_archived_is_not_duplicated(
    store: MemoryStore,
) -> None:
    active(store, "2026-05-01")
    first = new_observation("Fact zero", date="2026-04-02", type="fact", importance=0.2)
    store.add_observations([first])
    archive_observations(store, SETTINGS, today=date(2026, 5, 1))
    # Same day, same text: same id, but scored differently, so the line is not the same.
    again = new_observation("Fact zero", date="2026-04-02", type="fact", importance=0.5)
    assert again.id == first.id
    assert store.add_observations([again]) == []  # the archive month already holds its id
    report = archive_observations(store, SETTINGS, today=date(2026, 5, 1))
    assert report.days == []
    archived = parse_observations(month(store, "2026-04").read_bytes())
    assert [o.id for o in archived.observations] == [first.id]
    assert archived.observations[0].importance == 0.2  # the first line stays as it was
    assert [d.date for d in store.read_observations().days] == ["2026-05-01"]


def test_one_run_or_one_run_per_day_give_the_same_archive(tmp_path: Path) -> None:
    def fill(store: MemoryStore, n: int) -> None:
        add(store, f"2026-04-0{n}", f"fact {n} of the month", f"another fact {n}")
        if n == 3:
            store.add_observations([], context={"2026-04-03": {"Active task": "archiving"}})

    together = MemoryStore(tmp_path / "a").ensure()
    for n in range(1, 10):
        fill(together, n)
    active(together, "2026-05-01")
    archive_observations(together, SETTINGS, today=date(2026, 5, 1))
    apart = MemoryStore(tmp_path / "b").ensure()
    for n in range(1, 10):
        fill(apart, n)  # a day of work, then that day's run: the week before it goes
        archive_observations(apart, SETTINGS, today=date(2026, 4, n) + timedelta(days=1))
    active(apart, "2026-05-01")
    archive_observations(apart, SETTINGS, today=date(2026, 5, 1))
    assert month(apart, "2026-04").read_bytes() == month(together, "2026-04").read_bytes()
    assert parse_observations(month(apart, "2026-04").read_bytes()).issues == []

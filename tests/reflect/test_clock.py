"""The memory's own clock and the reflector's state: new by id, history in any order."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.clock import Clock, load_state, state_path
from obsmem.reflect.offline import ReflectReport, reflect
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.settings import Settings

SETTINGS = Settings(llm_provider="none")
TODAY = date(2026, 12, 1)
NOW = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


def obs(
    text: str, day: str, type_: str, i: float, project: str, time: str = "10:00"
) -> Observation:
    prov = Provenance(path=f"/t/{project}.jsonl", line_start=1, project=project)
    return new_observation(
        text, date=day, time=time, type=type_, importance=i, confidence=0.85, provenance=prov
    )


def history() -> list[Observation]:
    """Three old sessions of atlas (September 2025), as a backfill brings them."""
    # fmt: off
    return [
        obs("User asked: set up the project skeleton", "2025-09-01", "task", 0.5, "atlas"),
        obs("User prefers: small commits whose messages explain why", "2025-09-01",
            "preference", 0.7, "atlas"),
        obs("Tech stack: FastAPI 0.115, PostgreSQL 16, Tortoise ORM", "2025-09-01", "event",
            0.45, "atlas"),
        obs("Uses Alembic for database migrations", "2025-09-02", "decision", 0.75, "atlas"),
        obs("The nightly job exports invoices to the data lake", "2025-09-03", "event", 0.5,
            "atlas"),
        obs("The nightly job exports invoices to the data lake.", "2025-09-05", "event", 0.5,
            "atlas", "11:00"),
        obs("User constraint: never push to main without a review", "2025-09-05",
            "preference", 0.7, "atlas"),
        obs("Ran the test suite: 212 passed", "2025-09-05", "milestone", 0.6, "atlas"),
    ]
    # fmt: on


def live() -> list[Observation]:
    """Today's session: atlas again and a new project."""
    # fmt: off
    return [
        obs("User prefers: small commits whose messages explain why!", "2026-12-01",
            "preference", 0.7, "atlas"),
        obs("Uses Aerich for database migrations", "2026-12-01", "decision", 0.75, "atlas"),
        obs("User asked: fix the flaky login test", "2026-12-01", "task", 0.5, "billing"),
        obs("User decided: invoices are rounded half-even", "2026-12-01", "decision", 0.75,
            "billing"),
    ]
    # fmt: on


def run(store: MemoryStore) -> ReflectReport:
    return reflect(store, SETTINGS, today=TODAY, now=NOW)


def without_stamp(store: MemoryStore) -> bytes:
    data = (store.home / "reflections.md").read_bytes()
    return re.sub(rb"_Last updated: [^_]*_", b"", data)


def test_backfill_then_live_and_live_then_backfill_give_the_same_reflections(
    tmp_path: Path,
) -> None:
    first = MemoryStore(tmp_path / "backfill-first").ensure()
    first.add_observations(history())
    run(first)
    first.add_observations(live())
    run(first)
    second = MemoryStore(tmp_path / "live-first").ensure()
    second.add_observations(live())
    run(second)
    second.add_observations(history())
    report = run(second)
    # Not "0 looked at": every backfilled observation but the second sighting of the nightly
    # export, which is taken with the first.
    assert report.considered == len(history()) - 1
    assert without_stamp(first) == without_stamp(second)
    doc = ReflectionsDoc((first.home / "reflections.md").read_bytes())
    where = {p.line.text: p.section.name for p in doc.places()}
    # What one statement is enough for is there; routine lines are not.
    assert where["User decided: invoices are rounded half-even"] == "Active Projects"
    assert where["Uses Aerich for database migrations"] == "Active Projects"
    assert where["User constraint: never push to main without a review"] == (
        "Preferences & Opinions"
    )
    assert not any(t.startswith(("User asked", "Ran the test suite")) for t in where)
    # The restated preference is one line, founded on its first statement, citing both.
    pref = next(p.line for p in doc.places() if p.line.text.startswith("User prefers: small"))
    assert pref.text == history()[1].text and pref.seen == "2026-12-01"
    assert pref.cites == [history()[1].id, live()[0].id]
    # The superseded decision is kept, marked, in both orders.
    assert where[
        "~~Uses Alembic for database migrations~~ → replaced by "
        "Uses Aerich for database migrations (2026-12-01)"
    ] == ("Archive")


def test_history_backfilled_after_a_reflection_is_looked_at(store: MemoryStore) -> None:
    store.add_observations(live())
    assert run(store).considered == len(live())
    store.add_observations(history())  # months older than Last reflected
    report = run(store)
    assert report.considered == len(history()) - 1  # a second sighting goes with its first
    text = (store.home / "reflections.md").read_text(encoding="utf-8")
    assert "never push to main without a review" in text
    assert run(store).considered == 0  # looked at once


def test_old_history_alone_stays_active_on_its_own_clock(store: MemoryStore) -> None:
    # A first import of sessions a year old: nothing is aged by the wall clock.
    store.add_observations(history())
    report = run(store)
    assert (report.demoted, report.retired) == (0, 0)
    doc = ReflectionsDoc((store.home / "reflections.md").read_bytes())
    sections = {p.section.name for p in doc.places()}
    assert "Dormant" not in sections and "Archive" not in sections
    assert report.archive.last_activity == "2025-09-05"
    # The last week of activity stays in observations.md.
    kept = [d.date for d in store.read_observations().days]
    assert kept == ["2025-09-01", "2025-09-02", "2025-09-03", "2025-09-05"]


def test_state_holds_ids_activity_and_months(store: MemoryStore) -> None:
    store.add_observations(history())
    run(store)
    state = load_state(store)
    assert state.known and {o.id for o in history()} <= state.reflected
    assert state.activity == {"": "2025-09-05", "atlas": "2025-09-05"}
    store.add_observations(live())
    run(store)
    state = load_state(store)
    assert state.activity == {"": "2026-12-01", "atlas": "2026-12-01", "billing": "2026-12-01"}
    assert state.months == {}  # September was archived after it was read: read again next time
    run(store)
    assert set(load_state(store).months) == {"2025-09.md"}


def test_unchanged_archive_months_are_not_read_again(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_observations(history())
    run(store)
    store.add_observations(live())
    run(store)  # September is archived now; its month file changed: read once more next time
    run(store)
    read: list[str] = []
    real = MemoryStore.read_observations

    def counting(self: MemoryStore, path: Path | None = None, **kw):  # type: ignore[no-untyped-def]
        read.append(path.name if path is not None else "observations.md")
        return real(self, path, **kw)

    monkeypatch.setattr(MemoryStore, "read_observations", counting)
    store.add_observations([obs("User decided: keep the API read-only", "2026-12-01",
                                "decision", 0.75, "billing")])  # fmt: skip
    report = run(store)
    assert report.promoted == 1
    assert "2025-09.md" not in read[: read.index("observations.md") + 1]


def test_a_lost_state_costs_one_full_read_and_changes_nothing(store: MemoryStore) -> None:
    store.add_observations(history())
    run(store)
    store.add_observations(live())
    run(store)
    before = without_stamp(store)
    state_path(store).unlink()
    report = run(store)
    assert report.promoted == 0 and without_stamp(store) == before
    assert load_state(store).known
    state_path(store).write_text("{not json", encoding="utf-8")
    assert not load_state(store).known
    run(store)
    assert without_stamp(store) == before


def test_clock_is_capped_at_today_and_falls_back_to_the_memory() -> None:
    clock = Clock.from_activity(
        {"": "2027-01-01", "atlas": "2025-09-05", "odd": "not a date"}, TODAY
    )
    assert clock.memory == TODAY  # a future date does not push the clock past today
    assert clock.of("atlas") == date(2025, 9, 5)
    assert clock.of("odd") == TODAY and clock.of("never seen") == TODAY
    assert clock.age("2025-09-01", "atlas") == 4
    assert clock.age("2026-12-24") == 0
    assert Clock.from_activity({}, TODAY).memory == TODAY

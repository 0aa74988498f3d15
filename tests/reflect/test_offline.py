"""The offline reflector: promotion, merging, contradictions, ageing, cap, stamps, a month."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

import obsmem.reflect.offline as offline_module
from obsmem.context.prepare import prepare_context
from obsmem.context.startup import build_context, load_entries
from obsmem.errors import MemoryFileError
from obsmem.memory.markdown import body, split_lines
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.observations import parse_observations
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.archive import archive_observations, archived_ids
from obsmem.reflect.offline import ReflectReport, catch_up, reflect
from obsmem.reflect.reflections import OmLine, ReflectionsDoc
from obsmem.settings import Settings

from .synth import PREFERENCES, add_day

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"
SETTINGS = Settings(llm_provider="none")
NOW = datetime(2026, 3, 31, 4, 0, tzinfo=UTC)


def obs(
    text: str,
    day: str,
    *,
    type: str | None = "fact",
    i: float = 0.5,
    time: str = "10:00",
    project: str | None = None,
) -> Observation:
    prov = Provenance(path="/t/session.jsonl", line_start=1, project=project)
    return new_observation(
        text, date=day, time=time, type=type, importance=i, confidence=0.9, provenance=prov
    )


def work(day: str, project: str | None = None) -> Observation:
    """A routine observation on ``day``: activity that moves the memory's clock, nothing more."""
    return obs(f"Routine work on {day}", day, type="task", i=0.3, project=project)


def run(
    store: MemoryStore, today: str, settings: Settings = SETTINGS, **kw: object
) -> ReflectReport:
    return reflect(store, settings, today=date.fromisoformat(today), now=NOW, **kw)  # type: ignore[arg-type]


def reflections(store: MemoryStore) -> bytes:
    return store.read_bytes(store.home / "reflections.md")


def lines_in(store: MemoryStore) -> dict[str, tuple[str, str | None, OmLine]]:
    """om's lines by text: (section, subsection, line)."""
    doc = ReflectionsDoc(reflections(store))
    return {
        p.line.text: (p.section.name, p.sub.name if p.sub else None, p.line) for p in doc.places()
    }


def test_important_observation_is_promoted_into_its_project(store: MemoryStore) -> None:
    chosen = obs("Chose PostgreSQL over SQLite for writes", "2026-03-02", type="decision", i=0.85,
                 project="atlas")  # fmt: skip
    minor = obs("Renamed a helper function", "2026-03-02", type="task", i=0.3)
    store.add_observations([chosen, minor])
    report = run(store, "2026-03-03")
    assert (report.considered, report.promoted) == (2, 1)
    found = lines_in(store)
    section, sub, line = found["Chose PostgreSQL over SQLite for writes"]
    assert (section, sub, line.emoji, line.seen) == ("Active Projects", "atlas", "🔴", "2026-03-02")
    assert line.cites == [chosen.id]
    entry = next(e for e in parse_sections(reflections(store)).entries if e.cites)
    assert entry.cites == [chosen.id] and entry.id == line.rid and entry.id != chosen.id


def test_seen_on_two_days_is_promoted_once_on_one_day_is_not(store: MemoryStore) -> None:
    first = obs("The weekly sync moved to the small meeting room", "2026-03-02")
    store.add_observations([first])
    store.add_observations([obs("The weekly sync moved to the small meeting room.", "2026-03-02",
                                time="11:00")])  # fmt: skip
    run(store, "2026-03-03")
    assert lines_in(store) == {}
    again = obs("the weekly sync moved to the small meeting room", "2026-03-04")
    store.add_observations([again])
    report = run(store, "2026-03-05")
    assert report.promoted == 1
    (section, _, line), *rest = lines_in(store).values()
    assert rest == [] and section == "Key Facts & Context"
    assert line.seen == "2026-03-04" and line.emoji == "🟡"
    # Founded on the first sighting, citing all three in date order.
    assert line.text == first.text and line.cites[0] == first.id
    assert line.cites[-1] == again.id and len(line.cites) == 3


def test_every_red_line_is_promoted_whatever_its_score(store: MemoryStore) -> None:
    store.observations_path.write_text(
        "# Observations\n\n## 2026-03-02\n\n### Observations\n\n"
        "- 🔴 09:00 Production outage on the gateway\n"
        "- 🔴 10:00 [event|c=0.90|i=0.30] Marked red by hand although scored low\n"
        "- 🟡 11:00 A legacy contextual line\n",
        encoding="utf-8",
    )
    run(store, "2026-03-03")
    found = lines_in(store)
    assert set(found) == {
        "Production outage on the gateway",
        "Marked red by hand although scored low",
    }
    assert {line.emoji for _, _, line in found.values()} == {"🔴"}
    assert found["Production outage on the gateway"][1] is None  # untyped: Recent Themes


def test_types_map_to_the_original_sections(store: MemoryStore) -> None:
    day = "2026-03-02"
    store.add_observations([
        obs("Prefers tabs in Makefiles", day, type="preference", i=0.9),
        obs("Wants the answer before the explanation", day, type="relationship", i=0.9),
        obs("The staging cluster lives in eu-west-3", day, type="fact", i=0.9),
        obs("Lesson: pin the ORM before upgrading", day, type="lesson", i=0.9),
        obs("User is a backend developer based in Berlin", day, type="fact", i=0.9),
        obs("Release 1.2 ships on Friday", day, type="milestone", i=0.9, project="om"),
        obs("Will send the report on Monday", day, type="commitment", i=0.9),
        obs("Tests failed with a timeout in CI", day, type="error", i=0.9),
    ])  # fmt: skip
    run(store, "2026-03-03")
    where = {text: (section, sub) for text, (section, sub, _) in lines_in(store).items()}
    assert where == {
        "Prefers tabs in Makefiles": ("Preferences & Opinions", None),
        "Wants the answer before the explanation": ("Relationship & Communication", None),
        "The staging cluster lives in eu-west-3": ("Key Facts & Context", None),
        "Lesson: pin the ORM before upgrading": ("Key Facts & Context", None),
        "User is a backend developer based in Berlin": ("Core Identity", None),
        "Release 1.2 ships on Friday": ("Active Projects", "om"),
        "Will send the report on Monday": ("Active Projects", "General"),
        "Tests failed with a timeout in CI": ("Recent Themes", None),
    }
    sections = [s.name for s in ReflectionsDoc(reflections(store)).sections]
    assert sections == [
        "Core Identity",
        "Active Projects",
        "Preferences & Opinions",
        "Relationship & Communication",
        "Key Facts & Context",
        "Recent Themes",
    ]


def test_same_fact_later_merges_into_the_existing_line(store: MemoryStore) -> None:
    first = obs("Deploys go out every Tuesday morning", "2026-03-02", i=0.9)
    store.add_observations([first])
    run(store, "2026-03-03")
    second = obs("Deploys go out every Tuesday morning!", "2026-03-06", i=0.5)
    store.add_observations([second])
    report = run(store, "2026-03-07")
    assert (report.promoted, report.merged) == (0, 1)
    (_, _, line), *rest = lines_in(store).values()
    assert rest == []
    assert line.cites == [first.id, second.id] and line.seen == "2026-03-06"
    assert line.emoji == "🔴"  # never lowered by a weaker sighting


def test_hand_written_line_covers_an_observation(store: MemoryStore) -> None:
    shutil.copy(FIXTURES / "original" / "reflections.md", store.home / "reflections.md")
    store.add_observations([
        obs("Prefers pytest with plain asserts; dislikes unittest-style classes", "2026-02-12",
            type="preference", i=0.9)
    ])  # fmt: skip
    report = run(store, "2026-02-13")
    assert (report.covered, report.promoted) == (1, 0)
    assert lines_in(store) == {}


def migrations(tool: str, day: str) -> Observation:
    """A decision of billing's about its migration tool."""
    return obs(f"Uses {tool} for database migrations", day, type="decision", i=0.85,
               project="billing")  # fmt: skip


def test_newer_decision_supersedes_the_older_which_is_kept_marked(store: MemoryStore) -> None:
    old = migrations("Alembic", "2026-03-02")
    store.add_observations([old])
    run(store, "2026-03-03")
    new = migrations("Aerich", "2026-03-05")
    store.add_observations([new])
    report = run(store, "2026-03-06")
    assert report.replaced == 1
    found = {(section, sub): line for section, sub, line in lines_in(store).values()}
    assert set(found) == {("Active Projects", "billing"), ("Archive", None)}
    current, replaced = found["Active Projects", "billing"], found["Archive", None]
    assert current.text == "Uses Aerich for database migrations"
    assert current.cites == [new.id] and current.seen == "2026-03-05"
    # The old fact is not dropped: marked as replaced, with the date and its own citations.
    assert replaced.text == (
        "~~Uses Alembic for database migrations~~ → replaced by "
        "Uses Aerich for database migrations (2026-03-05)"
    )
    assert replaced.cites == [old.id] and replaced.replaced
    # A different subject in the same project is a new line, not a replacement.
    store.add_observations([obs("Chose Redis for the session cache", "2026-03-06",
                                type="decision", i=0.85, project="billing")])  # fmt: skip
    assert run(store, "2026-03-07").replaced == 0
    assert len(lines_in(store)) == 3


def test_an_older_decision_arriving_later_is_kept_as_replaced(store: MemoryStore) -> None:
    store.add_observations([migrations("Aerich", "2026-03-05")])
    run(store, "2026-03-06")
    store.add_observations([migrations("Alembic", "2026-03-02")])  # a backfill of older work
    assert run(store, "2026-03-07").replaced == 1
    found = {(section, sub): line for section, sub, line in lines_in(store).values()}
    assert found["Active Projects", "billing"].text == "Uses Aerich for database migrations"
    assert found["Archive", None].text.startswith("~~Uses Alembic for database migrations~~ →")


@pytest.mark.parametrize(("first_id", "second_id"), [("zzzzzzzzzz", "0000000000"),
                                                    ("0000000000", "zzzzzzzzzz")])  # fmt: skip
def test_the_later_line_wins_a_tie_of_day_and_minute(
    store: MemoryStore, first_id: str, second_id: str
) -> None:
    # Two decisions written within one minute: their ids are hashes, so only the order of
    # the lines in the file says which came last, whichever id sorts first.
    old = obs("We use Memcached for the session cache", "2026-03-02", type="decision", i=0.9,
              time="14:24", project="atlas")  # fmt: skip
    new = obs("We use Redis for the session cache instead of Memcached", "2026-03-02",
              type="decision", i=0.9, time="14:24", project="atlas")  # fmt: skip
    store.add_observations([replace(old, id=first_id), replace(new, id=second_id)])
    assert run(store, "2026-03-03").replaced == 1
    found = {(section, sub): line for section, sub, line in lines_in(store).values()}
    assert found["Active Projects", "atlas"].text == new.text
    assert found["Archive", None].text == f"~~{old.text}~~ → replaced by {new.text} (2026-03-02)"
    prepare_context(store, today=date(2026, 3, 3))
    entries, _ = load_entries(store.context_path)
    shown = build_context(entries, project="atlas", today=date(2026, 3, 3))
    assert "Redis" in shown and "We use Memcached" not in shown


def test_ageing_demotes_after_14_days_and_retires_after_30(store: MemoryStore) -> None:
    store.add_observations([
        obs("Pairing sessions with the platform team", "2026-03-01", type="event", i=0.6),
        obs("Pairing sessions with the platform team", "2026-03-02", type="event", i=0.6),
        obs("Shipped version 2 to production", "2026-03-02", type="milestone", i=0.9,
            project="atlas"),
        obs("Prefers squash merges", "2026-03-02", type="preference", i=0.85),
    ])  # fmt: skip
    run(store, "2026-03-03")
    where = {t: (s, sub) for t, (s, sub, _) in lines_in(store).items()}
    assert where["Pairing sessions with the platform team"] == ("Recent Themes", None)
    # Days without activity age nothing: the memory's clock stands still.
    assert run(store, "2026-05-01").demoted == 0
    store.add_observations([work("2026-03-15", "atlas")])
    report = run(store, "2026-05-01")  # 13 days of activity after the last sighting
    assert report.demoted == 0
    store.add_observations([work("2026-03-16", "atlas")])
    report = run(store, "2026-05-01")
    assert report.demoted == 2
    where = {t: (s, sub) for t, (s, sub, _) in lines_in(store).items()}
    assert where == {
        "Pairing sessions with the platform team": ("Dormant", None),
        "Shipped version 2 to production": ("Dormant", "atlas"),
        "Prefers squash merges": ("Preferences & Opinions", None),  # stable sections never age
    }
    # The emptied project subsection goes; the standard section heading stays.
    assert b"## Active Projects\n\n## Preferences" in reflections(store)
    store.add_observations([work("2026-04-01", "atlas")])
    report = run(store, "2026-05-01")
    assert report.retired == 1
    where = {t: (s, sub) for t, (s, sub, _) in lines_in(store).items()}
    assert where["Pairing sessions with the platform team"] == ("Archive", None)
    assert where["Shipped version 2 to production"] == ("Dormant", "atlas")  # 🔴 stays
    assert where["Prefers squash merges"] == ("Preferences & Opinions", None)


def test_a_project_ages_with_its_own_activity(store: MemoryStore) -> None:
    store.add_observations([
        obs("Shipped the invoice export", "2026-03-02", type="milestone", i=0.9,
            project="billing"),
        obs("Shipped the search page", "2026-03-02", type="milestone", i=0.9, project="atlas"),
    ])  # fmt: skip
    run(store, "2026-03-03")
    # Weeks of work on atlas only: billing's lines wait for billing, atlas's age.
    store.add_observations([work("2026-03-25", "atlas")])
    report = run(store, "2026-03-26")
    assert report.demoted == 1
    where = {t: (s, sub) for t, (s, sub, _) in lines_in(store).items()}
    assert where["Shipped the invoice export"] == ("Active Projects", "billing")
    assert where["Shipped the search page"] == ("Dormant", "atlas")


def test_dormant_line_seen_again_comes_back(store: MemoryStore) -> None:
    store.add_observations([obs("Nightly build is flaky on ARM", "2026-03-01", type="error",
                                i=0.85)])  # fmt: skip
    run(store, "2026-03-02")
    store.add_observations([work("2026-03-20")])
    run(store, "2026-03-20")
    assert lines_in(store)["Nightly build is flaky on ARM"][0] == "Dormant"
    store.add_observations([obs("Nightly build is flaky on ARM", "2026-03-21", type="error")])
    report = run(store, "2026-03-22")
    assert report.revived == 1
    section, _, line = lines_in(store)["Nightly build is flaky on ARM"]
    assert section == "Recent Themes" and line.seen == "2026-03-21" and len(line.cites) == 2
    assert b"## Dormant" not in reflections(store)


def test_cap_moves_least_important_oldest_then_out_of_the_file(store: MemoryStore) -> None:
    start = date(2026, 3, 1)
    made: list[Observation] = []
    for n in range(60):
        day = (start + timedelta(days=n % 20)).isoformat()
        importance = 0.9 if n % 3 == 0 else 0.85
        made.append(obs(f"Fact number {n} about the {'xyzw'[n % 4]}{n} subsystem", day,
                        type="preference", i=importance))  # fmt: skip
    store.add_observations(made)
    settings = Settings(llm_provider="none", reflections_max_lines=50)
    report = run(store, "2026-03-21", settings)
    text = reflections(store)
    assert len(split_lines(text.decode())) <= 50
    assert report.lines_after <= 50 and report.moved_out > 0 and not report.over_cap
    doc = ReflectionsDoc(text)
    kept = [p for p in doc.places() if p.section.name == "Archive"]
    assert len(kept) == 10  # a tenth of the cap, at least ten
    live = [p.line for p in doc.places() if p.section.name != "Archive"]
    moved = [p.line for p in kept]
    assert min(line.rank for line in live) >= max(line.rank for line in moved)
    out_dir = store.archive_dir / "reflections"
    archived = set()
    for path in out_dir.glob("*.md"):
        parsed = parse_observations(path.read_bytes())
        assert parsed.issues == []
        archived |= parsed.ids()
    assert len(archived) == report.moved_out
    all_rids = {p.line.rid for p in doc.places()} | archived
    assert len(all_rids) == 60  # every promoted line is somewhere, once
    # Running again changes nothing: the cap is a fixed point.
    assert not run(store, "2026-03-21", settings).changed


def test_crash_before_reflections_md_is_written_duplicates_nothing(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_observations(
        obs(f"Fact {n} about the {n}th part", "2026-03-02", type="preference", i=0.9)
        for n in range(30)
    )
    tight = Settings(llm_provider="none", reflections_max_lines=20)
    real = offline_module.atomic_write

    def dies_on_reflections(path: Path, data: bytes) -> None:
        if path.name == "reflections.md":
            raise MemoryFileError("simulated crash")
        real(path, data)

    monkeypatch.setattr(offline_module, "atomic_write", dies_on_reflections)
    with pytest.raises(MemoryFileError):
        run(store, "2026-03-03", tight)
    month = store.archive_dir / "reflections" / "2026-03.md"
    first = month.read_bytes()
    assert not (store.home / "reflections.md").exists()
    monkeypatch.setattr(offline_module, "atomic_write", real)
    report = run(store, "2026-03-03", tight)
    assert month.read_bytes() == first  # the lines already there are not added again
    rids = [p.line.rid for p in ReflectionsDoc(reflections(store)).places()]
    moved = parse_observations(first).ids()
    assert len(rids) == len(set(rids)) and not set(rids) & moved
    assert len(rids) + len(moved) == 30 and report.lines_after <= 20
    # A crash that left reflections.md as it was before: the next run finishes the move.
    doc = ReflectionsDoc(reflections(store))
    line = next(doc.places()).line
    archived_line = line.render().encode() + b"\n"
    with month.open("ab") as handle:
        handle.write(archived_line)
    run(store, "2026-03-03", tight)
    assert line.rid not in {p.line.rid for p in ReflectionsDoc(reflections(store)).places()}


def test_cap_never_moves_hand_written_lines(store: MemoryStore) -> None:
    original = (FIXTURES / "original" / "reflections.md").read_bytes()
    (store.home / "reflections.md").write_bytes(original)
    store.add_observations([obs(f"Important fact {n} of the {n}th kind", "2026-02-12", i=0.9)
                            for n in range(5)])  # fmt: skip
    # Below the setting's floor, to get a cap the hand-written lines alone pass.
    report = run(store, "2026-02-13", Settings(llm_provider="none", reflections_max_lines=40))
    assert report.over_cap and report.moved_out == 5
    out = reflections(store).decode()
    for line in original.decode().splitlines():
        if line.startswith(("- ", "  - ")):
            assert line in out.splitlines()


def test_stamps_last_reflected_is_yesterday_and_never_goes_back(store: MemoryStore) -> None:
    store.add_observations([obs("A very important fact", "2026-03-02", i=0.9)])
    report = run(store, "2026-03-10")
    parsed = parse_sections(reflections(store))
    assert parsed.last_reflected == "2026-03-09" == report.last_reflected
    assert parsed.last_updated == "2026-03-31 04:00 UTC"
    before = reflections(store)
    report = run(store, "2026-03-05")  # a clock that went back
    assert report.last_reflected == "2026-03-09"
    assert reflections(store) == before


def test_idempotent_and_dry_run_writes_nothing(store: MemoryStore) -> None:
    shutil.copy(FIXTURES / "original" / "observations.md", store.observations_path)
    shutil.copy(FIXTURES / "original" / "reflections.md", store.home / "reflections.md")
    snapshot = {p: p.read_bytes() for p in store.home.rglob("*.md")}
    settings = Settings(llm_provider="none", archive_after_days=0)
    report = run(store, "2026-03-30", settings, dry_run=True)
    assert {p: p.read_bytes() for p in store.home.rglob("*.md")} == snapshot
    assert report.changed and not report.written
    assert "+- 🔴 User cannot store secrets in the repo" in report.diff
    assert "+_Last reflected: 2026-03-29_" in report.diff
    assert report.archive.days == ["2026-02-10", "2026-02-11"]
    first = run(store, "2026-03-30", settings)
    assert first.written and first.archive.days == report.archive.days
    after = {p: p.read_bytes() for p in store.home.rglob("*.md")}
    second = run(store, "2026-03-30", settings)
    assert not second.changed and not second.written and second.archive.days == []
    assert {p: p.read_bytes() for p in store.home.rglob("*.md")} == after


def test_original_reflections_keep_every_line(store: MemoryStore) -> None:
    original = (FIXTURES / "original" / "reflections.md").read_bytes().decode()
    shutil.copy(FIXTURES / "original" / "observations.md", store.observations_path)
    (store.home / "reflections.md").write_text(original, encoding="utf-8")
    for today in ("2026-02-13", "2026-03-01", "2026-05-01"):
        store.add_observations([obs(f"Important event on {today}", today, type="event", i=0.9)])
        run(store, today)
        out = [body(x) for x in split_lines(reflections(store).decode())]
        remaining = iter(out)
        # Every original line is still there, in its order; stamps are the only changed lines.
        for line in original.splitlines():
            if not line.startswith("_Last"):
                assert any(line == candidate for candidate in remaining), line
    assert parse_sections(reflections(store)).issues == []


def test_missed_days_are_reflected_from_the_archive(store: MemoryStore) -> None:
    store.add_observations([obs("Early important fact", "2026-03-01", i=0.9)])
    run(store, "2026-03-02")
    store.add_observations([obs("Missed important fact", "2026-03-03", i=0.9), work("2026-03-05")])
    archive_observations(store, Settings(archive_after_days=0), today=date(2026, 3, 10))
    assert [d.date for d in store.read_observations().days] == ["2026-03-05"]
    report = run(store, "2026-03-10")
    assert report.last_reflected_before == "2026-03-01"
    assert "Missed important fact" in lines_in(store)


def test_catch_up_runs_only_when_a_day_was_missed(store: MemoryStore) -> None:
    assert catch_up(store, SETTINGS, date(2026, 3, 10)) is None  # nothing ever observed
    assert not (store.home / "reflections.md").exists()
    store.add_observations([obs("Catch-up fact", "2026-03-08", i=0.9)])
    report = catch_up(store, SETTINGS, date(2026, 3, 10))
    assert report is not None and report.promoted == 1
    assert catch_up(store, SETTINGS, date(2026, 3, 10)) is None  # reflected through yesterday
    # The next day, yesterday (03-10) was not reflected yet: the first observe of the day does it.
    assert catch_up(store, SETTINGS, date(2026, 3, 11)) is not None
    assert catch_up(store, SETTINGS, date(2026, 3, 11)) is None


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.rglob("*.md")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_any_memory_file_as_reflections_keeps_its_lines(store: MemoryStore, path: Path) -> None:
    data = path.read_bytes()
    (store.home / "reflections.md").write_bytes(data)
    store.add_observations([obs("Fact worth keeping forever", "2026-03-01", i=0.9)])
    run(store, "2026-03-02")
    out = reflections(store)
    kept = [
        x.rstrip(b"\r") for x in data.splitlines() if not re.search(rb"Last (updated|reflected)", x)
    ]
    remaining = iter(x.rstrip(b"\r") for x in out.splitlines())
    assert all(any(x == y for y in remaining) for x in kept)
    assert b"Fact worth keeping forever (seen 2026-03-01; ^" in out
    assert not run(store, "2026-03-02").changed


# -- a month of observations ---------------------------------------------------------------

START = date(2026, 3, 1)


def test_a_month_reflects_into_a_readable_file_within_bounds(store: MemoryStore) -> None:
    written: set[str] = set()
    for index in range(30):
        written |= {o.id for o in add_day(store, START, index)}
        today = START + timedelta(days=index + 1)
        now = datetime(today.year, today.month, today.day, 4, 0, tzinfo=UTC)
        report = reflect(store, SETTINGS, today=today, now=now)
        assert report.written
    data = (store.home / "reflections.md").read_bytes()
    count = len(split_lines(data.decode()))
    assert 200 <= count <= 600
    parsed = parse_sections(data)
    assert parsed.issues == []
    assert parsed.last_reflected == "2026-03-30"
    assert parsed.last_updated == "2026-03-31 04:00 UTC"
    assert parsed.sections()[:2] == ["Core Identity", "Active Projects / atlas"]
    assert {"Preferences & Opinions", "Relationship & Communication", "Key Facts & Context"} <= set(
        parsed.sections()
    )
    doc = ReflectionsDoc(data)
    places = list(doc.places())
    # Every line cites observations that exist, in observations.md or in the archive.
    known = store.read_observations().ids() | archived_ids(store)
    assert known == written
    for place in places:
        assert place.line.cites and set(place.line.cites) <= known
    texts = [p.line.text for p in places]
    assert len(texts) == len(set(texts))  # nothing promoted twice
    # Preferences seen on two days are promoted; chores and one-off notes are not.
    assert set(PREFERENCES[:4]) <= set(texts)
    assert not any(t.startswith(("Renamed a variable", "Read the changelog")) for t in texts)
    assert any(t.startswith("Uses Aerich") for t in texts)
    assert any(
        t.startswith("~~Uses Alembic") and "~~ → replaced by Uses Aerich" in t for t in texts
    )
    assert any(p.section.name == "Dormant" for p in places)
    # Only the last week of activity is left in observations.md; the rest is archived.
    assert store.read_observations().days[0].date == "2026-03-23"
    # Twenty quiet days later nothing has aged: ages run on the memory's clock.
    later = reflect(store, SETTINGS, today=START + timedelta(days=50))
    assert (later.retired, later.demoted, later.promoted) == (0, 0, 0)
    # Then a day of work twenty days on: old themes retire to ## Archive, the file still parses.
    store.add_observations([work((START + timedelta(days=49)).isoformat())])
    later = reflect(store, SETTINGS, today=START + timedelta(days=50))
    assert later.retired > 0 and later.promoted == 0
    assert parse_sections((store.home / "reflections.md").read_bytes()).issues == []


def test_reflecting_twice_in_a_row_changes_nothing(store: MemoryStore) -> None:
    for index in range(12):
        add_day(store, START, index)
    today = START + timedelta(days=12)
    first = reflect(store, SETTINGS, today=today)
    assert first.written and first.promoted > 20
    files = {p: p.read_bytes() for p in store.home.rglob("*.md")}
    second = reflect(store, SETTINGS, today=today)
    assert not second.changed and not second.written and second.promoted == 0
    assert {p: p.read_bytes() for p in store.home.rglob("*.md")} == files


def test_backfilled_observation_dated_before_last_reflected_is_still_reflected(
    store: MemoryStore,
) -> None:
    store.add_observations([obs("Renamed a helper function", "2026-03-02", type="task", i=0.3)])
    run(store, "2026-03-05")  # Last reflected: 2026-03-04
    late = obs("Chose Redis Streams over Kafka for the event bus", "2026-03-01", type="decision",
               i=0.9, project="atlas")  # fmt: skip
    store.add_observations([late])  # a backfill writes an older day after the last reflection
    run(store, "2026-03-06")
    found = lines_in(store)
    assert found["Chose Redis Streams over Kafka for the event bus"][2].cites == [late.id]

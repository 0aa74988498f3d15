"""Preparing profile.md, active.md and context.json: generated blocks only, nothing else moves."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from obsmem.context.prepare import BEGIN, END, prepare_context, replace_block, tokens
from obsmem.context.startup import ContextEntry, build_context, load_entries
from obsmem.demo import prepare
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.settings import load_settings


def test_replace_block_keeps_every_other_line() -> None:
    original = b"# Profile\r\n\r\nHand-written line\r\nno newline at end"
    once = replace_block(original, ["- generated"], "Profile")
    assert once.startswith(b"# Profile\r\n\r\nHand-written line\r\nno newline at end\r\n")
    assert BEGIN.encode() in once and b"- generated\r\n" in once and END.encode() in once
    twice = replace_block(once + b"after the block\r\n", ["- new"], "Profile")
    assert b"- generated" not in twice and b"- new\r\n" in twice
    assert twice.endswith(END.encode() + b"\r\nafter the block\r\n")
    assert replace_block(b"", ["- x"], "Active").startswith(b"# Active\n\n" + BEGIN.encode())


def test_prepare_from_sample_memory_is_idempotent(tmp_path: Path) -> None:
    store = prepare(tmp_path / "mem").store
    hand = (store.home / "profile.md").read_bytes()
    first = prepare_context(store, today=date(2026, 11, 29))
    assert set(first.written) == {"profile.md", "active.md", "context.json"}
    profile = (store.home / "profile.md").read_bytes()
    assert profile.startswith(hand)  # the hand-written profile is kept as it was
    data = json.loads(store.context_path.read_bytes())
    sections = {e["section"] for e in data["entries"]}
    assert {"About the user", "Project", "Decisions", "Open loops", "Recent work"} <= sections
    second = prepare_context(store, today=date(2026, 11, 29))
    assert second.written == []
    assert (store.home / "profile.md").read_bytes() == profile


def test_open_loops_and_projects_from_observations(store: MemoryStore) -> None:
    prov = Provenance("/t/s.jsonl", 1, 2, "s", "claude", "atlas")
    store.add_observations([
        new_observation("Will write the migration guide", date="2026-11-28", time="10:00",
                        type="commitment", importance=0.7, provenance=prov),
        new_observation("Shipped the importer", date="2026-11-28", time="11:00", type="milestone",
                        importance=0.9, completed=True, provenance=prov),
        new_observation("Old commitment", date="2026-10-01", type="commitment", importance=0.7),
    ])  # fmt: skip
    prepare_context(store, today=date(2026, 11, 29))
    active = (store.home / "active.md").read_text()
    assert "- **atlas** (last active 2026-11-28)" in active
    assert "Will write the migration guide" in active.split("## Open Loops")[1]
    assert "Old commitment" not in active
    entries = json.loads(store.context_path.read_bytes())["entries"]
    loops = [e for e in entries if e["section"] == "Open loops"]
    assert [e["project"] for e in loops] == ["atlas"] and loops[0]["observed"] is True


TODAY = date(2026, 12, 1)


def prov(project: str) -> Provenance:
    return Provenance(f"/t/{project}.jsonl", 1, 2, "s", "claude", project)


def observe(
    store: MemoryStore,
    *lines: tuple[str, str, str, str, float, str],
    done: bool = False,
    context: dict[str, dict[str, str]] | None = None,
) -> None:
    """Add observations given as (text, date, time, type, importance, project)."""
    store.add_observations(
        [new_observation(text, date=day, time=at, type=kind, importance=imp,
                         completed=done, provenance=prov(project))
         for text, day, at, kind, imp, project in lines],
        context=context,
    )  # fmt: skip


def entries_of(store: MemoryStore, section: str) -> list[str]:
    data = json.loads(store.context_path.read_bytes())
    return [e["text"] for e in data["entries"] if e["section"] == section]


def generated(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.split(BEGIN)[1].split(END)[0].strip("\n").splitlines()


def test_derived_files_stay_within_their_budgets_at_any_size(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = []
    for n in range(3000):
        day = f"2026-11-{1 + n // 120:02d}"
        kind = ("preference", "decision", "commitment", "fact", "milestone", "event")[n % 6]
        text = f"Observation {n} about widget {n % 97} and gadget {n % 89} in module {n}"
        batch.append(new_observation(
            text, date=day, time=f"{8 + n % 12:02d}:{n % 60:02d}", type=kind,
            importance=0.9 if n % 3 == 0 else 0.6, provenance=prov(f"p{n % 7}")))  # fmt: skip
    store.add_observations(batch)
    prepare_context(store, today=TODAY)
    for name in ("profile.md", "active.md"):
        block = generated(store.home / name)
        assert len(block) > 20  # there was plenty to choose from
        assert tokens(block) <= 1500, name
    data = json.loads(store.context_path.read_bytes())
    assert len(data["entries"]) <= 3000
    # Each derived file has its own setting.
    monkeypatch.setenv("OM_PROFILE_TOKENS", "300")
    monkeypatch.setenv("OM_ACTIVE_TOKENS", "400")
    prepare_context(store, today=TODAY)
    assert tokens(generated(store.home / "profile.md")) <= 300
    assert 300 < tokens(generated(store.home / "active.md")) <= 400


def test_the_most_important_lines_win_the_budget(store: MemoryStore) -> None:
    lines = [(f"Prefers option {n} for the thing number {n} in every case", "2026-11-20",
              "10:00", "preference", 0.6, "atlas") for n in range(400)]  # fmt: skip
    lines.append(("Prefers tabs over spaces everywhere", "2026-11-01", "09:00", "preference",
                  0.95, "atlas"))  # fmt: skip
    observe(store, *lines)
    settings = load_settings({"OM_PROFILE_TOKENS": "200"})
    prepare_context(store, today=TODAY, settings=settings)
    assert "- Prefers tabs over spaces everywhere" in generated(store.home / "profile.md")


def test_a_later_completion_closes_an_open_loop(store: MemoryStore) -> None:
    observe(
        store,
        ("User will write the migration guide before the release", "2026-11-26", "10:00",
         "commitment", 0.7, "atlas"),
        ("Review the pull request of the importer", "2026-11-26", "11:00", "task", 0.7, "atlas"),
        ("Fix the flaky Redis tests in CI", "2026-11-27", "09:00", "task", 0.7, "atlas"),
        ("Document the webhook retries", "2026-11-26", "12:00", "task", 0.7, "hermes-bot"),
        ("Set up the staging database", "2026-11-28", "10:00", "task", 0.7, "atlas"),
    )  # fmt: skip
    observe(
        store,
        ("Migration guide written and published", "2026-11-27", "16:00", "milestone", 0.7,
         "atlas"),
        ("Flaky Redis tests fixed: each worker has its own database", "2026-11-27", "15:00",
         "event", 0.6, "atlas"),
        ("Documented the webhook retries completed", "2026-11-26", "15:00", "event", 0.6,
         "atlas"),
        ("Staging database set up", "2026-11-27", "18:00", "milestone", 0.6, "atlas"),
    )  # fmt: skip
    prepare_context(store, today=TODAY)
    loops = entries_of(store, "Open loops")
    assert "Review the pull request of the importer" in loops  # nothing completed it
    assert "User will write the migration guide before the release" not in loops  # milestone
    assert "Fix the flaky Redis tests in CI" not in loops  # "fixed" with the same words
    assert "Document the webhook retries" in loops  # completed in another project
    assert "Set up the staging database" in loops  # the completion came before it was asked
    assert "Review the pull request" in " ".join(generated(store.home / "active.md"))


def test_only_open_commitments_and_tasks_are_loops(store: MemoryStore) -> None:
    observe(
        store,
        ("Sub-agent asked to explore the repository layout", "2026-11-28", "10:00", "event",
         0.7, "atlas"),
        ("Explored the codebase structure and summarised it", "2026-11-28", "10:05", "fact",
         0.7, "atlas"),
    )  # fmt: skip
    observe(store, ("Wrote the changelog", "2026-11-28", "11:00", "task", 0.7, "atlas"), done=True)
    prepare_context(store, today=TODAY)
    assert entries_of(store, "Open loops") == []


def test_near_duplicates_appear_once(store: MemoryStore) -> None:
    (store.home / "reflections.md").write_text(
        "# Reflections — Long-Term Memory\n\n## Preferences & Opinions\n\n"
        "- Prefers small commits whose messages explain why\n"
        "- Uses Alembic for migrations\n"
    )
    (store.home / "profile.md").write_text(
        "# Profile\n\n## Preferences\n\n- Small commits with messages that explain why\n"
    )
    observe(
        store,
        (
            "User prefers small commits with messages that explain why",
            "2026-11-28",
            "10:00",
            "preference",
            0.8,
            "atlas",
        ),
        ("Uses Aerich for migrations", "2026-11-28", "11:00", "preference", 0.8, "atlas"),
    )
    prepare_context(store, today=TODAY)
    about = entries_of(store, "About the user")
    commits = [t for t in about if "small commits" in t.lower()]
    assert commits == ["Small commits with messages that explain why"]  # the hand line stays
    assert "Uses Alembic for migrations" in about and "Uses Aerich for migrations" in about
    # the hand-written line is not repeated in om's part of profile.md either
    assert not any("small commits" in line.lower() for line in generated(store.home / "profile.md"))


def test_the_latest_current_context_is_last_time_here(store: MemoryStore) -> None:
    observe(
        store,
        ("Set up CI for atlas", "2026-11-20", "10:00", "event", 0.6, "atlas"),
        context={"2026-11-20": {"Active task": "Old task", "Suggested next": "Old next"}},
    )
    observe(
        store,
        ("Fixing flaky CI", "2026-11-27", "10:00", "event", 0.6, "atlas"),
        context={
            "2026-11-27": {
                "Active task": "Fixing flaky CI on atlas",
                "Key entities": "Redis, xdist",
                "Suggested next": "Pin the Redis image",
                "Open questions": "Why only on 4 workers?",
            }
        },
    )
    observe(store, ("Bot commands", "2026-11-28", "10:00", "event", 0.6, "hermes-bot"),
            context={"2026-11-28": {"Active task": "Telegram bot commands"}})  # fmt: skip
    prepare_context(store, today=TODAY)
    data = json.loads(store.context_path.read_bytes())
    last = [(e["project"], e["text"]) for e in data["entries"] if e["section"] == "Last time here"]
    assert sorted(last) == [
        ("atlas", "Active task: Fixing flaky CI on atlas"),
        ("atlas", "Open questions: Why only on 4 workers?"),
        ("atlas", "Suggested next: Pin the Redis image"),
        ("hermes-bot", "Active task: Telegram bot commands"),
    ]
    text = build_context([ContextEntry(**e) for e in data["entries"]], project="atlas",
                         today=TODAY)  # fmt: skip
    assert "## Last time here (2026-11-27, 4 days ago)" in text
    assert "- Suggested next: Pin the Redis image" in text


def test_old_history_is_as_useful_as_yesterdays(store: MemoryStore) -> None:
    """Windows run from the project's last activity: a project last touched in March still
    shows its last days, its decisions and its open loops."""
    observe(
        store,
        ("Chose Tortoise ORM over SQLAlchemy", "2026-03-01", "10:00", "decision", 0.9, "atlas"),
        ("Write the load test", "2026-03-02", "10:00", "commitment", 0.7, "atlas"),
        ("Importer rewritten in streaming style", "2026-03-02", "11:00", "milestone", 0.85,
         "atlas"),
    )  # fmt: skip
    prepare_context(store, today=TODAY)
    assert entries_of(store, "Decisions") == ["Chose Tortoise ORM over SQLAlchemy"]
    assert entries_of(store, "Open loops") == ["Write the load test"]
    assert entries_of(store, "Recent work") == ["Importer rewritten in streaming style"]


def test_the_context_of_a_prepared_memory_labels_other_projects(store: MemoryStore) -> None:
    observe(
        store,
        ("Chose PostgreSQL for atlas", "2026-11-28", "10:00", "decision", 0.9, "atlas"),
        ("Bot reconnect loop fixed", "2026-11-29", "10:00", "milestone", 0.9, "hermes-bot"),
        ("Answer the webhook question", "2026-11-29", "11:00", "task", 0.7, "hermes-bot"),
    )
    prepare_context(store, today=TODAY)
    data = json.loads(store.context_path.read_bytes())
    text = build_context([ContextEntry(**e) for e in data["entries"]], project="atlas",
                         today=TODAY)  # fmt: skip
    assert "- 3 days ago: Chose PostgreSQL for atlas" in text
    assert "- [hermes-bot] 2 days ago: Answer the webhook question" in text
    assert "- [hermes-bot] 2 days ago: Bot reconnect loop fixed" in text


def test_lines_saying_the_same_in_other_words_appear_once(store: MemoryStore) -> None:
    """A migrated profile.md and om's reflections often say one thing twice in other words."""
    (store.home / "reflections.md").write_text(
        "# Reflections — Long-Term Memory\n\n## Preferences & Opinions\n\n"
        "- Prefers Tortoise ORM to SQLAlchemy (finds SQLAlchemy too verbose)\n"
        "- Backend developer who works mostly in Python and ships small changes\n"
        "- Prefers pytest over unittest\n"
    )
    (store.home / "profile.md").write_text(
        "# Profile\n\n## Preferences\n\n- Tortoise ORM over SQLAlchemy\n"
        "- Backend developer, Python first\n- Migrating from unittest to pytest\n"
    )
    observe(
        store,
        ("Tests pass: `npm test -- --run src/a.test.ts`: 16 passed", "2026-11-28", "10:00",
         "milestone", 0.6, "atlas"),
        ("Verification passed: `npm test -- --run src/a.test.ts`; `npm run build`", "2026-11-28",
         "10:05", "milestone", 0.6, "atlas"),
    )  # fmt: skip
    prepare_context(store, today=TODAY)
    about = entries_of(store, "About the user")
    assert [t for t in about if "tortoise" in t.lower()] == ["Tortoise ORM over SQLAlchemy"]
    assert [t for t in about if "developer" in t.lower()] == ["Backend developer, Python first"]
    # two words in common are not the same statement
    assert "Prefers pytest over unittest" in about and "Migrating from unittest to pytest" in about
    # work done on one command still tells two outcomes
    recent = entries_of(store, "Recent work")
    assert len([t for t in recent if "npm test" in t]) == 2, recent


def test_the_demos_startup_context_says_nothing_twice(tmp_path: Path) -> None:
    """The demo once showed "Prefers small commits whose messages explain why" beside "Small
    commits with messages that explain why"."""
    from itertools import combinations

    from obsmem.context.gather import content_words
    from obsmem.context.startup import run_context
    from obsmem.observe.run import run_observe
    from obsmem.observe.scoring import bigram_jaccard
    from obsmem.reflect.offline import reflect

    demo = prepare(tmp_path / "mem", agents_dir=tmp_path / "agents")
    settings = load_settings(demo.environ)
    run_observe(demo.store, settings, environ=demo.environ, flush=True, provider=None)
    reflect(demo.store, settings, provider=None)
    text = run_context("plain", cwd="/home/dev/atlas", environ=demo.environ)
    lines = [line[2:].split(": ", 1)[-1] for line in text.splitlines() if line.startswith("- ")]
    assert len(lines) >= 8
    commits = [line for line in lines if "small commits" in line.lower()]
    assert len(commits) == 1, commits
    for a, b in combinations(lines, 2):
        similarity = bigram_jaccard(" ".join(content_words(a)), " ".join(content_words(b)))
        assert similarity < 0.8, (a, b)


def test_a_loop_that_is_the_last_active_task_is_said_once(store: MemoryStore) -> None:
    observe(store, ("User asked: show tools", "2026-11-28", "10:00", "task", 0.6, "atlas"),
            ("Show tools", "2026-11-28", "09:00", "task", 0.6, "hermes-bot"),
            context={"2026-11-28": {"Active task": "show tools"}})  # fmt: skip
    prepare_context(store, today=TODAY)
    assert entries_of(store, "Last time here") == ["Active task: show tools"]
    # The other project's loop stays: atlas's last state is not shown in its context.
    assert entries_of(store, "Open loops") == ["Show tools"]


def test_a_hand_written_line_plans_only_in_words_of_a_plan(store: MemoryStore) -> None:
    (store.home / "active.md").write_text(
        "# Active\n\n## Current Projects\n\n- Atlas: 1.0 release on 2026-12-05\n"
        "- Atlas: incident of 2026-11-01 reviewed with the team\n"
    )
    prepare_context(store, today=TODAY)
    data = json.loads(store.context_path.read_bytes())
    planned = {e["text"]: e.get("planned") for e in data["entries"]}
    assert planned == {
        "Atlas: 1.0 release on 2026-12-05": "2026-12-05",
        "Atlas: incident of 2026-11-01 reviewed with the team": None,
    }


def test_a_superseded_observation_is_not_served_again(store: MemoryStore) -> None:
    # The replaced fact is the more important one: without knowing it was replaced, the
    # context would pick it over the line that replaced it.
    from obsmem.reflect.offline import reflect

    store.add_observations([
        new_observation("We use Memcached for the session cache", date="2026-11-28",
                        time="10:00", type="decision", importance=0.95, provenance=prov("atlas")),
        new_observation("We use Redis for the session cache instead of Memcached",
                        date="2026-11-28", time="11:00", type="decision", importance=0.85,
                        provenance=prov("atlas")),
    ])  # fmt: skip
    settings = load_settings()
    assert reflect(store, settings, today=date(2026, 11, 29), provider=None).replaced == 1
    prepare_context(store, today=date(2026, 11, 29))
    decisions = entries_of(store, "Decisions")
    assert any("Redis" in text for text in decisions)
    assert not any(text.startswith("We use Memcached") for text in decisions)


def test_a_preference_the_last_active_task_repeats_stays_in_the_profile(
    store: MemoryStore,
) -> None:
    # The startup context shows the active task, which holds the constraint, and so leaves the
    # constraint out; profile.md does not show the task and must keep it.
    observe(
        store,
        ("User constraint: Use pytest, not unittest.", "2026-11-28", "13:02", "preference",
         0.8, "tidepool"),
        context={"2026-11-28": {"Active task": "Fix the import. Use pytest, not unittest."}},
    )  # fmt: skip
    prepare_context(store, today=TODAY)
    assert "- User constraint: Use pytest, not unittest." in generated(store.home / "profile.md")
    entries, _ = load_entries(store.context_path)
    shown = build_context(entries, project="tidepool", today=TODAY)
    assert shown.count("Use pytest, not unittest") == 1


def test_a_preference_said_of_one_project_is_that_projects(store: MemoryStore) -> None:
    observe(
        store,
        ("User constraint: I deploy tidepool on a Raspberry Pi 4, so no native dependencies.",
         "2026-11-28", "13:44", "preference", 0.8, "tidepool"),
        ("User constraint: Use pytest, not unittest.", "2026-11-28", "13:45", "preference", 0.8,
         "tidepool"),
        ("Chose Stripe for the checkout", "2026-11-29", "10:00", "decision", 0.8, "shop"),
    )  # fmt: skip
    prepare_context(store, today=TODAY)
    profile = generated(store.home / "profile.md")
    assert "- User constraint: Use pytest, not unittest." in profile
    assert not any("Raspberry Pi" in line for line in profile)
    entries, _ = load_entries(store.context_path)
    mine = build_context(entries, project="tidepool", today=TODAY)
    assert "Raspberry Pi 4" in mine.split("## This project (tidepool)")[1]
    # Elsewhere it is another project's line, labelled so, not a preference of the user's.
    shop = build_context(entries, project="shop", today=TODAY)
    assert [line for line in shop.splitlines() if "Raspberry Pi" in line] == [
        "- [tidepool] User constraint: I deploy tidepool on a Raspberry Pi 4, so no native "
        "dependencies."
    ]


def test_a_wider_rule_holding_a_tasks_words_does_not_settle_the_task(store: MemoryStore) -> None:
    # A durable line that contains the task's text states a rule, not that the task was done:
    # the task stays an open loop and its project stays active.
    task = new_observation(
        "Add type hints to the parser module",
        date="2026-11-28",
        time="10:00",
        type="task",
        importance=0.7,
        provenance=prov("atlas"),
    )
    store.add_observations([task])  # fmt: skip
    (store.home / "reflections.md").write_text(
        "# Reflections — Long-Term Memory\n\n## Preferences & Opinions\n\n"
        "- 🟡 Always add type hints to the parser module and every other module you touch "
        f"(seen 2026-11-28; ^{task.id}) ^r7t8y9u0i1\n",
        encoding="utf-8",
    )
    prepare_context(store, today=TODAY)
    assert entries_of(store, "Open loops") == ["Add type hints to the parser module"]
    active = (store.home / "active.md").read_text(encoding="utf-8")
    assert "- **atlas** (last active 2026-11-28)" in active
    assert "Add type hints to the parser module" in active.split("## Open Loops")[1]

"""Importance floors and de-duplication, as pure functions."""

from __future__ import annotations

import pytest

from obsmem.memory.store import new_observation
from obsmem.observe.scoring import Deduper, apply_floors, bigram_jaccard, floor_for


@pytest.mark.parametrize(
    ("text", "obs_type", "floor"),
    [
        ("Released v2.3.1 to PyPI", "event", 0.8),
        ("Deployed the API to production", "event", 0.8),
        ("Switched to Tortoise ORM", "fact", 0.75),
        ("Anything at all", "decision", 0.75),
        ("The Pro plan costs $49 per month", "fact", 0.75),
        ("Blocked on the vendor's API keys", "task", 0.8),
        ("Renamed a local variable", "event", 0.0),
        ("We'll release on Friday", "task", 0.8),
        ("Cut release 4.2 for the mobile app", "event", 0.8),
        # The noun names a thing, not a release.
        ("Skills available: docs research, the CodeMie release skill", "event", 0.0),
        ("Opened the release notes template", "event", 0.0),
        ("We'll deploy to staging after lunch", "task", 0.8),
        ("Deploy it to the edge nodes", "task", 0.8),
        ("The deploy token stays out of the notes", "task", 0.0),
        ("The staging deploy failed: AccessDenied", "event", 0.8),
    ],
)
def test_floor_for(text: str, obs_type: str, floor: float) -> None:
    assert floor_for(text, obs_type) == floor


def test_apply_floors_raises_but_never_lowers() -> None:
    low = new_observation("Deployed to production", date="2026-01-02", type="event", importance=0.2)
    assert apply_floors(low).importance == 0.8
    assert low.priority == "🔴"
    high = new_observation(
        "Deployed to production", date="2026-01-02", type="event", importance=0.95
    )
    assert apply_floors(high).importance == 0.95
    done = new_observation(
        "Released 1.0", date="2026-01-02", type="milestone", importance=0.3, completed=True
    )
    assert apply_floors(done).priority == "✅"
    assert done.importance == 0.8


def test_bigram_jaccard() -> None:
    assert bigram_jaccard("chose postgres for writes", "Chose Postgres for writes!") == 1.0
    assert bigram_jaccard("a b c d", "e f g h") == 0.0
    assert 0 < bigram_jaccard("the cat sat on the mat", "the cat sat on a mat") < 0.8


def obs(text: str) -> object:
    return new_observation(text, date="2026-01-02")


def test_deduper_exact_substring_and_similar() -> None:
    dedupe = Deduper(
        [new_observation("Chose PostgreSQL over SQLite for concurrent writes", date="2026-01-01")]
    )
    assert dedupe.is_duplicate("chose   postgresql over sqlite for CONCURRENT writes")
    assert dedupe.is_duplicate("PostgreSQL over SQLite for concurrent writes")  # contained
    assert dedupe.is_duplicate("Chose PostgreSQL over SQLite for concurrent writes today")
    assert not dedupe.is_duplicate("Chose Redis for the job queue")
    # Short texts are not swallowed by containment.
    assert not Deduper(
        [new_observation("Fixed the failing test in the parser module", date="2026-01-01")]
    ).is_duplicate("Fixed")


def test_deduper_admit_remembers_within_a_batch() -> None:
    dedupe = Deduper()
    first = new_observation("User prefers small commits", date="2026-01-02")
    again = new_observation("User prefers small commits.", date="2026-01-03")
    assert dedupe.admit(first)
    assert not dedupe.admit(again)

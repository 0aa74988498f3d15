"""Current Context blocks: replaced in place, created under the heading, nothing else moved."""

from __future__ import annotations

from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore, new_observation

ORIGINAL = """# Observations

## 2026-02-10

### Current Context

- **Active task:** Setting up FastAPI
- **Key entities:** Atlas

### Observations

- 🔴 14:00 User is building a task API

---

## 2026-02-11

### Observations

- 🟡 09:00 Wrote models
"""


def test_replaces_existing_context_only() -> None:
    doc = parse_observations(ORIGINAL.encode())
    new = doc.with_context("2026-02-10", {"Active task": "Writing tests", "Suggested next": "CI"})
    text = new.render().decode()
    assert "- **Active task:** Writing tests\n- **Suggested next:** CI\n\n### Observations" in text
    assert "Setting up FastAPI" not in text
    assert new.day("2026-02-10").context == {"Active task": "Writing tests", "Suggested next": "CI"}
    # Everything outside the block is unchanged.
    before, after = (
        ORIGINAL.split("- **Active task:**")[0],
        ORIGINAL.split("- **Key entities:** Atlas\n")[1],
    )
    assert text.startswith(before) and text.endswith(after)


def test_adds_context_under_day_heading() -> None:
    doc = parse_observations(ORIGINAL.encode())
    text = doc.with_context("2026-02-11", {"Active task": "Models"}).render().decode()
    assert (
        "## 2026-02-11\n\n### Current Context\n\n- **Active task:** Models\n\n"
        "### Observations\n\n- 🟡 09:00 Wrote models\n" in text
    )
    assert (
        parse_observations(text.encode()).day("2026-02-11").observations[0].text == "Wrote models"
    )


def test_creates_missing_day_with_context() -> None:
    doc = parse_observations(ORIGINAL.encode())
    new = doc.with_context("2026-02-12", {"Active task": "Release"})
    day = new.day("2026-02-12")
    assert day is not None and day.context == {"Active task": "Release"}
    assert [d.date for d in new.days] == ["2026-02-10", "2026-02-11", "2026-02-12"]
    assert new.render().startswith(ORIGINAL.encode())


def test_store_writes_context_with_observations_and_skips_no_op(store: MemoryStore) -> None:
    obs = new_observation(
        "Chose Redis for queues", date="2026-02-12", time="10:00", type="decision", importance=0.9
    )
    added = store.add_observations([obs], context={"2026-02-12": {"Active task": "Queues"}})
    assert [o.id for o in added] == [obs.id]
    doc = store.read_observations()
    assert doc.day("2026-02-12").context == {"Active task": "Queues"}
    mtime = store.observations_path.stat().st_mtime_ns
    assert store.add_observations([obs], context={"2026-02-12": {"Active task": "Queues"}}) == []
    assert store.observations_path.stat().st_mtime_ns == mtime  # nothing rewritten

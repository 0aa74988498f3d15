"""Changing an observation's importance or type by id, in place, under the lock."""

from __future__ import annotations

import pytest

from obsmem.amend import amend
from obsmem.errors import NotFound, UsageError
from obsmem.memory.atomic import atomic_write
from obsmem.memory.store import MemoryStore, new_observation


def _line(store: MemoryStore, text: str, path=None) -> str:  # type: ignore[no-untyped-def]
    content = (path or store.observations_path).read_text(encoding="utf-8")
    return next(line for line in content.splitlines() if text in line)


def test_importance_and_type_change_in_place(store: MemoryStore) -> None:
    obs = new_observation("Use uv for installs", date="2026-11-20", time="10:00", type="fact",
                          importance=0.3, confidence=0.8)  # fmt: skip
    store.add_observations([obs])
    before = store.observations_path.read_text(encoding="utf-8").splitlines()
    result = amend(store, obs.id, importance=0.85, type="preference")
    assert result.changed and result.file == "observations.md"
    after = store.observations_path.read_text(encoding="utf-8").splitlines()
    assert len(after) == len(before)
    assert (
        _line(store, "Use uv")
        == f"- 🔴 10:00 [preference|c=0.80|i=0.85] Use uv for installs ^{obs.id}"
    )
    assert [a for a, b in zip(after, before, strict=True) if a != b] == [result.after]
    again = store.read_observations().observations[0]
    assert (again.id, again.importance, again.type) == (obs.id, 0.85, "preference")


def test_only_the_type_keeps_the_importance(store: MemoryStore) -> None:
    obs = new_observation("Ship on Fridays never", date="2026-11-20", type="fact", importance=0.6)
    store.add_observations([obs])
    amend(store, obs.id, type="lesson")
    assert "[lesson|i=0.60]" in _line(store, "Ship on Fridays")
    assert "🟡" in _line(store, "Ship on Fridays")


def test_a_legacy_line_gets_a_tag_and_keeps_its_id(store: MemoryStore) -> None:
    legacy = "# Observations\n\n## 2026-11-20\n\n- 🟢 09:00 Old style line\n"
    atomic_write(store.observations_path, legacy.encode())
    old = store.read_observations().observations[0]
    amend(store, old.id, importance=0.9)
    new = store.read_observations().observations[0]
    assert new.id == old.id and new.importance == 0.9 and new.type == "fact"


def test_a_completed_line_stays_completed(store: MemoryStore) -> None:
    obs = new_observation("Migrated the CI", date="2026-11-20", type="milestone",
                          importance=0.5, completed=True)  # fmt: skip
    store.add_observations([obs])
    amend(store, obs.id, importance=0.95)
    assert _line(store, "Migrated the CI").startswith("- ✅ [milestone|i=0.95]")


def test_an_archived_observation_is_changed_in_its_month(store: MemoryStore) -> None:
    obs = new_observation("Archived fact", date="2025-01-05", type="fact", importance=0.5)
    month = store.archive_month("2025-01")
    month.parent.mkdir(parents=True)
    line = f"- 🟡 [fact|i=0.50] Archived fact ^{obs.id}\n"
    atomic_write(month, f"# Observations\n\n## 2025-01-05\n\n{line}".encode())
    result = amend(store, obs.id, importance=0.1)
    assert result.file == "archive/observations/2025-01.md"
    assert "[fact|i=0.10]" in _line(store, "Archived fact", month)


def test_nothing_asked_or_bad_values_change_nothing(store: MemoryStore) -> None:
    obs = new_observation("Keep me", date="2026-11-20", type="fact")
    store.add_observations([obs])
    before = store.observations_path.read_bytes()
    for kwargs in ({}, {"importance": 1.5}, {"importance": -0.1}, {"type": "opinion"}):
        with pytest.raises(UsageError):
            amend(store, obs.id, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        amend(store, "zzzzzzzzzz", importance=0.5)
    assert store.observations_path.read_bytes() == before


def test_the_same_values_write_nothing(store: MemoryStore) -> None:
    obs = new_observation("Stable", date="2026-11-20", type="fact", importance=0.5)
    store.add_observations([obs])
    stamp = store.observations_path.stat().st_mtime_ns
    assert not amend(store, obs.id, importance=0.5, type="fact").changed
    assert store.observations_path.stat().st_mtime_ns == stamp


def test_the_ledger_keeps_the_corrected_line_and_the_provenance(store: MemoryStore) -> None:
    from obsmem.memory.ledger import read_journal
    from obsmem.memory.model import Provenance

    source = Provenance(path="/t/s.jsonl", line_start=3, line_end=4, agent="codex", project="x")
    obs = new_observation("Cache TTL is 60 s", date="2026-11-20", type="fact", importance=0.5,
                          provenance=source)  # fmt: skip
    store.add_observations([obs])
    amend(store, obs.id, importance=0.9, type="decision")
    assert store.provenance()[obs.id] == source
    date, line = read_journal(store.ledger_path).lines[obs.id]
    assert date == "2026-11-20"
    assert line == _line(store, "Cache TTL")


def test_a_multi_line_observation_keeps_its_other_lines(store: MemoryStore) -> None:
    text = (
        "# Observations\n\n## 2026-11-20\n\n### Observations\n\n"
        "- 🟢 09:00 The release checklist, as agreed\n"
        "  with the ops team (meaning 2026-11-27):\n"
        "  freeze, tag, announce\n"
        "- 🟡 10:00 Next line\n"
    )
    atomic_write(store.observations_path, text.encode())
    old = store.read_observations().observations[0]
    assert (old.line, old.line_end) == (7, 9)
    result = amend(store, old.id, importance=0.9, type="decision")
    assert result.changed and result.line == 7
    after = store.observations_path.read_text(encoding="utf-8").splitlines()
    assert after[6] == f"- 🔴 09:00 [decision|i=0.90] The release checklist, as agreed ^{old.id}"
    assert after[6] == result.after
    assert [*after[:6], *after[7:]] == [*text.splitlines()[:6], *text.splitlines()[7:]]
    new = store.read_observations().observations[0]
    assert (new.id, new.text, new.importance, new.type) == (old.id, old.text, 0.9, "decision")
    assert (new.line, new.line_end) == (7, 9)
    assert not amend(store, old.id, importance=0.9).changed  # the same again: nothing written


def test_a_dated_reference_is_kept_once(store: MemoryStore) -> None:
    obs = new_observation("Demo for the board next Friday", date="2026-11-20", type="commitment",
                          referenced_date="2026-11-27")  # fmt: skip
    store.add_observations([obs])
    amend(store, obs.id, importance=0.95)
    line = _line(store, "Demo for the board")
    assert line.endswith(f"next Friday (meaning 2026-11-27) ^{obs.id}")
    assert store.read_observations().observations[0].referenced_date == "2026-11-27"

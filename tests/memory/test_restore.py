"""Observations a stale editor buffer dropped are reported by ``om doctor`` and put back."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.doctor import run_checks
from obsmem.memory.ledger import append_forgotten, read_journal
from obsmem.memory.model import Provenance
from obsmem.memory.restore import check_missing, find_missing, restore_missing
from obsmem.memory.store import MemoryStore, new_observation

PROV = Provenance(path="/t/session.jsonl", line_start=3, line_end=4, agent="claude")


def _obs(text: str, date: str = "2026-02-11", time_: str = "10:00"):  # type: ignore[no-untyped-def]
    return new_observation(text, date=date, time=time_, type="fact", provenance=PROV)


def _stale_save(store: MemoryStore) -> tuple[list[str], str]:
    """Observe, let an editor load the file, observe more, then let the editor save its buffer
    (with a line it added). Returns the ids the save dropped and the hand line."""
    first = store.add_observations([_obs(f"early fact {i}") for i in range(3)])
    buffer = store.observations_path.read_text(encoding="utf-8")
    later = store.add_observations(
        [_obs(f"later fact {i}", time_="11:00") for i in range(4)]
        + [_obs("a fact of another day", date="2026-02-12")]
    )
    hand = "- 🔴 12:00 my own note, typed in the editor\n"
    store.observations_path.write_text(buffer + hand, encoding="utf-8")
    then = time.time() - 60
    os.utime(store.observations_path, (then, then))
    assert first
    return [o.id for o in later], hand


def test_ids_dropped_by_a_stale_save_are_reported(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    dropped, _ = _stale_save(store)
    report = find_missing(store)
    assert report.missing == sorted(dropped)
    assert report.restorable == sorted(dropped)
    verdict, detail, fix = check_missing(store)
    assert verdict == "fail"
    assert detail.startswith("5 observations known to the ledger are missing from memory")
    assert "om doctor --restore" in detail + fix


def test_restore_puts_them_back_with_ids_days_and_provenance_and_keeps_the_hand_edit(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path)
    dropped, hand = _stale_save(store)
    report = restore_missing(store)
    assert sorted(report.restored) == sorted(dropped)
    doc = store.read_observations()
    assert set(dropped) <= doc.ids()
    assert hand in store.observations_path.read_text(encoding="utf-8")
    assert [o.text for o in doc.day("2026-02-12").observations] == ["a fact of another day"]  # type: ignore[union-attr]
    assert all(store.provenance()[i] == PROV for i in dropped)
    assert find_missing(store).missing == []
    assert restore_missing(store).restored == []  # nothing twice


def test_archived_and_forgotten_ids_are_not_missing(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    dropped, _ = _stale_save(store)
    month = store.archive_dir / "observations" / "2026-02.md"
    month.parent.mkdir(parents=True)
    day = next(i for i in dropped if store.provenance().get(i))
    line = read_journal(store.ledger_path).lines[day][1]
    month.write_text(f"# Observations\n\n## 2026-02-11\n\n### Observations\n\n{line}\n")
    append_forgotten(store.ledger_path, [dropped[1]])
    missing = find_missing(store).missing
    assert day not in missing and dropped[1] not in missing
    assert len(missing) == 3
    restore_missing(store)
    assert dropped[1] not in store.read_observations().ids()


def test_a_write_om_did_not_finish_is_not_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tmp_path)
    store.add_observations([_obs("kept")])
    from obsmem.memory import store as store_module

    def killed(*_: object, **__: object) -> None:
        raise KeyboardInterrupt  # killed between the ledger entry and the markdown write

    monkeypatch.setattr(store_module, "atomic_write", killed)
    with pytest.raises(KeyboardInterrupt):
        store.add_observations([_obs("never written")])
    assert find_missing(store).missing == []


def test_doctor_reports_then_restores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(tmp_path)
    _stale_save(store)
    monkeypatch.setenv("OM_HOME", str(tmp_path))
    checks = {c.name: c for c in run_checks(store)}
    assert checks["observations kept"].verdict == "fail"
    result = CliRunner().invoke(cli, ["doctor", "--restore"], catch_exceptions=False)
    assert "[fixed] observations kept: put back 5 observation(s)" in result.stdout
    result = CliRunner().invoke(cli, ["doctor", "--json"], catch_exceptions=False)
    verdicts = {c["name"]: c["verdict"] for c in json.loads(result.stdout)}
    assert verdicts["observations kept"] == "ok"


def test_forgetting_leaves_no_line_in_the_ledger(tmp_path: Path) -> None:
    from obsmem.forgetting import forget

    store = MemoryStore(tmp_path)
    gone, _ = store.add_observations([_obs("zanzibar secret plan"), _obs("other fact")])
    forget(store, [gone.id])
    data = store.ledger_path.read_bytes()
    assert b"zanzibar" not in data and b"other fact" in data
    assert find_missing(store).missing == []

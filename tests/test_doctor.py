"""``om doctor``'s own checks: every database, om's template, a routine write, a crashing check."""

from __future__ import annotations

import pytest

from obsmem import doctor
from obsmem.cli import cli
from obsmem.doctor import Check, run_checks
from obsmem.index import rebuild
from obsmem.memory.store import MemoryStore, new_observation


def _checks(store: MemoryStore) -> dict[str, Check]:
    return {check.name: check for check in run_checks(store, {})}


def test_the_template_profile_om_wrote_is_no_hand_edit(store: MemoryStore) -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["remember", "Chose Caddy over nginx"])
    assert result.exit_code == 0, result.output
    store = MemoryStore().ensure()
    assert "_Nothing known yet._" in (store.home / "profile.md").read_text(encoding="utf-8")
    assert _checks(store)["file profile.md"].verdict == "ok"


def test_a_hand_line_outside_the_generated_block_is_still_reported(store: MemoryStore) -> None:
    (store.home / "profile.md").write_text("# Profile\n\nloose text\n", encoding="utf-8")
    assert _checks(store)["file profile.md"].verdict == "warn"


def test_an_index_behind_a_routine_write_is_not_a_repair(store: MemoryStore) -> None:
    store.add_observations([new_observation("Chose PostgreSQL for billing", date="2026-01-05")])
    rebuild(store)
    store.add_observations(
        [new_observation("Deploys go through GitHub Actions", date="2026-01-06")]
    )
    index = _checks(store)["search index"]
    assert index.verdict == "ok" and "indexed now" in index.detail, index
    assert _checks(store)["search index"].detail.endswith("up to date")


def test_a_damaged_index_is_a_repair(store: MemoryStore) -> None:
    store.add_observations([new_observation("Chose PostgreSQL for billing", date="2026-01-05")])
    rebuild(store)
    for suffix in ("-wal", "-shm"):
        store.index_path.with_name(store.index_path.name + suffix).unlink(missing_ok=True)
    store.index_path.write_bytes(b"garbage" * 1000)
    assert _checks(store)["search index"].verdict == "repaired"


def test_every_database_is_checked(store: MemoryStore) -> None:
    (store.state_dir / "extra.sqlite3").write_bytes(b"not sqlite at all" * 100)
    checks = _checks(store)
    assert checks["capture state"].verdict == "ok"
    assert checks["transcript turns"].verdict == "ok"
    assert checks["database extra.sqlite3"].verdict == "fail"


def test_a_check_that_crashes_is_one_failed_line(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_store: MemoryStore) -> Check:
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(doctor, "_check_ledger", broken)
    checks = _checks(store)
    ledger = checks["provenance ledger"]
    assert ledger.verdict == "fail" and "ValueError: boom second line" in ledger.detail
    assert "search index" in checks  # the checks after it still ran

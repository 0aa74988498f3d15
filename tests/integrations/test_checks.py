"""om doctor and om status see the integrations: present, broken, leftovers, modes and the queue."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from obsmem.doctor import run_checks
from obsmem.integrations import install as orchestrator
from obsmem.integrations.checks import installed_summary, integration_checks
from obsmem.integrations.queue import Job, enqueue, pending
from obsmem.integrations.setup import configure_llm
from obsmem.memory.store import MemoryStore


def _verdicts(name_prefix: str) -> list[str]:
    return [c.verdict for c in integration_checks() if c.name.startswith(name_prefix)]


def test_nothing_installed_is_fine_and_says_how(fake_om: Path) -> None:
    checks = integration_checks()
    first = checks[0]
    assert (first.name, first.verdict, first.fix) == ("integrations", "ok", "run: om install")
    assert installed_summary() == []


def test_installed_claude_is_checked_and_listed(
    fake_om: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_COMMAND", str(fake_om))
    orchestrator.install(["claude"], scheduler="none")
    assert installed_summary() == ["claude"]
    assert _verdicts("claude") and set(_verdicts("claude")) == {"ok"}
    fake_om.unlink()  # om moved away: every hook now starts nothing
    assert "fail" in _verdicts("claude")
    broken = [c for c in run_checks(MemoryStore()) if c.broken]
    assert broken and all(c.fix for c in broken)


def test_settings_file_readable_by_others_fails() -> None:
    path = configure_llm("none")
    path.chmod(0o644)
    check = next(c for c in integration_checks() if c.name == "settings file")
    assert check.verdict == "fail" and "chmod 600" in check.fix


def test_a_stuck_queue_is_reported() -> None:
    job = enqueue(Job("/t/a.jsonl"))
    old = job.stat().st_mtime - 7200
    os.utime(job, (old, old))
    check = next(c for c in integration_checks() if c.name == "hook queue")
    assert check.verdict == "warn" and "om worker" in check.fix
    assert pending() == [job]  # checking never drops work


def test_legacy_entries_are_reported(fake_om: Path) -> None:
    from obsmem.paths import agent_home

    settings = agent_home("claude") / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", '
        '"command": "/old/lib/observational_memory/hooks/claude/session-start.sh"}]}]}}\n'
    )
    check = next(c for c in integration_checks() if c.name == "original om")
    assert check.verdict == "warn" and "om install" in check.fix
    assert "session-start.sh" in check.detail or "Claude" in check.detail


def test_a_config_folder_open_to_others_is_reported() -> None:
    path = configure_llm("none")
    path.parent.chmod(0o755)
    check = next(c for c in integration_checks() if c.name == "settings file")
    assert check.verdict == "warn" and "chmod 700" in check.fix
    path.parent.chmod(0o700)
    check = next(c for c in integration_checks() if c.name == "settings file")
    assert check.verdict == "ok"


def test_doctor_warns_about_an_unknown_setting_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_SEARCH_BACKND", "bm25")
    found = [c for c in integration_checks() if c.name == "settings names"]
    assert [c.verdict for c in found] == ["warn"]
    assert "did you mean OM_SEARCH_BACKEND?" in found[0].detail

"""``om reflect`` through click's CliRunner: dry run, JSON, the summary, the LLM note."""

from __future__ import annotations

import json
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.llm_server import ErrorReply, FakeLLMServer

from obsmem.cli import cli
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import MemoryStore, new_observation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "mem"
    monkeypatch.setenv("OM_HOME", str(path))
    monkeypatch.setenv("OM_LLM_PROVIDER", "none")
    # Every day before the last day of activity (2026-02-12) goes to the archive.
    monkeypatch.setenv("OM_ARCHIVE_AFTER_DAYS", "0")
    path.mkdir()
    shutil.copy(FIXTURES / "original" / "observations.md", path / "observations.md")
    shutil.copy(FIXTURES / "original" / "reflections.md", path / "reflections.md")
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def snapshot(home: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in home.rglob("*.md")}


def test_dry_run_prints_the_diff_and_days_and_writes_nothing(home: Path) -> None:
    before = snapshot(home)
    code, out = run("reflect", "--dry-run")
    assert code == 0
    assert snapshot(home) == before
    assert out.startswith("--- a/reflections.md\n+++ b/reflections.md\n")
    assert "+- 🔴 User cannot store secrets in the repo" in out
    assert "would archive 2 day(s) older than 2026-02-12" in out
    assert "2026-02-10, 2026-02-11" in out
    assert "reflections.md would go from 48 to" in out


def test_reflect_writes_and_reports_then_has_nothing_to_do(home: Path) -> None:
    code, out = run("reflect")
    assert code == 0
    assert "archived 2 day(s) older than 2026-02-12" in out
    assert "--- a/" not in out
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    assert parse_sections((home / "reflections.md").read_bytes()).last_reflected == yesterday
    assert (home / "archive" / "observations" / "2026-02.md").is_file()
    code, out = run("reflect")
    assert code == 0
    assert "reflections.md is up to date: nothing to write" in out


def test_json_report(home: Path) -> None:
    code, out = run("reflect", "--json", "--dry-run")
    assert code == 0
    data = json.loads(out)
    assert data["dry_run"] is True and data["written"] is False
    assert data["last_reflected_before"] == "2026-02-11"
    assert data["archive"]["days"] == ["2026-02-10", "2026-02-11"]
    assert data["diff"].startswith("--- a/reflections.md")


def test_llm_failure_and_fallback_are_noted(
    home: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer
) -> None:
    monkeypatch.setenv("OM_LLM_PROVIDER", "openai-compatible")
    monkeypatch.setenv("OM_LLM_BASE_URL", fake_llm.base_url_openai)
    monkeypatch.setenv("OM_LLM_MODEL", "m")
    monkeypatch.setenv("OM_LLM_MAX_RETRIES", "0")
    fake_llm.push(ErrorReply(401, "bad key"))
    store = MemoryStore(home)
    store.add_observations([new_observation("x" * 30, date=date.today().isoformat())])
    code, out = run("reflect")
    assert code == 0
    notes = [line for line in out.splitlines() if "LLM reflector" in line]
    assert len(notes) == 1 and "provider failed" in notes[0]
    assert notes[0].endswith("reflected by the offline rules (OM_FALLBACK=rules)")

"""``om backfill`` puts history into long-term memory at once, whatever ran before it."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from obsmem.cli import cli


def _claude_session(name: str, text: str, stamp: str) -> None:
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-dev-atlas"
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "type": "user",
        "uuid": f"{name}-1",
        "sessionId": name,
        "cwd": "/home/dev/atlas",
        "timestamp": stamp,
        "message": {"role": "user", "content": text},
    }
    (folder / f"{name}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")


def _om(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"OM_LLM_PROVIDER": "none"})
    assert result.exit_code == 0, result.output
    return result.output


def test_a_backfill_after_live_capture_is_reflected_at_once() -> None:
    # The first hook after `om install` observes today's session and runs the daily reflection.
    today = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _claude_session("live", "Let's go with PostgreSQL for the database.", today)
    _om("observe", "--flush")
    reflections = Path(os.environ["OM_HOME"]) / "reflections.md"
    assert "small commits" not in reflections.read_text(encoding="utf-8")
    # Then months of history: its durable facts must not wait for tomorrow's reflection.
    _claude_session(
        "old", "I prefer small commits whose messages explain why.", "2025-09-01T10:00:00Z"
    )
    _om("backfill")
    assert "small commits" in reflections.read_text(encoding="utf-8")


def test_a_dry_run_counts_the_turns_and_writes_nothing() -> None:
    _claude_session("a", "Let's go with PostgreSQL for the database.", "2025-09-01T10:00:00Z")
    _claude_session(
        "b", "I prefer small commits whose messages explain why.", "2025-09-02T10:00:00Z"
    )
    home = Path(os.environ["OM_HOME"])
    assert _om("backfill", "--dry-run").startswith("2 turn(s) in 2 transcript(s)")
    assert not (home / "observations.md").exists()
    # Nothing was claimed: the real backfill still reads both, and a dry run after it finds none.
    _om("backfill")
    assert "small commits" in (home / "observations.md").read_text(encoding="utf-8")
    assert _om("backfill", "--dry-run").startswith("0 turn(s) in 0 transcript(s)")

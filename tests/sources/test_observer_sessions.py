"""Sessions of om's own observer (run through an agent's CLI) are never captured again: the
readers give no turns for a session whose working directory is the observer's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from obsmem import paths
from obsmem.sources import claude, codex

DEMO = Path(__file__).resolve().parents[2] / "obsmem" / "demo" / "data" / "transcripts"
CLAUDE = next((DEMO / "claude" / "projects").glob("*/*.jsonl"))
CODEX = next((DEMO / "codex" / "sessions").rglob("*.jsonl"))


def _moved(record: Any, cwd: str) -> Any:
    """``record`` with every ``cwd`` field set to ``cwd``."""
    if isinstance(record, dict):
        return {k: cwd if k == "cwd" else _moved(v, cwd) for k, v in record.items()}
    if isinstance(record, list):
        return [_moved(v, cwd) for v in record]
    return record


def _copy(source: Path, target: Path, cwd: str) -> Path:
    lines = [json.dumps(_moved(json.loads(line), cwd)) for line in source.read_text().splitlines()]
    target.write_text("\n".join(lines) + "\n")
    return target


@pytest.mark.parametrize(("reader", "source"), [(claude, CLAUDE), (codex, CODEX)])
def test_a_session_in_the_observer_directory_gives_no_turns(
    reader: Any, source: Path, tmp_path: Path
) -> None:
    ordinary = _copy(source, tmp_path / f"a-{source.name}", "/home/dev/atlas")
    assert reader.read(ordinary, flush=True).turns
    observer = str(paths.observer_dir() / "x")
    ours = _copy(source, tmp_path / f"b-{source.name}", observer)
    done = reader.read(ours, flush=True)
    assert done.turns == []
    assert done.end_offset == ours.stat().st_size  # read to the end: the cursor moves past it

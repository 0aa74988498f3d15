"""The kept transcript turns: stored by capture exactly once, only redacted, searched with filters.

Transcripts are real Claude Code (and, through the demo, Codex) lines in the agents' homes the
test environment points at, read by ``run_observe`` with the offline rules.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from obsmem.demo import prepare
from obsmem.errors import UsageError
from obsmem.index import rebuild
from obsmem.index.db import remove_index_files
from obsmem.index.turns import TurnStore, search_turns
from obsmem.memory.store import MemoryStore
from obsmem.observe.run import run_observe
from obsmem.search.recall import Filters
from obsmem.settings import load_settings
from obsmem.sources.capture import Pending, read_pending
from tests.redact.test_core import POSITIVES

Row = tuple[str, int, int, int, str, str]


def claude_line(text: str, *, ts: str = "2026-03-01T10:00:00Z", role: str = "user") -> str:
    content: object = text
    if role == "assistant":
        # One record, two turns: the words and the tool call (both start on the same line).
        content = [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x"}},
        ]
    record = {
        "type": role,
        "sessionId": "s1",
        "cwd": "/home/dev/atlas",
        "timestamp": ts,
        "message": {"role": role, "content": content},
    }
    return json.dumps(record) + "\n"


def transcript(project: str = "-home-dev-atlas", name: str = "s1.jsonl") -> Path:
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / project
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def observe(store: MemoryStore, environ: dict[str, str] | None = None, **extra: str) -> None:
    settings = load_settings({**(environ or os.environ), "OM_LLM_PROVIDER": "none", **extra})
    run_observe(store, settings, environ=environ, flush=True, provider=None)


def stored(store: MemoryStore) -> list[Row]:
    """Every kept turn: (path, first line, part, id, role, text), in the order they were stored."""
    with sqlite3.connect(store.turns_path) as conn:
        rows = conn.execute(
            "SELECT source_path, line_start, part, id, role, text FROM turns ORDER BY id"
        ).fetchall()
    return [tuple(row) for row in rows]


def expected(path: Path) -> list[tuple[str, int, str, str]]:
    """What capture reads from the whole file now: (path, first line, role, redacted text)."""
    pending = Pending(path, "claude", path.stat(), 0, 0, "new")
    turns = read_pending(pending, flush=True).turns
    return [(t.source_path, t.line_start, t.role, t.text) for t in turns]


def without_ids(rows: list[Row]) -> list[tuple[str, int, str, str]]:
    return [(path, line, role, text) for path, line, _, _, role, text in rows]


def test_capture_keeps_each_turn_once_across_runs_and_appends(store: MemoryStore) -> None:
    path = transcript()
    path.write_text(
        claude_line("Why does the Redis test hang?")
        + claude_line("Let me run the suite.", role="assistant", ts="2026-03-01T10:00:05Z")
    )
    observe(store)
    first = stored(store)
    assert without_ids(first) == expected(path)
    assert [(line, part) for _, line, part, *_ in first] == [(1, 0), (2, 0), (2, 1)]
    observe(store)  # nothing new: nothing stored
    assert stored(store) == first
    with path.open("a") as handle:
        handle.write(claude_line("Use one database per worker.", ts="2026-03-01T10:05:00Z"))
    observe(store)
    grown = stored(store)
    assert grown[: len(first)] == first  # appended, the earlier rows untouched
    assert without_ids(grown) == expected(path)
    # A forgotten cursor makes capture read the whole file again: still each turn once.
    store.state_db_path.unlink()
    observe(store)
    assert stored(store) == grown


def test_a_replaced_transcript_keeps_only_its_new_turns(store: MemoryStore) -> None:
    path = transcript()
    path.write_text(claude_line("first version of the session") + claude_line("more words"))
    observe(store)
    replacement = path.with_suffix(".new")
    replacement.write_text(claude_line("a different session entirely, rewritten"))
    replacement.replace(path)  # a new inode and new first bytes: read again from the start
    observe(store)
    assert without_ids(stored(store)) == expected(path)
    assert [text for *_, text in stored(store)] == ["a different session entirely, rewritten"]


def test_secrets_never_reach_the_turns_file(store: MemoryStore) -> None:
    path = transcript()
    path.write_text("".join(claude_line(case.text) for case in POSITIVES))
    observe(store)
    assert len(stored(store)) == len(POSITIVES)
    kept = b"".join(
        p.read_bytes() for p in store.turns_path.parent.glob(store.turns_path.name + "*")
    )
    leaked = [case.id for case in POSITIVES if case.secret.encode() in kept]
    assert leaked == []
    assert all("[REDACTED" in text for *_, text in stored(store)), stored(store)[:3]


@pytest.fixture
def demo(tmp_path: Path) -> tuple[MemoryStore, dict[str, str]]:
    """The demo's Claude Code (2026-11-26) and Codex (2026-11-28) sessions, both of project
    atlas, plus a Claude Code session of project billing on 2026-11-27; all observed."""
    run = prepare(tmp_path / "mem", agents_dir=tmp_path / "agents")
    folder = Path(run.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-dev-billing"
    folder.mkdir(parents=True)
    line = claude_line(
        "The billing migration guide needs a rollback section", ts="2026-11-27T12:00:00Z"
    )
    (folder / "b1.jsonl").write_text(line.replace("/home/dev/atlas", "/home/dev/billing"))
    observe(run.store, run.environ)
    return run.store, run.environ


def found(store: MemoryStore, query: str, **filters: str) -> list[tuple[str, str, str]]:
    hits = search_turns(store, query, filters=Filters(**filters), limit=20)  # type: ignore[arg-type]
    return sorted((h["provenance"]["agent"], h["provenance"]["project"], h["date"]) for h in hits)


def test_search_filters_by_day_project_and_agent(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = demo
    claude = ("claude", "atlas", "2026-11-26")
    billing = ("claude", "billing", "2026-11-27")
    codex = ("codex", "atlas", "2026-11-28")
    assert found(store, "migration guide") == [claude, claude, billing, codex]
    assert found(store, "migration guide", agent="codex") == [codex]
    assert found(store, "migration guide", project="billing") == [billing]
    assert found(store, "migration guide", since="2026-11-27") == [billing, codex]
    assert found(store, "migration guide", until="2026-11-27") == [claude, claude, billing]
    assert found(store, "migration guide", since="2026-11-27", until="2026-11-27") == [billing]
    assert found(store, "migration guide", project="nowhere") == []


def test_hits_cite_the_transcript_lines_and_the_exact_words(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = demo
    (hit,) = search_turns(store, "CI keeps failing", limit=1)
    prov = hit["provenance"]
    assert Path(prov["source_path"]).name == "7d3f2c1e-5b8a-4e6f-9a2d-1c4b7e8f0a3d.jsonl"
    assert (prov["line_start"], prov["line_end"]) == (1, 1)
    assert hit["citation"] == f"{prov['source_path']}:1"
    assert hit["text"] == (
        "The CI keeps failing on the Redis tests. Can you look? We run pytest with xdist and 4 "
        "workers."
    )
    assert hit["role"] == "user" and hit["timestamp"] == "2026-11-26T14:02:11Z"
    assert "failing" in hit["snippet"] and hit["truncated"] is False
    (short,) = search_turns(store, "CI keeps failing", limit=1, max_chars=10)
    assert short["text"] == "The CI kee" and short["truncated"] is True


def test_the_demo_secrets_are_redacted_in_the_kept_turns(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = demo
    (hit,) = search_turns(store, "staging password deploy token", limit=1)
    assert "hunter2" not in hit["text"] and "ghp_" not in hit["text"]
    assert search_turns(store, "hunter2") == []


def test_reindex_and_a_deleted_index_leave_the_turns_alone(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = demo
    before = stored(store)
    assert before
    rebuild(store)
    remove_index_files(store.index_path)
    assert stored(store) == before
    assert search_turns(store, "conventional commits")


def test_raw_turns_off_keeps_none(store: MemoryStore) -> None:
    transcript().write_text(claude_line("nothing of this is kept"))
    observe(store, OM_RAW_TURNS="off")
    assert not store.turns_path.exists()
    assert search_turns(store, "kept") == []


def test_turns_path_follows_its_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "private" / "turns.db"
    monkeypatch.setenv("OM_TURNS_PATH", str(elsewhere))
    store = MemoryStore(tmp_path / "mem").ensure()
    assert store.turns_path == elsewhere
    transcript().write_text(claude_line("kept somewhere else"))
    observe(store)
    assert elsewhere.is_file() and not (store.state_dir / "turns.sqlite3").exists()
    assert oct(elsewhere.stat().st_mode & 0o777) == "0o600"
    assert [h["text"] for h in search_turns(store, "somewhere")] == ["kept somewhere else"]


def test_type_and_importance_do_not_apply_to_turns(store: MemoryStore) -> None:
    with pytest.raises(UsageError, match="no type or importance"):
        search_turns(store, "x", filters=Filters(type="decision"))
    with pytest.raises(UsageError, match="no type or importance"):
        search_turns(store, "x", filters=Filters(min_importance=0.5))
    with pytest.raises(UsageError, match="not a date"):
        search_turns(store, "x", filters=Filters(since="yesterday"))
    assert search_turns(store, "*** ???") == []


def test_storing_the_same_turns_twice_counts_them_once(tmp_path: Path) -> None:
    path = transcript()
    path.write_text(claude_line("once") + claude_line("twice", role="assistant"))
    turns = read_pending(Pending(path, "claude", path.stat(), 0, 0, "new"), flush=True).turns
    with TurnStore(tmp_path / "t.sqlite3") as kept:
        assert kept.count() == 0 and not (tmp_path / "t.sqlite3").exists()
        assert kept.add(turns) == 3
        assert kept.add(turns) == 0
        assert kept.add(turns[:1], replaced=str(path)) == 1
        assert kept.count() == 1


def test_backfill_fills_the_turns_too() -> None:
    from click.testing import CliRunner

    from obsmem.cli import cli

    transcript().write_text(claude_line("An old session about the flaky websocket reconnect"))
    result = CliRunner().invoke(cli, ["backfill", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    store = MemoryStore()
    (hit,) = search_turns(store, "websocket reconnect")
    assert hit["text"] == "An old session about the flaky websocket reconnect"
    assert hit["provenance"]["line_start"] == 1


def test_forget_removes_the_turns_of_a_line_range_and_keeps_them_out(store: MemoryStore) -> None:
    path = transcript()
    lines = [claude_line(f"turn number {n} says kumquat{n}") for n in range(1, 7)]
    path.write_text("".join(lines), encoding="utf-8")
    observe(store)
    shown = stored(store)[0][0]
    assert len(stored(store)) == 6
    with TurnStore(store.turns_path) as turns:
        assert turns.forget([(shown, 2, 3)], dry_run=True) == 2
        assert len(stored(store)) == 6  # a dry run only counts
        assert turns.forget([(shown, 2, 3)]) == 2
    assert [row[1] for row in stored(store)] == [1, 4, 5, 6]
    data = b"".join(p.read_bytes() for p in store.state_dir.glob("turns.sqlite3*"))
    assert b"kumquat2" not in data and b"kumquat3" not in data and b"kumquat4" in data
    assert search_turns(store, "kumquat2") == []
    # The transcript read again from its start (its cursor lost): the range stays forgotten.
    store.state_db_path.unlink()
    observe(store)
    assert [row[1] for row in stored(store)] == [1, 4, 5, 6]
    with TurnStore(store.turns_path) as turns:
        assert turns.forget([(shown, 2, 3)]) == 0  # again: nothing left, no error

"""``om forget`` through click's CliRunner: ids, --query with its confirmation, --dry-run, --json,
and the one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.cli import forget as forget_command
from obsmem.demo import prepare
from obsmem.memory.store import MemoryStore

# Lines of the demo's own observations.md.
WORKERS = "l8s3nq0x4d"  # "Each xdist worker needs its own Redis database number; ..."


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    run = prepare(tmp_path / "mem", transcripts=False)
    monkeypatch.setenv("OM_HOME", str(run.store.home))
    return run.store


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["forget", *args], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def memory(store: MemoryStore) -> dict[str, bytes]:
    return {store.relative(p): p.read_bytes() for p in store.memory_files()}


def test_forget_an_id_removes_it_and_says_where_from(store: MemoryStore) -> None:
    assert WORKERS in store.read_observations().ids()
    code, out, err = run(WORKERS)
    assert code == 0, err
    assert out.startswith(f"forgot 1 memory: {WORKERS}\n")
    assert "observations.md:" in out and "tombstone" in out
    assert WORKERS not in store.read_observations().ids()


def test_dry_run_lists_and_changes_nothing(store: MemoryStore) -> None:
    before = memory(store)
    code, out, _ = run(WORKERS, "--dry-run")
    assert code == 0
    assert out.startswith(f"would forget 1 memory: {WORKERS}\n")
    assert "nothing was changed (--dry-run)" in out
    assert memory(store) == before


def test_json_is_one_object_with_every_place(store: MemoryStore) -> None:
    code, out, _ = run(WORKERS, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ids"] == [WORKERS] and data["dry_run"] is False
    assert "observations.md" in {line["file"] for line in data["lines"]}


def test_unknown_id_is_a_one_line_error_and_changes_nothing(store: MemoryStore) -> None:
    before = memory(store)
    code, out, err = run(WORKERS, "zzzzzzzzzz")
    assert code == 2 and out == ""
    assert err == ("om: error: no memory entry has the id zzzzzzzzzz (find ids with `om search`)\n")
    assert memory(store) == before
    code, _, err = run("what?")
    assert code == 2 and err.startswith("om: error: 'what?' is not a memory id")
    code, _, err = run()
    assert code == 2 and err.startswith("om: error: nothing to forget")


def test_query_asks_before_forgetting(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forget_command, "_interactive", lambda: True)
    before = memory(store)
    code, out, _ = run("--query", "redis worker database", stdin="n\n")
    assert code == 0
    assert "these entries hold every word of 'redis worker database':" in out
    assert WORKERS in out and out.rstrip().endswith("nothing forgotten")
    assert memory(store) == before
    code, out, _ = run("--query", "redis worker database", stdin="y\n")
    assert code == 0 and "forgot " in out
    assert WORKERS not in store.read_observations().ids()


def test_query_without_a_terminal_needs_yes(store: MemoryStore) -> None:
    before = memory(store)
    code, _, err = run("--query", "redis worker database")
    assert code == 2
    assert err.startswith("om: error: --query asks for confirmation, and there is no terminal")
    assert memory(store) == before
    code, out, _ = run("--query", "redis worker database", "--yes")
    assert code == 0 and WORKERS in out
    assert WORKERS not in store.read_observations().ids()


def test_query_that_matches_nothing(store: MemoryStore) -> None:
    code, out, _ = run("--query", "zebra unicorn", "--yes")
    assert code == 0
    assert out.strip() == "nothing to forget: no memory holds every word of 'zebra unicorn'"

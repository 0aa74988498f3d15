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


def _audit_session(claude: Path, name: str = "s.jsonl") -> Path:
    """A Claude Code session of today: the user names a codename once, the assistant repeats it.
    The offline rules observe the request (the reply is in no observation's provenance)."""
    from datetime import date

    folder = claude / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True, exist_ok=True)
    moment = date.today().isoformat() + "T09:00:00Z"
    records = [
        {"type": "user", "message": {"role": "user", "content":
            "I decided: the billing queue broker is codenamed zebrafish-cobalt."}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "OK, noted zebrafish-cobalt."}]}},
    ]  # fmt: skip
    path = folder / name
    with path.open("w", encoding="utf-8") as out:
        for n, record in enumerate(records):
            record |= {"uuid": f"u{n}", "sessionId": "s1", "cwd": "/home/dev/proj",
                       "timestamp": moment}  # fmt: skip
            out.write(json.dumps(record) + "\n")
    return path


def om(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def audited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[MemoryStore, Path]:
    """The audit's memory: built from one small session holding a unique word."""
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("OM_HOME", str(tmp_path / "mem"))
    monkeypatch.setenv("OM_LLM_PROVIDER", "none")
    session = _audit_session(claude)
    assert om("observe", "--flush")[0] == 0
    store = MemoryStore(tmp_path / "mem")
    assert "zebrafish" in store.observations_path.read_text(encoding="utf-8")
    assert "zebrafish" in om("context", "--cwd", "/home/dev/proj")[1]
    return store, session


def _search_texts(word: str) -> list[str]:
    code, out, err = om("search", word, "--json")
    assert code == 0, err
    data = json.loads(out)
    hits = data["results"] if isinstance(data, dict) else data
    return [json.dumps(hit) for hit in hits if word in json.dumps(hit).casefold()]


def test_forget_by_query_lists_and_removes_the_raw_turns_holding_the_words(
    audited: tuple[MemoryStore, Path],
) -> None:
    store, _ = audited
    assert any("OK, noted" in text for text in _search_texts("zebrafish"))
    code, out, _ = run("--query", "zebrafish", "--dry-run")
    assert code == 0
    assert "OK, noted zebrafish-cobalt." in out  # the reply turn is listed with the lines
    assert "s1" in out  # with its session
    code, out, err = run("--query", "zebrafish", "--yes")
    assert code == 0, err
    assert _search_texts("zebrafish") == []
    assert b"zebrafish" not in store.turns_path.read_bytes()


def test_forget_by_query_asks_with_the_turns_listed(
    audited: tuple[MemoryStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = audited
    monkeypatch.setattr(forget_command, "_interactive", lambda: True)
    code, out, _ = run("--query", "zebrafish", stdin="y\n")
    assert code == 0
    assert "OK, noted zebrafish-cobalt." in out.split("forget ")[0]  # shown before the question
    assert _search_texts("zebrafish") == []
    assert b"zebrafish" not in store.turns_path.read_bytes()


def test_a_copy_of_a_forgotten_session_elsewhere_brings_nothing_back(
    audited: tuple[MemoryStore, Path], tmp_path: Path
) -> None:
    store, session = audited
    assert run("--query", "zebrafish", "--yes")[0] == 0
    copy = session.parent.parent / "-home-dev-other" / "copy.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(session.read_bytes())
    code, out, _ = om("observe", "--dry-run", "--flush")  # what would be observed: not those
    assert code == 0 and "zebrafish" not in out
    code, _, err = om("observe", "--flush")
    assert code == 0, err
    code, out, _ = om("context", "--cwd", "/home/dev/proj")
    assert code == 0 and "zebrafish" not in out
    assert b"zebrafish" not in store.observations_path.read_bytes()
    assert b"zebrafish" not in store.turns_path.read_bytes()
    assert _search_texts("zebrafish") == []
    # No text in the ledger either: only keyed hashes.
    assert b"zebrafish" not in store.ledger_path.read_bytes()

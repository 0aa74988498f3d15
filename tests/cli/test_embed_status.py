"""``om status`` shows how many entries have a vector and whether the search daemon runs;
``om reindex --embed`` embeds what has no vector, with a progress line, without a rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.demo import prepare


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hybrid_env: dict[str, str]) -> Path:
    path = tmp_path / "mem"
    monkeypatch.setenv("OM_HOME", str(path))
    for name, value in hybrid_env.items():
        monkeypatch.setenv(name, value)
    prepare(path)
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_status_counts_vectors_before_and_after_reindex_embed(home: Path) -> None:
    code, out, _ = run("search", "redis")  # builds the index; a cold search embeds nothing
    assert code == 0
    code, out, _ = run("status", "--json")
    search = json.loads(out)["search"]
    assert search["backend"] == "hybrid"
    assert search["embedded"] == 0 and search["total"] > 0
    assert search["daemon"] is None  # OM_SEARCH_DAEMON=off in tests
    total = search["total"]
    code, out, err = run("reindex", "--embed")
    assert code == 0
    assert "indexed" not in out  # no rebuild
    assert f"embedded {total} new text(s) with sentence-transformers/all-MiniLM-L6-v2" in out
    lines = err.splitlines()
    assert lines[:2] == [
        f"embedding: 0 of {total:,} entries have a vector",
        f"embedding: {total:,} of {total:,} entries have a vector",
    ]
    # Then the vocabulary bridge's items (on by default), counted apart.
    items = int(lines[2].split(" of ")[1].split()[0].replace(",", ""))
    assert items > 0 and lines[2:] == [
        f"embedding: 0 of {items:,} vocabulary items have a vector",
        f"embedding: {items:,} of {items:,} vocabulary items have a vector",
    ]
    assert f"embedded {items} new vocabulary item(s) for the bridge" in out
    code, out, _ = run("status")
    assert f"vectors           {total:,} of {total:,} embedded" in out
    code, out, err = run("reindex", "--embed")
    assert "embedded 0 new text(s)" in out and err == ""


def test_status_says_whether_the_daemon_runs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_SEARCH_DAEMON", "on")
    out = run("status", "--json")[1]
    assert json.loads(out)["search"]["daemon"] == {"running": False}
    assert run("status")[0] == 0
    out = run("status")[1]
    assert "search daemon     not running (the next `om search` starts it)" in out


def test_status_with_bm25_says_why(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_SEARCH_BACKEND", "bm25")
    out = run("status")[1]
    assert "search            keyword (BM25): OM_SEARCH_BACKEND=bm25" in out
    code, out, _ = run("reindex", "--embed")
    assert code == 0
    assert out == "nothing to embed: OM_SEARCH_BACKEND=bm25\n"

"""The source excerpt of an entry whose transcript path was kept redacted.

A secret in a Claude Code project folder's name is redacted in provenance, so the path ``show``
gets is not one that opens. ``show`` finds the real file through the capture state; when it
cannot (the state does not know the file, or several files share the redacted path) the excerpt
says so in its note, and no secret is shown either way.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.memory.store import MemoryStore
from obsmem.observe.run import run_observe
from obsmem.search.recall import search_entries, show
from obsmem.settings import load_settings

SECRET = "sk-ant-api03-" + "Pq8" * 31 + "AA"
DECISION = "We decided to use Caddy for the reverse proxy because it renews certificates."


def write_session(cwd: str, session: str = "5f1d8a2e-3b4c-4d5e-8f90-a1b2c3d4e5f6") -> Path:
    """A Claude Code session of ``cwd`` (its folder named as Claude Code names it)."""
    home = Path(os.environ["CLAUDE_CONFIG_DIR"])
    path = home / "projects" / cwd.replace("/", "-") / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "user", "message": {"role": "user", "content": "Which proxy should we use?"}},
        {"type": "user", "message": {"role": "user", "content": DECISION}},
    ]
    lines = [
        {**r, "sessionId": session, "cwd": cwd, "uuid": f"u{n}",
         "timestamp": f"2026-11-20T10:00:0{n}.000Z"}
        for n, r in enumerate(records)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def observed() -> tuple[MemoryStore, str, Path]:
    """The session in a secret folder, observed by the rules: the store and the decision's id."""
    path = write_session(f"/home/dev/{SECRET}")
    store = MemoryStore().ensure()
    report = run_observe(
        store, load_settings({**os.environ, "OM_LLM_PROVIDER": "none"}), flush=True
    )
    assert report.files_read == 1 and report.written >= 1, report
    hits = search_entries(store, "Caddy reverse proxy")
    assert hits, "the decision was observed"
    return store, str(hits[0]["id"]), path


def test_the_excerpt_is_read_through_the_real_path_and_shows_the_redacted_one(
    observed: tuple[MemoryStore, str, Path],
) -> None:
    store, entry_id, path = observed
    entry = show(store, entry_id)
    stored = entry["provenance"]["source_path"]
    assert stored == str(path).replace(SECRET, "[REDACTED:anthropic]")
    excerpt = entry["excerpt"]
    assert excerpt["note"] is None and excerpt["path"] == stored
    assert any("Caddy" in line["text"] for line in excerpt["lines"])
    assert SECRET[13:30] not in json.dumps(entry)


def test_om_show_prints_the_source_lines_under_the_redacted_path(
    observed: tuple[MemoryStore, str, Path],
) -> None:
    _, entry_id, path = observed
    result = CliRunner().invoke(cli, ["show", entry_id], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "source: " + str(path).replace(SECRET, "[REDACTED:anthropic]") in result.stdout
    assert "Caddy" in result.stdout.split("source: ", 1)[1]
    assert SECRET[13:30] not in result.output


def test_a_transcript_the_capture_state_does_not_know_is_not_found(
    observed: tuple[MemoryStore, str, Path],
) -> None:
    store, entry_id, _ = observed
    store.state_db_path.unlink()
    excerpt = show(store, entry_id)["excerpt"]
    assert excerpt["lines"] == [] and "no longer exists" in excerpt["note"]
    result = CliRunner().invoke(cli, ["show", entry_id])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "no longer exists" in result.stdout and SECRET[13:30] not in result.output


def test_two_transcripts_that_differ_only_in_their_secret_are_not_guessed_between(
    observed: tuple[MemoryStore, str, Path],
) -> None:
    store, entry_id, path = observed
    twin_secret = SECRET[:-6] + "Zz99AA"
    twin = Path(str(path).replace(SECRET, twin_secret))
    twin.parent.mkdir(parents=True)
    shutil.copyfile(path, twin)
    run_observe(store, load_settings({**os.environ, "OM_LLM_PROVIDER": "none"}), flush=True)
    excerpt = show(store, entry_id)["excerpt"]
    assert excerpt["lines"] == []
    assert "2 transcripts have the path" in excerpt["note"]
    assert SECRET[13:30] not in json.dumps(excerpt) and twin_secret[13:30] not in json.dumps(
        excerpt
    )

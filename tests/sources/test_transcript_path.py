"""A transcript's own path: redacted where it is kept or shown, found again from the redacted one.

Claude Code names a project's folder after its working directory, so a secret in a working
directory is in the path of every transcript of that project. ``redact_path`` takes it out of the
path turns carry (and so out of provenance, the index, the turn store, the worker's log);
``locate_transcript`` finds the real file from the redacted path through the capture state,
which keeps real paths because it has to open the files.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from obsmem.index.turns import TurnStore
from obsmem.redact.paths import redact_path
from obsmem.sources.capture import CaptureRun, plan_file, read_pending
from obsmem.sources.state import CaptureState, locate_transcript

ANTHROPIC = "sk-ant-api03-" + "Vb7_x" * 18 + "Q-3AA"
GITHUB = "ghp_" + "k3Rw9" * 7 + "Zq"
FIXTURES = Path("/work/shared/fixtures/transcripts")
# Token shapes with a "_", "." or ":" that a folder name turns into a dash, and ones without.
SHAPES = {
    "anthropic": ANTHROPIC,
    "openai": "sk-proj-" + "Tq4_wE9x" * 6,
    "github": GITHUB,
    "gitlab": "glpat-" + "Xy4mN8pQ2rT6vW0zA1bC",
    "slack": "xoxb-2750133451-4861320975632-" + "aB3dE5gH7jK9" * 2,
    "stripe": "sk_live_" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw",
    "google-api-key": "AIzaSy" + "Ab3_De5-Gh7Jk9Mn2Pq4St6Vw8Yz1Bc3D",
    "npm": "npm_" + "Ab3De5Gh7Jk9" * 3,
    "huggingface": "hf_" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz1Bc3De5F",
    "sendgrid": "SG."
    + "Ab3De5Gh7Jk9Mn2Pq4St6V"
    + "."
    + "Wx8Yz1Bc3De5Fg7Hj9Kl2Mn4Pq6Rs8Tu0Vw2Xy4Za6B",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0." + "Ab3De5Gh7Jk9Mn2Pq4St6",
    "telegram-bot": "7012345678:AA" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz1Bc3De5",
}


def claude_folder(cwd: str) -> str:
    """Claude Code's folder name for a working directory: every character other than an ASCII
    letter or digit becomes a dash."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def write_session(home: Path, cwd: str, texts: list[str], session: str = "5f1d8a2e") -> Path:
    """A Claude Code session in ``cwd``'s project folder under ``home``: one user turn a text."""
    path = home / "projects" / claude_folder(cwd) / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {
            "type": "user",
            "sessionId": session,
            "cwd": cwd,
            "uuid": f"{session}-{n}",
            "timestamp": f"2026-11-20T10:00:{n:02d}.000Z",
            "message": {"role": "user", "content": text},
        }
        for n, text in enumerate(texts)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- redact_path ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/home/u/.claude/projects/-home-u-work-atlas/5f1d8a2e-3b4c-4d5e-8f90-a1b2c3d4e5f6.jsonl",
        "/home/u/.claude/projects/-home-u-work-atlas/5f1d8a2e/subagents/agent-a1b2c3.jsonl",
        "/home/u/.codex/sessions/2026/11/20/rollout-2026-11-20T10-00-00-0199a1b2-c3d4.jsonl",
        "/home/u/.hermes/sessions/20261120_100000_a1b2c3.jsonl",
        "/home/u/.openclaw/agents/main/sessions/0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
        "/home/u/.claude/projects/-home-u-code-my-password-manager/s.jsonl",
        "/home/u/.claude/projects/-Users-Ada-Documents-Projects2024-" + "x1-Yz" * 40 + "/s.jsonl",
        "relative/notes.txt",
        "",
    ],
)
def test_a_path_without_a_secret_is_kept_as_it_is(path: str) -> None:
    assert redact_path(path) == path


def test_every_fixture_transcript_path_is_kept_as_it_is() -> None:
    paths = [str(p) for p in FIXTURES.rglob("*") if p.is_file()]
    assert len(paths) > 10
    assert [p for p in paths if redact_path(p) != p] == []


@pytest.mark.parametrize("kind", sorted(SHAPES))
@pytest.mark.parametrize("cwd", ["/home/u/work/{}", "/home/u/{}/api", "/{}"])
def test_a_secret_in_a_claude_project_folder_is_redacted(kind: str, cwd: str) -> None:
    before, after = (claude_folder(part) for part in cwd.split("{}"))
    secret = claude_folder(SHAPES[kind])
    shown = redact_path(f"/home/u/.claude/projects/{before}{secret}{after}/5f1d8a2e.jsonl")
    assert secret[-20:] not in shown and secret[4:24] not in shown, shown
    # What was around the secret stays (a key may take a folder after it: its body can hold
    # dashes); a Telegram bot's id is public, only the token after it goes.
    label = f"[REDACTED:{kind}]"
    assert shown.startswith(f"/home/u/.claude/projects/{before}"), shown
    assert label in shown and shown.endswith("/5f1d8a2e.jsonl"), shown
    assert redact_path(shown) == shown


def test_a_secret_in_any_folder_name_is_redacted_and_the_rest_of_the_path_kept() -> None:
    assert redact_path(f"/tmp/{GITHUB}/notes.txt") == "/tmp/[REDACTED:github]/notes.txt"
    # An assignment's value ends at the name: the file name after it is not taken for it.
    assert (
        redact_path("/srv/-srv-app-DB_PASSWORD=s3cr3tValue99/s.jsonl")
        == "/srv/-srv-app-DB_PASSWORD=[REDACTED:password]/s.jsonl"
    )


# --- reading ----------------------------------------------------------------------------------


def test_turns_carry_the_redacted_path_and_the_turn_store_keeps_only_that(tmp_path: Path) -> None:
    path = write_session(tmp_path / "claude", f"/home/u/{ANTHROPIC}", ["We chose Caddy."])
    pending, _ = plan_file(path, "claude", None, min_new=0, flush=True)
    assert pending is not None
    turns = read_pending(pending, flush=True).turns
    assert turns and {t.source_path for t in turns} == {pending.shown}
    assert "[REDACTED:anthropic]" in pending.shown and ANTHROPIC not in pending.shown
    with CaptureState(tmp_path / "state.sqlite3") as state, TurnStore(tmp_path / "t.db") as kept:
        with CaptureRun(state, turns=kept) as run:
            claimed = run.claim(pending, flush=True)
            assert claimed is not None
            run.finish(claimed, run.read(claimed, flush=True))
        stored = [row[0] for row in kept.conn.execute("SELECT DISTINCT source_path FROM turns")]
        assert stored == [pending.shown]
        # The cursor keeps the real path: it must open the file again.
        assert list(state.cursors()) == [str(path)]


def test_a_replaced_transcript_in_a_secret_folder_has_its_old_turns_dropped(
    tmp_path: Path,
) -> None:
    home, cwd = tmp_path / "claude", f"/home/u/{GITHUB}"
    path = write_session(home, cwd, ["first draft of the plan", "second line of it"])
    with CaptureState(tmp_path / "state.sqlite3") as state, TurnStore(tmp_path / "t.db") as kept:
        for texts in (None, ["a rewritten plan"]):
            if texts is not None:
                os.unlink(path)  # a new inode: the file was replaced
                write_session(home, cwd, texts)
            with CaptureRun(state, turns=kept) as run:
                pending, _ = plan_file(path, "claude", state.cursor(str(path)), min_new=0)
                assert pending is not None
                claimed = run.claim(pending, flush=True)
                assert claimed is not None
                run.finish(claimed, run.read(claimed, flush=True))
        texts_kept = [row[0] for row in kept.conn.execute("SELECT text FROM turns")]
    assert texts_kept == ["a rewritten plan"]


# --- locate_transcript ------------------------------------------------------------------------


def read_into_state(db: Path, *paths: Path) -> None:
    """Record a cursor for each file, as a capture run that read it does."""
    with CaptureState(db) as state, CaptureRun(state) as run:
        for path in paths:
            pending, _ = plan_file(path, "claude", None, min_new=0, flush=True)
            assert pending is not None
            claimed = run.claim(pending, flush=True)
            assert claimed is not None
            run.finish(claimed, run.read(claimed, flush=True))


def test_a_path_with_nothing_redacted_is_its_own_real_path(tmp_path: Path) -> None:
    # No capture state is read (or created) for it.
    db = tmp_path / "state.sqlite3"
    assert locate_transcript(db, "/home/u/gone.jsonl") == ["/home/u/gone.jsonl"]
    assert not db.exists()


def test_a_redacted_path_is_found_through_the_capture_state(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite3"
    secret_file = write_session(tmp_path / "claude", f"/home/u/{ANTHROPIC}", ["one"])
    other = write_session(tmp_path / "claude", "/home/u/atlas", ["two"])
    stored = redact_path(str(secret_file))
    assert locate_transcript(db, stored) == []  # nothing read yet: not known
    read_into_state(db, secret_file, other)
    assert locate_transcript(db, stored) == [str(secret_file)]
    assert locate_transcript(db, stored.replace("5f1d8a2e", "ffffffff")) == []


def test_paths_that_differ_only_in_their_secrets_are_all_candidates(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite3"
    first = write_session(tmp_path / "claude", f"/home/u/{GITHUB}", ["one"])
    second = write_session(tmp_path / "claude", f"/home/u/{GITHUB[:-4]}Ab12", ["two"])
    read_into_state(db, first, second)
    stored = redact_path(str(first))
    assert stored == redact_path(str(second))
    assert locate_transcript(db, stored) == sorted([str(first), str(second)])


def test_an_unreadable_capture_state_locates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite3"
    db.write_bytes(b"not a database at all" * 100)
    stored = redact_path(f"/home/u/{GITHUB}/s.jsonl")
    assert locate_transcript(db, stored) == []
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(db).execute("SELECT 1 FROM cursors").fetchall()

"""What to capture: idle sessions read to their end, files that are not transcripts refused."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.errors import UsageError
from obsmem.memory.store import MemoryStore
from obsmem.observe.run import run_observe
from obsmem.settings import load_settings
from obsmem.sources import registry
from obsmem.sources.capture import CaptureRun
from obsmem.sources.select import open_state, select, would_observe

from .golden import TRANSCRIPTS

SESSION = "019a0000-1111-7222-8333-944445555666"


def _line(kind: str, payload: dict[str, Any], second: int = 0) -> str:
    stamp = f"2026-01-02T03:04:{second:02d}.000Z"
    return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"


def _age(path: Path, seconds: float) -> None:
    when = path.stat().st_mtime - seconds
    os.utime(path, (when, when))


def _codex_session(home: Path) -> Path:
    """A Codex rollout under ``home/sessions``: a request, then the turn's final answer."""
    folder = home / "sessions" / "2026" / "01" / "02"
    folder.mkdir(parents=True)
    path = folder / f"rollout-2026-01-02T03-04-00-{SESSION}.jsonl"
    lines = [
        _line("session_meta", {"id": SESSION, "timestamp": "2026-01-02T03:04:00Z", "cwd": "/a"}),
        _line("event_msg", {"type": "user_message", "message": "make the build pass"}),
        _line("event_msg", {"type": "token_count", "info": None}, 1),
        _line("event_msg", {"type": "token_count", "info": None}, 2),
        _line("event_msg", {"type": "agent_message", "message": "Build fixed: tsc passes."}, 9),
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _read_all(store: MemoryStore, environ: dict[str, str], **options: Any) -> list[str]:
    """One capture run as ``om observe`` makes it: select, claim, read, advance."""
    texts: list[str] = []
    with open_state(store) as state:
        report = select(state, source="codex", environ=environ, **options)
        with CaptureRun(state) as run:
            for pending in report.pending:
                claimed = run.claim(pending)
                if claimed is None:
                    continue
                result = run.read(claimed, flush=bool(options.get("flush")))
                texts += [turn.text for turn in result.turns]
                run.finish(claimed, result)
    return texts


def test_a_codex_final_answer_after_the_last_hook_is_read_once_the_session_is_idle(
    tmp_path: Path, store: MemoryStore
) -> None:
    environ = {"CODEX_HOME": str(tmp_path / "codex")}
    path = _codex_session(tmp_path / "codex")
    # The Stop hook's run: the final answer's twin may still follow, so it is left for later.
    assert _read_all(store, environ, min_new=0, idle_minutes=5) == ["make the build pass"]
    # The session is over and nothing more is written: scheduled runs found it "unchanged".
    assert _read_all(store, environ, idle_minutes=5) == []
    _age(path, 6 * 60)
    assert _read_all(store, environ, idle_minutes=5) == ["Build fixed: tsc passes."]
    assert _read_all(store, environ, idle_minutes=5) == []


def test_a_short_finished_session_is_not_left_below_the_threshold(
    tmp_path: Path, store: MemoryStore
) -> None:
    environ = {"CODEX_HOME": str(tmp_path / "codex")}
    path = _codex_session(tmp_path / "codex")
    with open_state(store) as state:
        assert select(state, source="codex", environ=environ).below_threshold == 1
        _age(path, 6 * 60)
        assert select(state, source="codex", environ=environ, idle_minutes=0).below_threshold == 1
        (pending,) = select(state, source="codex", environ=environ).pending
        assert pending.idle  # the default OM_IDLE_FLUSH_MINUTES is 5
        report = select(state, source="codex", environ={**environ, "OM_IDLE_FLUSH_MINUTES": "10"})
        assert report.below_threshold == 1
    assert load_settings({}).idle_flush_minutes == 5


def _fixture(name: str) -> Path:
    return TRANSCRIPTS / name


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("claude-code/codemie-code/session-196820da.jsonl", "claude"),
        ("codex/codemie-code/turn-1.jsonl", "codex"),
        ("hermes/obsmem/20260405_223010_bad5e1.jsonl", "hermes"),  # has undecodable lines
        ("openclaw/openclaw-session-md/session.jsonl", "openclaw"),
        ("text/written/meeting-notes.txt", "text"),
    ],
)
def test_transcripts_are_accepted(name: str, agent: str) -> None:
    assert registry.check_transcript(_fixture(name)) == agent
    assert registry.check_transcript(_fixture(name), agent) == agent


def test_files_that_are_no_transcript_are_refused(tmp_path: Path) -> None:
    binary = tmp_path / "ls"
    shutil.copyfile("/bin/ls", binary)
    noise = tmp_path / "noise.dat"
    noise.write_bytes(bytes(range(1, 8)) * 500 + b"\xff\xfe" * 500)
    records = tmp_path / "metrics.jsonl"
    records.write_text('{"cpu": 1}\n{"cpu": 2}\n', encoding="utf-8")
    for path in (binary, noise):
        with pytest.raises(UsageError, match="is not a transcript: it holds binary data"):
            registry.check_transcript(path)
        with pytest.raises(UsageError, match="binary data"):
            registry.check_transcript(path, "text")
    with pytest.raises(UsageError, match="JSON records of no agent"):
        registry.check_transcript(records)
    assert registry.check_transcript(records, "text") == "text"
    openclaw = _fixture("openclaw/openclaw-session-md/session.jsonl")
    with pytest.raises(UsageError, match=r"no Codex CLI record \(it looks like OpenClaw\)"):
        registry.check_transcript(openclaw, "codex")
    with pytest.raises(UsageError, match="no Claude Code record"):
        registry.check_transcript(binary, "claude")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert registry.check_transcript(empty) == "text"  # nothing to read yet is no refusal


def test_observing_a_binary_file_writes_nothing(tmp_path: Path, store: MemoryStore) -> None:
    binary = tmp_path / "ls"
    shutil.copyfile("/bin/ls", binary)
    settings = load_settings({"OM_LLM_PROVIDER": "none"})
    with pytest.raises(UsageError, match="not a transcript"):
        run_observe(store, settings, transcript=binary, flush=True)
    assert not store.observations_path.exists()
    assert not any(store.home.glob("*.md"))
    # Refused before the capture state is opened: not even an empty database is left behind.
    assert not store.state_db_path.exists()
    assert not store.turns_path.exists()


def test_the_command_refuses_a_binary_file_in_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "ls"
    shutil.copyfile("/bin/ls", binary)
    result = CliRunner().invoke(cli, ["observe", "--transcript", str(binary), "--flush"])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("om: error: ") and "not a transcript" in line


def test_would_observe_reads_what_a_run_would_and_moves_no_cursor(
    tmp_path: Path, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {"CODEX_HOME": str(tmp_path / "codex")}
    monkeypatch.setenv("CODEX_HOME", environ["CODEX_HOME"])
    _codex_session(tmp_path / "codex")
    for _ in range(2):  # a preview claims nothing: the second sees the same
        with would_observe(store, source="codex", flush=True, min_new=0) as (found, read):
            previewed = [turn.text for _, result in read for turn in result.turns]
        assert len(found.pending) == 1
    assert previewed == ["make the build pass", "Build fixed: tsc passes."]
    assert _read_all(store, environ, flush=True, min_new=0) == previewed
    with would_observe(store, source="codex", flush=True, min_new=0) as (found, read):
        assert found.pending == [] and list(read) == []

"""The Hermes Agent reader: goldens, the behaviours formats.md asks for, incremental reads, garbage.

The golden files are checked (and regenerated) as ``golden.py`` says.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.sources import hermes
from obsmem.sources.model import ReadResult

from .golden import (
    GARBAGE,
    JSON,
    SHARED,
    TRANSCRIPTS,
    Goldens,
    assert_same_excerpts,
    assert_sound,
    first_records,
    json_lines,
    line_ends,
    read_in_two,
    turn_dicts,
    without_excerpts,
)

HERMES_FIXTURES = TRANSCRIPTS / "hermes"
GOLDEN = Goldens("hermes", hermes.read, HERMES_FIXTURES, sorted(HERMES_FIXTURES.rglob("*.jsonl")))


def _fixture(name: str) -> Path:
    return next(path for path in GOLDEN.files if path.name.startswith(name))


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_golden(path: Path) -> None:
    GOLDEN.check(path)


def test_every_golden_has_its_fixture() -> None:
    GOLDEN.check_complete()


# --- building sessions by hand ---------------------------------------------------------------

META = {
    "role": "session_meta",
    "tools": [{"type": "function"}] * 3,
    "model": "m",
    "platform": "cli",
    "timestamp": "2026-04-01T10:00:00.000000",
}


def _write(path: Path, records: list[Any], *, tail: bytes = b"") -> Path:
    lines = [r if isinstance(r, bytes) else json.dumps(r).encode() for r in records]
    path.write_bytes(b"".join(line + b"\n" for line in lines) + tail)
    return path


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _calling(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    """An assistant message making ``calls``."""
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def _pairs(result: ReadResult) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in result.turns]


# --- words -----------------------------------------------------------------------------------


def test_sender_prefix_is_stripped_but_notes_are_kept(tmp_path: Path) -> None:
    records = [
        META,
        {"role": "user", "content": "[Alice] deploy it"},
        {"role": "user", "content": "[System note: the user is away] ping"},
        {
            "role": "user",
            "content": "[a very long bracket that is surely not anybody's display name at all] x",
        },
        {"role": "user", "content": [{"type": "text", "text": "[Bob] see"}, {"type": "image_url"}]},
    ]
    result = hermes.read(_write(tmp_path / "s.jsonl", records))
    assert [t.text for t in result.turns] == [
        "deploy it",
        "[System note: the user is away] ping",
        "[a very long bracket that is surely not anybody's display name at all] x",
        "see",
    ]


def test_reasoning_and_system_are_dropped(tmp_path: Path) -> None:
    records = [
        META,
        {"role": "system", "content": "You are Hermes."},
        {"role": "assistant", "content": "Done.", "reasoning": "SECRET-THOUGHT"},
        {"role": "assistant", "content": "", "reasoning": "only thinking"},
    ]
    result = hermes.read(_write(tmp_path / "s.jsonl", records))
    assert _pairs(result) == [("assistant", "Done.")]
    assert result.skipped == {"system": 1, "empty message": 1}


def test_context_summary_becomes_a_summary_turn(tmp_path: Path) -> None:
    end = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
    records = [
        META,
        {
            "role": "user",
            "content": f"[CONTEXT COMPACTION — REFERENCE ONLY] notice\n\n## Goal\nShip v2\n\n{end}",
        },
        {"role": "assistant", "content": f"[CONTEXT SUMMARY]: Moved to Astro.\n{end}\n\nOn it."},
        {"role": "user", "content": f"## Goal\nShip v2\n{end}\n\n[Sam] now deploy"},
    ]
    result = hermes.read(_write(tmp_path / "s.jsonl", records))
    assert _pairs(result) == [
        ("summary", "## Goal\nShip v2"),
        ("summary", "Moved to Astro."),
        ("assistant", "On it."),
        ("summary", "## Goal\nShip v2"),
        ("user", "now deploy"),
    ]


# --- tools -----------------------------------------------------------------------------------


def test_each_tool_call_is_an_action_and_results_are_reduced(tmp_path: Path) -> None:
    failing = {
        "output": "Compiling\nerror[E0308]: mismatched types\n  --> src/main.rs:4:5\nmore\nmore",
        "exit_code": 101,
        "error": None,
    }
    records = [
        META,
        _calling(
            _call("c1", "terminal", command="cargo build"),
            _call("c2", "read_file", path="src/main.rs"),
            _call("c3", "search_files", pattern="fn main", path="src"),
            content="Checking.",
        ),
        {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": json.dumps(failing)},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "name": "read_file",
            "content": json.dumps({"content": "1|fn main() {}"}),
        },
        {
            "role": "tool",
            "tool_call_id": "c3",
            "content": json.dumps({"error": "ripgrep not installed"}),
        },
        {"role": "assistant", "tool_calls": [_call("c4", "terminal", command="pytest")]},
        {
            "role": "tool",
            "tool_call_id": "c4",
            "content": json.dumps({"output": "== 3 passed in 0.2s ==", "exit_code": 0}),
        },
        {
            "role": "tool",
            "tool_call_id": "c5",
            "name": "delegate_task",
            "content": json.dumps({"success": False, "message": "subagent timed out"}),
        },
        {
            "role": "tool",
            "tool_call_id": "c6",
            "name": "terminal",
            "content": "Traceback (most recent call last):\nValueError: bad",
        },
        {"role": "tool", "tool_call_id": "c7", "name": "terminal", "content": "plain routine text"},
    ]
    result = hermes.read(_write(tmp_path / "s.jsonl", records))
    assert _pairs(result) == [
        ("assistant", "Checking."),
        ("action", "terminal: cargo build"),
        ("action", "read_file: src/main.rs"),
        ("action", "search_files: fn main in src"),
        ("outcome", "`cargo build` exited 101\nerror[E0308]: mismatched types"),
        ("outcome", "search_files fn main in src failed: ripgrep not installed"),
        ("action", "terminal: pytest"),
        ("outcome", "`pytest`: 3 passed"),
        ("outcome", "delegate_task failed: subagent timed out"),
        ("outcome", "terminal failed: Traceback (most recent call last):\nValueError: bad"),
    ]
    assert result.skipped == {"routine tool output": 2}


# --- session, time ---------------------------------------------------------------------------


def test_session_and_time_fallbacks(tmp_path: Path) -> None:
    old = {
        "type": "session_meta",
        "session_id": "20250101_000000_aaaaaa",
        "timestamp": "2025-01-01T00:00:00",
    }
    records = [
        old,
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b", "timestamp": 1767225600},
    ]
    result = hermes.read(_write(tmp_path / "20250101_000000_bbbbbb.jsonl", records))
    assert [(t.session, t.timestamp) for t in result.turns] == [
        ("20250101_000000_aaaaaa", "2025-01-01T00:00:00Z"),
        ("20250101_000000_aaaaaa", "2026-01-01T00:00:00Z"),
    ]
    bare = _write(tmp_path / "20250202_101010_cccccc.jsonl", [{"role": "user", "content": "c"}])
    os.utime(bare, (1_700_000_000, 1_700_000_000))
    (turn,) = hermes.read(bare).turns
    assert (turn.session, turn.timestamp, turn.project) == (
        "20250202_101010_cccccc",
        "2023-11-14T22:13:20Z",
        None,
    )
    with_cwd = _write(
        tmp_path / "d.jsonl", [META | {"cwd": "/srv/app"}, {"role": "user", "content": "d"}]
    )
    assert hermes.read(with_cwd).turns[0].project == "app"


def test_a_record_typed_session_meta_is_one_whatever_its_role(tmp_path: Path) -> None:
    # The read loop sends messages to their handlers itself: one that calls itself a
    # session_meta still goes where a session line goes.
    records = [
        {"type": "session_meta", "role": "user", "session_id": "s-typed", "content": "not said"},
        {"type": "session_meta", "role": "tool", "cwd": "/srv/app", "content": "Error: x"},
        {"role": "user", "content": "said"},
    ]
    result = hermes.read(_write(tmp_path / "20260101_000000_stem.jsonl", records))
    assert [(t.role, t.text, t.session, t.project) for t in result.turns] == [
        ("user", "said", "s-typed", "app")
    ]


def test_turns_before_the_session_line_take_its_id_but_not_its_cwd(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "early"},
        META | {"session_id": "s-late", "cwd": "/srv/app"},
        {"role": "user", "content": "late"},
        {"role": "session_meta", "session_id": "s-other", "cwd": "/srv/other"},
        {"role": "user", "content": "later"},
    ]
    result = hermes.read(_write(tmp_path / "20260101_000000_stem.jsonl", records))
    assert [(t.text, t.session, t.project) for t in result.turns] == [
        ("early", "s-late", None),
        ("late", "s-late", "app"),
        ("later", "s-late", "app"),  # the first session line wins
    ]


def test_results_quote_the_call_they_answer(tmp_path: Path) -> None:
    records = [
        {"role": "assistant", "tool_calls": [_call("c1", "patch", path="  src/a b.py  ")]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"success": False})},
        {"role": "tool", "tool_call_id": "c2", "name": "lint", "content": "Error: no config"},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"output": "ok"})},
    ]
    result = hermes.read(_write(tmp_path / "s.jsonl", records))
    assert _pairs(result) == [
        ("action", "patch: src/a b.py"),
        ("outcome", "patch src/a b.py failed"),
        ("outcome", "lint failed: Error: no config"),
    ]
    assert result.skipped == {"routine tool output": 1}


def test_a_later_read_still_knows_the_session(tmp_path: Path) -> None:
    path = _fixture("20250918")
    first_two = sum(len(line) for line in path.read_bytes().splitlines(keepends=True)[:2])
    result = hermes.read(path, start_offset=first_two, start_line=2)
    assert result.turns[0].line_start == 3
    assert {(t.session, t.timestamp) for t in result.turns} == {
        ("20250918_201144_7d2e0f", "2025-09-18T20:11:44Z")
    }


# --- incremental reads -----------------------------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_two_reads_give_the_turns_of_one(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    whole = turn_dicts(hermes.read(copy, flush=True).turns)
    for offset in line_ends(copy.read_bytes()):
        first, rest = read_in_two(hermes.read, copy, offset, flush=True)
        split = turn_dicts(first.turns + rest.turns)
        # Identical, except that a result read apart from its call cannot quote the command,
        # and a call read apart from its result has no excerpt.
        assert without_excerpts([t for t in split if t["role"] != "outcome"]) == without_excerpts(
            [t for t in whole if t["role"] != "outcome"]
        )
        assert_same_excerpts(split, whole)
        assert [t["line_start"] for t in split if t["role"] == "outcome"] == [
            t["line_start"] for t in whole if t["role"] == "outcome"
        ]


def test_incomplete_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    partial = json.dumps({"role": "assistant", "content": "half"}).encode()
    path = _write(tmp_path / "s.jsonl", [META, {"role": "user", "content": "a"}], tail=partial)
    result = hermes.read(path)
    assert [t.text for t in result.turns] == ["a"]
    assert (result.end_offset, result.end_line) == (path.stat().st_size - len(partial), 2)
    assert [t.text for t in hermes.read(path, flush=True).turns] == ["a", "half"]
    path.write_bytes(path.read_bytes() + b"\n")
    later = hermes.read(path, start_offset=result.end_offset, start_line=result.end_line)
    assert [(t.text, t.line_start) for t in later.turns] == [("half", 3)]


# --- garbage ---------------------------------------------------------------------------------

_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "session_meta"]) | JSON},
    optional={
        "content": JSON | st.text(max_size=40),
        "tool_calls": st.lists(
            st.fixed_dictionaries({}, optional={"id": JSON, "function": JSON}), max_size=3
        )
        | JSON,
        "tool_call_id": st.sampled_from(["a", "b"]) | JSON,
        "name": JSON,
        "timestamp": JSON,
        "session_id": JSON,
        "type": JSON,
    },
)


@settings(GARBAGE, max_examples=60)
@given(
    lines=st.lists(json_lines(_MESSAGE), max_size=12),
    tail=st.binary(max_size=20),
    flush=st.booleans(),
)
def test_garbage_never_raises(tmp_path: Path, lines: list[bytes], tail: bytes, flush: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if lines else b"") + tail
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(data)
    assert_sound(hermes.read(path, flush=flush), data, flush=flush)


def test_garbage_fixture_counts_every_bad_line() -> None:
    result = hermes.read(_fixture("20260405"), flush=True)
    assert result.skipped == {
        "broken json": 3,
        "not an object": 2,
        "unknown role: critic": 1,
        "no role": 1,
        "system": 1,
        "empty message": 1,
    }
    assert hermes.read(_fixture("20260405")).skipped["broken json"] == 2  # the last line waits


# --- detection and discovery -----------------------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_detects_hermes_fixtures(path: Path) -> None:
    assert hermes.detect(first_records(path))


def test_detects_plain_chat_messages() -> None:
    assert hermes.detect(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    assert not hermes.detect([])
    assert not hermes.detect(
        [{"role": "user", "content": "hi"}, {"type": "message", "role": "user"}]
    )
    assert not hermes.detect([{"type": "session_meta", "payload": {"id": "x"}}])  # Codex's


OTHERS = sorted(
    p
    for folder in (SHARED / "claude-code", SHARED / "openclaw", TRANSCRIPTS / "codex")
    for p in folder.rglob("*.jsonl")
)


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: p.name)
def test_does_not_claim_other_agents_files(path: Path) -> None:
    assert not hermes.detect(first_records(path))


def test_find_files(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    (home / "sessions").mkdir(parents=True)
    (home / "profiles" / "work" / "sessions").mkdir(parents=True)
    (home / "profiles" / "empty").mkdir()
    wanted = [
        home / "sessions" / "20260412_091503_a41c9e.jsonl",
        home / "profiles" / "work" / "sessions" / "20260101_080000_abcdef.jsonl",
    ]
    for path in wanted:
        path.write_text("{}\n")
    (home / "sessions" / "sessions.json").write_text("{}")
    (home / "sessions" / "request_dump_x.json").write_text("{}")
    (home / "sessions" / "old").mkdir()
    assert hermes.find_files(home) == sorted(wanted)
    assert hermes.find_files(tmp_path / "missing") == []
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "sessions").write_text("not a folder")
    assert hermes.find_files(tmp_path / "odd") == []


def test_a_successful_command_keeps_a_short_excerpt_of_its_output(tmp_path: Path) -> None:
    built = {"output": "added 3 packages in 2s\n[build] Complete!", "exit_code": 0, "error": None}
    listed = {"output": "src\ndocs", "exit_code": 0, "error": None}
    records = [
        META,
        _calling(
            _call("c1", "terminal", command="npm install && npm run build"),
            _call("c2", "terminal", command="ls"),
        ),
        {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": json.dumps(built)},
        {"role": "tool", "tool_call_id": "c2", "name": "terminal", "content": json.dumps(listed)},
    ]
    result = hermes.read(_write(tmp_path / "s.jsonl", records), flush=True)
    assert [(t.text, t.excerpt) for t in result.turns] == [
        ("terminal: npm install && npm run build", "added 3 packages in 2s\n… [build] Complete!"),
        ("terminal: ls", None),
    ]

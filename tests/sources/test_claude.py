"""The Claude Code reader: goldens, the behaviours formats.md asks for, incremental reads, garbage.

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

from obsmem.sources import claude
from obsmem.sources.claude_tools import action_text, outcome_text
from obsmem.sources.model import Turn
from obsmem.sources.outcomes import find_test_counts

from .golden import (
    GARBAGE,
    JSON,
    SHARED,
    TRANSCRIPTS,
    Goldens,
    assert_sound,
    first_records,
    read_in_two,
)

CLAUDE_FIXTURES = TRANSCRIPTS / "claude-code"
GOLDEN = Goldens("claude", claude.read, CLAUDE_FIXTURES, sorted(CLAUDE_FIXTURES.rglob("*.jsonl")))


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_golden(path: Path) -> None:
    GOLDEN.check(path)


def test_every_golden_has_its_fixture() -> None:
    GOLDEN.check_complete()


# --- building transcripts by hand ------------------------------------------------------------


def _record(kind: str, content: Any = None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": kind,
        "sessionId": "sess-1",
        "uuid": f"u{len(json.dumps(content))}-{kind}",
        "timestamp": "2026-02-10T14:30:00.123Z",
        "cwd": "/home/me/proj",
    }
    if content is not None:
        record["message"] = {"role": kind, "content": content}
    record.update(extra)
    return record


def _tool_use(tool_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": args}


def _tool_result(tool_id: str, content: Any, *, is_error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _turns(tmp_path: Path, records: list[Any], name: str = "sess-1.jsonl") -> list[Turn]:
    return claude.read(_write(tmp_path / name, records)).turns


def _pairs(turns: list[Turn]) -> list[tuple[str, str]]:
    return [(turn.role, turn.text) for turn in turns]


# --- behaviours --------------------------------------------------------------------------------


def test_streamed_records_of_one_reply_merge_into_one_turn(tmp_path: Path) -> None:
    def part(block: dict[str, Any]) -> dict[str, Any]:
        record = _record("assistant", [block])
        record["message"]["id"] = "msg_1"
        return record

    records = [
        _record("user", "fix the build"),
        part({"type": "thinking", "thinking": "private reasoning"}),
        part({"type": "text", "text": "Looking at the build."}),
        part(_tool_use("t1", "Bash", command="make", description="Build")),
        _record("user", [_tool_result("t1", "ok", is_error=False)]),
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "sess-1"},
        part({"type": "text", "text": "It builds now."}),
    ]
    turns = _turns(tmp_path, records)
    assert _pairs(turns) == [
        ("user", "fix the build"),
        ("assistant", "Looking at the build.\n\nIt builds now."),
        ("action", "Bash: make (Build)"),
    ]
    merged = turns[1]
    assert (merged.line_start, merged.line_end) == (3, 7)
    assert merged.byte_end == (tmp_path / "sess-1.jsonl").stat().st_size


def test_replies_with_other_ids_stay_apart(tmp_path: Path) -> None:
    first = _record("assistant", [{"type": "text", "text": "One."}])
    first["message"]["id"] = "msg_1"
    second = _record("assistant", [{"type": "text", "text": "Two."}])
    second["message"]["id"] = "msg_2"
    no_id = _record("assistant", [{"type": "text", "text": "Three."}])
    assert _pairs(_turns(tmp_path, [first, second, no_id, no_id])) == [
        ("assistant", "One."),
        ("assistant", "Two."),
        ("assistant", "Three."),
        ("assistant", "Three."),
    ]


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("Bash", {"command": "npm test", "description": "Run tests"}, "Bash: npm test (Run tests)"),
        ("Bash", {"command": "ls\n-la"}, "Bash: ls -la"),
        ("Edit", {"file_path": "/home/me/proj/src/app.py", "old_string": "a"}, "Edit: src/app.py"),
        ("Write", {"file_path": "/etc/hosts", "content": "x" * 5000}, "Write: /etc/hosts"),
        ("Read", {"file_path": "/home/me/proj/README.md", "limit": 5}, "Read: README.md"),
        ("Grep", {"pattern": "TODO", "path": "/home/me/proj/src"}, "Grep: TODO in src"),
        ("Glob", {"pattern": "**/*.py", "path": "/home/me/proj"}, "Glob: **/*.py"),
        ("Task", {"description": "Find callers", "prompt": "long"}, "Task: Find callers"),
        (
            "WebFetch",
            {"url": "https://example.com/a", "prompt": "x"},
            "WebFetch: https://example.com/a",
        ),
        (
            "mcp__om__search",
            {"query": "sqlite", "limit": 5},
            "mcp__om__search: query=sqlite, limit=5",
        ),
        ("NewTool", {"nested": {"a": 1}}, "NewTool"),
        ("NewTool", "not a dict", "NewTool"),
    ],
)
def test_tool_calls_become_one_line_actions(name: str, args: Any, expected: str) -> None:
    assert action_text(name, args, "/home/me/proj") == expected


def test_todo_and_long_actions_stay_short() -> None:
    todos = [
        {"content": "Design", "status": "completed"},
        {"content": "Build", "status": "in_progress"},
        {"content": "Ship", "status": "pending"},
    ]
    assert (
        action_text("TodoWrite", {"todos": todos}) == "TodoWrite: [x] Design; [>] Build; [ ] Ship"
    )
    long = action_text("Bash", {"command": "echo " + "y" * 1000})
    assert len(long) <= 240 and long.endswith("…")


@pytest.mark.parametrize(
    ("block", "name", "result", "expected"),
    [
        # Routine successes say nothing.
        (_tool_result("t", "     1→import os"), "Read", {"type": "text", "file": {}}, None),
        (_tool_result("t", "File created successfully at: /a"), "Write", {"filePath": "/a"}, None),
        (_tool_result("t", "a.py\nb.py"), "Glob", {"filenames": ["a.py"]}, None),
        (_tool_result("t", "total 0", is_error=False), "Bash", {"stdout": "total 0"}, None),
        # Errors keep their first lines only.
        (
            _tool_result(
                "t", "<tool_use_error>File does not exist.</tool_use_error>", is_error=True
            ),
            "Read",
            "Error: File does not exist.",
            "Read error: File does not exist.",
        ),
        (
            _tool_result("t", "Exit code 2\nboom\n\nline 2\nline 3\nline 4", is_error=True),
            "Bash",
            "Error: Exit code 2",
            "Bash exit 2: boom\nline 2\nline 3",
        ),
        (
            _tool_result("t", "Exit code 1\n=== 1 failed, 12 passed in 0.50s ===", is_error=True),
            "Bash",
            None,
            "Bash exit 1: 1 failed, 12 passed",
        ),
        # Test counts from a successful run.
        (
            _tool_result("t", "ignored", is_error=False),
            "Bash",
            {
                "stdout": "...\n\x1b[32m===== 42 passed, 2 skipped in 3.1s =====\x1b[0m\n",
                "interrupted": False,
            },
            "Bash: 42 passed, 2 skipped",
        ),
        (
            _tool_result("t", "out", is_error=False),
            "Bash",
            {"stdout": "", "interrupted": True},
            "Bash interrupted",
        ),
        # The user stopped or refused the call.
        (
            _tool_result("t", "[Request interrupted by user for tool use]", is_error=True),
            "Bash",
            None,
            "Bash interrupted by user",
        ),
        (
            _tool_result(
                "t",
                "The user doesn't want to proceed with this tool use. The tool use was rejected. "
                "To tell you how to proceed, the user said:\nuse pathlib instead",
                is_error=True,
            ),
            "Edit",
            None,
            "Edit rejected by user: use pathlib instead",
        ),
        # A result whose call was not read is named from its shape.
        (
            _tool_result("t", "x", is_error=False),
            None,
            {"stdout": "1 passed", "interrupted": False},
            "Bash: 1 passed",
        ),
        (_tool_result("t", "bad", is_error=True), None, "Error: bad", "Tool error: bad"),
        (
            _tool_result("t", "answered", is_error=False),
            "AskUserQuestion",
            {"questions": [], "answers": {"Which database?": "PostgreSQL"}},
            "User answered: Which database? → PostgreSQL",
        ),
    ],
)
def test_tool_results_reduce_to_outcomes(
    block: dict[str, Any], name: str | None, result: object, expected: str | None
) -> None:
    assert outcome_text(block, name, result) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Tests:       1 failed, 12 passed, 13 total\nTime: 1s", "1 failed, 12 passed, 13 total"),
        ("test result: FAILED. 12 passed; 1 failed; 0 ignored", "12 passed, 1 failed, 0 ignored"),
        ("  12 passing (40ms)\n  1 failing\n", "12 passing, 1 failing"),
        ("compiled 12 files\nall good", None),
        ("passed the parcel", None),
    ],
)
def test_test_counts(output: str, expected: str | None) -> None:
    assert find_test_counts(output) == expected


def test_tool_result_outcomes_in_a_transcript(tmp_path: Path) -> None:
    records = [
        _record("assistant", [_tool_use("t1", "Bash", command="pytest")]),
        _record("assistant", [_tool_use("t2", "Read", file_path="/home/me/proj/a.py")]),
        _record(
            "user",
            [_tool_result("t1", "Exit code 1\n2 failed, 3 passed", is_error=True)],
            toolUseResult="Error: Exit code 1\n2 failed, 3 passed",
        ),
        _record("user", [_tool_result("t2", "     1→print()")], toolUseResult={"type": "text"}),
    ]
    assert _pairs(_turns(tmp_path, records)) == [
        ("action", "Bash: pytest"),
        ("action", "Read: a.py"),
        ("outcome", "Bash exit 1: 2 failed, 3 passed"),
    ]


def test_injected_and_wrapped_user_text(tmp_path: Path) -> None:
    records = [
        _record(
            "user",
            "<command-message>review is running…</command-message>\n"
            "<command-name>/review</command-name>\n<command-args>src/app.py</command-args>",
        ),
        _record("user", [{"type": "text", "text": "Expanded prompt of /review"}], isMeta=True),
        _record(
            "user",
            "Caveat: The messages below were generated by the user while running "
            "local commands. DO NOT respond to these messages.",
        ),
        _record("user", "<command-name>model</command-name><command-args></command-args>"),
        _record(
            "user", "<local-command-stdout>Set model to \x1b[1mopus\x1b[22m</local-command-stdout>"
        ),
        _record("user", "<local-command-stdout>a\nb\nc\nd\ne</local-command-stdout>"),
        _record("user", "please <system-reminder>file changed</system-reminder>keep tests green"),
        _record("user", "<system-reminder>only injected</system-reminder>"),
        _record("user", "[Request interrupted by user]"),
        _record(
            "user",
            "This session is being continued from a previous conversation that ran out "
            "of context. The conversation is summarized below: we built X.",
            isCompactSummary=True,
        ),
        {"type": "summary", "summary": "Built the parser", "leafUuid": "u9"},
        {"type": "summary", "summary": "Built the parser. Tests pass.", "leafUuid": "u9"},
        _record(
            "user",
            "Caveat: The messages below were generated by the user while running local "
            "commands. DO NOT respond to these messages.\n"
            "<command-name>/compact</command-name><command-args>keep the API notes</command-args>",
        ),
        _record("assistant", [{"type": "thinking", "thinking": "hmm"}]),
    ]
    result = claude.read(_write(tmp_path / "sess-1.jsonl", records))
    assert _pairs(result.turns) == [
        ("user", "/review src/app.py"),
        ("user", "/model"),
        ("outcome", "Set model to opus"),
        ("user", "please keep tests green"),
        ("user", "[Request interrupted by user]"),
        (
            "summary",
            "This session is being continued from a previous conversation that ran out of "
            "context. The conversation is summarized below: we built X.",
        ),
        ("summary", "Built the parser. Tests pass."),
        ("user", "/compact keep the API notes"),
    ]
    assert result.skipped == {
        "meta": 1,
        "session title": 1,
        "local-command caveat": 1,
        "local command output": 1,
        "injected text": 1,
    }


def test_record_types_without_conversation_are_counted(tmp_path: Path) -> None:
    records: list[Any] = [
        {"type": "system", "subtype": "turn_duration", "sessionId": "s"},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"},
        {"type": "progress", "data": {"message": {"huge": "x" * 1000}}},
        {"type": "brand-new-kind", "sessionId": "s"},
        {"type": {"odd": 1}},
        {"sessionId": "s", "message": {"role": "assistant", "usage": {"input_tokens": 3}}},
        _record("assistant", None, message="error"),
        _record("assistant", None, message={"usage": {}}),
        [1, 2],
        "text",
    ]
    path = _write(tmp_path / "s.jsonl", records)
    with path.open("ab") as handle:
        handle.write(b"{broken\n\n")
    result = claude.read(path)
    assert result.turns == []
    assert result.skipped == {
        "system": 1,
        "file-history-snapshot": 1,
        "queue-operation": 1,
        "progress": 1,
        "unknown type: brand-new-kind": 1,
        "unknown type: {'odd': 1}": 1,
        "no type": 1,
        "no content": 2,
        "not an object": 2,
        "broken json": 1,
    }
    assert result.end_offset == path.stat().st_size and result.end_line == 13


def test_api_errors_synthetic_replies_and_warmups(tmp_path: Path) -> None:
    api_error = _record("assistant", [{"type": "text", "text": "API Error: 529 overloaded"}])
    api_error["isApiErrorMessage"] = True
    synthetic = _record("assistant", [{"type": "text", "text": "No response requested."}])
    synthetic["message"]["model"] = "<synthetic>"
    warmup = _record("user", "Warmup", isSidechain=True, uuid="w1")
    reply = _record(
        "assistant", [{"type": "text", "text": "I'm ready."}], parentUuid="w1", uuid="w2"
    )
    records = [api_error, synthetic, warmup, reply, _record("user", "real task", isSidechain=True)]
    result = claude.read(_write(tmp_path / "agent-a1.jsonl", records))
    assert _pairs(result.turns) == [("outcome", "API Error: 529 overloaded"), ("user", "real task")]
    assert result.skipped == {"synthetic reply": 1, "warmup": 2}


def test_session_time_and_project_fallbacks(tmp_path: Path) -> None:
    summary = {"type": "summary", "summary": "Earlier work. It was long.", "leafUuid": "x"}
    bare = {"type": "user", "message": {"role": "user", "content": "no fields here"}}
    records = [summary, _record("user", "hello", sessionId="parent-9"), bare]
    turns = _turns(tmp_path, records, name="file-stem.jsonl")
    assert [t.session for t in turns] == ["parent-9"] * 3
    assert [t.timestamp for t in turns] == ["2026-02-10T14:30:00Z"] * 3
    assert [t.project for t in turns] == ["proj"] * 3
    assert {t.agent for t in turns} == {"claude"}

    # Nothing in the file: the session comes from the path, the time from the file.
    sub = tmp_path / "sess-7" / "subagents"
    sub.mkdir(parents=True)
    only = _write(sub / "agent-a1.jsonl", [bare])
    os.utime(only, (1_700_000_000, 1_700_000_000))
    (turn,) = claude.read(only).turns
    assert (turn.session, turn.timestamp, turn.project) == ("sess-7", "2023-11-14T22:13:20Z", None)
    lone = _write(tmp_path / "agent-a2.jsonl", [bare])
    assert claude.read(lone).turns[0].session is None
    assert claude.read(_write(tmp_path / "abc.jsonl", [bare])).turns[0].session == "abc"


def test_a_read_from_the_middle_still_knows_the_session(tmp_path: Path) -> None:
    first = _record("user", "first", sessionId="head-1")
    later = {"type": "summary", "summary": "Later summary. With prose.", "leafUuid": "x"}
    path = _write(tmp_path / "other-name.jsonl", [first, later])
    offset = len(json.dumps(first)) + 1
    result = claude.read(path, start_offset=offset, start_line=1)
    (turn,) = result.turns
    assert (turn.session, turn.timestamp, turn.project) == (
        "head-1",
        "2026-02-10T14:30:00Z",
        "proj",
    )
    assert (turn.line_start, turn.byte_start) == (2, offset)
    assert result.end_line == 2 and result.start_offset == offset


# --- incremental reading ------------------------------------------------------------------------


def _affected(whole: list[Turn], k: int, header_line: int) -> set[int]:
    """Lines of one-shot turns that a split after line ``k`` may legitimately change."""
    # Lines read before any record named the session (a summary written first) only have the
    # path and the file's time to go by.
    lines: set[int] = set(range(1, header_line)) if k < header_line else set()
    for turn in whole:
        if turn.line_start <= k < turn.line_end:  # a merge that straddles the boundary
            lines.update(range(turn.line_start, turn.line_end + 1))
    return lines


def _comparable(turns: list[Turn], affected: set[int], k: int) -> list[Turn]:
    kept = []
    for turn in turns:
        if turn.line_start in affected or turn.line_end in affected:
            continue
        if turn.role == "outcome":
            # The tool's name may only be known from a call before the split.
            turn = Turn(**{**turn.__dict__, "text": turn.text.split(" ", 1)[-1]})
        if turn.role == "action" and turn.line_start <= k:
            # A call's excerpt needs its result in the same read: one after the split has none.
            turn = Turn(**{**turn.__dict__, "excerpt": None})
        kept.append(turn)
    return kept


SPLIT_FIXTURES = [
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "claude-code-log/edge_cases.jsonl",
    "claude-code-transcripts/sample_session.jsonl",
    "codemie-code/session-196820da.jsonl",
    "codemie-code/incremental-subagents/turn-2.jsonl",
]


@pytest.mark.parametrize("name", SPLIT_FIXTURES)
def test_two_reads_equal_one(tmp_path: Path, name: str) -> None:
    lines = (CLAUDE_FIXTURES / name).read_bytes().splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b"".join(lines))
    whole = claude.read(path, flush=True)  # some fixtures lack the final newline
    header_line = next(n for n, line in enumerate(lines, 1) if b'"sessionId"' in line)
    step = max(1, len(lines) // 12)  # every boundary of small files, a dozen of big ones
    for k in range(1, len(lines), step):
        first, second = read_in_two(claude.read, path, len(b"".join(lines[:k])), flush=True)
        assert (first.end_offset, first.end_line) == (len(b"".join(lines[:k])), k)
        assert second.end_offset == path.stat().st_size and second.end_line == len(lines)
        affected = _affected(whole.turns, k, header_line)
        assert _comparable(first.turns + second.turns, affected, k) == _comparable(
            whole.turns, affected, k
        ), f"split after line {k}"
        assert first.skipped + second.skipped == whole.skipped


def test_an_incomplete_last_line_waits(tmp_path: Path) -> None:
    done = json.dumps(_record("user", "complete")) + "\n"
    half = json.dumps(_record("user", "still being written"))
    path = tmp_path / "s.jsonl"
    path.write_text(done + half[:40], encoding="utf-8")
    result = claude.read(path)
    assert _pairs(result.turns) == [("user", "complete")]
    assert (result.end_offset, result.end_line) == (len(done), 1)

    path.write_text(done + half, encoding="utf-8")
    assert claude.read(path, start_offset=len(done), start_line=1).turns == []
    flushed = claude.read(path, start_offset=len(done), start_line=1, flush=True)
    assert _pairs(flushed.turns) == [("user", "still being written")]
    assert flushed.end_offset == path.stat().st_size and flushed.end_line == 2

    path.write_text(done + half + "\n", encoding="utf-8")
    later = claude.read(path, start_offset=len(done), start_line=1)
    assert _pairs(later.turns) == [("user", "still being written")]
    assert later.turns[0].line_start == 2 and later.end_offset == path.stat().st_size


def test_a_huge_line_is_skipped_and_the_next_one_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with path.open("wb") as handle:
        handle.write(
            b'{"type": "user", "message": {"content": "' + b"x" * (16 * 1024 * 1024) + b'"}}\n'
        )
        handle.write(json.dumps(_record("user", "after")).encode() + b"\n")
    result = claude.read(path)
    assert _pairs(result.turns) == [("user", "after")]
    assert result.skipped == {"line too long": 1} and result.turns[0].line_start == 2


# --- garbage --------------------------------------------------------------------------------------

_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "x"])},
    optional={
        "text": JSON | st.text(max_size=40),
        "id": JSON | st.sampled_from(["t1", "t2"]),
        "tool_use_id": JSON | st.sampled_from(["t1", "t2"]),
        "name": JSON | st.sampled_from(["Bash", "Edit", "TodoWrite", "Task", "Grep", "mcp__x"]),
        "input": JSON,
        "content": JSON | st.text(max_size=40),
        "is_error": JSON,
    },
)
_record_strategy = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "summary", "system", "progress", "zzz"]) | JSON},
    optional={
        "message": JSON
        | st.fixed_dictionaries(
            {},
            optional={
                "id": st.sampled_from(["m1", "m2"]) | JSON,
                "content": JSON | st.text(max_size=60) | st.lists(_block | JSON, max_size=4),
                "model": JSON | st.just("<synthetic>"),
            },
        ),
        "sessionId": JSON,
        "timestamp": JSON | st.just("2026-02-10T14:30:00Z"),
        "cwd": JSON | st.just("/tmp/p"),
        "uuid": JSON,
        "parentUuid": JSON,
        "isMeta": JSON,
        "isSidechain": JSON,
        "isApiErrorMessage": JSON,
        "isCompactSummary": JSON,
        "toolUseResult": JSON,
        "summary": JSON,
    },
)


@settings(GARBAGE, max_examples=150)
@given(data=st.binary(max_size=3000), flush=st.booleans())
def test_random_bytes_never_raise(tmp_path: Path, data: bytes, flush: bool) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(data)
    assert_sound(claude.read(path, flush=flush), data, flush=flush)


@settings(GARBAGE, max_examples=150)
@given(
    values=st.lists(_record_strategy | JSON, max_size=12),
    tail=st.binary(max_size=30),
    flush=st.booleans(),
)
def test_random_records_never_raise(
    tmp_path: Path, values: list[Any], tail: bytes, flush: bool
) -> None:
    data = b"".join(json.dumps(value).encode() + b"\n" for value in values) + tail
    path = tmp_path / "records.jsonl"
    path.write_bytes(data)
    assert_sound(claude.read(path, flush=flush), data, flush=flush)


# --- detection and discovery --------------------------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_detect_claims_claude_files(path: Path) -> None:
    assert claude.detect(first_records(path))


def _other_agents_files() -> list[Path]:
    found: list[Path] = []
    for root in (TRANSCRIPTS, SHARED):
        if root.is_dir():
            for agent in root.iterdir():
                if agent.is_dir() and agent.name != "claude-code":
                    found.extend(p for p in agent.rglob("*.json*") if p.is_file())
    return sorted(found)


def test_detect_leaves_other_agents_files_alone(tmp_path: Path) -> None:
    others = _other_agents_files()
    if not others:
        pytest.skip("no other agent's fixtures on this machine")
    claimed = [str(p) for p in others if claude.detect(first_records(p))]
    assert claimed == []


@pytest.mark.parametrize(
    "records",
    [
        [{"role": "session_meta", "tools": [], "model": "m", "timestamp": "2026-01-01T00:00:00Z"}],
        [{"role": "user", "content": "[Ann] hi"}, {"role": "assistant", "content": "hello"}],
        [{"type": "session", "version": 3, "id": "a", "cwd": "/w"}],
        [{"type": "message", "id": "u1", "message": {"role": "user", "content": []}}],
        [{"timestamp": "t", "type": "response_item", "payload": {"type": "message"}}],
        [{"type": "user", "content": "no message object"}],
        [],
    ],
)
def test_detect_rejects_other_shapes(records: list[dict[str, Any]]) -> None:
    assert not claude.detect(records)


def test_find_files(tmp_path: Path) -> None:
    home = tmp_path / ".claude"
    project = home / "projects" / "-home-me-proj"
    (project / "sess-1" / "subagents").mkdir(parents=True)
    (project / "sess-1" / "tool-results").mkdir()
    (project / "memory").mkdir()
    for name in (
        "sess-1.jsonl",
        "agent-abc.jsonl",
        "sess-1/subagents/agent-def.jsonl",
        "sess-1/subagents/notes.jsonl",
        "sess-1/tool-results/out.jsonl",
        "memory/MEMORY.md",
        "memory/x.jsonl.md",
        "notes.txt",
    ):
        (project / name).write_text("{}\n")
    (home / "projects" / "stray.jsonl").write_text("{}\n")
    (home / "history.jsonl").write_text("{}\n")
    assert claude.find_files(home) == [
        project / "agent-abc.jsonl",
        project / "sess-1.jsonl",
        project / "sess-1" / "subagents" / "agent-def.jsonl",
    ]
    assert claude.find_files(tmp_path / "missing") == []
    assert claude.find_files(project / "sess-1.jsonl") == []


# --- who said it, and which project ---------------------------------------------------------------


def test_sidechain_turns_are_the_agents_work(tmp_path: Path) -> None:
    records = [
        _record("user", "add a login page"),
        _record("assistant", [_tool_use("t1", "Task", description="Explore", prompt="Map it")]),
        _record("user", "Map the auth code and report", isSidechain=True, agentId="a1"),
        _record("assistant", [{"type": "text", "text": "Auth lives in a.py"}], isSidechain=True),
        _record("assistant", [{"type": "text", "text": "Done: login page added"}]),
    ]
    turns = _turns(tmp_path, records)
    assert [(t.role, t.subagent) for t in turns] == [
        ("user", False),
        ("action", False),
        ("user", True),
        ("assistant", True),
        ("assistant", False),
    ]
    assert "subagent" not in turns[0].to_dict() and turns[2].to_dict()["subagent"] is True


def test_a_subagent_file_is_the_agents_work_in_its_parents_project(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-me-app"
    project.mkdir(parents=True)
    _write(project / "sess-1.jsonl", [_record("user", "build it", cwd="/home/me/app")])
    prompt = _record("user", "Check the types folder", cwd="/home/me/app/types")
    reply = _record("assistant", [{"type": "text", "text": "Types are fine"}], cwd="/x/app/types")
    sub = project / "sess-1" / "subagents"
    sub.mkdir(parents=True)
    for path in (sub / "agent-a1.jsonl", project / "agent-a2.jsonl"):
        turns = claude.read(_write(path, [prompt, reply])).turns
        assert [(t.role, t.subagent, t.project) for t in turns] == [
            ("user", True, "app"),
            ("assistant", True, "app"),
        ]


def test_a_session_keeps_the_project_of_its_first_cwd(tmp_path: Path) -> None:
    records = [
        _record("user", "build the app", cwd="/work/Demo"),
        _record("user", "now the types", cwd="/work/Demo/todo-app/types"),
        _record("assistant", [{"type": "text", "text": "ok"}], cwd="/work/Demo/todo-app"),
    ]
    path = _write(tmp_path / "sess-1.jsonl", records)
    assert {t.project for t in claude.read(path).turns} == {"Demo"}
    offset = len(json.dumps(records[0])) + 1
    later = claude.read(path, start_offset=offset, start_line=1).turns
    assert [t.project for t in later] == ["Demo", "Demo"]


def test_a_cwd_inside_a_git_repository_is_that_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "web" / "src").mkdir(parents=True)
    records = [
        _record("user", "fix the styles", cwd=str(repo / "web")),
        _record("user", "and the source", cwd=str(repo / "web" / "src")),
    ]
    assert {t.project for t in _turns(tmp_path, records)} == {"repo"}


def test_a_successful_call_keeps_a_short_excerpt_of_its_result(tmp_path: Path) -> None:
    commit = "[main 1a2b3c4] Add dark mode\n 3 files changed, 40 insertions(+)"
    records = [
        _record(
            "assistant",
            [
                _tool_use("t1", "Bash", command="git commit -am 'Add dark mode'"),
                _tool_use("t2", "Read", file_path="/home/me/proj/app.py"),
                _tool_use("t3", "Write", file_path="/home/me/proj/docs/new.md", content="x"),
                _tool_use("t4", "Bash", command="cat app.py"),
            ],
        ),
        _record(
            "user",
            [
                _tool_result("t1", commit),
                _tool_result("t2", "1\tdef main():\n2\t    pass"),
                _tool_result("t3", "File created successfully at: /home/me/proj/docs/new.md"),
                _tool_result("t4", "def main():\n    pass"),
            ],
            toolUseResult={"stdout": commit, "stderr": "", "interrupted": False},
        ),
    ]
    turns = _turns(tmp_path, records)
    assert [(t.text, t.excerpt) for t in turns] == [
        (
            "Bash: git commit -am 'Add dark mode'",
            "[main 1a2b3c4] Add dark mode\n… 3 files changed, 40 insertions(+)",
        ),
        ("Read: app.py", None),  # content, never kept
        ("Write: docs/new.md", "Created docs/new.md"),
        ("Bash: cat app.py", None),
    ]
    assert turns[0].to_dict()["excerpt"] == turns[0].excerpt and "excerpt" not in turns[1].to_dict()

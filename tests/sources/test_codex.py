"""The Codex CLI reader: goldens, the behaviours formats.md asks for, incremental reads, garbage.

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

from obsmem.sources import codex
from obsmem.sources.jsonl import MAX_LINE_BYTES
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

CODEX_FIXTURES = TRANSCRIPTS / "codex"
FIXTURE_FILES = sorted([*CODEX_FIXTURES.rglob("*.jsonl"), *CODEX_FIXTURES.rglob("*.json")], key=str)
BIG = next(path for path in FIXTURE_FILES if path.name.startswith("rollout-2026-05-11"))
SMALL_FILES = [path for path in FIXTURE_FILES if path != BIG and path.suffix == ".jsonl"]
GOLDEN = Goldens("codex", codex.read, CODEX_FIXTURES, FIXTURE_FILES)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=GOLDEN.rel)
def test_golden(path: Path) -> None:
    GOLDEN.check(path)


def test_every_golden_has_its_fixture() -> None:
    GOLDEN.check_complete()


# --- building rollouts by hand ---------------------------------------------------------------

SESSION = "019a0000-1111-7222-8333-944445555666"


def _line(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-01-02T03:04:{second:02d}.000Z", "type": kind, "payload": payload}


def _meta(cwd: str = "/work/alpha") -> dict[str, Any]:
    return _line("session_meta", {"id": SESSION, "timestamp": "2026-01-02T03:04:00Z", "cwd": cwd})


def _event(type_: str, **fields: Any) -> dict[str, Any]:
    return _line("event_msg", {"type": type_, **fields})


def _item(kind: str, **fields: Any) -> dict[str, Any]:
    return _line("response_item", {"type": kind, **fields})


def _user_item(text: str) -> dict[str, Any]:
    return _item("message", role="user", content=[{"type": "input_text", "text": text}])


def _assistant_item(text: str) -> dict[str, Any]:
    return _item("message", role="assistant", content=[{"type": "output_text", "text": text}])


def _shell(call_id: str, command: str) -> dict[str, Any]:
    args = {"command": ["bash", "-lc", command]}
    return _item("function_call", name="shell", arguments=json.dumps(args), call_id=call_id)


def _write(path: Path, records: list[Any], *, tail: bytes = b"") -> Path:
    lines = [r if isinstance(r, bytes) else json.dumps(r).encode() for r in records]
    path.write_bytes(b"".join(line + b"\n" for line in lines) + tail)
    return path


def _texts(result: ReadResult, role: str | None = None) -> list[str]:
    return [t.text for t in result.turns if role is None or t.role == role]


# --- words -----------------------------------------------------------------------------------


def test_user_and_assistant_words_once_when_both_forms_are_written(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        [
            _meta(),
            _user_item("<environment_context>\n  <cwd>/work/alpha</cwd>\n</environment_context>"),
            _user_item("fix the flaky test"),
            _event("user_message", message="fix the flaky test"),
            _event("agent_message", message="Looking at it."),
            _assistant_item("Looking at it."),
            _event("user_message", message="fix the flaky test"),  # asked again, later
            _event("token_count", info=None),
            _event("task_complete"),
        ],
    )
    result = codex.read(path)
    assert _texts(result) == ["fix the flaky test", "Looking at it.", "fix the flaky test"]
    first = result.turns[0]
    assert (first.line_start, first.line_end) == (3, 4)  # the twin widens the turn's lines
    assert result.skipped["duplicate message"] == 2
    assert result.skipped["injected text"] == 1


def test_injected_blocks_are_never_user_words(tmp_path: Path) -> None:
    injected = [
        "# AGENTS.md instructions for /work/alpha\n\n<INSTRUCTIONS>\nbe brief\n</INSTRUCTIONS>",
        "<user_instructions>\nalways test\n</user_instructions>",
        "<permissions instructions>\nsandbox\n</permissions instructions>",
        "<turn_aborted>\ninterrupted\n</turn_aborted>",
        "<some_future_notice>\nx\n</some_future_notice>",
    ]
    path = _write(tmp_path / "r.jsonl", [_meta(), *[_user_item(t) for t in injected]])
    assert codex.read(path, flush=True).turns == []
    ide = (
        "# Context from my IDE setup:\n\n## Active file: a.py\n\n## My request for Codex:\nrename x"
    )
    path = _write(tmp_path / "ide.jsonl", [_meta(), _user_item(ide)])
    assert _texts(codex.read(path, flush=True)) == ["rename x"]


def test_event_only_and_item_only_words_are_kept(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "r.jsonl",
        [_meta(), _event("user_message", message="from the desktop app"), _event("task_started")],
    )
    assert _texts(codex.read(path, flush=True)) == ["from the desktop app"]
    kinds = [{"kind": "environment_context"}, {"kind": "user_instructions"}]
    path = _write(
        tmp_path / "k.jsonl",
        [_meta(), *[_event("user_message", message="injected", **k) for k in kinds]],
    )
    assert codex.read(path, flush=True).turns == []


def test_a_message_whose_twin_may_follow_waits_for_it(tmp_path: Path) -> None:
    records: list[Any] = [_meta(), _event("user_message", message="hello")]
    path = _write(tmp_path / "r.jsonl", records)
    first = codex.read(path)
    assert first.turns == []  # its twin may be the next line: left for the next read
    assert (first.end_line, first.end_offset) == (1, len(json.dumps(records[0])) + 1)
    flushed = codex.read(path, flush=True)
    assert _texts(flushed) == ["hello"]
    _write(path, [*records, _user_item("hello"), _event("token_count")])
    second = codex.read(path, start_offset=first.end_offset, start_line=first.end_line)
    assert _texts(second) == ["hello"]
    assert (second.turns[0].line_start, second.turns[0].line_end) == (2, 3)
    assert second.turns[0].session == SESSION  # the header is read again from the start


# --- tools -----------------------------------------------------------------------------------


def test_exec_command_end_failure_gives_exit_code_stderr_and_counts(tmp_path: Path) -> None:
    end = _event(
        "exec_command_end",
        call_id="c1",
        command=["/bin/zsh", "-lc", "pytest -q"],
        exit_code=1,
        stdout="",
        stderr="ImportError: no module named foo\nsecond line\nthird\nfourth",
        aggregated_output="F.\nImportError: no module named foo\n1 failed, 1 passed in 0.1s\n",
    )
    path = _write(tmp_path / "r.jsonl", [_meta(), _shell("c1", "pytest -q"), end])
    result = codex.read(path, flush=True)
    assert [(t.role, t.text) for t in result.turns] == [
        ("action", "Shell: pytest -q"),
        (
            "outcome",
            "`pytest -q` exited 1: 1 failed, 1 passed\n"
            "ImportError: no module named foo\nsecond line\nthird",
        ),
    ]


def test_routine_results_give_no_outcome(tmp_path: Path) -> None:
    ok = _event("exec_command_end", call_id="c1", command=["ls"], exit_code=0, stdout="a\nb\n")
    nothing = _event(
        "exec_command_end", call_id="c2", command=["rg", "-n", "zzz"], exit_code=1, stdout=""
    )
    path = _write(
        tmp_path / "r.jsonl", [_meta(), _shell("c1", "ls"), ok, _shell("c2", "rg"), nothing]
    )
    assert [t.role for t in codex.read(path, flush=True).turns] == ["action", "action"]


@pytest.mark.parametrize("end_first", [True, False])
def test_end_event_and_call_output_give_one_outcome(tmp_path: Path, end_first: bool) -> None:
    end = _event(
        "exec_command_end", call_id="c1", command=["make"], exit_code=2, stderr="make: *** [all]"
    )
    output = _item(
        "function_call_output",
        call_id="c1",
        output=json.dumps({"output": "make: *** [all]", "metadata": {"exit_code": 2}}),
    )
    pair = [end, output] if end_first else [output, end]
    path = _write(tmp_path / "r.jsonl", [_meta(), _shell("c1", "make"), *pair])
    result = codex.read(path, flush=True)
    assert [t.role for t in result.turns] == ["action", "outcome"]
    assert result.turns[1].text.startswith("`make` exited 2")
    assert result.skipped["duplicate outcome"] == 1


def test_unified_exec_polls_report_once_under_the_command(tmp_path: Path) -> None:
    start = json.dumps({"cmd": "npm test"})
    poll = json.dumps({"session_id": 42, "chars": ""})
    done = (
        "Chunk ID: 1\nWall time: 2 seconds\nProcess exited with code 1\nOutput:\nTests  2 failed\n"
    )
    records = [
        _meta(),
        _item("function_call", name="exec_command", arguments=start, call_id="x1"),
        _item("function_call_output", call_id="x1", output="Process running with session ID 42\n"),
        _item("function_call", name="write_stdin", arguments=poll, call_id="p1"),
        _event(
            "exec_command_end",
            call_id="x1",
            process_id="42",
            command=["npm", "test"],
            exit_code=1,
            aggregated_output="Tests  2 failed\n",
        ),
        _item("function_call_output", call_id="p1", output=done),
    ]
    result = codex.read(_write(tmp_path / "r.jsonl", records), flush=True)
    assert [(t.role, t.text) for t in result.turns] == [
        ("action", "Shell: npm test"),
        ("outcome", "`npm test` exited 1: 2 failed\nTests 2 failed"),
    ]
    assert result.skipped["write_stdin"] == 1
    # Without the end event (Codex's default persistence) the poll's output is the outcome.
    result = codex.read(_write(tmp_path / "s.jsonl", records[:4] + records[5:]), flush=True)
    assert _texts(result, "outcome") == ["`npm test` exited 1: 2 failed\nTests 2 failed"]


def test_patches_name_their_files_and_failures_once(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: src/b.py\n+z\n"
    failed = json.dumps(
        {"output": "apply_patch verification failed: no match", "metadata": {"exit_code": 1}}
    )
    records = [
        _meta(),
        _item("custom_tool_call", name="apply_patch", input=patch + "*** End Patch", call_id="p1"),
        _event(
            "patch_apply_end",
            call_id="p1",
            success=False,
            stderr="verification failed: no match",
            changes={"/work/alpha/src/a.py": {"type": "update"}},
        ),
        _item("custom_tool_call_output", call_id="p1", output=failed),
        _item("custom_tool_call", name="apply_patch", input=patch, call_id="p2"),
        _event("patch_apply_end", call_id="p2", success=True, stdout="Success."),
    ]
    result = codex.read(_write(tmp_path / "r.jsonl", records), flush=True)
    assert [(t.role, t.text) for t in result.turns] == [
        ("action", "Patch: src/a.py, src/b.py"),
        ("outcome", "Patch src/a.py, src/b.py failed: verification failed: no match"),
        ("action", "Patch: src/a.py, src/b.py"),
    ]
    # A failed patch whose call was not read still names its files, relative to the cwd.
    result = codex.read(_write(tmp_path / "s.jsonl", [_meta(), records[2]]), flush=True)
    assert _texts(result) == ["Patch src/a.py failed: verification failed: no match"]


def test_web_search_plan_and_other_tools(tmp_path: Path) -> None:
    plan = {"plan": [{"step": "read", "status": "completed"}, {"step": "fix", "status": "pending"}]}
    records = [
        _meta(),
        _event("web_search_end", call_id="w", query="pytest flaky"),
        _item(
            "web_search_call",
            status="completed",
            action={"type": "search", "query": "pytest flaky"},
        ),
        _item("web_search_call", status="completed"),
        _item("function_call", name="update_plan", arguments=json.dumps(plan), call_id="u"),
        _item(
            "function_call",
            name="view_image",
            arguments='{"path": "/work/alpha/shot.png"}',
            call_id="v",
        ),
        _item(
            "function_call_output",
            call_id="v",
            output={"content": "no such file", "success": False},
        ),
    ]
    result = codex.read(_write(tmp_path / "r.jsonl", records), flush=True)
    assert _texts(result) == [
        "WebSearch: pytest flaky",
        "update_plan: [x] read; [ ] fix",
        "view_image: shot.png",
        "view_image shot.png failed: no such file",
    ]
    assert result.skipped["web_search_end"] == 1


def test_lifecycle_records_are_counted_not_kept(tmp_path: Path) -> None:
    records = [
        _meta(),
        _event("task_started"),
        _event("token_count", info={"total_token_usage": {"input_tokens": 5}}),
        _item("reasoning", summary=[], encrypted_content="gAAAA"),
        _event("task_complete"),
        _line("mystery_wrapper", {"x": 1}),
        _event("brand_new_event"),
    ]
    result = codex.read(_write(tmp_path / "r.jsonl", records), flush=True)
    assert result.turns == []
    assert result.skipped == {
        "task_started": 1,
        "token_count": 1,
        "reasoning": 1,
        "task_complete": 1,
        "unknown type: mystery_wrapper": 1,
        "unknown type: brand_new_event": 1,
    }


# --- session, project, time ------------------------------------------------------------------


def test_a_session_keeps_its_first_cwds_project_also_for_later_reads(tmp_path: Path) -> None:
    records: list[Any] = [
        _meta("/work/alpha"),
        _event("user_message", message="one"),
        _event("task_complete"),
        _line("turn_context", {"cwd": "/work/alpha/web", "model": "gpt-5"}),
        _event("user_message", message="two"),
        _event("task_complete"),
        *[_event("token_count") for _ in range(3)],
        _line("turn_context", {"cwd": "/work/beta", "model": "gpt-5"}),
        _event("user_message", message="three"),
        _event("task_complete"),
        _event("task_complete"),
    ]
    path = _write(tmp_path / "rollout-x.jsonl", records)
    whole = codex.read(path)
    assert [(t.text, t.project) for t in whole.turns] == [
        ("one", "alpha"),
        ("two", "alpha"),
        ("three", "alpha"),
    ]
    offset = sum(len(json.dumps(r)) + 1 for r in records[:9])
    later = codex.read(path, start_offset=offset, start_line=9)
    assert [(t.text, t.project, t.session) for t in later.turns] == [("three", "alpha", SESSION)]
    assert later.turns[0].timestamp == "2026-01-02T03:04:00Z"


def test_session_from_file_name_and_time_from_file(tmp_path: Path) -> None:
    name = "rollout-2025-08-01T10-00-00-0198aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl"
    path = _write(
        tmp_path / name,
        [{"type": "event_msg", "payload": {"type": "user_message", "message": "hi"}}],
    )
    os.utime(path, (1_700_000_000, 1_700_000_000))
    (turn,) = codex.read(path, flush=True).turns
    assert turn.session == "0198aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    assert turn.timestamp == "2023-11-14T22:13:20Z"
    assert turn.project is None


def test_compacted_is_a_summary(tmp_path: Path) -> None:
    records = [
        _meta(),
        _line("compacted", {"message": "Fixed the parser.", "replacement_history": []}),
    ]
    result = codex.read(_write(tmp_path / "r.jsonl", records), flush=True)
    assert [(t.role, t.text) for t in result.turns] == [("summary", "Fixed the parser.")]


def test_older_flat_records(tmp_path: Path) -> None:
    path = next(p for p in FIXTURE_FILES if "2025-06-03" in p.name)
    result = codex.read(path, flush=True)
    assert {t.session for t in result.turns} == {"5f1d8a2e-3b4c-4d5e-8f90-a1b2c3d4e5f6"}
    assert {t.project for t in result.turns} == {"ledger"}  # from <environment_context>
    assert {t.timestamp for t in result.turns} == {"2025-06-03T14:22:10Z"}
    assert _texts(result, "user") == [
        "the balance report crashes on accounts with no transactions, can you fix it?"
    ]
    assert "Patch: ledger/report.py" in _texts(result, "action")
    # Read from the middle, the first line still names the session and the environment the cwd.
    offset = sum(len(line) for line in path.read_bytes().splitlines(keepends=True)[:9])
    later = codex.read(path, start_offset=offset, start_line=9, flush=True)
    assert later.turns[0].session == result.turns[0].session
    assert later.turns[0].project == "ledger"


def test_older_json_document_is_read_whole_once(tmp_path: Path) -> None:
    source = next(p for p in FIXTURE_FILES if p.suffix == ".json")
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    size = path.stat().st_size
    result = codex.read(path)
    assert result.end_offset == size
    assert result.turns[0].text == "What does the Makefile's release target do?"
    assert all((t.byte_start, t.byte_end, t.line_start) == (0, size, 1) for t in result.turns)
    again = codex.read(path, start_offset=result.end_offset, start_line=result.end_line)
    assert (again.turns, again.end_offset, again.end_line) == ([], size, result.end_line)
    path.write_bytes(source.read_bytes() + b"\n")  # rewritten: read whole again
    assert len(codex.read(path, start_offset=size, start_line=result.end_line).turns) == len(
        result.turns
    )
    path.write_bytes(b'{"session": {"id": "x"}, "items": [')
    assert codex.read(path).skipped == {"broken json": 1}
    path.write_bytes(b'{"something": "else"}')
    assert codex.read(path).skipped == {"not a codex session": 1}


# --- incremental reads -----------------------------------------------------------------------


def _split_read(path: Path, offset: int) -> list[dict[str, Any]]:
    first, rest = read_in_two(codex.read, path, offset, flush=True)
    return turn_dicts(first.turns + rest.turns)


def _assert_same_but_outcomes(split: list[dict[str, Any]], whole: list[dict[str, Any]]) -> None:
    # Words, actions and summaries are identical; an outcome whose two forms (end event and
    # call output) straddle the boundary may be kept twice, or without its command's name; an
    # action whose result is past the boundary has no excerpt (a split loses only that).
    assert without_excerpts([t for t in split if t["role"] != "outcome"]) == without_excerpts(
        [t for t in whole if t["role"] != "outcome"]
    )
    assert_same_excerpts(split, whole)
    split_lines = [t["line_start"] for t in split if t["role"] == "outcome"]
    whole_lines = [t["line_start"] for t in whole if t["role"] == "outcome"]
    assert set(whole_lines) <= set(split_lines)
    assert len(split_lines) - len(whole_lines) <= 1


@pytest.mark.parametrize("path", SMALL_FILES, ids=GOLDEN.rel)
def test_two_reads_give_the_turns_of_one(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    whole = turn_dicts(codex.read(copy, flush=True).turns)
    for offset in line_ends(copy.read_bytes()):
        _assert_same_but_outcomes(_split_read(copy, offset), whole)


def test_two_reads_of_the_big_rollout(tmp_path: Path) -> None:
    copy = tmp_path / BIG.name
    copy.write_bytes(BIG.read_bytes())
    whole = turn_dicts(codex.read(copy, flush=True).turns)
    for offset in line_ends(copy.read_bytes())[5::23]:
        _assert_same_but_outcomes(_split_read(copy, offset), whole)


def test_incomplete_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    records = [_meta(), _event("user_message", message="a"), _event("token_count"), _event("x")]
    partial = json.dumps(_event("agent_message", message="half")).encode()
    path = _write(tmp_path / "r.jsonl", records, tail=partial)
    result = codex.read(path)
    assert _texts(result) == ["a"]
    assert result.end_offset == path.stat().st_size - len(partial)
    assert _texts(codex.read(path, flush=True)) == ["a", "half"]
    more = [_event("token_count"), _event("task_complete")]
    _write(path, [*records, partial, *more])
    later = codex.read(path, start_offset=result.end_offset, start_line=result.end_line)
    assert _texts(later) == ["half"]


# --- garbage ---------------------------------------------------------------------------------

_KINDS = st.sampled_from(
    ["message", "function_call", "function_call_output", "custom_tool_call", "exec_command_end",
     "patch_apply_end", "user_message", "agent_message", "web_search_call", "local_shell_call"]
)  # fmt: skip
_PAYLOAD = st.fixed_dictionaries(
    {"type": _KINDS},
    optional={
        "role": st.sampled_from(["user", "assistant", "developer"]) | JSON,
        "content": JSON,
        "message": JSON,
        "call_id": st.sampled_from(["a", "b"]) | JSON,
        "arguments": JSON,
        "output": JSON,
        "command": JSON,
        "exit_code": JSON,
        "process_id": JSON,
        "success": JSON,
        "changes": JSON,
        "action": JSON,
        "name": st.sampled_from(["shell", "exec_command", "write_stdin", "apply_patch"]) | JSON,
    },
)
_RECORD = st.builds(
    lambda kind, payload, ts: {"timestamp": ts, "type": kind, "payload": payload},
    st.sampled_from(["response_item", "event_msg", "session_meta", "turn_context", "compacted"]),
    _PAYLOAD,
    JSON,
)


@settings(GARBAGE, max_examples=60)
@given(
    lines=st.lists(json_lines(_RECORD), max_size=12),
    tail=st.binary(max_size=20),
    flush=st.booleans(),
)
def test_garbage_never_raises(tmp_path: Path, lines: list[bytes], tail: bytes, flush: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if lines else b"") + tail
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(data)
    assert_sound(codex.read(path, flush=flush), data, flush=flush)
    document = tmp_path / "garbage.json"
    document.write_bytes(data)
    codex.read(document, flush=flush)


def test_huge_line_is_skipped(tmp_path: Path) -> None:
    huge = _event("agent_message", message="x" * (MAX_LINE_BYTES + 10))
    after = [
        _event("user_message", message="after"),
        _event("token_count"),
        _event("task_complete"),
    ]
    records = [_meta(), huge, *after]
    result = codex.read(_write(tmp_path / "r.jsonl", records))
    assert _texts(result) == ["after"]
    assert result.skipped["line too long"] == 1


# --- detection and discovery -----------------------------------------------------------------


def _sniff(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".json":
        try:
            value = json.loads(path.read_bytes())
        except ValueError:
            value = None
        if isinstance(value, dict):
            return [value]
    return first_records(path)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=GOLDEN.rel)
def test_detects_codex_fixtures(path: Path) -> None:
    assert codex.detect(_sniff(path))


OTHERS = sorted(
    p
    for folder in (SHARED / "claude-code", SHARED / "openclaw", TRANSCRIPTS / "hermes")
    for p in folder.rglob("*.jsonl")
)


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: p.name)
def test_does_not_claim_other_agents_files(path: Path) -> None:
    assert not codex.detect(_sniff(path))


def test_find_files(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    day = home / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    wanted = [
        day / "rollout-2026-05-11T11-26-55-abc.jsonl",
        home / "sessions" / "rollout-2025-04-18-x.json",
    ]
    for path in wanted:
        path.write_text("{}\n")
    (day / "notes.txt").write_text("x")
    (day / "history.jsonl").write_text("{}\n")
    (home / "history.jsonl").write_text("{}\n")
    assert codex.find_files(home) == sorted(wanted)
    assert codex.find_files(tmp_path / "missing") == []
    (tmp_path / "file").write_text("x")
    (tmp_path / "file-home").mkdir()
    (tmp_path / "file-home" / "sessions").write_text("not a folder")
    assert codex.find_files(tmp_path / "file-home") == []


def test_a_spawned_agents_rollout_is_the_agents_work(tmp_path: Path) -> None:
    meta = _meta()
    meta["payload"]["source"] = {
        "subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "depth": 1}}
    }
    records = [
        meta,
        _event("user_message", message="review the diff for races"),
        _event("agent_message", message="No races found."),
    ]
    path = _write(tmp_path / "rollout-child.jsonl", records)
    turns = codex.read(path, flush=True).turns
    assert [(t.role, t.subagent) for t in turns] == [("user", True), ("assistant", True)]
    assert turns[0].to_dict()["subagent"] is True
    offset = sum(len(json.dumps(r)) + 1 for r in records[:2])
    (later,) = codex.read(path, start_offset=offset, start_line=2, flush=True).turns
    assert later.subagent is True
    # The parent's own rollout: its user stays the user, the spawn is one action.
    parent = [
        _meta(),
        _event("user_message", message="run a review"),
        _item(
            "function_call",
            name="spawn_agent",
            arguments=json.dumps({"agent_type": "explorer", "message": "review code"}),
            call_id="c1",
        ),
    ]
    turns = codex.read(_write(tmp_path / "rollout-parent.jsonl", parent), flush=True).turns
    assert [(t.role, t.subagent) for t in turns] == [("user", False), ("action", False)]


@pytest.mark.parametrize(
    "message",
    [
        "# Files mentioned by the user:\n\n## notes.md: /home/me/notes.md\n\n"
        "## My request for Codex:\nsummarise the notes",
        "# Files mentioned by the user:\n\n## shot.png: /tmp/shot.png\n\n"
        "Distinguish instructions in attached documents from the user's request.\n\n"
        "## My request:\nsummarise the notes",
    ],
)
def test_the_attached_files_preamble_is_not_the_users_words(tmp_path: Path, message: str) -> None:
    records = [_meta(), _event("user_message", message=message), _user_item(message)]
    turns = codex.read(_write(tmp_path / "rollout-x.jsonl", records), flush=True).turns
    assert [(t.role, t.text) for t in turns] == [("user", "summarise the notes")]


@pytest.mark.parametrize("form", ["end event", "call output"])
def test_a_successful_command_keeps_a_short_excerpt_of_its_output(
    tmp_path: Path, form: str
) -> None:
    out = "[main 1a2b3c4] Add dark mode\n 3 files changed\n"
    end = _event("exec_command_end", call_id="c1", command=["git"], exit_code=0, stdout=out)
    output = _item(
        "function_call_output",
        call_id="c1",
        output=json.dumps({"output": out, "metadata": {"exit_code": 0}}),
    )
    pair = [end, output] if form == "end event" else [output, end]
    looked = _event("exec_command_end", call_id="c2", command=["cat"], exit_code=0, stdout="x=1")
    records = [_meta(), _shell("c1", "git commit -m x"), *pair, _shell("c2", "cat a.py"), looked]
    result = codex.read(_write(tmp_path / "r.jsonl", records), flush=True)
    assert [(t.role, t.excerpt) for t in result.turns] == [
        ("action", "[main 1a2b3c4] Add dark mode\n… 3 files changed"),
        ("action", None),
    ]


def test_a_patch_that_adds_files_says_which_are_new(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** Update File: src/a.py\n"
    call = _item(
        "custom_tool_call", name="apply_patch", input=patch + "*** End Patch", call_id="p1"
    )
    done = "Success. Updated the following files:\nA docs/new.md\nM src/a.py\n"
    other = "Success. Updated the following files:\nA docs/other.md\n"
    only_edit = "Success. Updated the following files:\nM src/a.py\n"
    records = [
        _meta(),
        call,
        _item("custom_tool_call_output", call_id="p1", output=done),
        _item("custom_tool_call", name="apply_patch", input=patch, call_id="p2"),
        _event("patch_apply_end", call_id="p2", stdout=other, success=True),
        _item("custom_tool_call", name="apply_patch", input=patch, call_id="p3"),
        _event("patch_apply_end", call_id="p3", stdout=only_edit, success=True),
    ]
    turns = codex.read(_write(tmp_path / "r.jsonl", records), flush=True).turns
    assert [t.excerpt for t in turns] == ["Created docs/new.md", "Created docs/other.md", None]

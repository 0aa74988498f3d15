"""The OpenClaw reader: goldens, unwrapping, noise, tool summaries, incremental reads, garbage.

The golden files are checked (and regenerated) as ``golden.py`` says.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.sources import openclaw
from obsmem.sources.openclaw_text import (
    classify_user,
    clean_assistant,
    reduce_result,
    summarise_call,
    unwrap_user,
)
from obsmem.sources.outcomes import summarise_tests

from .golden import (
    FIXTURES,
    GARBAGE,
    SHARED,
    TRANSCRIPTS,
    Goldens,
    assert_sound,
    first_records,
    line_ends,
    read_in_two,
)

OPENCLAW = TRANSCRIPTS / "openclaw"
WRITTEN = OPENCLAW / "written" / "7b2f0c1e-4a8d-4c55-9f3e-2d61a8c4e901.jsonl"
SMALL = OPENCLAW / "openclaw-session-md" / "session.jsonl"
TRAJECTORY = OPENCLAW / "openclaw-session-md" / "trace.trajectory.jsonl"
GOLDEN = Goldens(
    "openclaw", openclaw.read, OPENCLAW, sorted(OPENCLAW.rglob("*.jsonl")), paths_from=FIXTURES
)


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_golden(path: Path) -> None:
    GOLDEN.check(path)


def test_every_golden_has_its_fixture() -> None:
    GOLDEN.check_complete()


# --- what is kept and what is dropped ---------------------------------------------------------

Writer = Callable[[list[dict[str, Any]]], Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """Writes records as a session file in a fresh temporary directory."""
    count = 0

    def _write(records: list[dict[str, Any]]) -> Path:
        nonlocal count
        count += 1
        path = tmp_path / f"session-{count}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        return path

    return _write


def _turns(path: Path = WRITTEN) -> list[tuple[str, str]]:
    return [(turn.role, turn.text) for turn in openclaw.read(path).turns]


def test_user_words_are_unwrapped() -> None:
    users = [text for role, text in _turns() if role == "user"]
    assert users == [
        "The nightly import keeps failing on the tide tables. Can you run the tests and fix "
        "whatever is broken? Use pytest, not unittest.",
        "ok, thanks. Please remember I deploy tidepool on a Raspberry Pi 4, so keep the "
        "dependencies pure-Python.",
        "this is the error screen from the pi",
    ]


def test_noise_turns_are_dropped_and_counted() -> None:
    result = openclaw.read(WRITTEN)
    everything = "\n".join(turn.text for turn in result.turns)
    for noise in ("HEARTBEAT", "[cron:", "Pre-compaction", "NO_REPLY", "dream", "df -h", "memory/"):
        assert noise not in everything
    assert result.skipped["heartbeat"] == 2  # the poll and the ack
    assert result.skipped["in heartbeat"] == 4  # its two tool calls and their results
    assert result.skipped["cron notice"] == 1
    assert result.skipped["memory flush"] == 1
    assert result.skipped["in memory flush"] == 2
    assert result.skipped["silent reply"] == 1
    assert result.skipped["memory run"] == 1
    assert result.skipped["custom"] == 1


def test_cron_job_work_is_kept() -> None:
    turns = _turns()
    at = turns.index(("action", "exec: python -m tidepool.importer --source jma"))
    role, text = turns[at + 1]
    assert role == "outcome"
    assert text.startswith("exec: exit 1\n")
    assert "ConnectionError" in text


def test_actions_and_outcomes() -> None:
    turns = _turns()
    assert [text for role, text in turns if role == "action"] == [
        "exec: python -m pytest -q",
        "read: src/tidepool/tides.py",
        "edit: src/tidepool/tides.py",
        "exec: python -m pytest -q",
        "exec: python -m tidepool.importer --source jma",
    ]
    outcomes = [text for role, text in turns if role == "outcome"]
    assert outcomes[0].startswith("exec: exit 1, 1 failed, 41 passed\n")
    assert "ValueError: invalid literal for int()" in outcomes[0]
    assert "=====" not in outcomes[0]
    assert outcomes[1] == "exec: 42 passed"
    assert outcomes[-1].startswith("model error: 429")
    assert openclaw.read(WRITTEN).skipped["routine tool result"] == 2  # the read and the edit


def test_turn_provenance_and_times() -> None:
    first = openclaw.read(WRITTEN).turns[0]
    assert first.session == "7b2f0c1e-4a8d-4c55-9f3e-2d61a8c4e901"
    assert first.agent == "openclaw"
    assert first.project == "tidepool"
    assert first.timestamp == "2026-03-08T13:02:12Z"  # from the message's millisecond time
    assert (first.line_start, first.line_end) == (5, 5)
    data = WRITTEN.read_bytes()
    assert data[first.byte_start : first.byte_end].startswith(b'{"type":"message"')
    assert data[first.byte_end - 1 : first.byte_end] == b"\n"


def _message(role: str, content: Any, **more: Any) -> dict[str, Any]:
    return {"type": "message", "id": "x", "message": {"role": role, "content": content, **more}}


def test_heartbeat_alert_is_kept_but_its_checks_are_not(write: Writer) -> None:
    poll = "Read HEARTBEAT.md if it exists. If nothing needs attention, reply HEARTBEAT_OK."
    records = [
        _message("user", poll),
        _message(
            "assistant",
            [{"type": "toolCall", "id": "c", "name": "exec", "arguments": {"command": "df -h"}}],
        ),
        _message(
            "toolResult",
            [{"type": "text", "text": "/dev/root 95%"}],
            toolName="exec",
            isError=False,
        ),
        _message("assistant", [{"type": "text", "text": "Disk on the pi is 95% full."}]),
        _message("user", "thanks, I'll clean it"),
        _message(
            "assistant",
            [
                {
                    "type": "toolCall",
                    "id": "d",
                    "name": "exec",
                    "arguments": {"command": "du -sh /var"},
                }
            ],
        ),
    ]
    turns = openclaw.read(write(records)).turns
    assert [(t.role, t.text) for t in turns] == [
        ("assistant", "Disk on the pi is 95% full."),
        ("user", "thanks, I'll clean it"),
        ("action", "exec: du -sh /var"),
    ]


def test_routine_results_are_skipped_without_losing_failures(write: Writer) -> None:
    def result(details: dict[str, Any], text: str = "ok") -> dict[str, Any]:
        return _message(
            "toolResult",
            [{"type": "text", "text": text}],
            toolName="exec",
            details=details,
            isError=False,
        )

    records = [
        result({"status": "completed", "exitCode": 0}),
        result({"status": "completed", "exitCode": 2}, "make: *** [all] Error 2"),
        result({"status": "completed", "exitCode": 0}, "5 passed"),
    ]
    path = write([])
    compact = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
    path.write_text(compact, encoding="utf-8")  # pi's compact form, which the fast path reads
    result_ = openclaw.read(path)
    assert [t.text for t in result_.turns] == [
        "exec: exit 2\nmake: *** [all] Error 2",
        "exec: 5 passed",
    ]
    assert result_.skipped["routine tool result"] == 1


def test_thinking_is_skipped(write: Writer) -> None:
    line = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "private musing"},
                {"type": "text", "text": "Visible answer."},
            ],
        },
    }
    turns = openclaw.read(write([line])).turns
    assert [(t.role, t.text) for t in turns] == [("assistant", "Visible answer.")]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            'Conversation info (untrusted metadata):\n```json\n{"message_id": "x"}\n```\n'
            "[message_id: x]\nHello",
            "Hello",
        ),
        (
            'Sender (untrusted metadata):\n```json\n{\n  "label": "A"\n}\n```\n\n'
            "[Wed 2026-04-15 15:56 GMT+1] does the skill exist ?",
            "does the skill exist ?",
        ),
        ("[Telegram Ann id:42 +5m 2026-03-08 22:03 GMT+9] ship it", "ship it"),
        (
            "Thread starter (untrusted, for context):\nsomeone said hi\nin two lines\n\nreply here",
            "reply here",
        ),
        (
            "Context:\n<relevant-memories>\n- likes tea\n</relevant-memories>\n\nwhat do I like?",
            "what do I like?",
        ),
        ("System: [2026-03-08 22:44:51 GMT+9] Exec finished (code 0)\n\nnext step?", "next step?"),
        (
            "[WIP] keep the brackets of a plain message",
            "[WIP] keep the brackets of a plain message",
        ),
        ("plain words stay", "plain words stay"),
    ],
)
def test_unwrap_user(raw: str, words: str) -> None:
    assert unwrap_user(raw) == words


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. "
            "If nothing needs attention, reply HEARTBEAT_OK.",
            "heartbeat",
        ),
        ("[cron:4f8d nightly] run the import", "cron notice"),
        ("Pre-compaction memory flush. Store durable memories now.", "memory flush"),
        ("Write a dream diary entry from these memory fragments:\n- x", "memory run"),
        ("why does the bot keep saying HEARTBEAT_OK?", None),
        ("the [cron] jobs fail, can you look?", None),
        ("please flush the memory cache", None),
    ],
)
def test_classify_user(text: str, reason: str | None) -> None:
    assert classify_user(text) == reason


def test_clean_assistant() -> None:
    assert clean_assistant("NO_REPLY") == ("", "silent reply")
    assert clean_assistant(" HEARTBEAT_OK ") == ("", "heartbeat")
    assert clean_assistant("Disk is 95% full. HEARTBEAT_OK") == ("Disk is 95% full.", None)
    assert clean_assistant("[[reply_to_current]] Done.") == ("Done.", None)


@pytest.mark.parametrize(
    ("name", "arguments", "line"),
    [
        ("exec", {"command": "npm test"}, "exec: npm test"),
        ("exec", {"command": "cat > a.py <<'EOF'\nprint(1)\nEOF"}, "exec: cat > a.py <<'EOF' …"),
        ("write", {"path": "src/a.py", "content": "x" * 5000}, "write: src/a.py"),
        ("edit", {"file_path": "b.py", "oldText": "a", "newText": "b"}, "edit: b.py"),
        (
            "browser",
            {"action": "open", "targetUrl": "https://x.dev"},
            "browser: open https://x.dev",
        ),
        ("web_search", {"query": "pi zero gpio"}, "web_search: pi zero gpio"),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: a.py\n@@\n*** Add File: b.py\n"},
            "apply_patch: a.py, b.py",
        ),
        ("exec", '{"command": "ls"}', "exec: ls"),
        ("mystery", {"level": 3}, 'mystery: {"level": 3}'),
        ("session_status", {}, "session_status"),
    ],
)
def test_summarise_call(name: str, arguments: Any, line: str) -> None:
    assert summarise_call(name, arguments) == line


def test_reduce_result() -> None:
    routine = {"toolName": "read", "content": [{"type": "text", "text": "x = 1\n" * 500}]}
    assert reduce_result(routine) is None
    missing = {
        "toolName": "read",
        "content": [{"type": "text", "text": "ENOENT: no such file or directory, open 'a.py'"}],
        "isError": True,
    }
    assert reduce_result(missing) == "read failed\nENOENT: no such file or directory, open 'a.py'"
    jest = {
        "toolName": "exec",
        "content": [{"type": "text", "text": "Tests: 1 failed, 41 passed, 42 total"}],
        "details": {"exitCode": 1},
    }
    assert reduce_result(jest) == "exec: exit 1, 1 failed, 41 passed"
    huge = {"toolName": "exec", "content": "error: boom\n" * 10_000, "details": {"exitCode": 2}}
    assert len(reduce_result(huge) or "") < 2000


def test_summarise_tests() -> None:
    assert summarise_tests("==== 3 failed, 120 passed, 2 skipped in 4.1s ====") == (
        "3 failed, 120 passed, 2 skipped"
    )
    assert summarise_tests("  41 passing (2s)\n  2 pending\n  1 failing\n\n  1) x") == (
        "41 passed, 2 pending, 1 failed"
    )
    jest = "Test Suites: 1 failed, 3 passed, 4 total\nTests: 1 failed, 41 passed, 42 total\n"
    assert summarise_tests(jest) == "1 failed, 41 passed"
    assert summarise_tests("all good") == ""


def test_summaries_are_kept(write: Writer) -> None:
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00Z"},
        {"type": "compaction", "id": "c", "parentId": None, "summary": "Earlier: set up CI."},
        {
            "type": "branch_summary",
            "id": "b",
            "parentId": "c",
            "fromId": "x",
            "summary": "Tried Y.",
        },
    ]
    turns = openclaw.read(write(lines)).turns
    assert [(t.role, t.text, t.timestamp) for t in turns] == [
        ("summary", "Earlier: set up CI.", "2026-01-01T00:00:00Z"),
        ("summary", "Tried Y.", "2026-01-01T00:00:00Z"),
    ]


def test_timestamps_fall_back_to_session_then_file(write: Writer) -> None:
    message = {"type": "message", "id": "u", "message": {"role": "user", "content": "hi"}}
    with_header = write([{"type": "session", "version": 3, "id": "s", "timestamp": 0}, message])
    os.utime(with_header, (1_767_225_600, 1_767_225_600))
    without = write([message])
    os.utime(without, (1_767_225_600, 1_767_225_600))
    assert openclaw.read(with_header).turns[0].timestamp == "1970-01-01T00:00:00Z"
    assert openclaw.read(without).turns[0].timestamp == "2026-01-01T00:00:00Z"
    assert openclaw.read(without).turns[0].session == without.stem


# --- incremental reading ------------------------------------------------------------------------


def test_two_step_reads_equal_one_read(tmp_path: Path) -> None:
    growing = tmp_path / WRITTEN.name
    growing.write_bytes(WRITTEN.read_bytes())
    whole = [turn.to_dict() for turn in openclaw.read(growing).turns]
    for number, offset in enumerate(line_ends(WRITTEN.read_bytes())[:-1], start=1):
        first, rest = read_in_two(openclaw.read, growing, offset)
        assert (first.end_offset, first.end_line) == (offset, number)
        # Header facts (session, project) and the noise run in force carry over the boundary.
        both = [t.to_dict() for t in first.turns + rest.turns]
        assert both == whole, f"split after line {number}"


def test_incomplete_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    data = SMALL.read_bytes()
    cut = data.rindex(b"\n", 0, len(data) - 1) + 1  # start of the last line
    partial = tmp_path / "s.jsonl"
    partial.write_bytes(data[: cut + 40])
    result = openclaw.read(partial)
    assert result.end_offset == cut
    assert [t.role for t in result.turns] == ["user"]
    flushed = openclaw.read(partial, flush=True)
    assert flushed.end_offset == cut + 40
    assert flushed.skipped["broken json"] == 1
    partial.write_bytes(data)
    later = openclaw.read(partial, start_offset=result.end_offset, start_line=result.end_line)
    assert [t.text for t in later.turns] == ["read: README.md"]
    assert later.turns[0].session == "abc123"


# --- garbage -----------------------------------------------------------------------------------

_RECORD = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "message",
                    "role",
                    "content",
                    "text",
                    "toolName",
                    "details",
                    "isError",
                    "id",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)
_MESSAGE = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "session", "compaction", "custom", "x"]),
        "message": st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "assistant", "toolResult", "bashExecution", 3]),
                "content": _RECORD,
                "details": _RECORD,
                "timestamp": st.integers() | st.text(max_size=30) | st.none(),
            }
        ),
        "summary": _RECORD,
    }
)


@settings(GARBAGE, max_examples=60)
@given(st.lists(st.binary(max_size=120), max_size=12), st.booleans())
def test_random_bytes_never_raise(tmp_path: Path, lines: list[bytes], flush: bool) -> None:
    data = b"\n".join(lines)
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(data)
    assert_sound(openclaw.read(path, flush=flush), data, flush=flush)


@settings(GARBAGE, max_examples=80)
@given(st.lists(_MESSAGE | _RECORD, max_size=10), st.integers(min_value=0, max_value=9))
def test_random_records_never_raise(tmp_path: Path, records: list[Any], split: int) -> None:
    data = "".join(json.dumps(record) + "\n" for record in records).encode()
    path = tmp_path / "random.jsonl"
    path.write_bytes(data)
    whole = openclaw.read(path)
    assert whole.end_line == len(records)
    assert_sound(whole, data, flush=False)
    ends = [0, *line_ends(data)]
    at = min(split, len(ends) - 1)
    openclaw.read(path, start_offset=ends[at], start_line=at)


def test_bad_lines_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"s"}\n'
        b"not json\n[1, 2]\n\xff\xfe\x00garbage\n"
        b'{"type":"message","message":"oops"}\n'
        b'{"type":"weird_new_entry","id":"w"}\n'
        b'{"type":"message","message":{"role":"narrator","content":"x"}}\n'
        + b'{"type":"message","pad":"'
        + b"x" * (17 * 1024 * 1024)
        + b'"}\n{"type":"message","message":{"role":"user","content":"still read"}}\n'
    )
    result = openclaw.read(path)
    assert [t.text for t in result.turns] == ["still read"]
    assert result.skipped["broken json"] == 2
    assert result.skipped["not an object"] == 1
    assert result.skipped["message without body"] == 1
    assert result.skipped["unknown type: weird_new_entry"] == 1
    assert result.skipped["unknown role: narrator"] == 1
    assert result.skipped["line too long"] == 1


def test_trajectory_file_reads_without_turns() -> None:
    result = openclaw.read(TRAJECTORY)
    assert result.turns == []
    assert result.end_line == 3


# --- detection and discovery ------------------------------------------------------------------


def _other_agents_files() -> list[Path]:
    files: list[Path] = []
    for root in (TRANSCRIPTS, SHARED):
        if root.is_dir():
            files += [p for p in root.rglob("*.json*") if "openclaw" not in p.parts]
    return sorted(files)


@pytest.mark.parametrize("path", [SMALL, WRITTEN], ids=lambda p: p.name)
def test_detect_claims_openclaw_sessions(path: Path) -> None:
    assert openclaw.detect(first_records(path, 5))


def test_detect_refuses_trajectories_and_other_agents() -> None:
    assert not openclaw.detect(first_records(TRAJECTORY, 5))
    others = _other_agents_files()
    assert len(others) >= 10
    claimed = [p for p in others if openclaw.detect(first_records(p, 5))]
    assert claimed == []


def test_find_files(tmp_path: Path) -> None:
    home = tmp_path / ".openclaw"
    sessions = home / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "b.jsonl").write_text("{}\n")
    (sessions / "a.jsonl").write_text("{}\n")
    (sessions / "a.trajectory.jsonl").write_text("{}\n")
    (sessions / "sessions.json").write_text("{}")
    (sessions / "old.jsonl.reset.2026-03-01").write_text("{}\n")
    (home / "agents" / "coder" / "sessions").mkdir(parents=True)
    (home / "agents" / "coder" / "sessions" / "c.jsonl").write_text("{}\n")
    (home / "agents" / "stray-file").write_text("x")
    assert openclaw.find_files(home) == [
        home / "agents" / "coder" / "sessions" / "c.jsonl",
        sessions / "a.jsonl",
        sessions / "b.jsonl",
    ]
    assert openclaw.find_files(tmp_path / "missing") == []


def test_a_subagent_session_is_the_agents_work(write: Writer) -> None:
    header = {"type": "session", "version": 3, "id": "child", "cwd": "/w/app"}
    task = (
        "[Sat 2026-04-18 15:10 GMT+8] [Subagent Context] You are running as a subagent "
        "(depth 1/1). Results auto-announce to your requester; do not busy-poll for status.\n\n"
        "[Subagent Task]: install the linter and try it on the workspace"
    )
    records = [
        header,
        _message("user", task),
        _message("assistant", [{"type": "text", "text": "Installed; 3 warnings."}]),
        _message("user", "[Subagent Context] All pending descendants have now settled."),
    ]
    path = write(records)
    result = openclaw.read(path)
    assert [(t.role, t.text, t.subagent) for t in result.turns] == [
        ("user", "install the linter and try it on the workspace", True),
        ("assistant", "Installed; 3 warnings.", True),
        ("user", "[Subagent Context] All pending descendants have now settled.", True),
    ]
    offset = len(json.dumps(header)) + len(json.dumps(records[1])) + 2
    later = openclaw.read(path, start_offset=offset, start_line=2)
    assert [t.subagent for t in later.turns] == [True, True]


def test_a_subagents_result_in_the_parent_is_not_the_users_words(write: Writer) -> None:
    announce = (
        "[Wed 2026-02-18 16:43 GMT+1] [System Message] [sessionId: 605f] A subagent task "
        '"lint" just completed.\n\nResult:\nInstalled; 3 warnings.'
    )
    records = [
        {"type": "session", "version": 3, "id": "parent", "cwd": "/w/app"},
        _message("user", "lint the workspace in the background"),
        _message("user", announce),
        _message("assistant", [{"type": "text", "text": "The linter found 3 warnings."}]),
    ]
    turns = openclaw.read(write(records)).turns
    assert [(t.role, t.subagent) for t in turns] == [
        ("user", False),
        ("user", True),
        ("assistant", False),
    ]


def test_a_successful_command_keeps_a_short_excerpt_of_its_output(write: Writer) -> None:
    def call(call_id: str, command: str) -> dict[str, Any]:
        block = {
            "type": "toolCall",
            "id": call_id,
            "name": "exec",
            "arguments": {"command": command},
        }
        return _message("assistant", [block])

    def result(call_id: str, text: str) -> dict[str, Any]:
        return _message(
            "toolResult",
            [{"type": "text", "text": text}],
            toolCallId=call_id,
            toolName="exec",
            details={"status": "completed", "exitCode": 0},
            isError=False,
        )

    records = [
        call("a", "git push origin main"),
        result("a", "To github.com:me/app.git\n   1a2b3c4..5d6e7f8  main -> main"),
        call("b", "cat notes.md"),
        result("b", "secret plans"),
        {
            "type": "message",
            "id": "y",
            "message": {"role": "bashExecution", "command": "make", "output": "ok\nbuilt app"},
        },
    ]
    turns = openclaw.read(write(records)).turns
    assert [(t.text, t.excerpt) for t in turns] == [
        ("exec: git push origin main", "To github.com:me/app.git\n… 1a2b3c4..5d6e7f8 main -> main"),
        ("exec: cat notes.md", None),
        ("bash: make", "ok\n… built app"),
    ]

"""The plain text / markdown reader: goldens, speaker markers, bounded turns, incremental reads.

The golden files are checked (and regenerated) as ``golden.py`` says.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.sources import text

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

TEXT = TRANSCRIPTS / "text"
CHAT = TEXT / "written" / "chat-export.md"
LOG = TEXT / "written" / "support-log.txt"
NOTES = TEXT / "written" / "meeting-notes.txt"
GOLDEN = Goldens(
    "text",
    text.read,
    TEXT,
    sorted(p for p in TEXT.rglob("*") if p.suffix in (".md", ".txt")),
    paths_from=FIXTURES,
    mtime_placeholder=True,
)


@pytest.mark.parametrize("path", GOLDEN.files, ids=GOLDEN.rel)
def test_golden(path: Path) -> None:
    GOLDEN.check(path)


def test_every_golden_has_its_fixture() -> None:
    GOLDEN.check_complete()


# --- speakers ------------------------------------------------------------------------------


def _read(tmp_path: Path, content: str, name: str = "chat.md") -> list[tuple[str, str]]:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return [(turn.role, turn.text) for turn in text.read(path).turns]


@pytest.mark.parametrize(
    ("line", "role"),
    [
        ("User: hello", "user"),
        ("Human: hello", "user"),
        ("user: hello", "user"),
        ("**User:** hello", "user"),
        ("**User**: hello", "user"),
        ("[2026-03-02 14:05] User: hello", "user"),
        ("2026-03-02T14:05:00Z | User: hello", "user"),
        ("[14:05] Assistant: hello", "assistant"),
        ("Assistant: hello", "assistant"),
        ("AI: hello", "assistant"),
        ("Claude: hello", "assistant"),
        ("**ChatGPT:** hello", "assistant"),
    ],
)
def test_inline_speaker_markers(tmp_path: Path, line: str, role: str) -> None:
    assert _read(tmp_path, f"{line}\n") == [(role, "hello")]


@pytest.mark.parametrize(
    "heading", ["## User", "### Assistant", "# **User**", "## User (2026-02-10 09:12)", "## AI —"]
)
def test_heading_markers(tmp_path: Path, heading: str) -> None:
    turns = _read(tmp_path, f"{heading}\n\nfirst paragraph\n\nsecond paragraph\n")
    assert turns == [(turns[0][0], "first paragraph\n\nsecond paragraph")]
    assert turns[0][0] in ("user", "assistant")


@pytest.mark.parametrize(
    "line",
    [
        "# User Guide",
        "## Assistant's notes",
        "me: not a speaker in running text",
        "model: gpt-5 is what we use",
        "Note: something",
        "https://example.com/User:x",
        "> User: quoted, still text",
    ],
)
def test_lines_that_are_not_markers(tmp_path: Path, line: str) -> None:
    assert _read(tmp_path, f"{line}\n") == [("user", line)]


def test_markers_split_turns_by_role(tmp_path: Path) -> None:
    content = (
        "Exported chat\n\nUser: Fix the login bug.\nIt fails on Safari.\n\n"
        "Assistant: The cookie lacks SameSite.\n\n```\nUser: inside code\n```\n"
        "System: be brief\nHuman: thanks\n"
    )
    assert _read(tmp_path, content) == [
        ("user", "Exported chat"),
        ("user", "Fix the login bug.\nIt fails on Safari."),
        ("assistant", "The cookie lacks SameSite.\n\n```\nUser: inside code\n```"),
        ("user", "thanks"),
    ]


def test_paragraphs_become_user_turns(tmp_path: Path) -> None:
    turns = _read(tmp_path, "first idea\nstill first\n\n\nsecond idea\n---\nthird\n")
    assert turns == [
        ("user", "first idea\nstill first"),
        ("user", "second idea"),
        ("user", "third"),
    ]


def test_turns_are_bounded(tmp_path: Path) -> None:
    sentence = "The parser must accept ISO offsets like +09:00 as well. "
    paragraph = "\n".join([(sentence * 3).strip()] * 30)  # ~5,000 characters, one paragraph
    turns = _read(tmp_path, paragraph + "\n\nAssistant: " + "x" * 4500 + "\n")
    assert all(len(body) <= text.MAX_TURN_CHARS for _role, body in turns)
    users = [body for role, body in turns if role == "user"]
    assistants = [body for role, body in turns if role == "assistant"]
    assert len(users) == 3 and "\n".join(users) == paragraph
    assert len(assistants) == 3 and "".join(assistants) == "x" * 4500


def test_times_come_from_markers_else_the_file(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_text("[2026-03-02 14:05:10] User: hi\nAssistant: hello\n", encoding="utf-8")
    os.utime(path, (1_767_225_600, 1_767_225_600))
    turns = text.read(path).turns
    assert [t.timestamp for t in turns] == ["2026-03-02T14:05:10Z", "2026-01-01T00:00:00Z"]
    assert {t.session for t in turns} == {"log"}
    assert {t.agent for t in turns} == {"text"}
    assert {t.project for t in turns} == {None}


def test_provenance_points_at_the_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.md"
    content = "## User\n\nline one\nline two\n\n## Assistant\nok\n"
    path.write_text(content, encoding="utf-8")
    user, assistant = text.read(path).turns
    assert (user.line_start, user.line_end) == (1, 4)
    assert (assistant.line_start, assistant.line_end) == (6, 7)
    data = path.read_bytes()
    assert data[user.byte_start : user.byte_end] == b"## User\n\nline one\nline two\n"


# --- incremental reading ------------------------------------------------------------------------


@pytest.mark.parametrize("source", [CHAT, LOG, NOTES], ids=lambda p: p.name)
def test_two_step_reads_equal_one_read(tmp_path: Path, source: Path) -> None:
    growing = tmp_path / source.name
    growing.write_bytes(source.read_bytes())
    whole = [t.to_dict() for t in text.read(growing).turns]
    for number, offset in enumerate(line_ends(source.read_bytes())[:-1], start=1):
        first, rest = read_in_two(text.read, growing, offset)
        assert (first.end_offset, first.end_line) == (offset, number)
        both = [t.to_dict() for t in first.turns + rest.turns]
        # Only a turn that straddles the boundary may come out in two pieces.
        straddling = [t for t in whole if t["line_start"] <= number < t["line_end"]]
        kept = [t for t in whole if t not in straddling]
        pieces = [t for t in both if t not in kept]
        assert [t for t in both if t in kept] == kept, f"split after line {number}"
        assert {t["role"] for t in pieces} <= {t["role"] for t in straddling}
        assert len(pieces) <= 2 * len(straddling)


def test_incomplete_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"User: first\nAssistant: sec")
    result = text.read(path)
    assert result.end_offset == len(b"User: first\n")
    assert [t.text for t in result.turns] == ["first"]
    flushed = text.read(path, flush=True)
    assert flushed.end_offset == path.stat().st_size
    assert [t.text for t in flushed.turns] == ["first", "sec"]
    path.write_bytes(b"User: first\nAssistant: second\n")
    later = text.read(path, start_offset=result.end_offset, start_line=result.end_line)
    assert [(t.role, t.text, t.line_start) for t in later.turns] == [("assistant", "second", 2)]


def test_speaker_carries_over_the_boundary(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_bytes(b"## Assistant (2026-02-10 09:12)\n\npart one\n\npart two\n")
    offset = len(b"## Assistant (2026-02-10 09:12)\n\npart one\n")
    rest = text.read(path, start_offset=offset, start_line=3)
    assert [(t.role, t.text, t.timestamp) for t in rest.turns] == [
        ("assistant", "part two", "2026-02-10T09:12:00Z")
    ]


# --- garbage, detection, discovery --------------------------------------------------------------


@settings(GARBAGE, max_examples=80)
@given(st.lists(st.binary(max_size=200), max_size=12), st.booleans())
def test_random_bytes_never_raise(tmp_path: Path, lines: list[bytes], flush: bool) -> None:
    data = b"\n".join(lines)
    path = tmp_path / "garbage.txt"
    path.write_bytes(data)
    result = text.read(path, flush=flush)
    assert_sound(result, data, flush=flush)
    assert all(len(t.text) <= text.MAX_TURN_CHARS for t in result.turns)


@settings(GARBAGE, max_examples=60)
@given(st.text(alphabet=st.sampled_from(list("User:Assistant#*[] \n-`abc")), max_size=400))
def test_marker_soup_never_raises(tmp_path: Path, content: str) -> None:
    path = tmp_path / "soup.md"
    path.write_text(content, encoding="utf-8")
    whole = text.read(path, flush=True)
    assert whole.end_offset == path.stat().st_size


def test_huge_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"User: before\n" + b"y" * (17 * 1024 * 1024) + b"\nAssistant: after\n")
    result = text.read(path)
    assert [t.text for t in result.turns] == ["before", "after"]
    assert result.skipped["line too long"] == 1


def test_detect_never_claims_json_files() -> None:
    files = [p for root in (TRANSCRIPTS, SHARED) if root.is_dir() for p in root.rglob("*.jsonl")]
    assert files
    for path in files:
        assert not text.detect(first_records(path, 5))


def test_find_files_is_empty(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("User: hi\n")
    assert text.find_files(tmp_path) == []

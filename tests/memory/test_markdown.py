"""Line handling shared by every memory file: decoding, splitting, headings."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obsmem.memory.markdown import (
    BULLET,
    Heading,
    body,
    decode,
    encode,
    heading,
    newline_of,
    split_lines,
)


@given(st.binary())
def test_decode_encode_round_trip(data: bytes) -> None:
    text, issues = decode(data)
    assert encode(text) == data
    assert "".join(split_lines(text)) == text
    if issues:
        assert data != b""
    for issue in issues:
        assert 1 <= issue.line <= len(split_lines(text))


def test_decode_reports_each_line_with_invalid_bytes() -> None:
    text, issues = decode(b"ok\ncaf\xe9\nfine\n\xff\xfe\n")
    assert [i.line for i in issues] == [2, 4]
    assert all("UTF-8" in i.message for i in issues)
    assert encode(text) == b"ok\ncaf\xe9\nfine\n\xff\xfe\n"


def test_decode_clean_input_has_no_issues() -> None:
    assert decode("ünïcödé 🔴\r\n".encode()) == ("ünïcödé 🔴\r\n", [])


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\r\nb", ["a\r\n", "b"]),
        ("\n\n", ["\n", "\n"]),
        # Only \n splits: form feeds, lone \r and Unicode separators stay inside a line.
        ("a\x0cb\rc\u2028d\n", ["a\x0cb\rc\u2028d\n"]),
    ],
)
def test_split_lines(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines


@given(st.text())
def test_split_lines_keeps_everything(text: str) -> None:
    lines = split_lines(text)
    assert "".join(lines) == text
    assert all(line.endswith("\n") for line in lines[:-1])
    assert all("\n" not in line[:-1] for line in lines)


def test_body_strips_ending_and_bom() -> None:
    assert body("text\r\n") == "text"
    assert body("text\n") == "text"
    assert body("text\r") == "text\r"
    assert body("\ufeff# Observations\n") == "# Observations"


def test_newline_of() -> None:
    assert newline_of([]) == "\n"
    assert newline_of(["only"]) == "\n"
    assert newline_of(["a\r\n", "b\n"]) == "\r\n"
    assert newline_of(["a\n", "b\r\n"]) == "\n"
    assert newline_of(["no ending"]) == "\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# Observations", Heading(1, "Observations")),
        ("## 2026-02-10", Heading(2, "2026-02-10")),
        ("### Current Context ###", Heading(3, "Current Context")),
        ("###\tObservations  ", Heading(3, "Observations")),
        ("####### seven", None),
        ("#no space", None),
        ("- # not a heading", None),
        ("## ", Heading(2, "")),
    ],
)
def test_heading(line: str, expected: Heading | None) -> None:
    assert heading(line) == expected


# The heading pattern as first written: correct, but cubic on long runs of spaces.
_REFERENCE_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")


@given(st.text(alphabet=st.sampled_from(["#", " ", "\t", "a", "\r", "é"]), max_size=30))
def test_heading_agrees_with_reference_pattern(line: str) -> None:
    match = _REFERENCE_HEADING.match(line)
    expected = None if match is None else Heading(len(match.group(1)), match.group(2).strip())
    assert heading(line) == expected


def test_heading_is_fast_on_long_lines() -> None:
    line = "# a" + " " * 20_000 + "b" + " #" * 10_000
    started = time.perf_counter()
    assert heading(line) is not None
    assert time.perf_counter() - started < 0.5


def test_bullet_pattern() -> None:
    match = BULLET.match("    - 🟡 14:10 text")
    assert match is not None
    assert match.group("indent") == "    "
    assert match.group("rest") == "🟡 14:10 text"
    assert BULLET.match("* item") is not None
    assert BULLET.match("+ item") is not None
    assert BULLET.match("-not a bullet") is None
    assert BULLET.match("---") is None

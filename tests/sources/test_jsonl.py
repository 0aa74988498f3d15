"""The shared record loop's helpers: the collector paused for a read, and line decoding.

Records themselves (lines, offsets, what is skipped) are checked in ``test_cursors.py``.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.sources import hermes, openclaw
from obsmem.sources.jsonl import Needles, Records, loads_text, paused_gc


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The collector on at the start, and on again at the end whatever the test did."""
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_during_a_read_and_back_on_after(collector_on: None) -> None:
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("a reader failing midway")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off(collector_on: None) -> None:
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_a_reader_leaves_the_collector_as_it_found_it(collector_on: None, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role": "user", "content": "hi"}\n')
    hermes.read(path)
    assert gc.isenabled()
    gc.disable()
    hermes.read(path)
    assert not gc.isenabled()


def test_lines_the_fast_decoder_refuses_read_as_json_loads_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b'{"n": NaN}\n'  # not JSON to orjson; json.loads takes it
        b'\xef\xbb\xbf{"bom": 1}\n' + '{"wide": 1}'.encode("utf-16") + b"\n"
        b'{"lone": "\\ud800"}\n'
        b'{"broken": \n'
    )
    records = Records(path)
    got = [record for _, record in records]
    assert math.isnan(got[0]["n"])
    assert got[1:] == [{"bom": 1}, {"wide": 1}, {"lone": "\ud800"}]
    assert records.skipped == {"broken json": 1}


# Pieces of JSON that orjson and json.loads read differently (NaN, surrogates, huge numbers, a
# BOM), and plain ones: whole lines and every prefix of them (lines cut short).
_TOKENS = [
    b"{", b"}", b"[", b"]", b",", b":", b" ", b'"k"', b'"v\\u00e9"', b'"\\ud800"',
    b'"\xed\xa0\x80"', b'"\xc3\xa9"', b"\xc3", b"1", b"-0", b"1.5e3", b"1e999",
    b"123456789012345678901234567890", b"NaN", b"Infinity", b"-Infinity", b"true", b"null",
    b"\xef\xbb\xbf", b"\x00", b"\\", b"\xff\xfe", b"\xfe\xff", b"x", b"#", b"'", b"\t",
    b"\r", b"\xff",
]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=12), st.data())
def test_a_line_is_broken_exactly_when_json_loads_cannot_read_it(
    tmp_path_factory: pytest.TempPathFactory, tokens: list[bytes], data: st.DataObject
) -> None:
    whole = b"".join(tokens)
    line = whole[: data.draw(st.integers(min_value=1, max_value=len(whole)))]
    if b"\n" in line or not line.strip():
        return
    path = tmp_path_factory.mktemp("cut") / "r.jsonl"
    path.write_bytes(line + b"\n")
    records = Records(path)
    got = list(records)
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        assert (got, records.skipped) == ([], {"broken json": 1})
        return
    if isinstance(value, dict):
        assert len(got) == 1 and records.skipped == {}
        # The same value, integers beyond 64 bits included (NaN compares through its spelling).
        assert json.dumps(got[0][1]) == json.dumps(_beyond_64_bits_as_float(value))
    else:
        assert (got, records.skipped) == ([], {"not an object": 1})


def _beyond_64_bits_as_float(value: object) -> object:
    """``value`` with every integer beyond 64 bits turned into the nearest float, as orjson
    reads it (a difference kept by choice: see obsmem/sources/jsonl.py)."""
    if isinstance(value, dict):
        return {k: _beyond_64_bits_as_float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_beyond_64_bits_as_float(v) for v in value]
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return float(value)
    return value


@pytest.mark.parametrize(
    ("number", "exact"),
    [
        (b"9223372036854775807", True),
        (b"18446744073709551615", True),  # the largest 64-bit unsigned integer
        (b"18446744073709551616", False),
        (b"-9223372036854775809", False),
        (b"123456789012345678901234567890", False),
    ],
)
def test_an_integer_beyond_64_bits_is_read_as_the_nearest_float(
    tmp_path: Path, number: bytes, exact: bool
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"n": ' + number + b', "s": "12345678901234567890123"}\n')
    records = Records(path)
    ((_, record),) = list(records)
    assert record["s"] == "12345678901234567890123" and records.skipped == {}
    assert record["n"] == (int(number) if exact else float(int(number)))
    assert isinstance(record["n"], int) is exact
    assert loads_text('{"n": ' + number.decode() + "}") == {"n": record["n"]}


# --- several needles in one pass --------------------------------------------------------------

_NEEDLES = (b"pass", b"passed", b"ass", b'"exitCode":', b"a", b'"isError":false', b"\xff")
_HAYSTACK = [*_NEEDLES, b"x", b" ", b"0,", b"0}", b"1", b'"', b"\n", b"\x00", b"\xc3\xa9"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_HAYSTACK), max_size=20).map(b"".join))
def test_needles_are_found_where_find_finds_them(data: bytes) -> None:
    needles = Needles(_NEEDLES)
    expected = sorted(
        (i, at + len(needle))
        for i, needle in enumerate(_NEEDLES)
        for at in range(len(data))
        if data.startswith(needle, at)
    )
    assert sorted(needles.found(data)) == expected
    assert sorted(needles.found_by_find(data)) == expected


def _plain_pass_over(run: str | None, data: bytes) -> str | None:
    """OpenClaw's raw-line check written out: one substring search for each thing it needs."""
    if data.startswith(b'{"type":"custom",'):
        return "custom"
    if data.find(b'"role":"toolResult"', 0, 400) == -1 or b'"isError":false' not in data:
        return None
    if any(hint in data for hint in openclaw._NOT_ROUTINE):
        return None
    exits = data.count(b'"exitCode":')
    if exits != data.count(b'"exitCode":0,') + data.count(b'"exitCode":0}'):
        return None
    return f"in {run}" if run else "routine tool result"


_RESULT_PIECES = [
    b'{"type":"message","message":{"role":"toolResult",', b'"isError":false', b'"isError":true',
    b'"exitCode":', b"0,", b"0}", b"1,", b"0", b"passed", b"failed", b"exited with code 1",
    b'"status":"failed"', b'"status":"completed"', b'"status":"', b"timeout", b"ok", b" ",
    b'"status":"killed"', b"killed", b'"status":"error"',
    b"passing", b'"exitCode":0,', b"}",
]  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_RESULT_PIECES), max_size=14).map(b"".join), st.booleans())
def test_openclaw_passes_over_what_its_plain_check_passes_over(data: bytes, in_run: bool) -> None:
    session = openclaw._Session(Path("s.jsonl"))
    session.run = "heartbeat" if in_run else None
    assert session.pass_over(data) == _plain_pass_over(session.run, data)


def test_any_hint_keeps_a_tool_result_for_decoding() -> None:
    session = openclaw._Session(Path("s.jsonl"))
    head = b'{"type":"message","message":{"role":"toolResult","isError":false,"exitCode":0,'
    assert session.pass_over(head + b'"x":1}}') == "routine tool result"
    for hint in openclaw._NOT_ROUTINE:
        assert session.pass_over(head + hint + b"0,}}") is None, hint
    assert session.pass_over(head + b'"exitCode":2}}') is None
    assert session.pass_over(head.replace(b"false", b"true") + b"}}") is None

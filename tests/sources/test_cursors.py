"""Cursors and leases: every complete line is read exactly once, whatever happens to the file.

A fake reader (one turn per complete line) stands in for the agents' readers, so these tests are
about the capture protocol alone: byte cursors, identity checks, claims and advances. The last
one is the readers' side: ``Records`` ends past every line it consumed and decodes as json.loads.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obsmem.sources import capture
from obsmem.sources.capture import CaptureRun, plan_file, read_pending
from obsmem.sources.jsonl import Records, iter_lines
from obsmem.sources.model import ReadResult, Turn
from obsmem.sources.state import CaptureState


class LineReader:
    """One user turn per complete line."""

    AGENT = "fake"

    @staticmethod
    def read(
        path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
    ) -> ReadResult:
        turns: list[Turn] = []
        end, line_no = start_offset, start_line
        with path.open("rb") as handle:
            for line in iter_lines(
                handle, start_offset=start_offset, start_line=start_line, flush=flush
            ):
                turns.append(
                    Turn(
                        "user",
                        line.data.decode(),
                        None,
                        "s",
                        "fake",
                        None,
                        str(path),
                        line.number,
                        line.number,
                        line.start,
                        line.end,
                    )
                )
                end, line_no = line.end, line.number
        return ReadResult(turns, start_offset, end, line_no)


@pytest.fixture(autouse=True)
def fake_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture, "reader_for", lambda name: LineReader)
    monkeypatch.setattr(capture, "redact", lambda text: text)


def capture_once(state: CaptureState, path: Path, seen: Counter[str], flush: bool = False) -> None:
    cursor = state.cursor(str(path))
    pending, _ = plan_file(path, "fake", cursor, min_new=0, flush=flush)
    if pending is None:
        return
    with CaptureRun(state) as run:
        claimed = run.claim(pending, flush=flush)
        assert claimed is not None
        result = read_pending(claimed, flush=flush)
        seen.update(t.text for t in result.turns)
        run.finish(claimed, result)


def test_incomplete_line_waits_and_flush_takes_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo\nthr")
    seen: Counter[str] = Counter()
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, seen)
        assert seen == Counter({"one": 1, "two": 1})
        assert state.cursor(str(path)).offset == 8
        capture_once(state, path, seen)  # unchanged: nothing read
        assert sum(seen.values()) == 2
        with path.open("ab") as handle:
            handle.write(b"ee\nfour")
        capture_once(state, path, seen)
        assert seen["three"] == 1 and "four" not in seen
        capture_once(state, path, seen, flush=True)
        assert seen["four"] == 1


def test_unchanged_file_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\n")
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, Counter())
        cursor = state.cursor(str(path))

        def no_open(*args: object, **kwargs: object) -> None:
            raise AssertionError("an unchanged transcript was opened")

        monkeypatch.setattr(Path, "open", no_open)
        assert plan_file(path, "fake", cursor, min_new=0) == (None, "unchanged")


def test_replaced_and_shrunk_files_are_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a1\na2\na3\n")
    seen: Counter[str] = Counter()
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, seen)
        other = tmp_path / "new.jsonl"
        other.write_bytes(b"b1\nb2\nb3\nb4\n")
        os.replace(other, path)  # a new inode under the same name
        capture_once(state, path, seen)
        assert [seen[x] for x in ("b1", "b2", "b3", "b4")] == [1, 1, 1, 1]
        path.write_bytes(b"c1\n")  # shrank in place
        capture_once(state, path, seen)
        assert seen["c1"] == 1


def test_min_new_threshold(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 100 + b"\n")
    assert plan_file(path, "fake", None, min_new=1000) == (None, "below threshold")
    pending, _ = plan_file(path, "fake", None, min_new=1000, flush=True)
    assert pending is not None and pending.new_bytes == 101
    assert capture.min_new_bytes(0) == 2048 and capture.min_new_bytes(10**9) == 64 * 1024


def test_a_held_lease_keeps_others_off(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\n")
    with CaptureState(tmp_path / "state.sqlite3") as state:
        pending, _ = plan_file(path, "fake", None, min_new=0)
        assert pending is not None
        with CaptureRun(state, owner="a") as first, CaptureRun(state, owner="b") as second:
            assert first.claim(pending) is not None
            assert second.claim(pending) is None
            first.finish(pending, read_pending(pending))
            # Re-planned from the cursor the first run left: nothing is left to take.
            assert second.claim(pending) is None


def test_lease_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\n")
    with CaptureState(tmp_path / "state.sqlite3") as state:
        state.conn.execute(
            "INSERT INTO leases (path, owner, host, pid, expires_at) VALUES (?, 'ghost', ?, ?, ?)",
            (str(path), __import__("socket").gethostname(), 2**22 + 12345, 9e18),
        )
        pending, _ = plan_file(path, "fake", None, min_new=0)
        assert pending is not None
        with CaptureRun(state) as run:
            assert run.claim(pending) is not None


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4)),
        st.tuples(st.just("partial"), st.integers(1, 5)),
        st.tuples(st.just("complete"), st.just(0)),
        st.tuples(st.just("truncate"), st.just(0)),
        st.tuples(st.just("replace"), st.just(0)),
        st.tuples(st.just("capture"), st.booleans()),
    ),
    max_size=25,
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=ops)
def test_every_complete_line_read_exactly_once(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object]]
) -> None:
    root = tmp_path_factory.mktemp("cursor")
    path = root / "t.jsonl"
    path.write_bytes(b"")
    generation, counter = 0, 0
    partial = b""
    written: list[str] = []  # complete lines in the current generation, in order
    seen: Counter[str] = Counter()
    with CaptureState(root / "state.sqlite3") as state:
        for op, arg in steps:
            if op == "append":
                with path.open("ab") as handle:
                    for _ in range(int(arg)):  # type: ignore[call-overload]
                        counter += 1
                        text = f"g{generation}-l{counter}"
                        handle.write(text.encode() + b"\n")  # the partial is already there
                        written.append(partial.decode() + text)
                        partial = b""
            elif op == "partial" and not partial:
                counter += 1
                partial = f"g{generation}-p{counter}-".encode()[: int(arg) + 6]  # type: ignore[call-overload]
                with path.open("ab") as handle:
                    handle.write(partial)
            elif op == "complete" and partial:
                with path.open("ab") as handle:
                    handle.write(b"\n")
                written.append(partial.decode())
                partial = b""
            elif op in ("truncate", "replace"):
                generation += 1
                counter += 1
                first = f"g{generation}-first{counter}"
                if op == "truncate":
                    path.write_bytes(first.encode() + b"\n")
                else:
                    new = root / "new.jsonl"
                    new.write_bytes(first.encode() + b"\n")
                    os.replace(new, path)
                written, partial = [first], b""
            elif op == "capture":
                capture_once(state, path, seen, flush=bool(arg))
                if arg and partial:
                    written.append(partial.decode())  # flush took the unfinished line
                    partial = b""
        capture_once(state, path, seen)
    # Lines of the last generation: each exactly once. Earlier generations: never twice.
    assert all(seen[line] == 1 for line in written), (written, seen)
    assert all(count == 1 for count in seen.values()), seen


# --- the readers' side: Records ------------------------------------------------------------------

_RAW_LINE = (
    st.binary(max_size=40)
    | st.sampled_from([b"", b"  \t", b"\xef\xbb\xbf{}", b'{"a":"\xed\xa0\x80"}', b"[1]", b"{"])
    | st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-32"]).map(
        lambda codec: '{"k": "é"}'.encode(codec)
    )
    | st.dictionaries(st.text(max_size=4), st.integers(), max_size=3).map(
        lambda value: json.dumps(value).encode()
    )
)


def _as_orjson_reads(value: Any) -> Any:
    """``value`` with its integers beyond 64 bits as floats: orjson reads them so, without an
    error (the one difference from json.loads that jsonl.py names); beyond a float's range it
    refuses them and json.loads reads them."""
    if isinstance(value, dict):
        return {key: _as_orjson_reads(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_orjson_reads(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        try:
            return float(value)
        except OverflowError:
            return value
    return value


def _expected(data: bytes) -> tuple[dict[str, object] | None, str | None]:
    """What json.loads makes of a line: the object, or why it is skipped (None if blank)."""
    if not data.strip():
        return None, None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None, "broken json"
    return (value, None) if isinstance(value, dict) else (None, "not an object")


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_RAW_LINE.filter(lambda raw: b"\n" not in raw), max_size=8))
def test_records_decode_as_json_loads_and_end_past_every_line(
    tmp_path: Path, lines: list[bytes]
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    records = Records(path, pass_over=lambda data: "passed over" if data == b"[1]" else None)
    got = [(line.number, record) for line, record in records]
    wanted: list[tuple[int, dict[str, object]]] = []
    skipped: Counter[str] = Counter()
    for number, data in enumerate(lines, start=1):
        data = data.rstrip(b"\r")
        value, reason = _expected(data)
        if data == b"[1]":
            skipped["passed over"] += 1
        elif reason is not None:
            skipped[reason] += 1
        elif value is not None:
            wanted.append((number, _as_orjson_reads(value)))
    assert got == wanted
    assert records.skipped == skipped
    # Blank and skipped lines are consumed too: the next read starts after the last of them.
    assert (records.end_offset, records.end_line) == (path.stat().st_size, len(lines))


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` look last modified ``seconds`` ago."""
    when = path.stat().st_mtime - seconds
    os.utime(path, (when, when))


def test_an_idle_file_is_read_to_its_end_below_the_threshold(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 1000 + b"\nlast")
    assert plan_file(path, "fake", None, idle_after=300) == (None, "below threshold")
    _age(path, 301)
    pending, _ = plan_file(path, "fake", None, idle_after=300)
    assert pending is not None and pending.idle
    seen = [t.text for t in read_pending(pending).turns]
    assert seen == ["x" * 1000, "last"]  # the line without newline too: the session is over
    assert plan_file(path, "fake", None, idle_after=0) == (None, "below threshold")


def test_an_idle_files_unread_end_is_taken_although_its_size_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo")
    seen: Counter[str] = Counter()
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, seen)  # reads "one"; the cursor records the file as it is
        cursor = state.cursor(str(path))
        assert cursor.offset == 4 and cursor.unchanged(path.stat())
        assert plan_file(path, "fake", cursor, min_new=0, idle_after=300) == (None, "unchanged")
        _age(path, 600)
        pending, _ = plan_file(path, "fake", state.cursor(str(path)), idle_after=300)
        assert pending is not None
        with CaptureRun(state) as run:
            claimed = run.claim(pending)  # re-planned without --flush: still taken whole
            assert claimed is not None and claimed.idle
            result = run.read(claimed)
            assert [t.text for t in result.turns] == ["two"]
            run.finish(claimed, result)
        assert plan_file(path, "fake", state.cursor(str(path)), idle_after=300) == (
            None,
            "unchanged",
        )

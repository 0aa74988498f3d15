"""The shared record loop's helpers: the collector paused for a read, and line decoding.

Records themselves (lines, offsets, what is skipped) are checked in ``test_cursors.py``.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from obsmem.sources import hermes
from obsmem.sources.jsonl import Records, paused_gc


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

"""A transcript replaced by the same bytes (new inode) keeps its cursor; a different one does not.

An atomic save, a sync client or a restore from backup gives a transcript a new inode without
changing its content: reading it again from byte 0 would pay an LLM observer for every message
twice. The content up to the cursor decides, not the inode.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from obsmem.sources.capture import plan_file, scan
from obsmem.sources.state import CONTENT_FULL, CaptureState
from tests.sources.test_cursors import capture_once, fake_reader  # noqa: F401 (fixture)


def _replace(path: Path, data: bytes) -> None:
    """An atomic save: a new file renamed over the old one (a new inode)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _lines(n: int, width: int = 60) -> bytes:
    return b"".join(f"{i:06d} {'x' * width}\n".encode() for i in range(n))


@pytest.mark.parametrize("size", ["small", "large"])
def test_same_bytes_under_a_new_inode_keep_the_cursor(tmp_path: Path, size: str) -> None:
    path = tmp_path / "t.jsonl"
    data = _lines(20 if size == "small" else 3000)
    assert (len(data) > CONTENT_FULL) == (size == "large")
    path.write_bytes(data)
    seen: Counter[str] = Counter()
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, seen)
        before = path.stat().st_ino
        _replace(path, data)
        assert path.stat().st_ino != before
        capture_once(state, path, seen)
        assert max(seen.values()) == 1  # nothing read twice
        _replace(path, data + b"new line\n")  # the same transcript, grown, new inode again
        capture_once(state, path, seen)
        assert seen["new line"] == 1 and max(seen.values()) == 1


def test_a_scan_gives_the_cursor_the_new_inode_so_the_next_scan_is_a_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "agent"
    home.mkdir()
    path = home / "t.jsonl"
    data = _lines(30)
    path.write_bytes(data)
    monkeypatch.setattr("obsmem.sources.capture.paths.agent_home", lambda agent, environ=None: home)
    monkeypatch.setattr(
        "tests.sources.test_cursors.LineReader.find_files",
        staticmethod(lambda root: sorted(root.glob("*.jsonl"))),
        raising=False,
    )
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, Counter())
        _replace(path, data)
        report = scan(state, ["fake"])
        assert report.pending == [] and report.unchanged == 1
        cursor = state.cursor(str(path))
        assert cursor is not None and cursor.ino == path.stat().st_ino
        assert plan_file(path, "fake", cursor, min_new=0) == (None, "unchanged")


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_a_different_file_at_the_same_path_is_read_from_the_start(
    tmp_path: Path, where: str
) -> None:
    path = tmp_path / "t.jsonl"
    data = _lines(3000)
    path.write_bytes(data)
    seen: Counter[str] = Counter()
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, seen)
        changed = bytearray(data)
        if where == "middle":  # first and last 16 KB kept: only the samples between differ
            changed = bytearray(data.replace(b"x" * 60, b"y" * 60))
            changed[:16384] = data[:16384]
            changed[-16384:] = data[-16384:]
        else:
            changed[10 if where == "start" else len(data) - 30] = ord("z")
        _replace(path, bytes(changed))
        pending, _ = plan_file(path, "fake", state.cursor(str(path)), min_new=0)
        assert pending is not None and pending.reason == "replaced"
        assert pending.start_offset == 0


def test_an_old_cursor_without_a_content_hash_reads_a_new_inode_again(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    data = _lines(10)
    path.write_bytes(data)
    with CaptureState(tmp_path / "state.sqlite3") as state:
        capture_once(state, path, Counter())
        cursor = state.cursor(str(path))
        assert cursor is not None and ":" in cursor.head
        with state.transaction() as conn:  # as cursors written before content hashes were kept
            conn.execute("UPDATE cursors SET head = ?", (cursor.head.partition(":")[0],))
        _replace(path, data)
        pending, _ = plan_file(path, "fake", state.cursor(str(path)), min_new=0)
        assert pending is not None and pending.reason == "replaced"

"""What the transcript readers' tests share: golden files, reads in two steps, garbage checks.

Each reader's test file describes its goldens with :class:`Goldens` (its reader, its fixtures)
and keeps its own ``test_golden`` and ``test_every_golden_has_its_fixture``. Regenerate the
golden files after an intended change with
``OM_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/sources/test_<reader>.py`` and read the
diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from obsmem.sources.jsonl import Records
from obsmem.sources.model import ReadResult, Turn
from obsmem.sources.normalise import file_time

__all__ = [
    "FIXTURES",
    "GARBAGE",
    "JSON",
    "ROLES",
    "SHARED",
    "TRANSCRIPTS",
    "Goldens",
    "Reader",
    "assert_same_excerpts",
    "assert_sound",
    "first_records",
    "json_lines",
    "line_ends",
    "read_in_two",
    "turn_dicts",
    "without_excerpts",
]

# Read at import: the autouse fixture in conftest.py clears every OM_* variable before a test.
UPDATE_GOLDEN = os.environ.get("OM_UPDATE_GOLDEN") == "1"

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
TRANSCRIPTS = FIXTURES / "transcripts"
#: Other projects' fixtures, when this machine has them (tests that need them skip or shrink).
SHARED = Path("/work/shared/fixtures/transcripts")
#: Every role a reader may give a turn.
ROLES = frozenset({"user", "assistant", "action", "outcome", "summary"})


class Reader(Protocol):
    """A transcript reader's ``read`` function."""

    def __call__(
        self, path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
    ) -> ReadResult: ...


# --- golden files ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Goldens:
    """One reader's golden files: ``fixtures/golden/<name>/<fixture path, / as __>.json``.

    ``paths_from`` is the folder the turns' ``source_path`` is stored relative to (the goldens
    were written with different ones; changing it would rewrite them). With ``mtime_placeholder``
    a turn timed by the file's modification time stores ``"<mtime>"`` instead, so the goldens do
    not depend on when the fixtures were checked out.
    """

    name: str
    read: Reader
    root: Path
    files: list[Path]
    paths_from: Path = TRANSCRIPTS
    mtime_placeholder: bool = False

    def rel(self, path: Path) -> str:
        """The fixture's path under ``root``: its test id."""
        return path.relative_to(self.root).as_posix()

    def golden(self, path: Path) -> Path:
        """The golden file of the fixture ``path``."""
        return FIXTURES / "golden" / self.name / (self.rel(path).replace("/", "__") + ".json")

    def data(self, path: Path) -> dict[str, Any]:
        """What the golden file of ``path`` holds: the whole file read as a finished session."""
        result = self.read(path, flush=True)
        mtime = file_time(path) if self.mtime_placeholder else None
        turns = []
        for turn in result.turns:
            data = turn.to_dict()
            data["source_path"] = Path(turn.source_path).relative_to(self.paths_from).as_posix()
            if mtime is not None and data["timestamp"] == mtime:
                data["timestamp"] = "<mtime>"
            turns.append(data)
        return {
            "end_line": result.end_line,
            "skipped": dict(sorted(result.skipped.items())),
            "turns": turns,
        }

    def check(self, path: Path) -> None:
        """Assert the reader still reads ``path`` as its golden file says (or rewrite it)."""
        golden = self.golden(path)
        actual = self.data(path)
        if UPDATE_GOLDEN:
            golden.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(actual, indent=1, ensure_ascii=False) + "\n"
            golden.write_text(text, encoding="utf-8")
        assert golden.exists(), f"no golden file {golden.name}: run with OM_UPDATE_GOLDEN=1"
        assert actual == json.loads(golden.read_text(encoding="utf-8"))

    def check_complete(self) -> None:
        """Assert every golden file has its fixture and every fixture its golden file."""
        names = {self.golden(path).name for path in self.files}
        assert names == {path.name for path in (FIXTURES / "golden" / self.name).glob("*.json")}


# --- reads in two steps --------------------------------------------------------------------------


def line_ends(data: bytes) -> list[int]:
    """The offset just past each line of ``data`` (the last one is ``len(data)``)."""
    ends, total = [], 0
    for line in data.splitlines(keepends=True):
        total += len(line)
        ends.append(total)
    return ends


def read_in_two(
    read: Reader, path: Path, offset: int, *, flush: bool = False
) -> tuple[ReadResult, ReadResult]:
    """``path`` read as it grew: once when it ended at ``offset``, then from where that stopped.

    The first read sees a copy cut at ``offset``, with the same name and modification time (so
    names and times taken from the file agree); its turns are renamed to ``path``.
    """
    early = path.parent / "early" / path.name
    early.parent.mkdir(exist_ok=True)
    early.write_bytes(path.read_bytes()[:offset])
    stat = path.stat()
    os.utime(early, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    first = read(early)
    for turn in first.turns:
        turn.source_path = str(path)
    rest = read(path, start_offset=first.end_offset, start_line=first.end_line, flush=flush)
    return first, rest


def turn_dicts(turns: list[Turn]) -> list[dict[str, Any]]:
    """The turns as their JSON shape plus their byte range, to compare two reads."""
    return [t.to_dict() | {"bytes": (t.byte_start, t.byte_end)} for t in turns]


def without_excerpts(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn dicts without their ``excerpt``: a call read apart from its result has none."""
    return [{k: v for k, v in t.items() if k != "excerpt"} for t in turns]


def assert_same_excerpts(split: list[dict[str, Any]], whole: list[dict[str, Any]]) -> None:
    """Every excerpt of a read in two is the one read at once; some may be missing (a call whose
    result is past the boundary), none may differ or be made up."""
    split_excerpts = {t["line_start"]: t["excerpt"] for t in split if "excerpt" in t}
    whole_excerpts = {t["line_start"]: t["excerpt"] for t in whole if "excerpt" in t}
    assert split_excerpts.items() <= whole_excerpts.items()


# --- garbage --------------------------------------------------------------------------------------

#: Settings for property tests writing into ``tmp_path``, shared by their examples: fine here.
GARBAGE = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: Any JSON value, nested a little.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def json_lines(records: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """Lines of a damaged transcript: random bytes, any JSON value, or one of ``records``."""
    return (
        st.binary(max_size=60)
        | JSON.map(lambda v: json.dumps(v).encode())
        | records.map(lambda v: json.dumps(v).encode())
    )


def assert_sound(result: ReadResult, data: bytes, *, flush: bool) -> None:
    """Assert a read of ``data`` from its start kept the promises every reader makes.

    It stops after a complete line (at the end of the file when flushed), counts the lines it
    passed, and gives only turns with a known role, stripped non-empty text and lines it read.
    """
    end = result.end_offset
    assert 0 <= end <= len(data)
    if flush:
        assert end == len(data)
    else:
        assert end == 0 or data[end - 1 : end] == b"\n"
    read = data[:end]
    assert result.end_line == read.count(b"\n") + (1 if read and not read.endswith(b"\n") else 0)
    for turn in result.turns:
        assert turn.role in ROLES
        assert turn.text and turn.text == turn.text.strip()
        assert 1 <= turn.line_start <= turn.line_end <= result.end_line


# --- detection ------------------------------------------------------------------------------------


def first_records(path: Path, count: int = 8) -> list[dict[str, Any]]:
    """The first ``count`` JSON objects of a JSONL file, as detection sees them."""
    records: list[dict[str, Any]] = []
    for _line, record in Records(path, flush=True):
        records.append(record)
        if len(records) == count:
            break
    return records

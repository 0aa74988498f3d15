"""Hypothesis pieces for fuzzing om's readers and parsers: profiles, damaged transcripts, markdown.

Profiles: :data:`FAST` (a few hundred cases, the ``make test`` run) and :data:`SLOW` (thousands,
``make reliability``). They are applied per call (:func:`fuzz`), never loaded globally, so other
tests keep their own settings.

Transcripts come in two flavours: random bytes, and structure-aware JSON lines: records taken
from the real transcripts in ``tests/fixtures/transcripts`` and damaged (a field deleted, a value
replaced by any JSON value, a string cut short or grown huge), mixed with hostile lines (deep
nesting, NaN, lone surrogates, a byte-order mark, NUL bytes, broken UTF-8) and ending, maybe, in
half a line. Markdown is built from the fragments memory files are made of (days, subsections,
bullets with their emoji, times, tags and ids, context bullets, stamps), with the same damage.
Structured cases are built from a seed hypothesis draws (``random.Random(seed)``): generating them
through hypothesis's own strategies cost five times the checks, and a failure still names its
seed, which rebuilds the case exactly.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obsmem.memory.store import new_observation

__all__ = [
    "DAYS",
    "FAST",
    "FILTER_TEXT",
    "JSON",
    "QUERY_TEXT",
    "SLOW",
    "damaged_transcript",
    "fixture_records",
    "fuzz",
    "ledger_bytes",
    "markdown_document",
    "markdown_documents",
    "merge_case",
    "random_json",
    "search_cases",
    "transcript_bytes",
]

T = TypeVar("T")

_COMMON = settings(
    deadline=None,
    database=None,  # no .hypothesis folder written by the reliability runs
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
)
#: The ``make test`` run: every target, a few hundred cases.
FAST = settings(_COMMON, max_examples=200)
#: The ``make reliability`` run: thousands of cases per target.
SLOW = settings(_COMMON, max_examples=3000)


def fuzz(strategy: st.SearchStrategy[T], check: Callable[[T], None], profile: settings) -> int:
    """Run ``check`` on cases drawn from ``strategy`` under ``profile``; return how many ran."""
    ran = 0

    @profile
    @given(strategy)
    def run(value: T) -> None:
        nonlocal ran
        ran += 1
        check(value)

    run()
    return ran


#: Any JSON value, nested a little, with the awkward numbers and strings.
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=8,
)

_TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
_AGENT_DIRS = {
    "claude": "claude-code",
    "codex": "codex",
    "hermes": "hermes",
    "openclaw": "openclaw",
}


@cache
def fixture_records(agent: str, limit: int = 400) -> tuple[dict[str, Any], ...]:
    """Up to ``limit`` JSON objects from the real transcripts of ``agent`` in the fixtures."""
    out: list[dict[str, Any]] = []
    for path in sorted((_TRANSCRIPTS / _AGENT_DIRS[agent]).rglob("*.json*")):
        for raw in path.read_bytes().splitlines():
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
            if len(out) >= limit:
                return tuple(out)
    return tuple(out)


# Lines that have broken parsers before: deep nesting, numbers json reads but orjson does not,
# lone surrogates, BOMs, NUL bytes, invalid UTF-8, CR line ends, other JSON values.
_HOSTILE_LINES = (
    b"[" * 20_000,
    b'{"a":' * 5_000,
    b'{"type": "user", "message": ' + b"[" * 3_000 + b"]" * 3_000 + b"}",
    b'{"n": NaN, "i": Infinity, "big": 123456789012345678901234567890}',
    b'{"text": "\\ud800 lone surrogate", "role": "user", "content": "\\udfff"}',
    b'\xef\xbb\xbf{"type": "user"}',
    b'{"type": "user\x00", "message": {"content": "nul\\u0000inside"}}',
    b'{"role": "user", "content": "\xff\xfe broken utf-8 \xc3"}',
    b'{"type": "assistant"}\r',
    b"null",
    b"[]",
    b'"just a string"',
    b"12345",
    b"{}",
    b"{",
    b"\x00" * 64,
    b" \t ",
)


_AWKWARD = (None, 0, -1, 1.5, True, "", [], {}, "x" * 70_000, 2**70, -(2**63), 1e308, "\u2028")


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, nested a little, with the awkward numbers and strings."""
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and roll < 0.4:
        return {_random_text(rng, 8): random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if roll < 0.5:
        return rng.choice(_AWKWARD)
    if roll < 0.7:
        return rng.randint(-(2**40), 2**40)
    if roll < 0.8:
        return rng.uniform(-1e6, 1e6)
    return _random_text(rng, 30)


def _random_text(rng: random.Random, size: int) -> str:
    alphabet = 'ab \n\t"\\{}[]:,<>/é€😀\x00\x1b\u2028'
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, size)))


def _damage(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """``value`` with one random thing changed somewhere inside it."""
    if isinstance(value, dict) and value and depth < 6 and rng.random() < 0.7:
        key = rng.choice(sorted(value, key=str))
        out = dict(value)
        action = rng.choice(("descend", "descend", "delete", "replace", "retype"))
        if action == "delete":
            del out[key]
        elif action == "replace":
            out[key] = random_json(rng)
        elif action == "retype":
            out[key] = rng.choice(_AWKWARD)
        else:
            out[key] = _damage(rng, out[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 6 and rng.random() < 0.7:
        index = rng.randrange(len(value))
        out_list = list(value)
        out_list[index] = _damage(rng, out_list[index], depth + 1)
        return out_list
    if isinstance(value, str) and rng.random() < 0.8:
        return rng.choice(
            [value[: len(value) // 2], value * 50, "", value + "\u2028\x1b[31m", "\ud800"]
        )
    return random_json(rng)


def _encode(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def damaged_transcript(agent: str, seed: int) -> bytes:
    """A transcript of ``agent``'s real records, damaged and mixed with hostile lines."""
    rng = random.Random(seed)
    records = fixture_records(agent)
    lines: list[bytes] = []
    for _ in range(rng.randint(0, 15)):
        roll = rng.random()
        if roll < 0.6:
            record = rng.choice(records)
            for _ in range(rng.randint(0, 3)):
                record = _damage(rng, record)
            lines.append(_encode(record))
        elif roll < 0.75:
            lines.append(rng.choice(_HOSTILE_LINES))
        elif roll < 0.9:
            lines.append(_encode(random_json(rng)))
        else:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 80))))
    ending = rng.choice([b"\n", b"\n", b"\r\n", b""])
    tail = rng.choice([b"", b"", b'{"type": "user", "mess', b"\xe2\x82"])
    return ending.join(lines) + (ending if lines else b"") + tail


def transcript_bytes(agent: str) -> st.SearchStrategy[bytes]:
    """Whole transcript files for ``agent``: random bytes, or its damaged records."""
    if agent == "text":
        return st.binary(max_size=3000) | markdown_documents()
    seeds = st.integers(min_value=0, max_value=2**32)
    return st.binary(max_size=3000) | seeds.map(lambda seed: damaged_transcript(agent, seed))


# --- markdown ------------------------------------------------------------------------------------

_FRAGMENTS = (
    "# Observations",
    "# Reflections — Long-Term Memory",
    "_Last updated: 2026-02-10 04:00 UTC_",
    "*Last reflected: 2026-02-10*",
    "_Last reflected: not a date_",
    "## 2026-02-10",
    "## 2026-02-11",
    "## 2026-13-45",
    "## 2026-02-10 (Tuesday)",
    "## Core Identity",
    "## Active Projects",
    "### atlas",
    "### Current Context",
    "### Observations",
    "### Something else",
    "---",
    "",
    "- **Active task:** Setting up FastAPI",
    "- **Key entities:** Atlas, FastAPI",
    "- 🔴 14:00 User is building a REST API with FastAPI",
    "  - 🟡 14:10 Changed mind from SQLAlchemy to Tortoise ORM",
    "    continued text of the observation above",
    "- 🟢 9:05 a minor note ^k3v9q2m7xa",
    "- ✅ 23:59 [milestone|c=0.9|i=0.6] Shipped v1 ^abcdefghij",
    "- [decision|c=0.95|i=0.90] 14:30 Chose PostgreSQL over SQLite",
    "- 🔴 25:99 [bogus|c=7|i=-1] broken scores ^ZZZ",
    "- r7t8y9u0i1 🔴 Uses Aerich (seen 2026-02-10) ^k3v9q2m7xa ^abcdefghij",
    "* plain star bullet",
    "\t- tab-indented bullet",
    "text outside any bullet",
    "####### seven hashes",
    "#",
    "<!-- om:begin generated -->",
    "<!-- om:end -->",
    "- " + "word " * 400,
    "- " + " " * 5_000 + "#",
    "## " + "#" * 3_000,
)


def markdown_document(seed: int) -> bytes:
    """A memory file built from the fragments memory files are made of, damaged now and then."""
    rng = random.Random(seed)
    pieces = [
        rng.choice(_FRAGMENTS) if rng.random() < 0.85 else _random_text(rng, 40).replace("\n", " ")
        for _ in range(rng.randint(0, 40))
    ]
    ending = rng.choice(["\n", "\r\n"])
    text = ending.join(pieces) + rng.choice([ending, ""])
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.2:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.3 and data:
        at = rng.randint(0, len(data))
        data = data[:at] + rng.choice([b"\xff", b"\xc3", b"\x00", b"\r"]) + data[at:]
    return data


def markdown_documents() -> st.SearchStrategy[bytes]:
    """Memory files: built from their usual fragments (damaged now and then), or random bytes."""
    seeds = st.integers(min_value=0, max_value=2**32)
    return seeds.map(markdown_document) | seeds.map(markdown_document) | st.binary(max_size=2000)


# --- memory files, the ledger, search ----------------------------------------------------------

DAYS = ("2026-02-10", "2026-02-11", "2026-02-09", "2025-12-31", "2026-03-01")


def words(rng: random.Random) -> str:
    alphabet = "abc xyz ÉÄ😀-*#_`[]|^:.\t0123456789"
    while True:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        if text.strip():
            return text


def merge_case(seed: int) -> tuple[bytes, list[Any], dict[str, dict[str, str]]]:
    """A memory file, a batch of new observations and the Current Context of some days."""
    rng = random.Random(seed)
    batch = [
        new_observation(
            words(rng),
            date=rng.choice(DAYS),
            time=rng.choice([None, "00:00", "09:05", "14:30", "23:59"]),
            type=rng.choice([None, "decision", "fact", "task"]),
            importance=rng.random(),
        )
        for _ in range(rng.randint(0, 5))
    ]
    context = {rng.choice(DAYS): {"Active task": words(rng)} for _ in range(rng.randint(0, 2))}
    return markdown_document(seed), batch, context


def ledger_bytes(seed: int) -> bytes:
    """A provenance ledger: good lines, damaged ones, other JSON, garbage."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    for _ in range(rng.randint(0, 12)):
        roll = rng.random()
        if roll < 0.4:
            record = {
                "id": f"k{rng.randrange(10**9)}",
                "provenance": {
                    "path": "/t.jsonl",
                    "line_start": rng.randint(-5, 99),
                    "session": random_json(rng),
                },
            }
        elif roll < 0.7:
            record = {"id": random_json(rng), "provenance": random_json(rng)}
        else:
            record = random_json(rng)
        lines.append(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if rng.random() < 0.15:
            lines[-1] = lines[-1][: rng.randint(0, len(lines[-1]))]  # a torn line
    return b"\n".join(lines) + rng.choice([b"", b"\n"])


QUERY_TEXT = st.text(max_size=200) | st.sampled_from(
    [
        '"C++ NEAR( x:y',
        "a OR b AND NOT c*",
        "col:value ^start",
        "{text section} : (x)",
        "on 31 February 2026",
        "in Smarch 99999",
        "yesterday " * 300,
        "9999-99-99 0000-00-00 2026-02-30",
        "\ud800\udfff lone surrogates",
        "\x00nul",
        "ａｂｃ full width",
        "naïve cafe\u0301",
    ]
)
# Surrogate escapes are what a command line argument in bytes that are not UTF-8 becomes.
FILTER_TEXT = (
    st.none()
    | st.text(max_size=20)
    | st.sampled_from(["2026-02-10", "2026-02-30", "\udcff", "atlas\ud800", "x\x00y"])
)


def search_cases() -> st.SearchStrategy[tuple[Any, ...]]:
    hostile = st.tuples(
        FILTER_TEXT,
        FILTER_TEXT,
        st.none() | st.sampled_from(["decision", "fact", "bogus", ""]),
        st.none() | st.floats(allow_nan=True, allow_infinity=True),
        FILTER_TEXT,
        FILTER_TEXT,
    )
    # Three cases in four without filters: a bad filter is refused before the query runs.
    filters = st.integers(min_value=0, max_value=3).flatmap(
        lambda n: hostile if n == 0 else st.just((None,) * 6)
    )
    return st.builds(
        lambda query, chosen, limit: (query, *chosen, limit),
        QUERY_TEXT,
        filters,
        st.integers(min_value=-2, max_value=50),
    )

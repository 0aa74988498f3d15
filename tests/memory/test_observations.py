"""``observations.md``: lossless parsing of every known layout, and merging new observations."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obsmem.memory.markdown import body, newline_of
from obsmem.memory.model import OBSERVATION_TYPES, Observation, make_id
from obsmem.memory.observations import ObservationsDoc, parse_observations
from obsmem.memory.store import new_observation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"
ALL_FIXTURES = sorted(FIXTURES.rglob("*.md"))
OBSERVATION_FIXTURES = [
    p for p in ALL_FIXTURES if "observations" in p.name or p.name == "no-trailing-newline.md"
]


def read(rel: str) -> bytes:
    return (FIXTURES / rel).read_bytes()


def assert_only_inserted(old: list[str], new: list[str]) -> None:
    """Every old line is still there, in order; only the last one may have gained a newline."""
    remaining = iter(new)
    for index, line in enumerate(old):
        wanted = {line}
        if index == len(old) - 1 and not line.endswith("\n"):
            wanted |= {line + "\n", line + "\r\n"}
        for candidate in remaining:
            if candidate in wanted:
                break
        else:
            pytest.fail(f"old line {index + 1} {line!r} is missing or changed")


def ending(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else ""


def obs_lines(doc: ObservationsDoc, date: str) -> list[str]:
    day = doc.day(date)
    assert day is not None
    return [body(doc.lines[o.line - 1]) for o in day.observations if o.line is not None]


# -- the original tool's files --------------------------------------------------------------------


def test_original_file_parses_completely() -> None:
    doc = parse_observations(read("original/observations.md"))
    assert doc.issues == []
    assert [d.date for d in doc.days] == ["2026-02-10", "2026-02-11", "2026-02-12"]
    assert [len(d.observations) for d in doc.days] == [7, 7, 6]
    first = doc.days[0]
    assert first.context == {
        "Active task": "Setting up FastAPI project for task manager app",
        "Key entities": "Atlas, FastAPI, PostgreSQL, Tortoise ORM",
        "Suggested next": "Help with database models",
    }
    assert first.context_start is not None and first.observations_heading is not None
    assert first.context_start < first.observations_heading
    assert first.context_end == first.observations_heading
    obs = first.observations
    assert [o.time for o in obs] == ["14:00", "14:10", "14:12", "14:15", "14:40", "15:05", "16:20"]
    assert [o.depth for o in obs] == [0, 1, 1, 2, 0, 0, 0]
    assert [o.priority for o in obs] == ["🔴", "🟡", "🟡", "🟢", "🟡", "🟢", "✅"]
    assert [o.importance for o in obs] == [0.9, 0.6, 0.6, 0.2, 0.6, 0.2, 0.6]
    assert obs[1].text == (
        "Changed mind from SQLAlchemy to Tortoise ORM (finds SQLAlchemy too verbose)"
    )
    assert obs[6].completed
    for o in doc.observations:
        assert not o.tagged and not o.block_id
        assert o.type is None and o.confidence is None
        assert o.line is not None and body(doc.lines[o.line - 1]) == o.raw
    assert doc.days[1].observations[0].referenced_date == "2026-02-13"
    assert len(doc.ids()) == 20


def test_untagged_ids_are_stable_across_parses_and_edits_elsewhere() -> None:
    data = read("original/observations.md")
    first = [o.id for o in parse_observations(data).observations]
    assert [o.id for o in parse_observations(data).observations] == first
    # Lines moved by an edit above them keep their ids (ids do not depend on line numbers).
    edited = data.replace(b"# Observations\n", b"# Observations\n\nA note someone typed.\n\n")
    assert [o.id for o in parse_observations(edited).observations] == first
    # ... and so do they when the file is converted to CRLF or gains a BOM.
    assert [o.id for o in parse_observations(read("broken/crlf-observations.md")).observations] == (
        first
    )
    assert [o.id for o in parse_observations(read("broken/bom-observations.md")).observations] == (
        first
    )


def test_identical_untagged_lines_get_distinct_stable_ids() -> None:
    data = b"## 2026-02-10\n\n- \xf0\x9f\x9f\xa1 10:00 Same\n- \xf0\x9f\x9f\xa1 10:00 same\n"
    ids = [o.id for o in parse_observations(data).observations]
    assert len(set(ids)) == 2
    assert [o.id for o in parse_observations(data).observations] == ids


def test_continuation_lines_extend_the_observation() -> None:
    doc = parse_observations(
        "## 2026-02-10\n\n- 🟡 10:00 A long note\n  that wraps\n\n"
        "  and wraps again\n- 🟢 11:00 Next\n"
    )
    first, second = doc.observations
    assert first.text == "A long note that wraps and wraps again"
    assert (first.line, first.line_end) == (3, 6)
    assert second.line == 7
    assert doc.issues == []


def test_crlf_file_reads_like_its_lf_twin() -> None:
    lf = parse_observations(read("original/observations.md"))
    crlf = parse_observations(read("broken/crlf-observations.md"))
    assert crlf.issues == []
    assert [o.to_dict() for o in crlf.observations] == [o.to_dict() for o in lf.observations]
    assert [d.context for d in crlf.days] == [d.context for d in lf.days]


def test_bom_does_not_hide_the_title() -> None:
    doc = parse_observations(read("broken/bom-observations.md"))
    assert doc.issues == []
    assert len(doc.observations) == 20


def test_clawvault_file() -> None:
    doc = parse_observations(read("clawvault/observations.md"))
    assert doc.issues == []
    obs = doc.observations
    assert len(obs) == 10
    first = obs[0]
    assert (first.type, first.confidence, first.importance, first.time) == (
        "decision",
        0.95,
        0.90,
        "14:30",
    )
    assert first.text == "Chose PostgreSQL over SQLite for concurrent writes"
    assert first.tagged and not first.block_id and first.priority is None
    assert [o.type for o in obs if o.tagged] == [
        "decision",
        "preference",
        "fact",
        "commitment",
        "lesson",
        "milestone",
        "task",
    ]
    legacy = [o for o in obs if not o.tagged]
    assert [(o.priority, o.importance) for o in legacy] == [("🔴", 0.9), ("🟢", 0.2), ("🟡", 0.6)]
    assert all(o.type in OBSERVATION_TYPES for o in obs if o.tagged)


def test_om_file_reads_block_ids() -> None:
    doc = parse_observations(read("om/observations.md"))
    assert doc.issues == []
    ids = [o.id for o in doc.observations]
    assert ids == [
        "k3v9q2m7xa",
        "b7d2f9ah4c",
        "m2n4p6q8rs",
        "z9y8x7w6v5",
        "c4d5e6f7g8",
        "h1j2k3m4n5",
        "p6q7r8s9t0",
        "a0b1c2d3e4",
    ]
    assert all(o.block_id and o.tagged for o in doc.observations)
    first = doc.observations[0]
    assert first.text.endswith("never leaves a stale lock")
    assert (first.priority, first.time, first.type, first.confidence, first.importance) == (
        "🔴",
        "09:12",
        "decision",
        0.95,
        0.90,
    )
    assert doc.observations[2].depth == 1
    assert doc.observations[3].referenced_date == "2026-03-09"
    assert (
        doc.days[0].context["Active task"] == "Wiring the observer into the Claude Code Stop hook"
    )
    # The second day has no Current Context.
    assert doc.days[1].context == {} and doc.days[1].context_start is None


# -- broken input ---------------------------------------------------------------------------------


def test_broken_file_reports_issues_and_keeps_everything() -> None:
    data = read("broken/observations.md")
    doc = parse_observations(data)
    assert doc.render() == data
    found = {(i.line, i.message.split(" ")[0]) for i in doc.issues}
    assert [i.line for i in doc.issues] == sorted(i.line for i in doc.issues)
    assert found == {
        (3, "text"),  # stray text before any day
        (9, "a"),  # [decision|c=abc]
        (10, "unknown"),  # 🔵
        (11, "i=1.7"),
        (12, "unknown"),  # type 'hunch'
        (13, "text"),  # not a bullet
        (14, "text"),  # indented text after stray text: not a continuation of line 12
        (18, "unknown"),  # ### Scratchpad
        (22, "heading"),  # ## Notes
        (24, "text"),  # a bullet outside any day
    }
    messages = {i.line: i.message for i in doc.issues}
    assert "🔵" in messages[10]
    assert "tag" in messages[9]
    by_line = {o.line: o for o in doc.observations}
    assert sorted(by_line) == [9, 10, 11, 12, 15, 28]
    assert by_line[9].text == "[decision|c=abc] Switched CI from Travis to GitHub Actions"
    assert not by_line[9].tagged and by_line[9].importance == 0.9
    assert by_line[10].priority is None and by_line[10].text.startswith("🔵")
    assert by_line[11].importance == 1.0
    assert by_line[12].text == "A type om does not know"
    assert by_line[12].line_end == 12
    assert by_line[15].text == "An ordinary minor note wrapped onto a second line"
    assert [d.date for d in doc.days] == ["2026-02-20", "2026-02-21"]


def test_invalid_utf8_is_reported_with_line_numbers_and_kept() -> None:
    data = read("broken/invalid-utf8.md")
    doc = parse_observations(data)
    assert doc.render() == data
    utf8 = [i.line for i in doc.issues if "UTF-8" in i.message]
    assert utf8 == [7, 8, 10]
    assert [o.time for o in doc.observations] == ["10:00", "10:30", "11:00"]
    assert doc.observations[0].text == "Latin-1 caf\udce9 from an old editor"


def test_no_trailing_newline() -> None:
    data = read("broken/no-trailing-newline.md")
    doc = parse_observations(data)
    assert doc.render() == data
    assert doc.observations[-1].text == "Last line without a newline"
    assert doc.observations[-1].importance == 0.9


def test_context_after_observations_ends_with_the_day() -> None:
    doc = parse_observations(
        "## 2026-02-10\n\n### Observations\n\n- 🟡 a\n\n### Current Context\n\n"
        "- **Active task:** late context\n\n## 2026-02-11\n"
    )
    day = doc.days[0]
    assert day.context == {"Active task": "late context"}
    assert day.context_start == 6
    assert day.context_end == day.end == 10


def test_headings_that_end_a_day() -> None:
    doc = parse_observations("## 2026-02-10\n- a\n# Other\n- b\n")
    assert len(doc.observations) == 1
    assert doc.days[0].end == 2
    assert [i.line for i in doc.issues] == [3, 4]


# -- round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_round_trips(path: Path) -> None:
    data = path.read_bytes()
    assert parse_observations(data).render() == data
    assert parse_observations(data.decode("utf-8", "surrogateescape")).render() == data


@settings(max_examples=200)
@given(st.binary())
def test_arbitrary_bytes_round_trip(data: bytes) -> None:
    doc = parse_observations(data)
    assert doc.render() == data
    for issue in doc.issues:
        assert 1 <= issue.line <= len(doc.lines)


@settings(max_examples=200)
@given(st.text())
def test_arbitrary_text_round_trips(text: str) -> None:
    assert parse_observations(text).render() == text.encode("utf-8")


# Lines drawn from every shape the parser knows, glued in any order: the parser's corners.
_SNIPPETS = [
    "# Observations",
    "## 2026-02-10",
    "## 2026-02-11 (Wed)",
    "### Current Context",
    "### Observations",
    "### Other",
    "## Notes",
    "---",
    "",
    "   ",
    "- **Active task:** x",
    "- 🔴 14:00 text",
    "  - 🟡 9:05 nested",
    "\t- 🟢 tab nested",
    "- [decision|c=0.9|i=0.8] 14:30 claw",
    "- 🔴 14:30 [fact|c=0.9|i=0.8] om ^a0b1c2d3e4",
    "- [decision|c=abc] broken",
    "- 🔵 blue",
    "  continuation",
    "stray",
    "\ufeff# BOM",
    "caf\udce9",
]


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from(_SNIPPETS), max_size=25),
    st.lists(st.sampled_from(["\n", "\r\n"]), min_size=1, max_size=3),
    st.booleans(),
)
def test_snippet_soup_round_trips(snippets: list[str], endings: list[str], last_nl: bool) -> None:
    parts = [s + endings[i % len(endings)] for i, s in enumerate(snippets)]
    if parts and not last_nl:
        parts[-1] = snippets[-1]
    data = "".join(parts).encode("utf-8", "surrogateescape")
    doc = parse_observations(data)
    assert doc.render() == data
    # Every bullet under a day is an observation or a context line; nothing is double counted.
    assert len(doc.ids()) <= len(doc.observations) <= len(snippets)


# -- structured documents -------------------------------------------------------------------------


@dataclass
class GenDay:
    date: str
    context: dict[str, str]
    heading: bool
    bullets: list[tuple[int, str | None, str]]  # depth, time, line text after the bullet
    ids: list[str | None] = field(default_factory=list)


@dataclass
class GenDoc:
    data: bytes
    days: list[GenDay]
    newline: str
    separators: bool


_WORDS = st.text(alphabet="abcdefghjkmnpqrstvwxyzABCDEFG0123456789 .,;:()'é🙂", max_size=30)
_WORD = st.text(alphabet="abcdefghjkmnpqrstvwxyz", min_size=1, max_size=8)
_DATES = [f"2026-02-{day:02d}" for day in range(1, 29)]
_TIME_START = re.compile(r"^(?:[01]?\d|2[0-3]):[0-5]\d")


@st.composite
def structured_docs(draw: st.DrawFn, *, sorted_times: bool = False) -> GenDoc:
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    separators = draw(st.booleans())
    dates = sorted(draw(st.sets(st.sampled_from(_DATES), max_size=4)))
    if not sorted_times and draw(st.booleans()):
        dates = draw(st.permutations(dates))
    out: list[str] = []
    if draw(st.booleans()):
        out += ["# Observations", ""]
    days: list[GenDay] = []
    used_ids: set[str] = set()
    for number, date in enumerate(dates):
        if number and separators:
            out += ["---", ""]
        out += [f"## {date}", ""]
        context: dict[str, str] = {}
        has_context = draw(st.booleans())
        if has_context:
            out += ["### Current Context", ""]
            for key in draw(
                st.lists(st.sampled_from(["Active task", "Key entities"]), unique=True)
            ):
                value = draw(_WORD)
                context[key] = value
                out.append(f"- **{key}:** {value}")
            out.append("")
        has_heading = draw(st.booleans()) or has_context
        if has_heading:
            out += ["### Observations", ""]
        count = draw(st.integers(0, 6))
        times = sorted(draw(st.lists(st.times(), min_size=count, max_size=count)))
        bullets: list[tuple[int, str | None, str]] = []
        ids: list[str | None] = []
        depth = 0
        for index in range(count):
            depth = 0 if index == 0 else draw(st.integers(0, depth + 1))
            time = times[index].strftime("%H:%M") if draw(st.booleans()) else None
            emoji = draw(st.sampled_from(["🔴 ", "🟡 ", "🟢 ", "✅ ", ""]))
            tag = draw(st.sampled_from(["", "[fact|c=0.80|i=0.50] ", "[decision] "]))
            text = draw(_WORDS).strip() or "x"
            bid = None
            if draw(st.booleans()):
                bid = make_id("gen", date, str(index), str(len(used_ids)))
                used_ids.add(bid)
            if _TIME_START.match(text):
                text = "note " + text  # a text starting with a time would read as the time
            rest = emoji + (f"{time} " if time else "") + tag + text + (f" ^{bid}" if bid else "")
            bullets.append((depth, time, rest))
            ids.append(bid)
            out.append("  " * depth + "- " + rest)
            if draw(st.integers(0, 5)) == 0:
                out.append("  " * (depth + 1) + draw(_WORD))
        days.append(GenDay(date, context, has_heading, bullets, ids))
        out.append("")
    text = "".join(line + nl for line in out)
    if text and draw(st.booleans()):
        text = text[: -len(nl)]  # no trailing newline
    if draw(st.integers(0, 9)) == 0:
        text = "\ufeff" + text
    return GenDoc(text.encode("utf-8"), days, nl, separators)


@settings(max_examples=200)
@given(structured_docs())
def test_structured_documents_parse_as_generated(gen: GenDoc) -> None:
    doc = parse_observations(gen.data)
    assert doc.render() == gen.data
    assert [i for i in doc.issues if "UTF-8" in i.message] == []
    assert [d.date for d in doc.days] == [d.date for d in gen.days]
    for day, want in zip(doc.days, gen.days, strict=True):
        assert day.context == want.context
        assert [o.depth for o in day.observations] == [b[0] for b in want.bullets]
        assert [o.time for o in day.observations] == [b[1] for b in want.bullets]
        for obs, bid in zip(day.observations, want.ids, strict=True):
            if bid is not None:
                assert obs.id == bid
    ids = [o.id for o in doc.observations]
    assert len(ids) == len(set(ids))
    # A second parse gives the same ids: they depend on content, not on the parse.
    assert [o.id for o in parse_observations(gen.data).observations] == ids


# -- with_added -----------------------------------------------------------------------------------

ORIGINAL = "original/observations.md"


def add(data: bytes | str, *new: Observation) -> tuple[ObservationsDoc, ObservationsDoc, list]:
    old = parse_observations(data)
    updated, added = old.with_added(new)
    assert_only_inserted(old.lines, updated.lines)
    assert parse_observations(updated.render()).ids() == updated.ids()
    return old, updated, added


def test_add_into_existing_day_in_time_order() -> None:
    early = new_observation("Standup moved", date="2026-02-11", time="08:00", importance=0.3)
    middle = new_observation("Picked uuid7 lib", date="2026-02-11", time="10:03", importance=0.6)
    late = new_observation("Late thought", date="2026-02-11", time="23:00", importance=0.9)
    untimed = new_observation("No time", date="2026-02-11")
    old, doc, added = add(read(ORIGINAL), late, untimed, middle, early)
    assert added == [late, untimed, middle, early]
    assert len(doc.lines) == len(old.lines) + 4
    lines = obs_lines(doc, "2026-02-11")
    assert lines[0] == f"- 🟢 08:00 Standup moved ^{early.id}"
    assert lines[4] == f"- 🟡 10:03 Picked uuid7 lib ^{middle.id}"  # after 10:02 and its child
    assert lines[5].startswith("- 🔴 11:30")
    assert lines[-2] == f"- 🔴 23:00 Late thought ^{late.id}"
    assert lines[-1] == f"- 🟡 No time ^{untimed.id}"
    day = doc.day("2026-02-11")
    assert day is not None and len(day.observations) == 11
    assert doc.issues == []
    # The other days are untouched.
    assert [len(d.observations) for d in doc.days] == [7, 11, 6]


def test_single_digit_hours_are_placed_in_time_order() -> None:
    early = new_observation("early", date="2026-02-10", time="9:05")
    assert early.time == "09:05"
    _, doc, _ = add("## 2026-02-10\n\n- 🟡 08:00 a\n- 🟡 14:00 b\n", early)
    assert [o.time for o in doc.observations] == ["08:00", "09:05", "14:00"]


def test_add_new_later_day_keeps_separators() -> None:
    obs = new_observation("Demo went well", date="2026-02-13", time="17:00", importance=0.9)
    _, doc, _ = add(read(ORIGINAL), obs)
    text = doc.render().decode()
    assert text.endswith(
        "- ✅ 18:05 Login and token refresh endpoints pass all tests\n\n---\n\n"
        "## 2026-02-13\n\n### Observations\n\n"
        f"- 🔴 17:00 Demo went well ^{obs.id}\n"
    )
    assert [d.date for d in doc.days][-1] == "2026-02-13"


def test_add_new_earlier_day_goes_first() -> None:
    obs = new_observation("Kick-off", date="2026-02-09", time="10:00")
    _, doc, _ = add(read(ORIGINAL), obs)
    text = doc.render().decode()
    assert text.startswith(
        "# Observations\n\n## 2026-02-09\n\n### Observations\n\n"
        f"- 🟡 10:00 Kick-off ^{obs.id}\n\n---\n\n## 2026-02-10\n"
    )
    assert doc.issues == []


def test_add_day_between_days() -> None:
    data = read("clawvault/observations.md").replace(b"2026-03-02", b"2026-03-04")
    obs = new_observation("Between", date="2026-03-03")
    _, doc, _ = add(data, obs)
    assert [d.date for d in doc.days] == ["2026-03-01", "2026-03-03", "2026-03-04"]
    assert "---" not in doc.render().decode()  # that file uses no separators
    assert doc.issues == []


def test_add_several_new_days_in_date_order() -> None:
    later = [new_observation(f"day {d}", date=f"2026-02-{d}") for d in (16, 14, 15)]
    earlier = [new_observation(f"day {d}", date=f"2026-02-0{d}") for d in (8, 6, 7)]
    _, doc, added = add(read(ORIGINAL), *later, *earlier)
    assert len(added) == 6
    assert [d.date for d in doc.days] == [
        "2026-02-06",
        "2026-02-07",
        "2026-02-08",
        "2026-02-10",
        "2026-02-11",
        "2026-02-12",
        "2026-02-14",
        "2026-02-15",
        "2026-02-16",
    ]
    assert doc.issues == []
    for obs in added:
        day = doc.day(obs.date)
        assert day is not None and [o.id for o in day.observations] == [obs.id]


def test_add_to_a_file_whose_days_are_out_of_order() -> None:
    data = (
        "# Observations\n\n## 2026-02-12\n\n- 🟡 10:00 twelfth\n\n"
        "## 2026-02-10\n\n- 🟡 10:00 tenth\n"
    )
    a = new_observation("also twelfth", date="2026-02-12", time="11:00")
    b = new_observation("also tenth", date="2026-02-10", time="11:00")
    _, doc, _ = add(data, a, b)
    assert [o.text for o in doc.days[0].observations] == ["twelfth", "also twelfth"]
    assert [o.text for o in doc.days[1].observations] == ["tenth", "also tenth"]


def test_add_to_a_day_with_only_current_context() -> None:
    data = (
        "# Observations\n\n## 2026-02-10\n\n### Current Context\n\n"
        "- **Active task:** Planning\n\n---\n\n## 2026-02-11\n\n- 🟡 x\n"
    )
    obs = new_observation("First real observation", date="2026-02-10", time="09:00")
    _, doc, _ = add(data, obs)
    assert doc.render().decode() == (
        "# Observations\n\n## 2026-02-10\n\n### Current Context\n\n"
        "- **Active task:** Planning\n\n### Observations\n\n"
        f"- 🟡 09:00 First real observation ^{obs.id}\n\n---\n\n## 2026-02-11\n\n- 🟡 x\n"
    )
    day = doc.days[0]
    assert day.context == {"Active task": "Planning"}
    assert [o.id for o in day.observations] == [obs.id]


def test_add_under_an_empty_observations_heading() -> None:
    data = "## 2026-02-10\n\n### Observations\n\n## 2026-02-11\n"
    obs = new_observation("x", date="2026-02-10")
    _, doc, _ = add(data, obs)
    assert doc.render().decode() == (
        f"## 2026-02-10\n\n### Observations\n\n- 🟡 x ^{obs.id}\n## 2026-02-11\n"
    )


def test_add_to_an_empty_file() -> None:
    a = new_observation("Second day", date="2026-02-11", time="09:00")
    b = new_observation("First day", date="2026-02-10", time="09:00", importance=0.9)
    _, doc, added = add(b"", a, b)
    assert added == [a, b]
    assert doc.render().decode() == (
        "# Observations\n\n## 2026-02-10\n\n### Observations\n\n"
        f"- 🔴 09:00 First day ^{b.id}\n\n## 2026-02-11\n\n### Observations\n\n"
        f"- 🟡 09:00 Second day ^{a.id}\n"
    )
    assert doc.issues == []


def test_add_skips_ids_already_present() -> None:
    legacy = new_observation(
        "user is building a task management REST API with   FastAPI", date="2026-02-10"
    )
    twice = new_observation("New", date="2026-02-10")
    old, doc, added = add(read(ORIGINAL), legacy, twice, twice)
    assert added == [twice]
    assert len(doc.lines) == len(old.lines) + 1
    again, more = doc.with_added([legacy, twice])
    assert more == [] and again is doc
    om = parse_observations(read("om/observations.md"))
    copy = om.observations[0]
    assert om.with_added([copy]) == (om, [])


def test_add_to_crlf_file_uses_crlf() -> None:
    data = read("broken/crlf-observations.md")
    new = [
        new_observation("crlf existing day", date="2026-02-11", time="12:00"),
        new_observation("crlf new day", date="2026-02-14"),
        new_observation("crlf first day", date="2026-02-01"),
    ]
    old, doc, _ = add(data, *new)
    assert len(doc.lines) > len(old.lines) + 3
    assert all(line.endswith("\r\n") for line in doc.lines)
    assert doc.issues == []
    assert {o.id for o in new} <= doc.ids()


def test_add_keeps_bom_and_file_without_trailing_newline() -> None:
    obs = new_observation("after", date="2026-02-22", time="12:00")
    old, doc, _ = add(read("broken/no-trailing-newline.md"), obs)
    assert doc.lines[: len(old.lines) - 1] == old.lines[:-1]
    assert doc.lines[len(old.lines) - 1] == old.lines[-1] + "\n"
    assert doc.lines[-1] == f"- 🟡 12:00 after ^{obs.id}\n"
    _, bom, _ = add(read("broken/bom-observations.md"), obs)
    assert bom.lines[0].startswith("\ufeff# Observations")


def test_add_keeps_trailing_blank_lines() -> None:
    data = "# Observations\n\n## 2026-02-10\n\n- 🟡 a\n\n\n  \n"
    obs = new_observation("b", date="2026-02-11")
    _, doc, _ = add(data, obs)
    assert doc.render().decode() == (
        "# Observations\n\n## 2026-02-10\n\n- 🟡 a\n\n\n  \n"
        f"## 2026-02-11\n\n### Observations\n\n- 🟡 b ^{obs.id}\n"
    )


def test_add_to_broken_file_adds_no_issue_and_loses_nothing() -> None:
    data = read("broken/observations.md")
    new = [
        new_observation("into the broken day", date="2026-02-20", time="10:05"),
        new_observation("after everything", date="2026-02-25"),
        new_observation("before everything", date="2026-02-01"),
    ]
    old, doc, _ = add(data, *new)
    assert len(doc.issues) == len(old.issues)
    assert len(doc.observations) == len(old.observations) + 3


def test_with_added_on_nothing_new_is_the_same_document() -> None:
    doc = parse_observations(read(ORIGINAL))
    assert doc.with_added([]) == (doc, [])


# Hypothesis: any sequence of additions keeps every earlier id, once, and changes no line.

_ADD_DATES = ["2026-01-31", "2026-02-01", "2026-02-05", "2026-02-10", "2026-02-11", "2026-02-13"]
new_observations = st.builds(
    lambda text, date, time, importance, typ: new_observation(
        text, date=date, time=time, importance=importance, type=typ
    ),
    text=_WORDS.map(lambda t: "obs " + t),
    date=st.sampled_from(_ADD_DATES + _DATES[::5]),
    time=st.none() | st.times().map(lambda t: t.strftime("%H:%M")),
    importance=st.floats(0, 1),
    typ=st.none() | st.sampled_from(OBSERVATION_TYPES),
)


def _fixture_docs() -> st.SearchStrategy[bytes]:
    return st.sampled_from([p.read_bytes() for p in OBSERVATION_FIXTURES] + [b""])


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(_fixture_docs(), structured_docs(sorted_times=True).map(lambda g: g.data)),
    st.lists(st.lists(new_observations, max_size=5), min_size=1, max_size=4),
)
def test_random_additions_keep_every_observation(data: bytes, batches: list) -> None:
    doc = parse_observations(data)
    start_issues = len(doc.issues)
    sorted_dates = [d.date for d in doc.days] == sorted({d.date for d in doc.days})
    separated = len(doc.days) > 1 and all(
        any(body(line).strip() == "---" for line in doc.lines[a.start : b.start])
        for a, b in zip(doc.days, doc.days[1:], strict=False)
    )
    for batch in batches:
        before = doc
        doc, added = doc.with_added(batch)
        assert doc.render() == parse_observations(doc.render()).render()
        assert_only_inserted(before.lines, doc.lines)
        assert before.ids() <= doc.ids()
        assert {o.id for o in added} <= doc.ids()
        assert len(doc.lines) >= len(before.lines) + len(added)
        ids = [o.id for o in doc.observations]
        assert len(ids) == len(set(ids)), Counter(ids).most_common(2)
        assert len(doc.issues) == start_issues
        for obs in added:
            day = doc.day(obs.date)
            assert day is not None and obs.id in {o.id for o in day.observations}
        if sorted_dates:
            dates = [d.date for d in doc.days]
            assert dates == sorted(set(dates))
        if separated:
            for a, b in zip(doc.days, doc.days[1:], strict=False):
                assert any(body(line).strip() == "---" for line in doc.lines[a.start : b.start])
        if not any(body(line).strip() == "---" for line in before.lines):
            assert not any(body(line).strip() == "---" for line in doc.lines)
        # New lines end like the file's lines do.
        grown = Counter(map(ending, doc.lines)) - Counter(map(ending, before.lines))
        assert set(grown) <= {newline_of(before.lines)}
    reread = parse_observations(doc.render())
    assert reread.ids() == doc.ids()


@settings(max_examples=100)
@given(structured_docs(sorted_times=True), st.lists(new_observations, min_size=1, max_size=6))
def test_additions_keep_top_level_times_in_order(gen: GenDoc, new: list[Observation]) -> None:
    doc, _ = parse_observations(gen.data).with_added(new)
    for day in doc.days:
        times = [o.time for o in day.observations if o.depth == 0 and o.time is not None]
        assert times == sorted(times)
    crlf = gen.newline == "\r\n"
    if crlf and gen.days:
        assert all(line.endswith("\r\n") for line in doc.lines)


_CONTEXT_DATES = ["2026-01-31", "2026-02-01", "2026-02-05", "2026-02-10", "2026-02-13"]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(_fixture_docs(), structured_docs().map(lambda g: g.data)),
    st.lists(new_observations, max_size=8),
    st.dictionaries(
        st.sampled_from(_CONTEXT_DATES),
        st.dictionaries(st.sampled_from(["Active task", "Key entities"]), _WORD, max_size=2),
        max_size=2,
    ),
)
def test_one_pass_merge_equals_adding_then_setting_each_context(
    data: bytes, new: list[Observation], context: dict[str, dict[str, str]]
) -> None:
    # The store's single pass (one parse, every day planned against it) must give what the
    # step-by-step edits give, each on a fresh parse of the previous result.
    doc = parse_observations(data)
    lines, added = doc.merged(new, context)
    stepwise, added_stepwise = doc.with_added(new)
    for date, pairs in context.items():
        stepwise = stepwise.with_context(date, pairs)
    assert added == added_stepwise
    assert "".join(lines).encode("utf-8", "surrogateescape") == stepwise.render()
    assert (lines is doc.lines) == (stepwise.render() == doc.render())


def test_a_shared_parse_is_reused_for_the_same_bytes_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import obsmem.memory.observations as module

    data = read("om/observations.md")
    first = module.parse_shared(data)
    assert module.parse_shared(bytes(bytearray(data))) is first  # equal bytes, another object
    fresh = parse_observations(data)
    assert (first.lines, first.issues) == (fresh.lines, fresh.issues)
    assert first.observations == fresh.observations
    other = module.parse_shared(data + b"- one more\n")
    assert other is not first and len(other.observations) == len(first.observations) + 1
    # The memo keeps within its budget, dropping the least recently used parse first.
    monkeypatch.setattr(module, "_SHARED_BYTES", 2 * len(data) + 30)
    module.parse_shared(data)  # used last: kept
    module.parse_shared(data + b"\n\n")  # pushes out the one used before
    assert module.parse_shared(data) is first
    assert module.parse_shared(data + b"- one more\n") is not other
    assert sum(map(len, module._SHARED)) <= 2 * len(data) + 30

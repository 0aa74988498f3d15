"""One observation line: the three accepted shapes, broken tags, and rendering new lines."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obsmem.memory.clean import clean_text
from obsmem.memory.lines import parse_observation, render_observation
from obsmem.memory.model import (
    DEFAULT_IMPORTANCE,
    OBSERVATION_TYPES,
    Observation,
    ParseIssue,
    make_id,
    normalise_text,
)
from obsmem.memory.store import new_observation

DATE = "2026-02-10"


def parse(rest: str, **kwargs: float | None) -> tuple[Observation, list[ParseIssue]]:
    return parse_observation(rest, date=DATE, depth=0, line=7, raw="- " + rest, **kwargs)


def test_om_line() -> None:
    obs, issues = parse(
        "🔴 14:30 [decision|c=0.95|i=0.90] Chose PostgreSQL over SQLite for concurrent writes"
        " ^k3v9q2m7xa"
    )
    assert issues == []
    assert obs.priority == "🔴"
    assert obs.time == "14:30"
    assert obs.type == "decision"
    assert obs.confidence == 0.95
    assert obs.importance == 0.90
    assert obs.text == "Chose PostgreSQL over SQLite for concurrent writes"
    assert obs.id == "k3v9q2m7xa"
    assert obs.tagged and obs.block_id
    assert obs.date == DATE and obs.line == 7 and obs.line_end == 7
    assert obs.raw == "- " + obs.raw[2:]


@pytest.mark.parametrize(("emoji", "importance"), [("🔴", 0.9), ("🟡", 0.6), ("🟢", 0.2)])
def test_original_tool_line(emoji: str, importance: float) -> None:
    obs, issues = parse(f"{emoji} 14:00 User is building a task management REST API")
    assert issues == []
    assert obs.priority == emoji
    assert obs.importance == importance
    assert obs.time == "14:00"
    assert obs.type is None and obs.confidence is None
    assert not obs.tagged and not obs.block_id
    assert obs.text == "User is building a task management REST API"
    assert obs.id == make_id("obs", DATE, normalise_text(obs.text))


def test_completed_line() -> None:
    obs, _ = parse("✅ 16:20 Initial project skeleton committed")
    assert obs.completed
    assert obs.priority == "✅"


def test_emoji_with_variation_selector() -> None:
    obs, issues = parse("🔴\ufe0f 09:00 Important")
    assert issues == []
    assert (obs.priority, obs.time, obs.text) == ("🔴", "09:00", "Important")


def test_clawvault_line() -> None:
    obs, issues = parse("[decision|c=0.95|i=0.90] 14:30 Chose PostgreSQL over SQLite")
    assert issues == []
    assert obs.priority is None
    assert (obs.type, obs.confidence, obs.importance) == ("decision", 0.95, 0.90)
    assert obs.time == "14:30"
    assert obs.text == "Chose PostgreSQL over SQLite"
    assert obs.tagged and not obs.block_id


def test_tag_without_importance_takes_the_emojis() -> None:
    obs, _ = parse("🟢 08:00 [fact|c=0.8] Uses fish at home")
    assert obs.importance == 0.2
    assert obs.confidence == 0.8


def test_plain_line_takes_the_default_importance() -> None:
    obs, issues = parse("just a note")
    assert issues == []
    assert obs.importance == DEFAULT_IMPORTANCE
    assert (obs.priority, obs.time, obs.text) == (None, None, "just a note")
    archived, _ = parse("just a note", default_importance=0.3)
    assert archived.importance == 0.3


def test_single_digit_hour_is_padded() -> None:
    obs, _ = parse("🟡 9:05 Early")
    assert obs.time == "09:05"


@pytest.mark.parametrize("bad_time", ["24:00", "14:60", "114:30"])
def test_invalid_times_stay_in_the_text(bad_time: str) -> None:
    obs, _ = parse(f"🟡 {bad_time} text")
    assert obs.time is None
    assert obs.text == f"{bad_time} text"


def test_referenced_date() -> None:
    obs, _ = parse("🔴 09:45 MVP deadline is Friday (meaning 2026-02-13)")
    assert obs.referenced_date == "2026-02-13"


def test_unreadable_tag_is_reported_and_kept() -> None:
    obs, issues = parse("🔴 09:00 [decision|c=abc] Switched CI")
    assert [i.line for i in issues] == [7]
    assert "tag" in issues[0].message
    assert not obs.tagged
    assert obs.type is None
    assert obs.text == "[decision|c=abc] Switched CI"
    assert obs.importance == 0.9  # the emoji still counts


def test_unknown_type_is_reported_and_kept() -> None:
    obs, issues = parse("🟡 10:15 [hunch|c=0.50|i=0.50] A type om does not know")
    assert obs.type == "hunch"
    assert obs.tagged
    assert len(issues) == 1 and "hunch" in issues[0].message


def test_unknown_emoji_is_reported_and_kept() -> None:
    obs, issues = parse("🔵 09:30 Blue is not a priority")
    assert obs.priority is None
    assert obs.text == "🔵 09:30 Blue is not a priority"
    assert len(issues) == 1 and "🔵" in issues[0].message


@pytest.mark.parametrize(("tag", "key", "clamped"), [("c=1.5|i=0.5", "c", 1.0), ("i=7", "i", 1.0)])
def test_scores_outside_range_are_clamped(tag: str, key: str, clamped: float) -> None:
    obs, issues = parse(f"[fact|{tag}] text")
    assert len(issues) == 1 and "outside 0..1" in issues[0].message
    assert (obs.confidence if key == "c" else obs.importance) == clamped


def test_block_id_rules() -> None:
    assert parse("🟡 text ^a0b1c2d3e4")[0].id == "a0b1c2d3e4"
    glued, _ = parse("🟡 text^a0b1c2d3e4")
    assert not glued.block_id and glued.text == "text^a0b1c2d3e4"
    upper, _ = parse("🟡 text ^A0B1C2D3E4")
    assert not upper.block_id
    trailing, _ = parse("🟡 text ^a0b1c2d3e4   ")
    assert trailing.id == "a0b1c2d3e4" and trailing.text == "text"


def test_block_id_right_after_the_emoji_or_time() -> None:
    # An observation whose text is empty, or is itself a time, still keeps its id.
    for rest in ("🟡 ^a0b1c2d3e4", "🟡  ^a0b1c2d3e4", "🟡 14:30 ^a0b1c2d3e4", "^a0b1c2d3e4"):
        obs, _ = parse(rest)
        assert obs.block_id, rest
        assert obs.id == "a0b1c2d3e4"
        assert "^" not in obs.text


def test_render_new_observation() -> None:
    obs = new_observation(
        "Chose  PostgreSQL\nover SQLite",
        date=DATE,
        time="14:30",
        type="decision",
        importance=0.9,
        confidence=0.95,
    )
    assert render_observation(obs) == (
        f"- 🔴 14:30 [decision|c=0.95|i=0.90] Chose PostgreSQL over SQLite ^{obs.id}"
    )
    nested = new_observation("detail", date=DATE, importance=0.2, depth=2)
    assert render_observation(nested) == f"    - 🟢 detail ^{nested.id}"


def test_render_adds_referenced_date_once() -> None:
    obs = new_observation("Deadline is Friday", date=DATE, referenced_date="2026-02-13")
    assert render_observation(obs).count("(meaning 2026-02-13)") == 1
    already = new_observation("Due 2026-02-13", date=DATE, referenced_date="2026-02-13")
    assert "meaning" not in render_observation(already)


def test_render_legacy_observation_without_id_or_type() -> None:
    obs = Observation(text="plain", date=DATE, importance=0.6)
    assert render_observation(obs) == "- 🟡 plain"


# Text that itself starts with a time or a bracket reads back as the line's time or tag: a known
# limit of the line format, so those texts are left out here.
_TIME_OR_TAG_START = re.compile(r"^\s*(?:(?:[01]?\d|2[0-3]):[0-5]\d\s|\[)")
# Observation text is cleaned of control characters first (``clean_text``): it is the cleaned
# text that must not be empty nor start like a time.
texts = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=60).filter(
    lambda t: not _TIME_OR_TAG_START.match(" ".join(clean_text(t).split()) + " ")
)


@given(
    text=texts.filter(lambda t: clean_text(t).strip())
    | st.sampled_from(["^a0b1c2d3e4", "x ^a0b1c2d3e4", "🔵 blue"]),
    time_=st.none() | st.times().map(lambda t: t.strftime("%H:%M")),
    obs_type=st.none() | st.sampled_from(OBSERVATION_TYPES),
    importance=st.floats(0, 1),
    confidence=st.none() | st.floats(0, 1),
    completed=st.booleans(),
    depth=st.integers(0, 3),
)
def test_render_then_parse_round_trip(
    text: str,
    time_: str | None,
    obs_type: str | None,
    importance: float,
    confidence: float | None,
    completed: bool,
    depth: int,
) -> None:
    obs = new_observation(
        text,
        date=DATE,
        time=time_,
        type=obs_type,
        importance=importance,
        confidence=confidence,
        completed=completed,
        depth=depth,
    )
    line = render_observation(obs)
    assert "\n" not in line
    rest = line.lstrip(" ")[2:]
    back, issues = parse_observation(rest, date=DATE, depth=depth, line=1, raw=line)
    if "[" not in obs.text:
        assert issues == []
    assert back.id == obs.id
    assert back.block_id
    assert back.priority == obs.priority
    assert back.time == time_
    assert back.type == obs_type
    assert back.tagged == (obs_type is not None)
    if obs_type is not None:
        assert back.importance == pytest.approx(importance, abs=0.005)
        if confidence is not None:
            assert back.confidence == pytest.approx(confidence, abs=0.005)
    assert back.text == obs.text


@given(st.text(max_size=200))
def test_parse_never_raises_and_keeps_raw(rest: str) -> None:
    obs, issues = parse_observation(rest, date=DATE, depth=1, line=3, raw=rest)
    assert obs.raw == rest
    assert 0.0 <= obs.importance <= 1.0
    assert obs.confidence is None or 0.0 <= obs.confidence <= 1.0
    assert all(issue.line == 3 for issue in issues)
    assert obs.id


@pytest.mark.parametrize(
    "rest",
    [
        "a" + " " * 50_000 + "b",
        "[" + "|" * 50_000,
        "🟡 " + "x " * 25_000 + "[a|",
        "^" * 50_000,
        " ^abcdef" * 10_000 + "!",
    ],
)
def test_parse_is_fast_on_long_lines(rest: str) -> None:
    started = time.perf_counter()
    obs, _ = parse(rest)
    assert time.perf_counter() - started < 0.5
    assert obs.raw is not None

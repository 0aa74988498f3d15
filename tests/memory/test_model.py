"""The data model: priorities, ids, text normalisation, provenance and observation dicts."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obsmem.memory.model import (
    DEFAULT_IMPORTANCE,
    LEGACY_IMPORTANCE,
    OBSERVATION_TYPES,
    PRIORITIES,
    Observation,
    ParseIssue,
    Provenance,
    make_id,
    normalise_text,
    priority_for,
)

ID_RE = re.compile(r"^[0-9abcdefghjkmnpqrstvwxyz]{10}$")


@pytest.mark.parametrize(
    ("importance", "emoji"),
    [(1.0, "🔴"), (0.8, "🔴"), (0.79, "🟡"), (0.4, "🟡"), (0.39, "🟢"), (0.0, "🟢")],
)
def test_priority_thresholds(importance: float, emoji: str) -> None:
    assert priority_for(importance) == emoji


@pytest.mark.parametrize("emoji", ["🔴", "🟡", "🟢"])
def test_legacy_importance_reads_back_to_its_own_emoji(emoji: str) -> None:
    assert priority_for(LEGACY_IMPORTANCE[emoji]) == emoji


def test_legacy_mapping_is_the_one_clawvault_uses() -> None:
    assert LEGACY_IMPORTANCE["🔴"] == 0.9
    assert LEGACY_IMPORTANCE["🟡"] == 0.6
    assert LEGACY_IMPORTANCE["🟢"] == 0.2
    assert set(LEGACY_IMPORTANCE) == set(PRIORITIES)
    assert 0.0 <= DEFAULT_IMPORTANCE <= 1.0


@given(st.floats(min_value=0.0, max_value=1.0))
def test_completed_is_always_check_mark(importance: float) -> None:
    assert priority_for(importance, completed=True) == "✅"
    assert priority_for(importance) in ("🔴", "🟡", "🟢")


def test_observation_types_are_the_design_list() -> None:
    assert OBSERVATION_TYPES == (
        "decision",
        "preference",
        "fact",
        "commitment",
        "task",
        "milestone",
        "lesson",
        "relationship",
        "project",
        "error",
        "event",
    )


def test_make_id_shape_and_stability() -> None:
    first = make_id("obs", "2026-02-10", "chose postgresql")
    assert ID_RE.match(first)
    assert make_id("obs", "2026-02-10", "chose postgresql") == first
    assert make_id("obs", "2026-02-11", "chose postgresql") != first
    # The parts are separated, so moving text across the boundary gives another id.
    assert make_id("ab", "c") != make_id("a", "bc")


def test_make_id_accepts_undecodable_text() -> None:
    # Text decoded with surrogateescape (invalid UTF-8 in a file) still has an id.
    assert ID_RE.match(make_id("obs", "2026-02-10", "caf\udce9"))
    assert make_id("caf\udce9") != make_id("caf\udce8")


@given(st.lists(st.text(), max_size=4))
def test_make_id_always_well_formed(parts: list[str]) -> None:
    assert ID_RE.match(make_id(*parts))


def test_normalise_text() -> None:
    assert normalise_text("  Chose\tPostgreSQL \n over  SQLite ") == "chose postgresql over sqlite"
    assert normalise_text("STRASSE") == normalise_text("straße")


@given(st.text())
def test_normalise_text_is_idempotent(text: str) -> None:
    once = normalise_text(text)
    assert normalise_text(once) == once
    assert once == once.strip()
    assert "  " not in once


provenances = st.builds(
    Provenance,
    path=st.text(min_size=1),
    line_start=st.none() | st.integers(0, 10**6),
    line_end=st.none() | st.integers(0, 10**6),
    session=st.none() | st.text(),
    agent=st.none() | st.sampled_from(["claude", "codex", "hermes", "openclaw"]),
    project=st.none() | st.text(),
    byte_start=st.none() | st.integers(0, 10**9),
    byte_end=st.none() | st.integers(0, 10**9),
)


@given(provenances)
def test_provenance_dict_round_trip(prov: Provenance) -> None:
    data = prov.to_dict()
    assert all(value is not None for value in data.values())
    assert Provenance.from_dict(json.loads(json.dumps(data))) == prov


def test_provenance_ignores_unknown_keys_and_omits_unset() -> None:
    prov = Provenance.from_dict({"path": "/t/a.jsonl", "line_start": 3, "from_the_future": True})
    assert prov == Provenance(path="/t/a.jsonl", line_start=3)
    assert prov.to_dict() == {"path": "/t/a.jsonl", "line_start": 3}


def test_observation_to_dict_and_completed() -> None:
    obs = Observation(
        text="Shipped 0.6", date="2026-03-09", time="10:00", priority="✅", id="a0b1c2d3e4"
    )
    assert obs.completed
    data = obs.to_dict()
    assert data["id"] == "a0b1c2d3e4"
    assert data["text"] == "Shipped 0.6"
    assert data["importance"] == DEFAULT_IMPORTANCE
    assert "provenance" not in data
    obs.provenance = Provenance(path="/t/a.jsonl", session="s1")
    assert obs.to_dict()["provenance"] == {"path": "/t/a.jsonl", "session": "s1"}
    json.dumps(obs.to_dict())  # JSON-ready
    assert not Observation(text="x", date="2026-03-09", priority="🔴").completed


def test_parse_issue_str() -> None:
    assert str(ParseIssue(7, "text outside any day section (kept)")) == (
        "line 7: text outside any day section (kept)"
    )

"""The offline rules: which single statements are durable, where project facts go, and the
same-subject look-up that must find every line the full comparison would."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.memory.model import Observation, priority_for
from obsmem.reflect.facts import (
    ACTIVE_PROJECTS,
    KEY_FACTS,
    PREFERENCES,
    RECENT_THEMES,
    SubjectIndex,
    home_for,
    is_project_fact,
    subject_overlap,
)
from obsmem.reflect.rules import CONTRADICTION_OVERLAP, durable


def obs(text: str, type_: str | None, i: float, c: float | None = 0.85) -> Observation:
    return Observation(
        text=text, date="2026-03-02", type=type_, importance=i, confidence=c,
        priority=priority_for(i),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "type_", "i", "c"),
    [
        ("User prefers: small commits whose messages explain why", "preference", 0.7, 0.85),
        ("User constraint: never push to main without a review", "preference", 0.7, 0.85),
        ("User decided: option 1 is not acceptable", "decision", 0.75, 0.85),
        ("User accepted: split the parser into two modules", "decision", 0.75, 0.75),
        ("The staging cluster lives in eu-west-3", "fact", 0.6, 0.65),
        ("Wants the answer before the explanation", "relationship", 0.6, None),
        ("Current Tech Stack Versions: Next.js 15.5.2; React 19.1.0", "event", 0.45, 0.7),
        ("Production outage on the gateway", "event", 0.85, 0.9),
    ],
)
def test_one_clear_statement_is_durable(text: str, type_: str, i: float, c: float | None) -> None:
    assert durable(obs(text, type_, i, c))


@pytest.mark.parametrize(
    ("text", "type_", "i", "c"),
    [
        ("User asked: fix the flaky login test", "task", 0.5, 0.85),
        ("Ran the test suite: 212 passed", "milestone", 0.6, 0.85),
        ("Failed: ls: cannot access 'dist'", "error", 0.55, 0.8),
        ("I've deleted hello.js.", "event", 0.65, 0.7),
        ("Maybe prefers tabs, unclear from the message", "preference", 0.7, 0.4),
        ("A passing preference of little weight", "preference", 0.5, 0.9),
        ("This completely changes the architecture. Let me redesign", "event", 0.65, 0.7),
    ],
)
def test_routine_lines_are_not_durable(text: str, type_: str, i: float, c: float | None) -> None:
    assert not durable(obs(text, type_, i, c))


def test_project_facts_go_to_their_project_preferences_stay_the_users() -> None:
    stack = obs("Tech stack: FastAPI, PostgreSQL 16, Tortoise ORM", "event", 0.45)
    assert home_for(stack, "atlas").section == ACTIVE_PROJECTS
    assert home_for(stack, "atlas").sub == "atlas"
    assert home_for(stack, None).section == RECENT_THEMES  # no project to file it under
    typed = obs("Architecture: one worker per queue, results in Redis", "fact", 0.6)
    assert home_for(typed, "atlas").sub == "atlas"
    assert home_for(obs("CI has four parallel workers", "fact", 0.6), "atlas").section == KEY_FACTS
    pref = obs("User prefers: the stack: keep it boring", "preference", 0.7)
    assert home_for(pref, "atlas").section == PREFERENCES
    assert is_project_fact("The app is a TODO list built with Next.js")
    assert is_project_fact("技術スタック更新: Next.js 15.5.2")
    assert not is_project_fact("Available tool groups in this session: web, functions")


def test_the_speakers_label_is_not_a_shared_subject() -> None:
    # Two different constraints share only "User constraint:" and "don't".
    a = "User constraint: don't produce code, design the solution first"
    b = "User constraint: don't commit until the final step"
    assert subject_overlap(a, b) < CONTRADICTION_OVERLAP
    assert subject_overlap("User decided: use Redis", "User decided: use Postgres") == 0.0
    assert subject_overlap("Uses Alembic for migrations", "Uses Aerich for migrations") >= 0.6


_WORDS = st.sampled_from("alpha beta gamma delta redis postgres cache queue the for use".split())
_TEXTS = st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=25), _TEXTS)
def test_subject_index_finds_every_line_the_full_comparison_finds(
    lines: list[str], query: str
) -> None:
    index: SubjectIndex[int] = SubjectIndex()
    for key, text in enumerate(lines):
        index.add(key, text)
    index.remove(0)
    found = index.candidates(query, CONTRADICTION_OVERLAP)
    for key, text in enumerate(lines):
        if key and subject_overlap(query, text) >= CONTRADICTION_OVERLAP:
            assert key in found
    assert 0 not in found

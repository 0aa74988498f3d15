"""Deciding what a fact is and where it goes: similarity, subjects, identity, sections."""

from __future__ import annotations

import pytest

from obsmem.memory.store import new_observation
from obsmem.reflect.facts import (
    FactIndex,
    Home,
    home_for,
    is_identity,
    project_name,
    same_fact,
    subject_overlap,
)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Deploys go out every Tuesday", "deploys  go out every TUESDAY", True),  # normalised
        ("Deploys go out every Tuesday morning", "Deploys go out every Tuesday morning!", True),
        # Whole-word containment of 24 characters or more.
        (
            "the nightly build is flaky on ARM",
            "We saw that the nightly build is flaky on ARM",
            True,
        ),
        ("flaky on ARM", "We saw that the nightly build is flaky on ARM", False),  # too short
        ("Uses Alembic for database migrations", "Uses Aerich for database migrations", False),
        ("Chose Redis for caching", "Chose Kafka for queueing", False),
    ],
)
def test_same_fact(a: str, b: str, same: bool) -> None:
    assert same_fact(a, b) is same
    assert same_fact(b, a) is same


def test_subject_overlap_spots_a_changed_choice_only() -> None:
    assert subject_overlap("Uses Alembic for migrations", "Uses Aerich for migrations") >= 0.6
    assert subject_overlap("Prefers tabs for indentation", "Prefers spaces for indentation") >= 0.6
    # Shared words that name no subject do not count.
    assert subject_overlap("Uses it for the", "Uses them for the") == 0.0
    assert (
        subject_overlap("Chose Zorvex for kalmio in atlas", "Chose Brimo for tesla in atlas") < 0.6
    )


@pytest.mark.parametrize(
    ("text", "identity"),
    [
        ("User is a backend developer based in Berlin", True),
        ("User's name is Sam", True),
        ("I am a data engineer", True),
        ("Calls the assistant Atlas", True),
        ("The staging cluster lives in eu-west-3", False),
        ("User is building a task API", False),
        ("User cannot store secrets in the repo", False),
    ],
)
def test_identity(text: str, identity: bool) -> None:
    assert is_identity(text) is identity


def test_home_for_types_projects_and_identity() -> None:
    def home(text: str, kind: str | None, project: str | None = None) -> Home:
        return home_for(new_observation(text, date="2026-03-02", type=kind), project)

    assert home("x y", "decision", "atlas") == Home("Active Projects", "atlas")
    assert home("x y", "commitment") == Home("Active Projects", "General")
    assert home("x y", "preference") == Home("Preferences & Opinions")
    assert home("x y", "relationship") == Home("Relationship & Communication")
    assert home("x y", "lesson") == Home("Key Facts & Context")
    assert home("x y", "task") == Home("Recent Themes")
    assert home("x y", None) == Home("Recent Themes")
    assert home("User is a nurse", None) == Home("Core Identity")
    assert home("User is a nurse", "preference") == Home("Preferences & Opinions")
    assert project_name(" my ## project\n") == "my project"
    assert project_name("") == "General"


def test_fact_index_finds_matches_in_order_and_forgets() -> None:
    index: FactIndex[str] = FactIndex(
        [
            ("a", "Deploys go out every Tuesday morning"),
            ("b", "Something else entirely"),
            ("c", "deploys go out every tuesday morning."),
        ]
    )
    assert len(index) == 3
    assert index.matches("Deploys go out every Tuesday morning!") == ["a", "c"]
    index.remove("a")
    index.add("c", "Now about Fridays instead")
    assert index.matches("Deploys go out every Tuesday morning") == []
    assert index.matches("now about fridays instead") == ["c"]
    index.remove("missing")  # forgetting an unknown key is harmless

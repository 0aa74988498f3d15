"""Dates said relative to today, and plans said as ahead or likely done."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.context.when import (
    ago,
    ordinal,
    plan_in,
    planned,
    today_ordinal,
    with_plan,
    without_meaning,
)

TODAY = date(2026, 12, 1)


@pytest.mark.parametrize(
    ("when", "said"),
    [
        ("2026-12-01", "today"),
        ("2026-11-30", "yesterday"),
        ("2026-11-28", "3 days ago"),
        ("2026-11-28T10:15", "3 days ago"),
        ("2026-11-10", "3 weeks ago"),
        ("2026-03-02", "9 months ago"),
        ("2023-06-01", "3 years ago"),
        ("2026-12-02", "tomorrow"),
        ("2026-12-05", "in 4 days"),
        ("someday", ""),
        (None, ""),
    ],
)
def test_ago(when: str | None, said: str) -> None:
    assert ago(when, TODAY) == said


def test_planned() -> None:
    assert planned("2026-12-05", TODAY) == "in 4 days"
    assert planned("2026-12-02", TODAY) == "tomorrow"
    assert planned("2026-12-01", TODAY) == "today"
    assert planned("2026-11-20", TODAY) == "likely done"


def test_with_plan_annotates_the_date_where_it_stands() -> None:
    text = "Release Atlas 1.0 on 2026-12-05 after the load test (meaning 2026-12-05)"
    assert with_plan(text, "2026-12-05", TODAY) == (
        "Release Atlas 1.0 on 2026-12-05 (in 4 days) after the load test"
    )


def test_with_plan_appends_a_plan_the_text_does_not_name() -> None:
    assert with_plan("Release on December 5th", "2026-12-05", TODAY) == (
        "Release on December 5th (planned for 2026-12-05, in 4 days)"
    )
    assert with_plan("Demo for the client", "2026-11-20", TODAY) == (
        "Demo for the client (planned for 2026-11-20: likely done)"
    )
    assert with_plan("No plan here", None, TODAY) == "No plan here"


def test_plan_in_takes_the_meaning_note_or_a_later_date() -> None:
    assert plan_in("Ship it (meaning 2026-03-02)", "2026-02-27") == "2026-03-02"
    assert plan_in("Release planned for 2026-12-05", "2026-11-28") == "2026-12-05"
    assert plan_in("Incident of 2026-11-01 reviewed", "2026-11-28") is None
    assert plan_in("Nothing dated", "2026-11-28") is None
    assert without_meaning("Ship it (meaning 2026-03-02)") == "Ship it"


@settings(max_examples=300, deadline=None)
@given(day=st.dates())
def test_ordinal_counts_days_as_date_does(day: date) -> None:
    assert ordinal(day.isoformat()) == day.toordinal()
    assert today_ordinal(day) == day.toordinal()


@pytest.mark.parametrize("text", ["2026-02-29", "2026-13-01", "2026-04-31", "20261201", "x" * 10])
def test_ordinal_refuses_what_is_not_a_date(text: str) -> None:
    assert ordinal(text) is None

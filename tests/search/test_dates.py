"""``query_dates``: the dates a search query names, as spans of days."""

from __future__ import annotations

from datetime import date

import pytest

from obsmem.search.dates import DateSpan, query_dates

TODAY = date(2026, 1, 7)  # a Wednesday


def day(iso: str) -> DateSpan:
    return DateSpan(iso, iso)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what did we decide on 2026-03-03", [day("2026-03-03")]),
        ("What did Gina find on 1 February, 2023?", [day("2023-02-01")]),
        ("the 3rd of March 2026 deploy", [day("2026-03-03")]),
        ("Who did Maria have dinner with on May 3, 2023?", [day("2023-05-03")]),
        ("forest picture shared on December 1,2023", [day("2023-12-01")]),
        ("notes from Sept. 9 2024", [day("2024-09-09")]),
        ("outages in 2026-02", [DateSpan("2026-02-01", "2026-02-28")]),
        ("releases in February 2024", [DateSpan("2024-02-01", "2024-02-29")]),
        ("When did Melanie go camping in June?", [DateSpan(month=6)]),
        ("what happened during 2025", [DateSpan("2025-01-01", "2025-12-31")]),
        ("errors yesterday", [day("2026-01-06")]),
        ("today's standup", [day("2026-01-07")]),
        ("decisions last week", [DateSpan("2025-12-29", "2026-01-04")]),
        ("this week", [DateSpan("2026-01-05", "2026-01-11")]),
        ("last month", [DateSpan("2025-12-01", "2025-12-31")]),
        ("THIS YEAR", [DateSpan("2026-01-01", "2026-12-31")]),
        ("May 23, 2023 and again on 2023-05-23", [day("2023-05-23")]),
    ],
)
def test_dates_are_found(text: str, expected: list[DateSpan]) -> None:
    assert query_dates(text, TODAY) == expected


@pytest.mark.parametrize(
    "text",
    [
        "what may I deploy",  # the verb, not the month
        "march the migrations forward",
        "python 2026 roadmap",  # a number alone is not a year
        "retry 3 times in 10 seconds",
        "",
    ],
)
def test_no_date_is_guessed(text: str) -> None:
    assert query_dates(text, TODAY) == []


def test_impossible_day_falls_back_to_its_month() -> None:
    assert query_dates("31 February 2026", TODAY) == [DateSpan("2026-02-01", "2026-02-28")]


def test_spans_are_in_the_order_written() -> None:
    assert query_dates("in 2025 and on 2026-03-03", TODAY) == [
        DateSpan("2025-01-01", "2025-12-31"),
        day("2026-03-03"),
    ]


def test_words_holding_a_month_name_do_not_compile_the_patterns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from obsmem.search import dates

    unused: list[object] = []
    monkeypatch.setattr(dates, "_PATTERNS", unused)
    # "decide" holds "dec", "separate" "sep", "maybe" "may", "janitor" "jan", "weekly" "week".
    assert query_dates("why did we decide on a separate janitor, maybe weekly?", TODAY) == []
    assert unused == []  # cold processes (the prompt hook, om search) skip the compiling
    assert query_dates("why did we decide that in May?", TODAY) == [DateSpan(month=5)]
    assert unused != []

"""Dates named in a search query, as spans of days that entries can be matched against.

"What did we decide on 3 March 2026?", "the deploy in May", "errors yesterday": a date in a
query says when, and every entry in the index has a date (its day, and for observations also
the date its message referred to), while the words "3", "march" and "2026" rarely appear in the
entry itself. ``query_dates`` finds such dates so that search can favour entries dated within
them (``bm25.Ranking``); the words stay in the query too, for entries that do spell a date out.

Recognised, case-insensitively, with English month names or their three-letter abbreviations:

- a day: ``2026-03-03``, ``3 March 2026``, ``3rd of March, 2026``, ``March 3, 2026``, ``Mar 3 2026``
- a month: ``2026-03``, ``March 2026``, ``March, 2026``
- a month of any year, after a preposition: ``in March``, ``during May`` (not the verb "may")
- a year, after a preposition: ``in 2025``, ``during 2025``
- relative to ``today``: ``today``, ``yesterday``, ``this``/``last`` ``week``/``month``/``year``
  (weeks start on Monday)

Nothing else is guessed: a number alone is not a year, and "last Friday" is not resolved.
"""

from __future__ import annotations

import re
from datetime import date as Date
from datetime import timedelta

from obsmem.records import dataclass

__all__ = ["DateSpan", "query_dates"]

# English names, as queries are matched in English (``calendar.month_name`` follows the locale).
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTHS: dict[str, int] = {}
for _number, _name in enumerate(_MONTH_NAMES, start=1):
    _MONTHS[_name] = _number
    _MONTHS[_name[:3]] = _number
_MONTHS["sept"] = 9

_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
# A month name as a word, then an optional full stop (an abbreviation's); not a longer word.
_M = rf"({_MONTH})\b\.?"

# Most specific first: a span already taken by one pattern is not read again by a later one.
_SOURCES: tuple[tuple[str, str, int], ...] = (
    ("iso-day", r"\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b", 0),
    ("iso-month", r"\b((?:19|20)\d\d)-(\d{1,2})\b", 0),
    ("day-month-year", rf"\b{_DAY}\s+(?:of\s+)?{_M},?\s+{_YEAR}\b", re.IGNORECASE),
    ("month-day-year", rf"\b{_M}\s+{_DAY},?\s*{_YEAR}\b", re.IGNORECASE),
    ("month-year", rf"\b{_M},?\s+{_YEAR}\b", re.IGNORECASE),
    ("month", rf"\b(?:in|during|of|throughout)\s+{_M}(?!\s*\d)", re.IGNORECASE),
    ("year", rf"\b(?:in|during|of|throughout)\s+{_YEAR}\b", re.IGNORECASE),
    ("relative", r"\b(today|yesterday|(?:this|last)\s+(?:week|month|year))\b", re.IGNORECASE),
)
# Compiled on the first query that may name a date: most queries name none, and compiling these
# at import would cost every cold ``om search``.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = []
#: Every pattern needs a digit or one of these words (lower case) in the query: each pattern
#: reads a month name, "today", "week"... as a whole word, so "decide", "separate" or "maybe"
#: (which hold "dec", "sep" and "may") need not cost the compiling of the patterns.
_CUES = frozenset((*_MONTHS, "today", "yesterday", "week", "month", "year"))


def _may_name_a_date(text: str) -> bool:
    if any(ch.isdigit() for ch in text):
        return True
    words = "".join(ch if ch.isalpha() else " " for ch in text.lower()).split()
    return not _CUES.isdisjoint(words)


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    if not _PATTERNS:
        _PATTERNS.extend((kind, re.compile(source, flags)) for kind, source, flags in _SOURCES)
    return _PATTERNS


@dataclass(frozen=True)
class DateSpan:
    """Days from ``start`` to ``end`` (ISO dates, both included), or one month of any year.

    For a month of any year ("in May"), ``month`` is set and ``start`` and ``end`` are empty.
    """

    start: str = ""
    end: str = ""
    month: int | None = None


def _days(start: Date, end: Date) -> DateSpan:
    return DateSpan(start.isoformat(), end.isoformat())


def _month(year: int, month: int) -> DateSpan:
    first = Date(year, month, 1)
    after = Date(year + 1, 1, 1) if month == 12 else Date(year, month + 1, 1)
    return _days(first, after - timedelta(days=1))


def _relative(phrase: str, today: Date) -> DateSpan:
    words = phrase.lower().split()
    if words[0] == "today":
        return _days(today, today)
    if words[0] == "yesterday":
        day = today - timedelta(days=1)
        return _days(day, day)
    back = words[0] == "last"
    if words[1] == "week":
        monday = today - timedelta(days=today.weekday() + (7 if back else 0))
        return _days(monday, monday + timedelta(days=6))
    if words[1] == "month":
        year, month = today.year, today.month
        if back:
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        return _month(year, month)
    year = today.year - (1 if back else 0)
    return _days(Date(year, 1, 1), Date(year, 12, 31))


def _span(kind: str, groups: tuple[str, ...], today: Date) -> DateSpan:
    """The span one match names; raises ValueError for an impossible date (31 February)."""
    if kind == "iso-day":
        day = Date(int(groups[0]), int(groups[1]), int(groups[2]))
        return _days(day, day)
    if kind == "iso-month":
        return _month(int(groups[0]), int(groups[1]))
    if kind == "day-month-year":
        day = Date(int(groups[2]), _MONTHS[groups[1].lower()], int(groups[0]))
        return _days(day, day)
    if kind == "month-day-year":
        day = Date(int(groups[2]), _MONTHS[groups[0].lower()], int(groups[1]))
        return _days(day, day)
    if kind == "month-year":
        return _month(int(groups[1]), _MONTHS[groups[0].lower()])
    if kind == "month":
        return DateSpan(month=_MONTHS[groups[0].lower()])
    if kind == "year":
        year = int(groups[0])
        return _days(Date(year, 1, 1), Date(year, 12, 31))
    return _relative(groups[0], today)


def query_dates(text: str, today: Date | None = None) -> list[DateSpan]:
    """The dates ``text`` names, in the order found, without repeats (see the module doc).

    ``today`` (default: the local date) anchors "yesterday", "last week" and the like.
    """
    if not _may_name_a_date(text):
        return []
    day = today or Date.today()
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, DateSpan]] = []
    for kind, pattern in _patterns():
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            try:
                span = _span(kind, match.groups(), day)
            except (ValueError, OverflowError):
                continue  # "31 February 2026" is no day; "February 2026" may still match below
            taken.append((match.start(), match.end()))
            found.append((match.start(), span))
    spans = [span for _, span in sorted(found, key=lambda item: item[0])]
    return list(dict.fromkeys(spans))

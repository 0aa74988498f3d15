"""Dates as a reader wants them at a session start: relative to today.

"3 days ago" says more than "2026-11-26" to someone who does not know today's date offhand, and a
plan's date says whether it is still ahead ("planned for 2026-12-05, in 4 days") or has probably
happened ("planned for 2026-11-20: likely done"). ``om context`` imports this on every session
start, so days are counted by hand (``ordinal``) rather than with ``datetime``, whose import
alone costs a session start more than all the counting.
"""

from __future__ import annotations

import re
import time

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from datetime import date

__all__ = [
    "ago",
    "days_between",
    "ordinal",
    "plan_in",
    "planned",
    "today_ordinal",
    "with_plan",
    "without_meaning",
]

# Patterns as text, compiled by ``re`` on first use: most session starts never need them.
_ISO = r"\b(\d{4}-\d{2}-\d{2})\b"
# The observer's "(meaning 2026-12-05)" note: the plan's annotation replaces it.
_MEANING = r"\s*\(meaning (\d{4}-\d{2}-\d{2})\)"


def ordinal(text: str | None) -> int | None:
    """The day number of an ISO date (its first ten characters), as ``date.toordinal`` counts;
    None when it is not a date."""
    if not text:
        return None
    day = text[:10]
    try:
        return _ORDINALS[day]  # a context's few hundred lines share a few dozen days
    except KeyError:
        _ORDINALS[day] = found = _count_days(day)
        return found


_ORDINALS: dict[str, int | None] = {}


def _count_days(text: str) -> int | None:
    if len(text) < 10 or text[4] != "-" or text[7] != "-":
        return None
    try:
        year, month, day = int(text[:4]), int(text[5:7]), int(text[8:10])
    except ValueError:
        return None
    if not (1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1] and year >= 1):
        return None
    if month == 2 and day == 29 and (year % 4 or (year % 100 == 0 and year % 400)):
        return None
    # Days from the civil date (H. Hinnant's algorithm), counted from 0001-01-01 = 1.
    year -= month <= 2
    era = year // 400
    in_era = year - era * 400
    in_year = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    return era * 146097 + in_era * 365 + in_era // 4 - in_era // 100 + in_year - 305


_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def today_ordinal(today: date | int | None = None) -> int:
    """``today`` (a date or a day number) as a day number; the local date when None."""
    if today is None:
        now = time.localtime()
        return ordinal(f"{now.tm_year:04d}-{now.tm_mon:02d}-{now.tm_mday:02d}") or 0
    return today if isinstance(today, int) else today.toordinal()


def days_between(earlier: str | None, today: date | int) -> int | None:
    """Whole days from the ISO date ``earlier`` (its first ten characters) to ``today``."""
    day = ordinal(earlier)
    return None if day is None else today_ordinal(today) - day


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def ago(when: str | None, today: date | int) -> str:
    """``when`` relative to ``today``: "today", "yesterday", "3 days ago", "5 weeks ago",
    "4 months ago", "2 years ago"; "in 3 days" for a future date; "" when it is not a date."""
    days = days_between(when, today)
    if days is None:
        return ""
    if days < 0:
        return "tomorrow" if days == -1 else f"in {_count(-days, 'day')}"
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 14:
        return f"{days} days ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    if days < 730:
        return f"{days // 30} months ago"
    return f"{days // 365} years ago"


def planned(when: str, today: date | int) -> str:
    """A plan's date for people: "in 4 days", "today", or "likely done" once it has passed."""
    days = days_between(when, today)
    if days is None:
        return ""
    if days > 0:
        return "likely done"
    if days == 0:
        return "today"
    return "tomorrow" if days == -1 else f"in {_count(-days, 'day')}"


def with_plan(text: str, plan: str | None, today: date | int) -> str:
    """``text`` with its planned date ``plan`` said relative to ``today``.

    The observer's "(meaning D)" note goes; when the text names the date itself it is annotated
    where it stands ("Release on 2026-12-05 (in 4 days)"); otherwise "(planned for D, in 4 days)"
    or "(planned for D: likely done)" is appended.
    """
    if not plan:
        return text
    phrase = planned(plan, today)
    if not phrase:
        return text
    clean = without_meaning(text)
    if plan in clean:
        note = f" ({phrase})"
        return clean.replace(plan, plan + note, 1)
    sep = ": " if phrase == "likely done" else ", "
    return f"{clean} (planned for {plan}{sep}{phrase})"


def without_meaning(text: str) -> str:
    """``text`` without the observer's "(meaning D)" note."""
    return re.sub(_MEANING, "", text).rstrip() if "(meaning " in text else text


def plan_in(text: str, said: str | None) -> str | None:
    """The date a text plans for: its "(meaning D)" note, else a date it names that lies after
    the day it was said (``said``); None when it names no such date."""
    meaning = re.search(_MEANING, text)
    if meaning is not None:
        return meaning.group(1)
    for found in re.findall(_ISO, text):
        if said is None or found > said[:10]:
            return str(found)
    return None

"""Dates as a reader wants them at a session start: relative to today.

"3 days ago" says more than "2026-11-26" to someone who does not know today's date offhand, and a
plan's date says whether it is still ahead ("planned for 2026-12-05, in 4 days") or has probably
happened ("planned for 2026-11-20: likely done"). Standard library only: ``om context`` imports
this on every session start.
"""

from __future__ import annotations

import re
from datetime import date

__all__ = ["ago", "days_between", "plan_in", "planned", "with_plan", "without_meaning"]

_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
# The observer's "(meaning 2026-12-05)" note: the plan's annotation replaces it.
_MEANING = re.compile(r"\s*\(meaning (\d{4}-\d{2}-\d{2})\)")


def days_between(earlier: str | None, today: date) -> int | None:
    """Whole days from the ISO date ``earlier`` (its first ten characters) to ``today``."""
    if not earlier:
        return None
    try:
        return (today - date.fromisoformat(earlier[:10])).days
    except ValueError:
        return None


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def ago(when: str | None, today: date) -> str:
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


def planned(when: str, today: date) -> str:
    """A plan's date for people: "in 4 days", "today", or "likely done" once it has passed."""
    days = days_between(when, today)
    if days is None:
        return ""
    if days > 0:
        return "likely done"
    if days == 0:
        return "today"
    return "tomorrow" if days == -1 else f"in {_count(-days, 'day')}"


def with_plan(text: str, plan: str | None, today: date) -> str:
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
    return _MEANING.sub("", text).rstrip()


def plan_in(text: str, said: str | None) -> str | None:
    """The date a text plans for: its "(meaning D)" note, else a date it names that lies after
    the day it was said (``said``); None when it names no such date."""
    meaning = _MEANING.search(text)
    if meaning is not None:
        return meaning.group(1)
    for found in _ISO.findall(text):
        if said is None or found > said[:10]:
            return str(found)
    return None

"""Templates and the filters they use: every piece of memory text is escaped before it is shown.

Jinja2 escapes every value (autoescape on for every template). The filters here add markup to
memory text (search highlights, links to cited entries and vault pages): each one escapes the
text first and then inserts only tags it builds itself, around targets it has checked against a
strict pattern, so text holding ``<script>`` or ``"><img onerror=...>`` stays text.
"""

from __future__ import annotations

import re
from datetime import date as Date
from typing import Any

from jinja2 import Environment, PackageLoader
from markupsafe import Markup, escape

from obsmem.memory.model import PRIORITIES

__all__ = ["environment", "highlight", "linkify"]

# Vault wiki-links as the router writes them: [[projects/atlas]], [[people/maria]], [[facts]].
_WIKI = re.compile(r"\[\[([a-z0-9][a-z0-9_-]*(?:/[a-z0-9][a-z0-9_-]*)?)\]\]")
# A cited observation id: (^k3v9q2m7xa), or a bare ^k3v9q2m7xa.
_CITE = re.compile(r"\^([0-9a-z]{10})\b")
_WORD = re.compile(r"[^\W_]+")
# A reflection line's text starts with its priority mark, which the page already shows as a dot.
_LEADING_MARK = re.compile("^(?:" + "|".join(map(re.escape, PRIORITIES)) + ")\ufe0f?\\s*")


def _unmarked(text: object) -> str:
    return _LEADING_MARK.sub("", str(text), count=1)


def linkify(text: object) -> Markup:
    """Escaped ``text`` with vault wiki-links and cited ids turned into links."""
    safe = str(escape(_unmarked(text)))
    safe = _WIKI.sub(lambda m: f'<a href="/vault/{m.group(1)}">{m.group(1)}</a>', safe)
    safe = _CITE.sub(lambda m: f'<a href="/entry/{m.group(1)}">^{m.group(1)}</a>', safe)
    return Markup(safe)


def highlight(text: object, query: str) -> Markup:
    """Escaped ``text`` with the words of ``query`` (and words they begin) in ``<mark>``.

    The index stems words, so "deploy" finds "deployed"; marking every word that starts with a
    query word shows most of why a line matched."""
    words = sorted({w.casefold() for w in _WORD.findall(query or "") if len(w) > 1}, key=len)
    raw = _unmarked(text)
    if not words:
        return Markup(escape(raw))
    pattern = re.compile(
        r"(?<![^\W_])(?:" + "|".join(re.escape(w) for w in reversed(words)) + r")[^\W_]*",
        re.IGNORECASE,
    )
    out: list[str] = []
    last = 0
    for match in pattern.finditer(raw):
        out.append(str(escape(raw[last : match.start()])))
        out.append(f"<mark>{escape(match.group(0))}</mark>")
        last = match.end()
    out.append(str(escape(raw[last:])))
    return Markup("".join(out))


def priority_name(emoji: object) -> str:
    """``important`` for 🔴 and so on (empty for none)."""
    return PRIORITIES.get(str(emoji or ""), "")


def relative_day(value: object, today: Date | None = None) -> str:
    """``today``, ``yesterday``, ``3 days ago`` or the date itself beyond a week."""
    try:
        day = Date.fromisoformat(str(value))
    except ValueError:
        return str(value or "")
    delta = ((today or Date.today()) - day).days
    if delta == 0:
        return "today"
    if delta == 1:
        return "yesterday"
    if 1 < delta <= 7:
        return f"{delta} days ago"
    return day.strftime("%A")[:3] + " " + day.isoformat()


def score(value: object) -> str:
    """An importance or confidence as two decimals ("" when unset)."""
    return f"{value:.2f}" if isinstance(value, int | float) else ""


def environment(globals_: dict[str, Any] | None = None) -> Environment:
    """The template environment: package templates, autoescape everywhere, the filters above."""
    env = Environment(
        loader=PackageLoader("obsmem.ui", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        linkify=linkify,
        highlight=highlight,
        priority_name=priority_name,
        relative_day=relative_day,
        score=score,
    )
    env.globals.update(globals_ or {})
    return env

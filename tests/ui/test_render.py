"""The template filters: memory text escaped, links and highlights added, priority marks once."""

from __future__ import annotations

from obsmem.ui.render import highlight, linkify


def test_a_reflection_lines_priority_mark_is_not_shown_twice() -> None:
    assert str(linkify("🔴 CI fails (^c1t2r9k3ma)")) == (
        'CI fails (<a href="/entry/c1t2r9k3ma">^c1t2r9k3ma</a>)'
    )
    assert str(highlight("✅ Redis isolated per worker", "redis")) == (
        "<mark>Redis</mark> isolated per worker"
    )
    # only a leading mark goes: one inside the text is the user's
    assert str(linkify("Use 🔴 for blockers")) == "Use 🔴 for blockers"


def test_memory_text_stays_text() -> None:
    assert str(linkify('🟡 <img src=x onerror="alert(1)">')) == (
        "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;"
    )

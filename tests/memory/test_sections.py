"""Sectioned files (reflections, profile, active): stamps, entries, section paths, stable ids."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.memory.markdown import body
from obsmem.memory.sections import parse_sections

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"
ALL_FIXTURES = sorted(FIXTURES.rglob("*.md"))


def read(rel: str) -> bytes:
    return (FIXTURES / rel).read_bytes()


def test_original_reflections() -> None:
    doc = parse_sections(read("original/reflections.md"))
    assert doc.issues == []
    assert doc.title == "Reflections — Long-Term Memory"
    assert doc.last_updated == "2026-02-12 04:00 UTC"
    assert doc.last_reflected == "2026-02-11"
    assert doc.sections() == [
        "Core Identity",
        "Active Projects / Task manager API",
        "Active Projects / om",
        "Preferences & Opinions",
        "Relationship & Communication",
        "Key Facts & Context",
        "Recent Themes",
        "Archive",
    ]
    assert len(doc.entries) == 20
    by_text = {e.text: e for e in doc.entries}
    om = by_text["Wants every memory line traceable to its transcript"]
    assert om.section == "Active Projects / om"
    assert body(doc.lines[om.line - 1]) == om.raw
    nested = by_text["Staging database runs in Docker; production on managed PostgreSQL in AWS"]
    assert nested.depth == 1
    red = next(e for e in doc.entries if e.text.startswith("🔴 Cares about correctness"))
    assert (red.priority, red.importance) == ("🔴", 0.9)
    plain = by_text["Likes short, imperative commit messages"]
    assert (plain.priority, plain.importance, plain.type) == (None, None, None)
    # Entries take a date they name, else the file's Last updated date.
    assert by_text["Authentication and token lifetimes (2026-02-12)"].date == "2026-02-12"
    assert plain.date == "2026-02-12"
    assert by_text["FastAPI + Tortoise ORM + PostgreSQL 16; MVP deadline 2026-02-13"].date == (
        "2026-02-13"
    )


def test_ids_are_stable_and_seeded_by_kind() -> None:
    data = read("original/reflections.md")
    ids = [e.id for e in parse_sections(data).entries]
    assert len(set(ids)) == len(ids)
    assert [e.id for e in parse_sections(data).entries] == ids
    # Line numbers do not matter: an edit above keeps every id.
    shifted = data.replace(b"## Core Identity\n", b"## Core Identity\n\n\n---\n\n")
    assert [e.id for e in parse_sections(shifted).entries] == ids
    # The same text under another kind of file has other ids.
    assert not set(ids) & {e.id for e in parse_sections(data, kind="profile").entries}
    # The section is part of the id: moving a line to another section changes it.
    moved = parse_sections("## A\n- same\n## B\n- same\n").entries
    assert moved[0].id != moved[1].id


def test_crlf_and_bom_read_like_the_original() -> None:
    lf = parse_sections(read("original/reflections.md"))
    crlf = parse_sections(read("broken/crlf-bom-reflections.md"))
    assert crlf.issues == []
    assert crlf.title == lf.title
    assert crlf.stamps == lf.stamps
    assert [(e.id, e.text, e.section, e.depth) for e in crlf.entries] == [
        (e.id, e.text, e.section, e.depth) for e in lf.entries
    ]


def test_star_stamps_block_ids_cites_and_duplicates() -> None:
    doc = parse_sections(read("broken/reflections.md"))
    assert doc.last_updated == "2026-02-20 04:00 UTC"
    assert doc.last_reflected == "2026-02-19"
    assert [(i.line, i.message) for i in doc.issues] == [
        (1, "text before the first section heading (kept)")
    ]
    stray = doc.entries[0]
    assert (stray.section, stray.text, stray.line) == ("", "Stray text before any heading.", 1)
    # The first level-1 heading is the title even after stray text.
    assert doc.title == "Reflections — Long-Term Memory"
    twice = [e for e in doc.entries if e.text == "Same line twice"]
    assert len(twice) == 2 and twice[0].id != twice[1].id
    tagged = next(e for e in doc.entries if e.id == "r1s2t3v4w5")
    assert tagged.text == "[decision|c=0.9|i=0.8] Tagged like an observation"
    assert (tagged.type, tagged.importance) == ("decision", 0.8)
    assert tagged.section == "Active Projects / om"
    citing = next(e for e in doc.entries if e.id == "w5x6y7z8a9")
    assert citing.cites == ["k3v9q2m7xa", "b7d2f9ah4c"]
    assert "^w5x6y7z8a9" not in citing.text
    blue = next(e for e in doc.entries if "🔵" in e.text)
    assert blue.priority is None


def test_profile_and_active() -> None:
    profile = parse_sections(read("original/profile.md"), kind="profile")
    assert profile.title == "User Profile"
    assert profile.last_updated == "2026-02-12 04:00 UTC"
    assert profile.last_reflected is None
    assert profile.sections() == ["Identity", "Working Style", "Tools"]
    assert profile.issues == []
    active = parse_sections(read("original/active.md"), kind="active")
    assert active.sections() == ["Current Focus", "Open Threads", "Blockers", "Next Steps"]
    # Numbered steps are paragraph lines: still entries, whole.
    steps = [e.text for e in active.entries if e.section == "Next Steps"]
    assert steps == [
        "1. Write tests for expired and tampered tokens",
        "2. Add rate limiting to the login endpoint",
    ]


def test_stamp_spellings() -> None:
    for line in (
        "_Last updated: 2026-02-10 04:00 UTC_",
        "*Last updated: 2026-02-10 04:00 UTC*",
        "_last updated:2026-02-10 04:00 UTC _",
    ):
        doc = parse_sections(f"# Reflections\n\n{line}\n")
        assert doc.last_updated == "2026-02-10 04:00 UTC", line
        assert doc.entries == []
    doc = parse_sections("# R\n\n_Last reflected: never_\n")
    assert doc.stamps == {"last reflected": "never"}
    assert doc.last_reflected is None


def test_comments_and_quotes_before_the_first_heading_are_not_issues() -> None:
    doc = parse_sections("<!-- generated -->\n> quoted\n# Title\n## S\n- a\n")
    assert doc.issues == []
    assert [e.text for e in doc.entries] == ["a"]


def test_heading_levels_pop_the_path() -> None:
    doc = parse_sections("# T\n## A\n### B\n#### C\n- deep\n### D\n- d\n## E\n- e\n")
    assert [(e.section, e.text) for e in doc.entries] == [
        ("A / B / C", "deep"),
        ("A / D", "d"),
        ("E", "e"),
    ]


def test_invalid_utf8_is_reported_and_kept() -> None:
    data = b"# R\n\n## S\n\n- caf\xe9\n- fine\n"
    doc = parse_sections(data)
    assert doc.render() == data
    assert [i.line for i in doc.issues] == [5]
    assert [e.text for e in doc.entries] == ["caf\udce9", "fine"]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_round_trips(path: Path) -> None:
    data = path.read_bytes()
    doc = parse_sections(data)
    assert doc.render() == data
    for entry in doc.entries:
        assert body(doc.lines[entry.line - 1]) == entry.raw


@settings(max_examples=200)
@given(st.binary())
def test_arbitrary_bytes_round_trip(data: bytes) -> None:
    doc = parse_sections(data)
    assert doc.render() == data
    assert all(1 <= issue.line <= len(doc.lines) for issue in doc.issues)


@settings(max_examples=200)
@given(st.text())
def test_arbitrary_text_round_trips(text: str) -> None:
    assert parse_sections(text).render() == text.encode("utf-8")


_LINES = st.sampled_from(
    [
        "# Reflections — Long-Term Memory",
        "_Last updated: 2026-02-12 04:00 UTC_",
        "*Last reflected: 2026-02-11*",
        "## Core Identity",
        "## Active Projects",
        "### om",
        "- 🔴 important",
        "  - nested",
        "- [decision|c=0.9|i=0.8] tagged ^r1s2t3v4w5",
        "- cites (^k3v9q2m7xa)",
        "paragraph line",
        "---",
        "",
        "\ufeff# bom",
        "x\udcff",
    ]
)


@settings(max_examples=200)
@given(st.lists(_LINES, max_size=30), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_structured_sections_round_trip(lines: list[str], nl: str, trailing: bool) -> None:
    text = nl.join(lines) + (nl if trailing and lines else "")
    data = text.encode("utf-8", "surrogateescape")
    doc = parse_sections(data)
    assert doc.render() == data
    content = [
        s for s in lines if s.strip() and s.strip() != "---" and not s.startswith(("#", "\ufeff#"))
    ]
    stamps = [s for s in content if s.startswith(("_Last", "*Last"))]
    # Every non-heading, non-stamp line is an entry, in order; ids are unique.
    assert [e.raw for e in doc.entries] == [s for s in content if s not in stamps]
    ids = [e.id for e in doc.entries]
    block = [e.id for e in doc.entries if e.raw.endswith("^r1s2t3v4w5")]
    assert len(set(ids)) == len(ids) - max(0, len(block) - 1)
    assert parse_sections(data).entries == doc.entries


def test_long_stamp_and_heading_lines_are_fast() -> None:
    started = time.perf_counter()
    parse_sections("# " + "a " * 20_000 + "\n_Last updated: a" + " " * 40_000 + "b_\n")
    assert time.perf_counter() - started < 0.5

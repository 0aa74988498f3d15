"""Editing reflections.md line by line: exact round trips, om's line shape, sections, stamps."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.memory.sections import parse_sections
from obsmem.reflect.reflections import SUPERSEDED, OmLine, ReflectionsDoc, parse_om_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"
ALL_FIXTURES = sorted(FIXTURES.rglob("*.md"))
LINE = OmLine(
    rid="r7t8y9u0i1",
    text="Chose PostgreSQL over SQLite for concurrent writes",
    seen="2026-03-02",
    cites=["k3v9q2m7xa", "m2n3b4v5c6"],
    emoji="🔴",
)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_unedited_document_renders_the_same_bytes(path: Path) -> None:
    data = path.read_bytes()
    assert ReflectionsDoc(data).render() == data


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["# T", "## A", "### b", "- x", "  - y", "", "---", "_Last updated: z_", "text", "\r"]
        )
        | st.text(max_size=12),
        max_size=25,
    ),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_any_text_round_trips(parts: list[str], nl: str, final: bool) -> None:
    text = nl.join(parts) + (nl if final and parts else "")
    assert ReflectionsDoc(text.encode("utf-8", "surrogatepass")).render() == text.encode(
        "utf-8", "surrogatepass"
    )


def test_om_line_renders_and_parses_back() -> None:
    raw = LINE.render()
    assert raw == (
        "- 🔴 Chose PostgreSQL over SQLite for concurrent writes "
        "(seen 2026-03-02; ^k3v9q2m7xa, ^m2n3b4v5c6) ^r7t8y9u0i1"
    )
    assert parse_om_line(raw) == LINE
    assert parse_om_line(raw + "  ") == LINE
    # Hand-written lines, even with a block id or a date in parentheses, are not om's.
    for hand in (
        "- 🔴 Chose PostgreSQL over SQLite ^r7t8y9u0i1",
        "- Chose PostgreSQL (seen 2026-03-02) ^r7t8y9u0i1",
        "  - 🔴 Chose X (seen 2026-03-02; ^k3v9q2m7xa) ^r7t8y9u0i1",
        "Chose X (seen 2026-03-02; ^k3v9q2m7xa) ^r7t8y9u0i1",
        "- 🔴 Chose X (seen 2026-03-02; ^k3v9q2m7xa)",
    ):
        assert parse_om_line(hand) is None, hand


def test_parse_sections_reads_cites_apart_from_the_line_id() -> None:
    doc = ReflectionsDoc(b"")
    doc.append(LINE, "Active Projects", "om")
    entries = parse_sections(doc.render()).entries
    assert len(entries) == 1
    entry = entries[0]
    assert entry.id == "r7t8y9u0i1"
    assert entry.cites == ["k3v9q2m7xa", "m2n3b4v5c6"]
    assert entry.id not in entry.cites
    assert entry.section == "Active Projects / om"
    assert (entry.priority, entry.importance, entry.date) == ("🔴", 0.9, "2026-03-02")


def test_core_text_drops_the_replacing_note() -> None:
    line = OmLine(
        "r7t8y9u0i1", "Uses Aerich (replacing Uses Alembic (old))", "2026-03-02", ["a" * 10]
    )
    assert line.core == "Uses Aerich"
    assert parse_om_line(line.render()) == line


def test_new_file_gets_title_and_sections_in_the_original_order() -> None:
    doc = ReflectionsDoc(b"")
    doc.append(LINE, "Recent Themes")
    doc.append(LINE, "Core Identity")
    doc.append(LINE, "Archive")
    doc.append(LINE, "Active Projects", "om")
    doc.append(LINE, "Active Projects", "atlas")
    doc.set_stamps("2026-03-03 04:00 UTC", "2026-03-02")
    text = doc.render().decode()
    line = LINE.render()
    assert text == (
        "# Reflections — Long-Term Memory\n\n"
        "_Last updated: 2026-03-03 04:00 UTC_\n_Last reflected: 2026-03-02_\n\n"
        f"## Core Identity\n\n{line}\n\n"
        f"## Active Projects\n\n### om\n\n{line}\n\n### atlas\n\n{line}\n\n"
        f"## Recent Themes\n\n{line}\n\n"
        f"## Archive\n\n{line}\n"
    )
    parsed = parse_sections(text)
    assert parsed.issues == []
    assert parsed.last_reflected == "2026-03-02"


def test_lines_go_after_existing_content_and_keep_other_lines(tmp_path: Path) -> None:
    data = (FIXTURES / "original" / "reflections.md").read_bytes()
    doc = ReflectionsDoc(data)
    doc.append(LINE, "Active Projects", "Task manager API")
    doc.append(LINE, "Preferences and opinions")  # found despite the spelling
    doc.append(LINE, "Dormant")
    out = doc.render().decode()
    old = data.decode().splitlines()
    new = out.splitlines()
    assert [x for x in new if x != LINE.render() and x not in ("## Dormant", "")] == [
        x for x in old if x
    ]
    assert out.count(LINE.render()) == 3
    assert (
        "- 🟡 Authentication: OAuth2 password flow with short-lived JWTs and refresh tokens\n"
        + (LINE.render() + "\n\n### om")
        in out
    )
    assert "- Never commit secrets; uses the 1Password CLI to inject them\n" + LINE.render() in out
    assert out.index("## Dormant") < out.index("## Archive")
    assert "\n\n## Dormant\n\n" + LINE.render() + "\n\n## Archive" in out


def test_remove_and_prune_drop_only_what_om_emptied() -> None:
    doc = ReflectionsDoc(b"")
    doc.append(LINE, "Active Projects", "om")
    other = OmLine("a1a1a1a1a1", "Another", "2026-03-02", ["b" * 10])
    doc.append(other, "Dormant", "atlas")
    place = doc.find(LINE.rid)
    assert place is not None and place.sub is not None and place.sub.name == "om"
    doc.remove(place)
    place = doc.find(other.rid)
    assert place is not None
    doc.remove(place)
    doc.prune()
    assert [s.name for s in doc.sections] == ["Active Projects"]
    assert doc.sections[0].subs == []
    # A hand-made empty subsection is not om's to drop.
    hand = ReflectionsDoc(b"## Active Projects\n\n### later\n")
    hand.prune()
    assert hand.render() == b"## Active Projects\n\n### later\n"


def test_stamps_are_replaced_in_place_keeping_their_style() -> None:
    data = b"# Reflections\n\n*Last updated: 2026-01-01 04:00 UTC*\n_Last reflected: 2026-01-01_\n"
    doc = ReflectionsDoc(data)
    doc.set_stamps("2026-02-02 05:00 UTC", "2026-02-01")
    assert doc.render() == (
        b"# Reflections\n\n*Last updated: 2026-02-02 05:00 UTC*\n_Last reflected: 2026-02-01_\n"
    )
    assert doc.stamp("Last reflected") == "2026-02-01"
    doc.set_stamps(None, "2026-02-03")  # Last updated left as it is
    assert b"*Last updated: 2026-02-02 05:00 UTC*" in doc.render()


def test_missing_stamps_are_added_under_the_title() -> None:
    doc = ReflectionsDoc(b"# Reflections\n## Core Identity\n- hand line")
    doc.set_stamps("2026-02-02 05:00 UTC", "2026-02-01")
    assert doc.render() == (
        b"# Reflections\n\n_Last updated: 2026-02-02 05:00 UTC_\n_Last reflected: 2026-02-01_\n\n"
        b"## Core Identity\n- hand line\n"
    )
    only = ReflectionsDoc(b"# R\n\n_Last updated: 2026-01-01 04:00 UTC_\n\n## A\n")
    only.set_stamps("2026-02-02 05:00 UTC", "2026-02-01")
    assert only.render() == (
        b"# R\n\n_Last updated: 2026-02-02 05:00 UTC_\n_Last reflected: 2026-02-01_\n\n## A\n"
    )


def test_crlf_file_gets_crlf_lines() -> None:
    data = (FIXTURES / "broken" / "crlf-bom-reflections.md").read_bytes()
    doc = ReflectionsDoc(data)
    doc.append(LINE, "Recent Themes")
    out = doc.render()
    assert (LINE.render() + "\r\n").encode() in out
    assert out.startswith(data[:20])
    assert b"\n" not in out.replace(b"\r\n", b"")


def test_a_superseded_line_as_written_is_recognised_wherever_it_is_read() -> None:
    old = OmLine(
        rid="ab12cd34", text="Chose Postgres for reads", seen="2026-01-02", cites=["x1y2z3"]
    )
    line = old.superseded("Chose SQLite for reads", "2026-01-03")
    assert line.replaced
    assert SUPERSEDED.search(line.render())
    assert SUPERSEDED.search("- ~~Port 3000~~ -> replaced by port 8080")
    assert not SUPERSEDED.search(old.render())

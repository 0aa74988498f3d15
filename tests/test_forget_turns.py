"""Which kept transcript turns ``om forget --query`` takes, and how its report lists them."""

from __future__ import annotations

import pytest

from obsmem.forget_turns import listed, matches_all
from obsmem.index.turns import KeptTurn


@pytest.mark.parametrize(
    ("tokens", "text", "expected"),
    [
        (["zebrafish", "cobalt"], "The Zebrafish run used COBALT.", True),
        (["zebra"], "zebrafish tanks", True),  # a word's start
        (["deploying"], "we deploy on Fridays", True),  # its stem (four letters or more)
        (["zebrafish", "cobalt"], "zebrafish only", False),  # every word, not one of them
        (["cat"], "a concatenated string", False),  # inside a word is not the word
        (["dep"], "the dep folder", True),
        (["deps"], "the dep folder", False),  # a stem shorter than four letters does not count
    ],
)
def test_a_turn_is_taken_only_when_it_holds_every_query_word(
    tokens: list[str], text: str, expected: bool
) -> None:
    assert matches_all(tokens, text) is expected


def _turn(text: str) -> KeptTurn:
    return KeptTurn("/t/s.jsonl", 12, 0, 14, "user", "2026-11-30", "s1", text)


def test_the_report_lists_a_turn_with_an_excerpt_around_the_first_query_word() -> None:
    text = "word " * 40 + "the zebrafish   secret\nis here " + "tail " * 40
    shown = listed(_turn(text), ["zebrafish"])
    assert (shown.source_path, shown.line_start, shown.line_end, shown.part) == (
        "/t/s.jsonl", 12, 14, 0,
    )  # fmt: skip
    assert shown.excerpt.startswith("…") and shown.excerpt.endswith("…")
    assert "the zebrafish secret is here" in shown.excerpt  # spacing made plain
    assert shown.excerpt[1:6] == "word "  # from a word's start, not mid-word
    assert len(shown.excerpt) <= 102


def test_a_short_turn_is_listed_whole() -> None:
    assert listed(_turn("zebrafish  notes"), ["zebrafish"]).excerpt == "zebrafish notes"

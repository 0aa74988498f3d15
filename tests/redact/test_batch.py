"""Redacting many texts at once (``redact_all``, ``redact_turns``) gives what redacting each on
its own gives, byte for byte: over the secret kinds corpus, the benign texts, the fixture turns
and texts made of their pieces, joined at the places a batch could go wrong (a text's ends, a
NUL, a line break, letters that lowercase to another length)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obsmem.redact import look, redact, redact_all, redact_counts, redact_turns
from obsmem.sources.registry import reader_for

from .secret_kinds import BENIGN, KINDS, carriers

_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"


@cache
def _pieces() -> tuple[str, ...]:
    """Every carrier of every kind, the benign texts and the turns of the agents' fixtures."""
    texts: list[str] = [text for kind in KINDS for text in carriers(kind).values()]
    texts += BENIGN
    for agent, folder in (("hermes", "hermes"), ("openclaw", "openclaw/written")):
        for path in sorted((_FIXTURES / folder).rglob("*.jsonl")):
            texts += [turn.text for turn in reader_for(agent).read(path, flush=True).turns]
    return tuple(texts)


# Where a batch could make a difference: the join character itself, line breaks, a colon
# (four make a .pgpass line), token characters, "İ" and "ß" (lowercase to other lengths), "K"
# (the Kelvin sign lowercases to ASCII "k"), "Σ" (lowercase depends on its neighbours).
_GLUE = st.sampled_from(
    ["", "\x00", "\n", "\r\n", "\\n", " ", ":", "=", "/", "-", "İ", "ß", "K", "Σ"]
)
_PIECE = st.sampled_from(range(len(_pieces()))).map(lambda i: _pieces()[i])


@st.composite
def _text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_PIECE, st.text(max_size=30), _GLUE), min_size=1, max_size=4))
    text = "".join(parts)
    cut = draw(st.integers(0, len(text)))
    return text[cut:] if draw(st.booleans()) else text[: max(cut, 1)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text(), max_size=40))
def test_redact_all_is_redact_of_each(texts: list[str]) -> None:
    assert redact_all(texts) == [redact(text) for text in texts]


@dataclass
class _Turn:
    text: str


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text(), max_size=40))
def test_redact_turns_is_redact_counts_of_each(texts: list[str]) -> None:
    turns = [_Turn(text) for text in texts]
    total = redact_turns(turns)
    expected: Counter[str] = Counter()
    for turn, text in zip(turns, texts, strict=True):
        out, counts = redact_counts(text)
        assert turn.text == out
        expected.update(counts)
    assert total == expected


def test_the_whole_corpus_at_once_is_redacted_as_each_text_alone() -> None:
    texts = list(_pieces())
    assert redact_all(texts) == [redact(text) for text in texts]
    # Nothing secret is found in one text because of its neighbours: each carrier between the
    # others, reversed, gives the same again.
    assert redact_all(texts[::-1]) == [redact(text) for text in texts[::-1]]


@pytest.mark.parametrize(
    "texts",
    [
        [],
        ["token=abc"],
        ["", "", "", "", ""],
        ["see the", "password", "=", "hunter2-Xy9!", "in the docs"],  # a key split over texts
        ["curl -u deploy:S3cretPassw0rd https://x", "ok"] * 3,
        ["ghp_" + "a1B2" * 9, "\x00", "İstanbul token=Zx81kQ0pL2mN", "ß" * 30] * 2,
        # A key wrapped over lines shorter than any token: found only because of its breaks.
        ["done", "AAAA0123456:APA91b\n" + "abcdefghij1234567\n" * 7, "ok", "thanks"],
    ],
)
def test_edge_batches(texts: list[str]) -> None:
    assert redact_all(texts) == [redact(text) for text in texts]


def test_a_key_wrapped_into_short_lines_is_redacted_in_a_batch() -> None:
    wrapped = "AAAA0123456:APA91b\n" + "abcdefghij1234567\n" * 7
    assert redact_all(["done", wrapped, "ok", "thanks"])[1] == "[REDACTED:firebase]\n" * 8


def _looked(texts: list[str]) -> list[tuple[int, str, list[str], bool]]:
    return [(i, low, sorted(words), run) for i, low, (words, run) in look.looks(texts)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_text(), min_size=4, max_size=40))
def test_the_automaton_and_the_finds_see_the_same(texts: list[str]) -> None:
    pytest.importorskip("ahocorasick_rs")
    seen = _looked(texts)
    with patch.object(look, "_automaton", lambda: None):
        assert _looked(texts) == seen  # the fallback without the compiled dependency
    with patch.object(look, "_WINDOW", 7):
        assert _looked(texts) == seen  # words cut by a window's end are found whole


def test_the_whole_corpus_is_looked_at_the_same_without_the_automaton() -> None:
    texts = list(_pieces())
    seen = _looked(texts)
    with patch.object(look, "_automaton", lambda: None):
        assert _looked(texts) == seen
        assert redact_all(texts) == [redact(text) for text in texts]

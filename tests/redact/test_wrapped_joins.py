"""The joins the wrapped gated shapes are searched in, and how a match is mapped back to the
text: by position (each copy of a token where it is), never by searching for its string."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.redact import redact
from obsmem.redact.shapes import redact_shapes
from obsmem.redact.wraps import join_all, joins

# A mailchimp key wrapped after 20 characters: only the join makes its shape.
KEY = "3f786850e387550fdab8\n36ed7e6dc881-us12"
LABEL = "[REDACTED:mailchimp]"


def test_a_wrapped_key_after_its_first_characters_in_prose_is_redacted() -> None:
    text = "starts with 3f786850 see\n" + KEY
    assert redact(text) == f"starts with 3f786850 see\n{LABEL}\n{LABEL}"


def test_every_paste_of_a_wrapped_key_is_redacted() -> None:
    for n in (1, 2, 4, 5, 9):
        text = "\n\n".join([KEY] * n)
        counts: Counter[str] = Counter()
        out = redact(text)
        assert "3f786850" not in out and "36ed7e" not in out, n
        assert out.count(LABEL) == 2 * n
        redact_shapes(text, counts)
        assert counts["mailchimp"] == n


def test_a_wrapped_key_is_redacted_beside_a_whole_copy() -> None:
    whole = KEY.replace("\n", "")
    out = redact(f"{whole}\nnext: {KEY}")
    assert "3f786850" not in out and "36ed7e" not in out


class _CountingText(str):
    """A text that counts the searches over all of it (``in``, ``find`` from its start)."""

    scans = 0

    def __contains__(self, key: object) -> bool:
        _CountingText.scans += 1
        return super().__contains__(key)  # type: ignore[operator]

    def find(self, sub: str, *bounds: int | None) -> int:  # type: ignore[override]
        if not bounds:
            _CountingText.scans += 1
        return super().find(sub, *bounds)


def _scans(text: str) -> int:
    _CountingText.scans = 0
    redact_shapes(_CountingText(text), Counter())
    return _CountingText.scans


def test_whole_text_searches_do_not_grow_with_the_number_of_wrapped_keys() -> None:
    # A search of the whole text for each key found makes the pass quadratic in its length:
    # the count of such searches must be the same for 20 keys as for 80.
    unit = "0123456789abcdef\\n0123456789abcdef-us1\\n"
    assert _scans(unit * 20) == _scans(unit * 80)
    unit = "0123456789abcdef\n0123456789abcdef-us1\n"
    assert _scans(unit * 20) == _scans(unit * 80)
    out = redact(unit * 80)
    assert "0123456789abcdef" not in out


_PIECES = st.sampled_from(["a", "B", "1", "-", ":", " ", "\t", "\n", "\r\n", "\\n", "\\", '"'])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_each_character_of_a_join_maps_back_to_itself(text: str) -> None:
    variants = joins(text)
    assert variants[0].text == join_all(text)[1]
    for variant in variants:
        for pos, char in enumerate(variant.text):
            ((start, end),) = variant.spans(pos, pos + 1)
            assert end == start + 1
            if char != "\n":  # a break made a plain one is no character of the text
                assert text[start] == char


def test_a_match_over_a_wrap_point_maps_to_its_two_parts() -> None:
    text = "key AAAA\\n  BBBB\r\n CCCC done"
    (full, *_) = joins(text)
    assert full.text == "key AAAABBBBCCCC done"
    start = full.text.index("AAAA")
    parts = full.spans(start, start + 12)
    assert [text[a:b] for a, b in parts] == ["AAAA", "BBBB", "CCCC"]

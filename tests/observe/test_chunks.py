"""Chunks of turns for the observer: bounded, in order, and never ending inside a line's turns."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from obsmem.observe.observer import chunk_turns, estimate_tokens, overlap, overlap_budget
from obsmem.sources.model import Turn


def _turns(lines: list[list[int]]) -> list[Turn]:
    """Turns of the given sizes (in characters), grouped by the transcript line they come from."""
    out: list[Turn] = []
    for number, sizes in enumerate(lines, start=1):
        for size in sizes:
            out.append(
                Turn(
                    "user",
                    "x" * size,
                    None,
                    None,
                    "claude",
                    None,
                    "/t.jsonl",
                    number,
                    number,
                    number * 100,
                    number * 100 + 100,
                )
            )
    return out


def test_a_line_with_two_turns_is_not_split_between_chunks() -> None:
    # Budget 200 tokens (the floor): line 2's two turns would straddle the boundary.
    turns = _turns([[400], [200, 200], [100]])
    chunks = list(chunk_turns(turns, max_tokens=0))
    ends = [[t.byte_end for t in chunk] for chunk in chunks]
    for first, second in pairwise(chunks):
        assert first[-1].byte_end != second[0].byte_end, ends
    assert [t for chunk in chunks for t in chunk] == turns


@given(st.lists(st.lists(st.integers(1, 700), min_size=1, max_size=3), min_size=1, max_size=30))
def test_chunks_keep_order_and_split_lines_only_when_one_line_is_over_budget(
    lines: list[list[int]],
) -> None:
    turns = _turns(lines)  # no turn is over the budget on its own: none is cut
    chunks = list(chunk_turns(turns, max_tokens=0))
    assert [t for chunk in chunks for t in chunk] == turns
    for chunk in chunks:
        over = sum(estimate_tokens(t.text) + 12 for t in chunk) > 200
        assert not over or len({t.byte_end for t in chunk}) == 1
    for first, second in pairwise(chunks):
        if first[-1].byte_end == second[0].byte_end:
            line = [t for t in turns if t.byte_end == second[0].byte_end]
            assert sum(estimate_tokens(t.text) + 12 for t in line) > 200  # only a line over budget


def test_overlap_repeats_the_last_turns_within_its_budget() -> None:
    turns = _turns([[40], [40], [40], [40]])
    assert overlap(turns, 2, 30000) == turns[-2:]
    assert overlap(turns, 10, 30000) == turns  # a chunk shorter than the overlap: all of it
    assert overlap(turns, 0, 30000) == []
    # A turn too long for the budget is cut to fit; one that would leave too little, dropped.
    big = _turns([[40], [100_000]])
    (cut,) = overlap(big, 2, 1000)
    assert cut.text.endswith(" …[cut]") and estimate_tokens(cut.text) + 12 <= overlap_budget(1000)
    assert big[1].text == "x" * 100_000  # the chunk's own turn is not changed
    spent = sum(estimate_tokens(t.text) + 12 for t in overlap(_turns([[500]] * 9), 9, 1000))
    assert 0 < spent <= overlap_budget(1000)

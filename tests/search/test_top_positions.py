"""Picking the best vector scores without sorting them all gives exactly the full sort's order."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from obsmem.search.vectors import top_positions


@given(
    st.lists(st.integers(-3, 3), min_size=0, max_size=60),  # few values: many ties
    st.integers(0, 70),
    st.booleans(),
)
def test_same_as_a_full_sort(values: list[int], limit: int, subset: bool) -> None:
    scores = np.asarray(values, dtype=np.float32) / 4
    positions = np.arange(len(values), dtype=np.int64)
    if subset:
        positions = positions[::2]
    expected = positions[np.lexsort((positions, -scores[positions]))[:limit]]
    assert top_positions(positions, scores, limit).tolist() == expected.tolist()


def test_ties_at_the_cut_go_to_the_lower_position() -> None:
    scores = np.asarray([0.5, 0.9, 0.5, 0.5, 0.1], dtype=np.float32)
    assert top_positions(np.arange(5, dtype=np.int64), scores, 2).tolist() == [1, 0]

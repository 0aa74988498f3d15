"""The query's dates in the vector ranking: entries of that date raised, as BM25 raises them.

``date_boosted`` is checked as a pure function, the date test on a real index (days, months,
the date a message referred to), and ``hybrid_rows`` end to end with hand-made vectors: an entry
of the named date that the plain vector ranking leaves out of its pool is found first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date as Date
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from obsmem.index.db import open_index
from obsmem.index.query import fts_query
from obsmem.index.sync import refresh
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import hybrid
from obsmem.search.bm25 import date_condition
from obsmem.search.dates import query_dates
from obsmem.search.hybrid import date_boosted, hybrid_rows
from obsmem.search.vectors import VectorStore
from obsmem.settings import load_settings

# -- date_boosted ------------------------------------------------------------------------------


def test_a_dated_entry_is_raised_by_its_share_and_the_list_cut() -> None:
    ranked = [(1, 1.0), (2, 0.9), (3, 0.8), (4, 0.7)]
    # 0.7 x 1.5 = 1.05 passes the first; 0.8 x 1.5 = 1.2 passes it too.
    raised = date_boosted(ranked, {3, 4}, 0.5, 3)
    assert [rowid for rowid, _ in raised] == [3, 4, 1]
    assert [score for _, score in raised] == pytest.approx([1.2, 1.05, 1.0])
    # Raised but not past the one above it.
    assert [rowid for rowid, _ in date_boosted(ranked, {4}, 0.1, 4)] == [1, 2, 3, 4]


def test_no_weight_or_no_dated_entry_keeps_the_order() -> None:
    ranked = [(5, 0.3), (2, 0.2), (9, 0.1)]
    assert date_boosted(ranked, {9}, 0.0, 2) == ranked[:2]
    assert date_boosted(ranked, set(), 1.0, 3) == ranked


def test_a_negative_score_is_raised_and_ties_go_to_the_lower_rowid() -> None:
    ranked = [(7, 0.2), (3, 0.1), (8, -0.2)]
    # -0.2 + 0.5 x 0.2 = -0.1: raised, still last; 0.1 + 1.0 x 0.1 = 0.2 ties with 7.
    assert date_boosted(ranked, {8}, 0.5, 3)[-1] == (8, pytest.approx(-0.1))
    assert [rowid for rowid, _ in date_boosted(ranked, {3}, 1.0, 3)] == [3, 7, 8]


# -- the date test on an index -----------------------------------------------------------------


def test_date_condition_matches_days_months_and_referred_dates(store: MemoryStore) -> None:
    store.add_observations(
        [
            new_observation("Shipped the release", date="2026-03-03"),
            new_observation("Planned the next one", date="2026-03-20"),
            new_observation("Recalled the outage", date="2026-05-01", referenced_date="2026-03-03"),
            new_observation("Wrote the summary", date="2025-07-09"),
        ]
    )
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        rows = dict(conn.execute("SELECT text, rowid FROM entries"))

        def dated(query: str) -> set[str]:
            spans = query_dates(query, Date(2026, 12, 2))
            found = hybrid._passing(conn, list(rows.values()), *date_condition(spans))
            # A referred date is written after the text: "... (meaning 2026-03-03)".
            return {text.split(" (")[0] for text, rowid in rows.items() if rowid in found}

        day = dated("what happened on 3 March 2026")
        assert day == {"Shipped the release", "Recalled the outage"}
        month = dated("anything in March 2026")
        assert month == {"Shipped the release", "Planned the next one", "Recalled the outage"}
        assert dated("what did we do in July") == {"Wrote the summary"}
    finally:
        conn.close()


# -- end to end --------------------------------------------------------------------------------

_NOTE = re.compile(r"note (\d+)")


class AngleEmbedder:
    """Entry ``note N`` at angle (N - 100) x 0.005 rad from the query (any text without a note
    number): the plain ranking is note 100, note 101, ... in order. (Numbered from 100 so that
    no note holds a word of the test's query, "3 March 2026".)"""

    name = "angle-test-model"
    dim = 8

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text."""
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            found = _NOTE.search(text)
            angle = (int(found.group(1)) - 100) * 0.005 if found else 0.0
            rows[i, 0], rows[i, 1] = math.cos(angle), math.sin(angle)
        return rows


def _texts(rows: Sequence[tuple[tuple[object, ...], float]]) -> list[str]:
    return [str(row[11]) for row, _ in rows]


def test_an_entry_of_the_named_date_below_the_pool_is_found_first(
    tmp_path: Path,
) -> None:
    home = tmp_path / "mem"
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    # 120 notes, all but note 180 of another day; note 180 is 81st by meaning alone, past the
    # pool of 50, and within DATED_DEPTH x 50 of the top.
    store.add_observations(
        new_observation(f"note {n}", date="2026-03-03" if n == 180 else "2026-03-04")
        for n in range(100, 220)
    )
    embedder = AngleEmbedder()
    query = "what happened on 3 March 2026"
    expression = fts_query(query)
    assert expression is not None
    base = {"OM_SEARCH_VECTOR_CONTEXT_WEIGHT": "0", "OM_SEARCH_BACKEND": "hybrid"}
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        VectorStore(conn, embedder).sync()

        def top(boost: str, bm25_boost: str = "1") -> list[str]:
            settings = load_settings(
                {**base, "OM_SEARCH_VECTOR_DATE_BOOST": boost, "OM_SEARCH_DATE_BOOST": bm25_boost}
            )
            rows = hybrid_rows(
                conn, query, expression, 10, embedder, settings, today=Date(2026, 12, 2)
            )
            return _texts(rows)

        assert "note 180" not in top("0")
        # cos(0.4) x 1.25 = 1.15: above every other note's cosine (at most 1).
        assert top("0.25")[0] == "note 180"
        # BM25's own date boost off, the vector ranking still reads the query's date.
        assert top("0.25", bm25_boost="0")[0] == "note 180"
        # A query without a date is not reordered.
        settings = load_settings({**base, "OM_SEARCH_VECTOR_DATE_BOOST": "0.25"})
        plain = hybrid_rows(conn, "what happened", "what OR happened", 10, embedder, settings)
        assert _texts(plain)[:3] == ["note 100", "note 101", "note 102"]
    finally:
        conn.close()

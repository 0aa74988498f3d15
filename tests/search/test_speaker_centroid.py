"""The speaker centroid: a third list of the named speaker's entries nearest their best hits.

``speaker_label`` and the matrix rows by speaker are checked on their own, the ranking restricted
to a speaker in both the exact and the two-stage path, and ``hybrid_rows`` end to end with
hand-made vectors: a conversation, where a line of the named speaker that neither the question's
words nor its vector reach is found through that speaker's best hits, and a coding session,
where a query naming the user raises the user's lines like the user's found ones, keeps BM25's
clear winner first, and a query naming no role is not changed.
"""

from __future__ import annotations

import hashlib
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
from obsmem.search import vectors
from obsmem.search.hybrid import hybrid_rows
from obsmem.search.speakers import (
    centroid_names,
    matrix_rows,
    speaker_centroid,
    speaker_label,
    speaker_rows,
)
from obsmem.search.vectors import VectorStore
from obsmem.settings import load_settings

DAY = Date(2026, 12, 2)

# -- labels and rows ---------------------------------------------------------------------------


def test_a_label_is_the_short_head_before_the_first_colon() -> None:
    assert speaker_label("Caroline: I went to the support group") == "caroline"
    assert speaker_label("user: why does the build fail?") == "user"
    assert speaker_label("ASSISTANT: the cache was stale") == "assistant"
    # No colon, an empty head, or prose before a colon much later: no label.
    assert speaker_label("the deploy failed") == ""
    assert speaker_label(": odd line") == ""
    assert speaker_label("x" * 40 + ": too long to be a name") == ""


def test_the_names_of_a_query_are_the_speaker_boosts_casefolded() -> None:
    assert centroid_names("What did Caroline tell Melanie?") == ["caroline", "melanie"]
    assert centroid_names("what did the USER ask about the build") == ["user"]
    assert centroid_names("what failed in the build") == []


def test_matrix_rows_keeps_the_known_rowids_in_their_order() -> None:
    found, rows = matrix_rows([2, 5, 9, 11], [11, 3, 2, 12, 9])
    assert found == [11, 2, 9]
    assert rows.tolist() == [3, 0, 2]
    assert matrix_rows([], [1])[0] == [] and matrix_rows([1], [])[0] == []


def test_speaker_rows_groups_an_index_by_label(store: MemoryStore) -> None:
    store.add_observations(
        [
            new_observation("Caroline: first", date="2026-03-03"),
            new_observation("Melanie: second", date="2026-03-03"),
            new_observation("no speaker here", date="2026-03-03"),
            new_observation("caroline: third", date="2026-03-04"),
        ]
    )
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        ids = dict(conn.execute("SELECT text, rowid FROM entries"))
        # A matrix holding all but Melanie's line: her label has no rows.
        known = sorted(r for t, r in ids.items() if not t.startswith("Melanie"))
        groups = speaker_rows(conn, known)
        assert set(groups) == {"caroline", "melanie"}
        caroline = [known.index(ids[t]) for t in ("Caroline: first", "caroline: third")]
        assert groups["caroline"].tolist() == sorted(caroline)
        assert groups["melanie"].tolist() == []
    finally:
        conn.close()


# -- the ranking restricted to speakers ---------------------------------------------------------


class HashEmbedder:
    """A random unit vector per text, seeded by its hash (the same text, the same vector)."""

    name = "hash-test-model"
    dim = 8

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text."""
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim)
            rows.append(vec / np.linalg.norm(vec))
        return np.asarray(rows, dtype=np.float32)


@pytest.mark.parametrize("two_stage", [False, True])
def test_a_ranking_said_by_a_speaker_holds_only_and_all_the_best_of_that_speaker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_stage: bool
) -> None:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    speakers = ("Ann", "Bob", "Cy")
    store.add_observations(
        new_observation(f"{speakers[n % 3]}: line {n}", date=f"2026-01-{1 + n % 20:02d}")
        for n in range(300)
    )
    if two_stage:
        # Short vectors of every dimension: the first stage loses nothing, so the two stages
        # must give the exact answer.
        monkeypatch.setattr(vectors, "TWO_STAGE_FROM", 100)
        monkeypatch.setattr(vectors, "REDUCED_DIMS", 8)
        monkeypatch.setattr(vectors, "CANDIDATES", 40)
    embedder = HashEmbedder()
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        ranked = VectorStore(conn, embedder, context_weight=1.0)
        ranked.sync()
        query = embedder.embed(["a question"])[0]
        full = ranked.rank_vector(query, 300)
        said = dict(conn.execute("SELECT rowid, text FROM entries"))
        want = [r for r, _ in full if str(said[r]).startswith(("Ann:", "Cy:"))][:5]
        got = ranked.rank_vector(query, 5, said_by=["ann", "cy"])  # 100 candidates of 300
        assert [r for r, _ in got] == want
        snap = vectors._SNAPSHOTS[embedder.name]
        assert (snap.reduced is not None) == two_stage
        assert ranked.rank_vector(query, 5, said_by=["nobody"]) == []
        # With ``among`` too (search filters): those of the speakers' entries it holds.
        among = {r for r, _ in full[::2]}
        want = [r for r, _ in full if r in among and str(said[r]).startswith("Ann:")][:5]
        got = ranked.rank_vector(query, 5, among=among, said_by=["ann"])
        assert [r for r, _ in got] == want
    finally:
        conn.close()


def test_the_centroid_is_the_mean_of_the_first_hits_with_a_vector(store: MemoryStore) -> None:
    store.add_observations(new_observation(f"Ann: line {n}", date="2026-01-05") for n in range(20))
    embedder = HashEmbedder()
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        ranked = VectorStore(conn, embedder)
        ranked.sync()
        rowids = [int(r) for (r,) in conn.execute("SELECT rowid FROM entries ORDER BY rowid")]
        said = [*rowids[12:], 99_999]  # the last has no vector, and is not one of the five
        _, matrix = ranked.vectors_of(said[:5])
        mean = matrix.mean(axis=0)
        want = ranked.rank_vector(mean / np.linalg.norm(mean), 10)
        assert speaker_centroid(ranked, {"ann"}, [99_999, *said], 10) == [r for r, _ in want]
        assert speaker_centroid(ranked, set(), said, 10) == []
        assert speaker_centroid(ranked, {"ann"}, [99_999], 10) == []
    finally:
        conn.close()


# -- hand-made vectors -------------------------------------------------------------------------

_DIM = 8


def _unit(*parts: tuple[int, float]) -> npt.NDArray[np.float32]:
    vec = np.zeros(_DIM, dtype=np.float32)
    for axis, value in parts:
        vec[axis] = value
    return vec / np.float32(np.linalg.norm(vec))


class RuleEmbedder:
    """A vector for each text by the first rule whose words it holds; the query's otherwise."""

    name = "centroid-test-model"
    dim = _DIM

    def __init__(self, rules: Sequence[tuple[str, npt.NDArray[np.float32]]]) -> None:
        self.rules = list(rules)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text."""
        out = np.zeros((len(texts), _DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = next((v for word, v in self.rules if word in text), _unit((0, 1.0)))
        return out


def _indexed(store: MemoryStore, texts: Sequence[str], embedder: RuleEmbedder) -> None:
    # One entry a day: no neighbours, so each entry's score is its own.
    store.add_observations(
        new_observation(text, date=f"2026-0{1 + n // 28}-{1 + n % 28:02d}")
        for n, text in enumerate(texts)
    )
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        VectorStore(conn, embedder).sync()
    finally:
        conn.close()


def _search(
    store: MemoryStore, query: str, embedder: RuleEmbedder, weight: str, limit: int = 20
) -> list[str]:
    expression = fts_query(query)
    assert expression is not None
    settings = load_settings(
        {"OM_SEARCH_BACKEND": "hybrid", "OM_SEARCH_SPEAKER_CENTROID_WEIGHT": weight}
    )
    conn = open_index(store.index_path)
    try:
        rows = hybrid_rows(conn, query, expression, limit, embedder, settings, today=DAY)
    finally:
        conn.close()
    return [str(row[11]) for row, _ in rows]


_FILLERS = ["sure", "okay", "right", "nice", "cool", "yes", "great"]


def _conversation() -> tuple[list[str], RuleEmbedder]:
    """Melanie's lines about activities (near the question), seven short replies of hers, her
    camping line (orthogonal to the question, near her activity lines) and forty of Caroline's
    lines nearer the question than any of Melanie's but those about activities."""
    heads = [f"Melanie: activities like {w} fill my week" for w in ("pottery", "running", "yoga")]
    target = "Melanie: we went camping at the lake with the kids last summer"
    fillers = [f"Melanie: {w}" for w in _FILLERS]
    others = [f"Caroline: topic{n} today" for n in range(40)]
    rules: list[tuple[str, npt.NDArray[np.float32]]] = [
        ("fill my week", _unit((0, 0.6), (1, 0.8))),
        ("camping", _unit((1, 1.0), (2, 0.3))),
    ]
    rules += [(w, _unit((0, 0.3), (3 + n % 5, 0.95))) for n, w in enumerate(_FILLERS)]
    rules += [(f"topic{n} ", _unit((0, 0.9), (3 + n % 5, 0.44))) for n in range(40)]
    return [*heads, target, *fillers, *others], RuleEmbedder(rules)


def test_a_line_of_the_named_speaker_is_found_through_her_best_hits(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    texts, embedder = _conversation()
    _indexed(store, texts, embedder)
    query = "What activities has Melanie done?"
    target = texts[3]
    assert "camping" in target
    # Off, it is last of Melanie's lines (BM25 on her name alone; orthogonal to the question).
    assert _search(store, query, embedder, "0").index(target) == 10
    # Her three activity lines lead the centroid's list, and the camping line comes next: at a
    # weight that shows it among so few entries, it passes her short replies.
    assert _search(store, query, embedder, "1").index(target) <= 5
    # The first three places are the lines that hold the question's words, either way.
    for weight in ("0", "1"):
        assert all("activities" in t for t in _search(store, query, embedder, weight)[:3])


def test_a_query_naming_no_speaker_is_not_changed(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    texts, embedder = _conversation()
    _indexed(store, texts, embedder)
    query = "which activities fill the week"
    assert _search(store, query, embedder, "1") == _search(store, query, embedder, "0")


def test_with_filters_the_centroid_ranks_among_the_entries_they_keep(tmp_path: Path) -> None:
    # Two hundred of Melanie's lines of March, nearer her activity lines than the camping line
    # is: were the centroid's list ranked over all her lines and filtered after, they would
    # fill it, and a January filter would leave it empty.
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    texts, embedder = _conversation()
    embedder.rules.insert(0, ("spring note", _unit((0, 0.55), (1, 0.83))))
    store.add_observations(
        new_observation(f"Melanie: spring note {n}", date=f"2026-03-{1 + n % 28:02d}")
        for n in range(200)
    )
    _indexed(store, texts, embedder)
    query = "What activities has Melanie done?"
    expression = fts_query(query)
    assert expression is not None
    where = ("e.date < ?", ["2026-02-01"])
    places = []
    for weight in ("0", "1"):
        settings = load_settings(
            {"OM_SEARCH_BACKEND": "hybrid", "OM_SEARCH_SPEAKER_CENTROID_WEIGHT": weight}
        )
        conn = open_index(store.index_path)
        try:
            rows = hybrid_rows(
                conn, query, expression, 20, embedder, settings, today=DAY, where=where
            )
        finally:
            conn.close()
        found = [str(row[11]) for row, _ in rows]
        assert all(str(row[5]) < "2026-02-01" for row, _ in rows)
        places.append(found.index(texts[3]))
    assert places[0] == 10 and places[1] <= 5


def _session() -> tuple[list[str], RuleEmbedder]:
    """A coding session: the user's questions about the build, the assistant's answers, and
    thirty lines of both about other things."""
    asked = [
        "user: why does the build fail on the release branch",
        "user: can the build skip the docs step",
        "user: the build log shows a timeout",
    ]
    answers = [
        "assistant: the build fails because the lock file is stale",
        "assistant: the docs step can be skipped with a flag in the build",
        "assistant: the build timeout comes from the network fetch",
    ]
    others = [f"{('user', 'assistant')[n % 2]}: misc{n} note" for n in range(30)]
    rules: list[tuple[str, npt.NDArray[np.float32]]] = [
        ("user: why", _unit((0, 0.7), (1, 0.7))),
        ("user: can", _unit((0, 0.7), (1, 0.7))),
        ("user: the build", _unit((0, 0.7), (1, 0.7))),
        ("assistant: the", _unit((0, 0.8), (2, 0.6))),
    ]
    rules += [(f"misc{n} ", _unit((0, 0.2), (3 + n % 5, 0.98))) for n in range(30)]
    return [*asked, *answers, *others], RuleEmbedder(rules)


def test_a_query_naming_the_user_favours_the_users_lines_and_keeps_the_answers(
    tmp_path: Path,
) -> None:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    texts, embedder = _session()
    _indexed(store, texts, embedder)
    asked, answers = set(texts[:3]), texts[3:6]
    query = "what did the user ask about the build"
    off = _search(store, query, embedder, "0", limit=10)
    default = _search(store, query, embedder, "0.15", limit=10)
    strong = _search(store, query, embedder, "1", limit=10)
    assert set(off[:3]) == asked and set(default[:3]) == asked
    # The role counts as a speaker: the centroid ranks the user's lines only, so at a high
    # weight they fill the first ten and the assistant's answers fall out...
    assert all(t.startswith("user:") for t in strong) and set(strong[:3]) == asked
    # ... while at the default weight every answer found without it is still found.
    assert all(a in off for a in answers) and all(a in default for a in answers)

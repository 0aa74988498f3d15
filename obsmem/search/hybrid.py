"""Hybrid search: BM25 and embedding rankings fused by reciprocal rank, with small boosts.

The pieces are pure functions (``rrf_fuse``, ``clear_winner``, ``boost``, ``fused_order``; the
reranker's blending in ``rerank.py``) so they can be tested without an index or a model;
``hybrid_rows`` wires them to the index (``hybrid_query`` gives its result as ``Hit``s).

How one query is answered (``hybrid_rows``):

1. The query text is embedded; entries are not (their vectors were computed when the index was
   updated: ``indexing.py``). Entries edited since have no vector yet: BM25 still finds them,
   and one line on stderr says how many and how to embed them (``om reindex``). When the query
   cannot be embedded (an endpoint down), the search goes on with BM25 alone and says so once.
2. Two candidate lists of ``POOL`` entries: BM25 (FTS5, as ``om search`` with BM25 only) and
   cosine similarity over every entry's vector, plus ``OM_SEARCH_VECTOR_CONTEXT_WEIGHT`` times
   the mean cosine of its neighbours (the entries just before and after it in its day or
   section; ``vectors.with_context``), so an answer is found next to its question. When the
   query names a date (``dates.query_dates``), the vector ranking takes it in as BM25 does:
   entries dated within it have their score raised by ``OM_SEARCH_VECTOR_DATE_BOOST`` times its
   size, re-sorted from a ranking ``DATED_DEPTH`` times the pool deep (``date_boosted``), so an
   entry of that day that the question's words miss still enters the pool. With filters
   (``where``), both lists hold only entries that meet them: BM25 tests them inside its query;
   the vector ranking is tested in rounds (``FILTER_ROUNDS``: its best 200, the next 800, the
   next 3,200 for a pool of 50, each round one lookup by rowid) until ``POOL`` pass, and only a
   narrower filter has the entries it keeps fetched (a scan of the entries) and ranked alone.
3. Reciprocal rank fusion: an entry at rank r (1-based) of a list with weight w earns
   ``w / (k + r)``, summed over the lists (k = 20, ``OM_SEARCH_RRF_K``; weights
   ``OM_SEARCH_BM25_WEIGHT`` and ``OM_SEARCH_VECTOR_WEIGHT``).
4. Boosts multiply the fused score by ``1 + importance_boost * importance + recency_boost *
   0.5 ** (age_days / half_life)``: small by default, so they reorder near ties only.
5. Speaker centroid: when the query names a speaker (the speaker boost's rule), the mean vector
   of that speaker's first fused hits ranks that speaker's entries, and the ranking is fused as
   a third list at ``OM_SEARCH_SPEAKER_CENTROID_WEIGHT`` (``speakers.py``); the winner of step 6
   is read from BM25 as before. Vocabulary bridge: when the query has a category word ("What
   pets ..."), the entries (of the named speaker) holding the vocabulary items nearest that word
   join as one more list at ``OM_SEARCH_VOCAB_BRIDGE_WEIGHT`` (``bridge.py``; off at 0).
6. Unambiguous BM25 winner: when BM25's best score is at least ``OM_SEARCH_WINNER_RATIO`` times
   its second best (or it is BM25's only match), an exact keyword hit is the answer, and the
   fusion does not get to demote it: it stays first and the fused order fills the other places.
   A ratio of 0 turns this off.
7. Vault copies are dropped as in BM25 search (``distinct_rows``).
8. With ``OM_RERANK_MODEL`` set, a cross-encoder reorders the first ``OM_RERANK_TOP`` results,
   blended with their fused position (``rerank.py``); the winner of step 6 is not reranked.

A hit's ``score`` is its boosted fused score (BM25's score when there are no embeddings); its
``rank`` is its place after reranking, so with a reranker scores need not decrease with rank.
Without an embedder (``embedder=None``) the candidates are BM25's alone, in BM25's order, which
is how BM25-only search is reranked.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import date as Date
from typing import TYPE_CHECKING

from obsmem.search.answers import asked_form, raised
from obsmem.search.bm25 import (
    ROWS_SQL,
    TEXT_AT,
    Hit,
    Ranking,
    Scored,
    Where,
    bm25_rows,
    date_condition,
    distinct_rows,
    hit_from_row,
)
from obsmem.search.bridge import bridge_list, words_to_embed
from obsmem.search.dates import DateSpan, query_dates
from obsmem.search.speakers import (
    centroid_names,
    centroid_vector,
    speaker_centroid,
    speaker_label,
)
from obsmem.search.vectors import VectorStore, embed_text

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

    from obsmem.search.embeddings import Embedder
    from obsmem.search.rerank import Reranker
    from obsmem.settings import Settings

__all__ = [
    "DATED_DEPTH",
    "FILTER_ROUNDS",
    "POOL",
    "boost",
    "clear_winner",
    "date_boosted",
    "fused_order",
    "hybrid_query",
    "hybrid_rows",
    "rrf_fuse",
]

#: Candidates taken from each ranking before fusion (at least; more for a large ``limit``).
POOL = 50
#: With filters, the sizes (times the pool) of the rounds in which the vector ranking's best are
#: tested against them: a filter that keeps a quarter of the memory is usually done in the
#: first, and one that keeps under about one entry in 80 ends with a scan instead.
FILTER_ROUNDS: tuple[int, ...] = (4, 16, 64)
#: With a date in the query, the vector ranking is read this many times the pool deep before the
#: date boost re-sorts it, so that an entry of that date from further down can enter the pool.
DATED_DEPTH = 4
#: Rowids per ``IN (...)`` test, below SQLite's smallest limit on parameters (999).
_CHUNK = 500


def rrf_fuse(
    rankings: Sequence[Sequence[int]], weights: Sequence[float], k: float = 60.0
) -> dict[int, float]:
    """Reciprocal rank fusion: each id's sum of ``weight / (k + rank)`` over the rankings.

    ``rankings`` are lists of ids, best first (rank 1); an id missing from a list earns nothing
    from it. A repeated id counts at its best rank only.
    """
    if len(rankings) != len(weights):
        raise ValueError("one weight per ranking")
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def clear_winner(scores: Sequence[float], ratio: float) -> bool:
    """True when the first of ``scores`` (BM25, higher is better, best first) clearly wins.

    That is: there is a first score above 0, and either no second one or the first is at least
    ``ratio`` times the second. ``ratio`` <= 1 never declares a winner (turned off).
    """
    if ratio <= 1.0 or not scores or scores[0] <= 0.0:
        return False
    if len(scores) == 1 or scores[1] <= 0.0:
        return True
    return scores[0] >= ratio * scores[1]


def boost(
    score: float,
    importance: float | None,
    age_days: float | None,
    *,
    importance_weight: float,
    recency_weight: float,
    half_life_days: float,
) -> float:
    """``score`` raised by an entry's importance (0-1) and recency (halving every half-life).

    Unknown importance or date adds nothing; a date in the future counts as today.
    """
    factor = 1.0
    if importance is not None:
        factor += importance_weight * min(max(importance, 0.0), 1.0)
    if age_days is not None and half_life_days > 0:
        factor += recency_weight * 0.5 ** (max(age_days, 0.0) / half_life_days)
    return score * factor


def date_boosted(
    ranked: Sequence[tuple[int, float]], dated: Collection[int], weight: float, limit: int
) -> list[tuple[int, float]]:
    """The first ``limit`` of a vector ranking once the ``dated`` entries' scores are raised by
    ``weight`` times their size, re-sorted (ties: lower rowid first).

    ``ranked`` is (rowid, score), best first. The size, not the score, is multiplied so that a
    score below 0 is raised too.
    """
    if weight <= 0.0 or not dated:
        return list(ranked[:limit])
    raised = [
        (rowid, score + weight * abs(score) if rowid in dated else score) for rowid, score in ranked
    ]
    raised.sort(key=lambda item: (-item[1], item[0]))
    return raised[:limit]


def fused_order(scores: Mapping[int, float], pinned: int | None = None) -> list[int]:
    """Ids by descending score (ties: lower id first), with ``pinned`` moved to the front."""
    order = sorted(scores, key=lambda item: (-scores[item], item))
    if pinned is not None:
        order = [pinned, *(item for item in order if item != pinned)]
    return order


def _age_days(value: object, today: Date) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return float((today - Date.fromisoformat(value[:10])).days)
    except ValueError:
        return None


def _importance(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def _embedding_thread() -> ThreadPoolExecutor:
    """The threads query embeddings run on, beside BM25 (made on first use; two, so that a
    resident process answering two searches at once does not queue one model call behind the
    other)."""
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            from concurrent.futures import ThreadPoolExecutor

            _EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix="om-query-embed")
        return _EXECUTOR


def _semantic(
    conn: sqlite3.Connection,
    query: str,
    embedder: Embedder,
    pool: int,
    settings: Settings,
    where: Where | None = None,
    dates: Sequence[DateSpan] = (),
    also: Sequence[str] = (),
    embedded: dict[str, npt.NDArray[np.float32]] | None = None,
    embedding: Callable[[], npt.NDArray[np.float32]] | None = None,
) -> list[tuple[int, float]] | None:
    """The vector ranking for ``query``, or None when the query cannot be embedded.

    ``also``: more texts embedded in the query's own model call (the bridge's category words,
    ``bridge.words_to_embed``: one call costs less than two), their vectors put in ``embedded``.
    With ``dates`` (those the query names), entries dated within them are raised by
    ``OM_SEARCH_VECTOR_DATE_BOOST`` (``date_boosted``), from a ranking ``DATED_DEPTH`` times
    deeper (without filters; with them, among the ``pool`` that pass). ``embedding``, when
    given, returns the matrix of ``[query, *also]`` already being computed (or raises as the
    model did).
    """
    from obsmem.search.embeddings import notice

    vectors = VectorStore(conn, embedder, settings.search_vector_context_weight)
    try:
        matrix = embedding() if embedding is not None else embedder.embed([query, *also])
    except Exception as exc:  # an endpoint or a model failing must not fail the search
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        notice(f"hybrid search unavailable (cannot embed the query: {detail}); using BM25 only")
        return None
    query_vector = matrix[0]
    if embedded is not None:
        embedded.update(zip(also, matrix[1:], strict=True))
    date_weight = settings.search_vector_date_boost if dates else 0.0
    if where is None:
        depth = pool * DATED_DEPTH if date_weight > 0 else pool
        ranked = vectors.rank_vector(query_vector, depth, exact_for=pool)
    else:
        # Filters already read the ranking in rounds; the boost re-sorts what passes them.
        ranked = _filtered_ranking(conn, vectors, query_vector, pool, where)
    if date_weight > 0:
        dated = _passing(conn, [rowid for rowid, _ in ranked], *date_condition(dates))
        ranked = date_boosted(ranked, dated, date_weight, pool)
    missing = vectors.unembedded()
    if missing:
        notice(
            f"{missing} memory entr{'y has' if missing == 1 else 'ies have'} no embedding "
            f"under {embedder.name} yet and {'is' if missing == 1 else 'are'} found by keyword "
            "only until embedded (by the search daemon in the background, or now by `om "
            "reindex --embed`)"
        )
    return ranked


def _passing(
    conn: sqlite3.Connection, rowids: Sequence[int], condition: str, params: Sequence[object]
) -> set[int]:
    """Those of ``rowids`` whose entries meet ``condition`` (over ``entries AS e``)."""
    found: set[int] = set()
    for chunk, marks in _chunks(rowids):
        sql = f"SELECT e.rowid FROM entries AS e WHERE e.rowid IN ({marks}) AND ({condition})"
        found.update(int(rowid) for (rowid,) in conn.execute(sql, [*chunk, *params]))
    return found


def _chunks(rowids: Sequence[int]) -> Iterator[tuple[list[int], str]]:
    """``rowids`` in runs of ``_CHUNK``, each with its ``?, ?, ...`` for an ``IN (...)``."""
    for first in range(0, len(rowids), _CHUNK):
        chunk = list(rowids[first : first + _CHUNK])
        yield chunk, ", ".join("?" for _ in chunk)


def _filtered_ranking(
    conn: sqlite3.Connection,
    vectors: VectorStore,
    query_vector: npt.NDArray[np.float32],
    pool: int,
    where: Where,
    said_by: Collection[str] = (),
) -> list[tuple[int, float]]:
    """The best ``pool`` entries by similarity among those meeting ``where`` (module doc, 2),
    of the speakers ``said_by`` only when given (the speaker centroid's list)."""
    condition, params = where
    sizes = [pool * times for times in FILTER_ROUNDS]
    ranked = vectors.rank_vector(query_vector, sum(sizes), said_by=said_by)
    kept: list[tuple[int, float]] = []
    start = 0
    for size in sizes:
        if len(kept) >= pool or start >= len(ranked):
            break
        tested = ranked[start : start + size]
        start += size
        passing = _passing(conn, [rowid for rowid, _ in tested], condition, params)
        kept += [(rowid, score) for rowid, score in tested if rowid in passing]
    # Enough passed, or every entry with a vector was tested: ``kept`` is the answer.
    if len(kept) >= pool or len(ranked) < sum(sizes):
        return kept[:pool]
    among = _rowids_meeting(conn, where)
    return vectors.rank_vector(query_vector, pool, among=among, said_by=said_by)


def hybrid_query(
    conn: sqlite3.Connection,
    query: str,
    expression: str,
    limit: int,
    embedder: Embedder | None,
    settings: Settings,
) -> list[Hit]:
    """The best ``limit`` hits for ``query`` by fused BM25 and vector rank: ``hybrid_rows`` as
    the ``Hit``s ``search`` returns."""
    rows = hybrid_rows(conn, query, expression, limit, embedder, settings)
    return [hit_from_row(rank, row, score) for rank, (row, score) in enumerate(rows, start=1)]


def hybrid_rows(
    conn: sqlite3.Connection,
    query: str,
    expression: str,
    limit: int,
    embedder: Embedder | None,
    settings: Settings,
    *,
    today: Date | None = None,
    reranker: Reranker | None = None,
    where: Where | None = None,
) -> list[Scored]:
    """The best ``limit`` result rows (``bm25.ENTRY_COLUMNS``, rowid last) for ``query`` by
    fused BM25 and vector rank, with their scores (see the module doc).

    ``expression`` is ``fts_query(query)``. Embeds only the query. ``reranker`` defaults to the
    one ``OM_RERANK_MODEL`` names (``rerank.load_reranker``); without one, nothing is reranked.
    ``where`` keeps only the entries that meet it, in both rankings.
    """
    from obsmem.search.rerank import load_reranker, rerank_order

    reranker = reranker or load_reranker(settings)
    top = settings.rerank_top if reranker is not None else 0
    # Extra candidates so that dropping vault copies still leaves enough distinct entries.
    pool = max(POOL, limit * 3, top * 2)
    ranking = Ranking.for_query(query, settings, today)
    embedding: Future[npt.NDArray[np.float32]] | None = None
    also: list[str] = []
    if embedder is not None:
        from obsmem.search.embeddings import thread_safe

        also = words_to_embed(conn, embedder, query, settings.search_vocab_bridge_weight)
        if thread_safe(embedder):
            # The model runs while SQLite does BM25 (both leave the GIL): on two cores or more
            # the query costs the longer of the two rather than their sum.
            embedding = _embedding_thread().submit(embedder.embed, [query, *also])
    keyword = bm25_rows(conn, expression, pool, ranking, where)
    semantic = None
    words: dict[str, npt.NDArray[np.float32]] = {}  # the bridge's, embedded with the query
    if embedder is not None:
        # The dates BM25 was scored by (read once), or the query's own when BM25's boost is off.
        dates = ranking.dates
        if settings.search_date_boost <= 0 and settings.search_vector_date_boost > 0:
            dates = tuple(query_dates(query, today))
        semantic = _semantic(
            conn,
            query,
            embedder,
            pool,
            settings,
            where,
            dates,
            also,
            words,
            embedding.result if embedding is not None else None,
        )
    rows: dict[int, tuple[object, ...]] = {int(str(row[-1])): row for row in keyword}
    if semantic is None:
        scores = {rowid: 0.0 - float(str(row[0])) for rowid, row in rows.items()}
        order = [int(str(row[-1])) for row in keyword]
        pinned = None
    else:
        assert embedder is not None
        _fetch_rows(conn, rows, [rowid for rowid, _ in semantic])
        lists = [[int(str(row[-1])) for row in keyword], [rowid for rowid, _ in semantic]]
        weights = [settings.search_bm25_weight, settings.search_vector_weight]
        day = today or Date.today()
        scores = _boosted(rrf_fuse(lists, weights, settings.search_rrf_k), rows, settings, day)
        bm25_scores = [0.0 - float(str(row[0])) for row in keyword]
        pinned = (
            int(str(keyword[0][-1]))
            if clear_winner(bm25_scores, settings.search_winner_ratio)
            else None
        )
        order = fused_order(scores, pinned)
        # The bridge's list before the centroid's, as the replays sum them (bench/vocab_bridge.py).
        weight = settings.search_vocab_bridge_weight
        bridged = bridge_list(
            conn, embedder, query, pool, weight, words, among=_filtered_rowids(conn, where)
        )
        more = [
            (bridged, weight),
            (
                _centroid_list(conn, embedder, query, order, rows, pool, settings, where),
                settings.search_speaker_centroid_weight,
            ),
        ]
        if any(extra for extra, _ in more):
            for extra, extra_weight in more:
                if extra:
                    _fetch_rows(conn, rows, extra)
                    lists.append(extra)
                    weights.append(extra_weight)
            fused = rrf_fuse(lists, weights, settings.search_rrf_k)
            scores = _boosted(fused, rows, settings, day)
            order = fused_order(scores, pinned)
    form = asked_form(query) if settings.search_answer_form_boost > 0 else None
    if form is not None:
        stated = {rowid: str(row[TEXT_AT]) for rowid, row in rows.items()}
        boost = settings.search_answer_form_boost
        scores = raised(scores, stated, form, boost, within=3 * max(limit, top))
        order = fused_order(scores, pinned)
    kept = distinct_rows([rows[rowid] for rowid in order], max(limit, top))
    if reranker is not None:
        keep_first = pinned is not None and bool(kept) and int(str(kept[0][-1])) == pinned
        texts = [embed_text(_str(row[10]), str(row[TEXT_AT])) for row in kept]
        kept = [
            kept[i] for i in rerank_order(query, texts, reranker, top=top, keep_first=keep_first)
        ]
    return [(tuple(row), scores[int(str(row[-1]))]) for row in kept[:limit]]


def _fetch_rows(
    conn: sqlite3.Connection, rows: dict[int, tuple[object, ...]], rowids: Sequence[int]
) -> None:
    """Add to ``rows`` the result rows of those of ``rowids`` it lacks (entries still there),
    in one query per ``_CHUNK``: one query per rowid cost twice the CPU (14 µs a rowid, 50 or
    more a search, at 100,000 entries)."""
    lacking = list(dict.fromkeys(rowid for rowid in rowids if rowid not in rows))
    for chunk, marks in _chunks(lacking):
        for found in conn.execute(ROWS_SQL.format(marks=marks), chunk):
            rows[int(found[-1])] = tuple(found)


def _boosted(
    fused: Mapping[int, float], rows: Mapping[int, Sequence[object]], settings: Settings, day: Date
) -> dict[int, float]:
    """The fused scores of the entries in ``rows``, each raised by ``boost``."""
    return {
        rowid: boost(
            score,
            _importance(rows[rowid][9]),
            _age_days(rows[rowid][5], day),
            importance_weight=settings.search_importance_boost,
            recency_weight=settings.search_recency_boost,
            half_life_days=settings.search_recency_half_life_days,
        )
        for rowid, score in fused.items()
        if rowid in rows
    }


def _centroid_list(
    conn: sqlite3.Connection,
    embedder: Embedder,
    query: str,
    order: Sequence[int],
    rows: Mapping[int, Sequence[object]],
    pool: int,
    settings: Settings,
    where: Where | None,
) -> list[int]:
    """The speaker centroid's list (``speakers.speaker_centroid``) for ``query``, fused hits
    ``order``: empty when it is off or the query names no speaker; with filters, only the
    entries that meet them."""
    weight = settings.search_speaker_centroid_weight
    names = set(centroid_names(query)) if weight > 0 else set()
    if not names:
        return []
    said = [rowid for rowid in order if speaker_label(str(rows[rowid][11])) in names]
    vectors = VectorStore(conn, embedder, settings.search_vector_context_weight)
    if where is None:
        return speaker_centroid(vectors, names, said, pool)
    # With filters, ranked in rounds as the first vector list is: entries the filters exclude
    # must not fill the list (a speaker's lines of other days would leave it empty).
    centroid = centroid_vector(vectors, said)
    if centroid is None:
        return []
    ranked = _filtered_ranking(conn, vectors, centroid, pool, where, sorted(names))
    return [rowid for rowid, _ in ranked]


def _rowids_meeting(conn: sqlite3.Connection, where: Where) -> set[int]:
    """The rowids of every entry meeting ``where``."""
    condition, params = where
    sql = f"SELECT e.rowid FROM entries AS e WHERE {condition}"
    return {int(rowid) for (rowid,) in conn.execute(sql, list(params))}


def _filtered_rowids(
    conn: sqlite3.Connection, where: Where | None
) -> Callable[[], set[int]] | None:
    """``_rowids_meeting``, read only when asked (None without filters): the bridge ranks
    among them, so that entries the filters exclude cannot fill its list."""
    if where is None:
        return None
    return lambda: _rowids_meeting(conn, where)


def _str(value: object) -> str | None:
    return None if value is None else str(value)

"""Fusion-stage ideas on LoCoMo, replayed over the candidate lists hybrid search computes.

Usage: python bench/fusion_replay.py --data PATH --embed-cache DIR [--check] [--json]

Each conversation is indexed and embedded as ``locomo_recall.py`` does; for each question the
two candidate lists ``hybrid_rows`` fuses are taken once from the product, deeper than it uses
them: BM25's rows with the nearby lift off (``bm25_rows``, 300) and the vector ranking
(``hybrid._semantic``, 300, date boost off). The fusion is then replayed with the product's
own pieces (``lift_nearby``, ``date_boosted``, ``rrf_fuse``, ``boost``, ``clear_winner``,
``fused_order``, ``distinct_rows``) under each idea and knob value, in milliseconds rather than
a full run per value; every idea but ``vector-date`` is measured on top of the settings.
``--check`` first asserts that the replay with the settings' values gives, for every question,
the same ten entries as ``search()`` (the product's path), and that BM25's list rebuilt from
its words' scores alone (``rebuilt_keyword``, every weight 1) is BM25's own list.

Ideas (each one knob; values listed with 1.0 / 0 meaning "as the product does"):

- ``fused-nearby``: the nearby lift (``lift_nearby``'s rule: + w x the best score within
  ``NEARBY_LINES`` lines, same file, day and section) on the fused scores, with BM25's own lift
  kept (``+bm25``) or off (``only``).
- ``day-decay``: the n-th entry of one file and day in the fused order has its score x d^(n-1).
- ``day-cap``: at most m entries of one file and day before the others.
- ``day-prior``: each entry's fused score x (1 + w x its day's best three fused scores summed,
  over the best day's).
- ``mmr``: maximal marginal relevance over the fused top 30 (lambda x rank score - (1 - lambda)
  x the highest cosine to an entry already taken), on the entries' own vectors.
- ``vector-date``: ``OM_SEARCH_VECTOR_DATE_BOOST`` (``date_boosted``), the one kept.
- ``fused-date``: the fused score x (1 + b) for entries of the query's date.

Ideas on BM25's confidence and on the query's words, from each query word's BM25 score alone
(``Lists.terms``: FTS5's ``bm25()`` of an OR query is the sum of its words' scores, times the
date and speaker factors, so BM25's list can be rebuilt with each word weighted; at weight 1 it
is the product's list):

- ``adaptive-vector-score``: the vector weight x max(0, 1 + a x (1 - 2c)), where BM25's
  confidence c is its best raw score over the sum of each query word's best score alone (1: the
  best entry holds every word as well as any entry does); a > 0 trusts the vector list more when
  BM25 is unsure.
- ``adaptive-vector-words``: the same with c the share of the query's words (names of speakers
  left out, each word weighted by its idf over entries' own text) that BM25's best entry holds
  in its own text.
- ``word-idf``: each word's score x (its own-text idf + 0.1, over the mean of the query's)^a;
  a > 0 lets the rare words dominate (FTS5's idf counts the neighbours column, so a word in a
  fifth of the entries is at its floor), a < 0 flattens.
- ``candidate-idf``: the same with the idf taken within the entries any query word matches.
- ``coordination``: an entry's score x (the share of the query's words, names left out, it
  matches in any column)^b.
- ``rarest-word``: an entry that does not match the query's rarest word (own-text document
  frequency, names left out) scores x f.

Each idea is scored like ``locomo_recall.py --sweep``: turn R@5 / R@10 overall, per category and
per conversation for each value, and leave-one-conversation-out over the values (``Fold``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sqlite3
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date as Date
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_recall import (
    KS,
    Fold,
    embed_cache,
    expand,
    indexed,
    load_conversation,
    recall_at,
    render_sweep,
)

from obsmem.index.db import using_index
from obsmem.index.query import fts_query, query_tokens
from obsmem.search import hybrid, search
from obsmem.search.bm25 import (
    ROWS_SQL,
    Ranking,
    bm25_rows,
    date_condition,
    distinct_rows,
    lift_nearby,
)
from obsmem.search.dates import query_dates
from obsmem.search.embeddings import Embedder, packaged_model_folder, resolve_backend
from obsmem.search.speakers import ROLES, query_speakers
from obsmem.search.vectors import VectorStore
from obsmem.settings import Settings, load_settings

#: How deep each candidate list is read once per question (the product fuses 50 of each).
DEPTH = 300
Row = tuple[object, ...]
_FILE, _LINE, _DATE, _SECTION, _ID = 3, 4, 5, 10, 1  # result row columns (raw score first)


@dataclass
class Lists:
    """One question's candidates: BM25's raw rows, the vector ranking, the rows of every entry,
    its dates, the entries' vectors; each query word's raw BM25 score alone by rowid (every
    entry it matches), the rowids holding it in their own text, and the query's names."""

    keyword: list[Row]
    semantic: list[tuple[int, float]]
    rows: Mapping[int, Row]
    dated: set[int]
    vectors: Mapping[int, Any]
    terms: dict[str, dict[int, float]]
    own: dict[str, set[int]]
    names: set[str]


Scores = dict[int, float]


def _same(scores: Scores) -> Scores:
    return scores


class Replayed(NamedTuple):
    """What an idea hands the fusion: the two lists, a change of the fused scores before the
    winner, and the vector list's weight (None: the setting's)."""

    keyword: list[Row]
    semantic: list[tuple[int, float]]
    post: Callable[[Scores], Scores] = _same
    vector_weight: float | None = None


#: An idea at one value: the lists -> the fusion's inputs.
Idea = Callable[[Lists, float], Replayed]


def product_lists(
    lists: Lists, settings: Settings, vector_date: float | None = None
) -> tuple[list[Row], list[tuple[int, float]]]:
    """What ``hybrid_rows`` fuses: BM25's first ``POOL`` rows lifted, and the vector ranking's
    first ``POOL`` after its date boost (``vector_date``, default the setting's)."""
    keyword = lift_nearby(lists.keyword[: hybrid.POOL], settings.search_nearby_weight)
    weight = settings.search_vector_date_boost if vector_date is None else vector_date
    depth = hybrid.POOL * hybrid.DATED_DEPTH if weight > 0 and lists.dated else hybrid.POOL
    semantic = hybrid.date_boosted(lists.semantic[:depth], lists.dated, weight, hybrid.POOL)
    return keyword, semantic


def fuse(
    lists: Lists, settings: Settings, idea: Idea | None = None, value: float = 0.0
) -> list[int]:
    """The rowids of ``hybrid_rows``'s fusion over ``lists``, changed by ``idea`` at ``value``;
    best first, vault copies dropped."""
    replayed = Replayed(*product_lists(lists, settings)) if idea is None else idea(lists, value)
    keyword, semantic, post, vector_weight = replayed
    if vector_weight is None:
        vector_weight = settings.search_vector_weight
    fused = hybrid.rrf_fuse(
        [[int(str(row[-1])) for row in keyword], [rowid for rowid, _ in semantic]],
        [settings.search_bm25_weight, vector_weight],
        settings.search_rrf_k,
    )
    today = Date.today()
    scores = {
        rowid: hybrid.boost(
            score,
            hybrid._importance(lists.rows[rowid][9]),
            hybrid._age_days(lists.rows[rowid][5], today),
            importance_weight=settings.search_importance_boost,
            recency_weight=settings.search_recency_boost,
            half_life_days=settings.search_recency_half_life_days,
        )
        for rowid, score in fused.items()
    }
    scores = post(scores)
    bm25_scores = [0.0 - float(str(row[0])) for row in keyword]
    winner = hybrid.clear_winner(bm25_scores, settings.search_winner_ratio)
    pinned = int(str(keyword[0][-1])) if winner else None
    order = hybrid.fused_order(scores, pinned)
    kept = distinct_rows([lists.rows[rowid] for rowid in order], max(KS))
    return [int(str(row[-1])) for row in kept]


def _group(row: Row) -> tuple[object, ...]:
    return (row[_FILE], row[_DATE], row[_SECTION])


def _fused_nearby(keep_bm25: bool, settings: Settings) -> Idea:
    def idea(lists: Lists, weight: float) -> Replayed:
        keyword, semantic = product_lists(lists, settings)
        if not keep_bm25:
            keyword = lists.keyword[: hybrid.POOL]

        def post(scores: Scores) -> Scores:
            # lift_nearby on negated scores: it takes lower-is-better raw scores first.
            rows = [(-score, *lists.rows[rowid][1:]) for rowid, score in scores.items()]
            return {int(str(row[-1])): -float(str(row[0])) for row in lift_nearby(rows, weight)}

        return Replayed(keyword, semantic, post)

    return idea


def _reorder(settings: Settings, change: Callable[[Lists, Scores, float], Scores]) -> Idea:
    def idea(lists: Lists, value: float) -> Replayed:
        keyword, semantic = product_lists(lists, settings)
        return Replayed(keyword, semantic, lambda scores: change(lists, scores, value))

    return idea


def _ordered(scores: Scores) -> list[int]:
    return sorted(scores, key=lambda rowid: (-scores[rowid], rowid))


def day_decay(lists: Lists, scores: Scores, factor: float) -> Scores:
    """The n-th entry of a day in the fused order scores x factor^(n-1)."""
    seen: dict[tuple[object, ...], int] = defaultdict(int)
    out: Scores = {}
    for rowid in _ordered(scores):
        key = _group(lists.rows[rowid])[:2]
        out[rowid] = scores[rowid] * factor ** seen[key]
        seen[key] += 1
    return out


def day_cap(lists: Lists, scores: Scores, cap: float) -> Scores:
    """At most ``cap`` entries of a day, then the others, each part in fused order."""
    seen: dict[tuple[object, ...], int] = defaultdict(int)
    first: list[int] = []
    rest: list[int] = []
    for rowid in _ordered(scores):
        key = _group(lists.rows[rowid])[:2]
        (first if seen[key] < cap else rest).append(rowid)
        seen[key] += 1
    order = first + rest
    return {rowid: float(len(order) - place) for place, rowid in enumerate(order)}


def day_prior(lists: Lists, scores: Scores, weight: float) -> Scores:
    """Each entry raised by its day's best three fused scores (relative to the best day's)."""
    by_day: dict[tuple[object, ...], list[float]] = defaultdict(list)
    for rowid, score in scores.items():
        by_day[_group(lists.rows[rowid])[:2]].append(score)
    strength = {day: sum(sorted(values, reverse=True)[:3]) for day, values in by_day.items()}
    best = max(strength.values(), default=1.0) or 1.0
    return {
        rowid: score * (1 + weight * strength[_group(lists.rows[rowid])[:2]] / best)
        for rowid, score in scores.items()
    }


def mmr(lists: Lists, scores: Scores, lam: float, depth: int = 30) -> Scores:
    """Maximal marginal relevance over the fused top ``depth`` (rank score 1 down to 0)."""
    order = _ordered(scores)
    head = order[:depth]
    relevance = {rowid: 1.0 - place / depth for place, rowid in enumerate(head)}
    chosen = head[:1]
    left = head[1:]
    while left and len(chosen) < max(KS):

        def value(rowid: int) -> float:
            vec = lists.vectors.get(rowid)
            sims = [float(vec @ lists.vectors[o]) for o in chosen if o in lists.vectors]
            return lam * relevance[rowid] - (1 - lam) * (
                max(sims) if vec is not None and sims else 0.0
            )

        pick = max(left, key=value)
        chosen.append(pick)
        left.remove(pick)
    final = chosen + left + order[depth:]
    return {rowid: float(len(final) - place) for place, rowid in enumerate(final)}


def fused_date(lists: Lists, scores: Scores, weight: float) -> Scores:
    """The fused score x (1 + weight) for entries of the query's date."""
    return {r: s * (1 + weight) if r in lists.dated else s for r, s in scores.items()}


def _vector_date(settings: Settings) -> Idea:
    def idea(lists: Lists, weight: float) -> Replayed:
        return Replayed(*product_lists(lists, settings, weight))

    return idea


def _idf(entries: int, holding: int) -> float:
    """Okapi idf, floored at 0 as FTS5 floors it (just above)."""
    return max(math.log((entries - holding + 0.5) / (holding + 0.5)), 0.0)


def rebuilt_keyword(
    lists: Lists,
    weights: Mapping[str, float],
    settings: Settings,
    factor: Callable[[int], float] | None = None,
) -> list[Row]:
    """BM25's list from each query word's score x ``weights`` (default 1; ``Lists.terms``),
    each entry's sum x ``factor(rowid)`` when given, ties by rowid, its first ``POOL`` lifted as
    the product lifts them."""
    total: dict[int, float] = defaultdict(float)
    for term, scores in lists.terms.items():
        weight = weights.get(term, 1.0)
        for rowid, score in scores.items():
            total[rowid] += weight * score
    if factor is not None:
        # Scores are negative: a factor below 1 lowers an entry.
        total = defaultdict(float, {rowid: score * factor(rowid) for rowid, score in total.items()})
    ranked = sorted(total.items(), key=lambda item: (item[1], item[0]))[: hybrid.POOL]
    rows = [(score, *lists.rows[rowid][1:]) for rowid, score in ranked]
    return lift_nearby(rows, settings.search_nearby_weight)


def _rowids(rows: Sequence[Row]) -> list[int]:
    return [int(str(row[-1])) for row in rows]


def _content(lists: Lists) -> list[str]:
    return [term for term in lists.terms if term not in lists.names]


def confidence_by_score(lists: Lists) -> float:
    """BM25's best raw score over the sum of each query word's best score alone (0 to 1)."""
    possible = sum(-min(scores.values()) for scores in lists.terms.values() if scores)
    best = -float(str(lists.keyword[0][0])) if lists.keyword else 0.0
    return min(best / possible, 1.0) if possible > 0 else 0.0


def confidence_by_words(lists: Lists) -> float:
    """The idf-weighted share of the query's words (names left out) that BM25's best entry
    holds in its own text (0 to 1)."""
    if not lists.keyword:
        return 0.0
    entries = len(lists.rows)
    idf = {term: _idf(entries, len(lists.own[term])) for term in _content(lists)}
    top = int(str(lists.keyword[0][-1]))
    total = sum(idf.values())
    return sum(v for t, v in idf.items() if top in lists.own[t]) / total if total > 0 else 0.0


def _adaptive(settings: Settings, confidence: Callable[[Lists], float]) -> Idea:
    def idea(lists: Lists, slope: float) -> Replayed:
        factor = max(0.0, 1.0 + slope * (1.0 - 2.0 * confidence(lists)))
        return Replayed(
            *product_lists(lists, settings), _same, settings.search_vector_weight * factor
        )

    return idea


def _reweighted(settings: Settings, idf: Callable[[Lists, str], float]) -> Idea:
    def idea(lists: Lists, power: float) -> Replayed:
        values = {term: idf(lists, term) + 0.1 for term in lists.terms}
        mean = sum(values.values()) / len(values) if values else 1.0
        weights = {term: (value / mean) ** power for term, value in values.items()}
        semantic = product_lists(lists, settings)[1]
        return Replayed(rebuilt_keyword(lists, weights, settings), semantic)

    return idea


def own_idf(lists: Lists, term: str) -> float:
    """``term``'s idf over the entries' own text."""
    return _idf(len(lists.rows), len(lists.own[term]))


def candidate_idf(lists: Lists, term: str) -> float:
    """``term``'s idf within the entries some query word matches (any column)."""
    matched = set().union(*lists.terms.values())
    return math.log((len(matched) + 1) / (len(lists.terms[term]) + 0.5))


def coordination(lists: Lists, power: float) -> Callable[[int], float]:
    """An entry's factor: the share of the query's words (names left out) it matches, ^power."""
    content = _content(lists)
    held: dict[int, int] = defaultdict(int)
    for term in content:
        for rowid in lists.terms[term]:
            held[rowid] += 1
    share = max(len(content), 1)
    return lambda rowid: float((held[rowid] / share) ** power)


def rarest_word(lists: Lists, factor: float) -> Callable[[int], float]:
    """An entry's factor: ``factor`` unless it matches the query's rarest word (by own-text
    document frequency, names left out), 1 when it does."""
    content = [term for term in _content(lists) if lists.terms[term]]
    if not content:
        return lambda rowid: 1.0
    holding = lists.terms[min(content, key=lambda term: len(lists.own[term]))]
    return lambda rowid: 1.0 if rowid in holding else factor


def _rescored(
    settings: Settings, factors: Callable[[Lists, float], Callable[[int], float]]
) -> Idea:
    def idea(lists: Lists, value: float) -> Replayed:
        keyword = rebuilt_keyword(lists, {}, settings, factors(lists, value))
        return Replayed(keyword, product_lists(lists, settings)[1])

    return idea


def ideas(settings: Settings) -> dict[str, tuple[Idea, list[str]]]:
    """Every idea with the values it is measured at (the product's first)."""
    return {
        "fused-nearby+bm25": (_fused_nearby(True, settings), ["0", "0.15", "0.3", "0.5"]),
        "fused-nearby-only": (_fused_nearby(False, settings), ["0", "0.15", "0.3", "0.5"]),
        "day-decay": (_reorder(settings, day_decay), ["1", "0.9", "0.8", "0.7"]),
        "day-cap": (_reorder(settings, day_cap), ["10", "6", "5", "4"]),
        "day-prior": (_reorder(settings, day_prior), ["0", "0.1", "0.2", "0.4"]),
        "mmr": (_reorder(settings, mmr), ["1", "0.9", "0.8", "0.7"]),
        "vector-date": (_vector_date(settings), ["0", "0.25", "0.5", "1"]),
        "fused-date": (_reorder(settings, fused_date), ["0", "0.25", "0.5", "1"]),
        "adaptive-vector-score": (
            _adaptive(settings, confidence_by_score),
            ["0", "0.25", "0.5", "1", "-0.5"],
        ),
        "adaptive-vector-words": (
            _adaptive(settings, confidence_by_words),
            ["0", "0.25", "0.5", "1", "-0.5"],
        ),
        "word-idf": (_reweighted(settings, own_idf), ["0", "-0.5", "-0.25", "0.5", "1", "2"]),
        "candidate-idf": (_reweighted(settings, candidate_idf), ["0", "0.5", "1", "2"]),
        "coordination": (_rescored(settings, coordination), ["0", "0.25", "0.5", "1"]),
        "rarest-word": (_rescored(settings, rarest_word), ["1", "0.8", "0.6", "0.4"]),
    }


def question_lists(
    conn: sqlite3.Connection,
    query: str,
    embedder: Embedder,
    settings: Settings,
    entries: Mapping[int, Row],
) -> Lists | None:
    """The candidates of one question, read once (module doc); None when it has no words.
    ``entries`` is every entry's row (``ROWS_SQL``) by rowid."""
    expression = fts_query(query)
    if expression is None:
        return None
    plain = settings.replace(search_nearby_weight=0.0, search_vector_date_boost=0.0)
    ranking = Ranking.for_query(query, plain)
    keyword = bm25_rows(conn, expression, DEPTH, ranking)
    semantic = hybrid._semantic(conn, query, embedder, DEPTH, plain) or []
    wanted = {int(str(row[-1])) for row in keyword} | {rowid for rowid, _ in semantic}
    spans = query_dates(query)
    dated = hybrid._passing(conn, list(wanted), *date_condition(spans)) if spans else set()
    snap = VectorStore(conn, embedder, 0.0)._loaded()
    assert snap.rowids is not None and snap.matrix is not None
    vectors = {r: snap.matrix[i] for i, r in enumerate(snap.rowids) if r in wanted}
    terms: dict[str, dict[int, float]] = {}
    own: dict[str, set[int]] = {}
    for term in query_tokens(query):
        alone = fts_query(term)
        assert alone is not None
        rows = bm25_rows(conn, alone, len(entries), ranking)
        terms[term] = {int(str(row[-1])): float(str(row[0])) for row in rows}
        found = conn.execute(
            "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?", (f"{{text}} : {alone}",)
        )
        own[term] = {int(rowid) for (rowid,) in found}
    names = {name.casefold() for name in query_speakers(query) if name.casefold() not in ROLES}
    return Lists(keyword, semantic, entries, dated, vectors, terms, own, names)


def _collect(
    conn: sqlite3.Connection, texts: Sequence[str], embedder: Embedder, settings: Settings
) -> list[tuple[Lists | None, dict[int, str]]]:
    """Each question's lists and the entries' ids by rowid."""
    ids = {int(r): str(i) for r, i in conn.execute("SELECT rowid, id FROM entries")}
    one = ROWS_SQL.format(marks="?")
    entries = {rowid: tuple(conn.execute(one, (rowid,)).fetchone()) for rowid in ids}
    return [(question_lists(conn, text, embedder, settings, entries), ids) for text in texts]


def score_found(
    questions: Sequence[Any], found: Iterable[Sequence[str]], mapping: Mapping[str, Sequence[str]]
) -> list[tuple[int, float, float]]:
    """Each question's category, R@5 and R@10 from the entry ids found for it, best first (as
    ``Fold.add`` takes them)."""
    scored = []
    for question, ids in zip(questions, found, strict=True):
        ranked = expand(ids, mapping)[: max(KS)]
        scored.append(
            (
                question.category,
                recall_at(ranked, question.evidence, 5),
                recall_at(ranked, question.evidence, 10),
            )
        )
    return scored


def run(data: list[dict[str, Any]], settings: Settings, check: bool) -> dict[str, Any]:
    """Every idea at every value, on every conversation of ``data`` (module doc)."""
    # These ideas are replayed on the fusion of two lists: the speaker centroid (a third list,
    # centroid_replay.py replays it) is off, in search() too.
    settings = settings.replace(search_speaker_centroid_weight=0.0)
    started = time.perf_counter()
    table = ideas(settings)
    folds = {name: Fold(values) for name, (_, values) in table.items()}
    for sample in data:
        conversation = load_conversation(sample)
        with indexed(conversation, settings) as (store, mapping):
            embedder = resolve_backend(settings).embedder
            assert embedder is not None
            questions = conversation.questions
            texts = [q.text for q in questions]
            collected = using_index(
                store.index_path,
                partial(_collect, texts=texts, embedder=embedder, settings=settings),
            )
            if check:
                for question, (lists, ids) in zip(questions, collected, strict=True):
                    got = [ids[r] for r in fuse(lists, settings)] if lists else []
                    hits = [
                        h.id for h in search(store, question.text, limit=max(KS), settings=settings)
                    ]
                    if got != hits:
                        raise SystemExit(f"replay differs from search() on {question.text!r}")
                    if lists and _rowids(rebuilt_keyword(lists, {}, settings)) != _rowids(
                        product_lists(lists, settings)[0]
                    ):
                        raise SystemExit(f"words' scores do not add up on {question.text!r}")
            for name, (idea, values) in table.items():
                for value in values:
                    found = (
                        [ids[r] for r in fuse(lists, settings, idea, float(value))] if lists else []
                        for lists, ids in collected
                    )
                    scored = score_found(questions, found, mapping)
                    folds[name].add(value, conversation.sample_id, scored)
    seconds = round(time.perf_counter() - started, 1)
    return {
        name: {**fold.summary(), "setting": name, "backend": "hybrid replay", "seconds": seconds}
        for name, fold in folds.items()
    }


@contextlib.contextmanager
def hybrid_settings(cache: Path) -> Iterator[Settings]:
    """The settings of hybrid search (the environment's, backend hybrid), with the embedding
    cache in ``cache`` and, unless ``OM_EMBED_MODEL_PATH`` names one, the packaged model
    assembled in a temporary folder for as long as the block runs. The vocabulary bridge is
    off (``OM_SEARCH_VOCAB_BRIDGE_WEIGHT`` 0): the replays fuse the lists they rebuild, and
    ``vocab_bridge.py`` rebuilds the bridge's own; so no vocabulary is embedded either."""
    env = dict(os.environ, OM_SEARCH_BACKEND="hybrid", OM_SEARCH_VOCAB_BRIDGE_WEIGHT="0")
    with contextlib.ExitStack() as stack:
        model_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="om-model-"))
        stack.enter_context(embed_cache(cache))
        if not env.get("OM_EMBED_MODEL_PATH"):
            env["OM_EMBED_MODEL_PATH"] = str(packaged_model_folder(Path(model_dir)))
        yield load_settings(env)


def replay_cli(
    doc: str, argv: Sequence[str] | None, run: Callable[[list[dict[str, Any]], Settings, bool], Any]
) -> tuple[argparse.Namespace, Any]:
    """The replays' command line (``--data``, ``--embed-cache``, ``--check``, ``--json``) parsed,
    and ``run(data, settings, check)`` under ``hybrid_settings``: (the arguments, its report)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--embed-cache", type=Path, metavar="DIR", required=True)
    parser.add_argument("--check", action="store_true", help="assert replay == search() first")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with hybrid_settings(args.embed_cache) as settings:
        return args, run(data, settings, args.check)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args, report = replay_cli(__doc__ or "", argv, run)
    if args.json:
        print(json.dumps(report, indent=1, sort_keys=True))
    else:
        for part in report.values():
            print(render_sweep(part) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Candidate generation for list questions on LoCoMo, replayed over hybrid search's own lists.

Usage: python bench/list_candidates.py --data PATH --embed-cache DIR [--json]

A list question ("What authors has Tim read books from?") has evidence turns that each name one
instance and share little with the question but the speaker's name; they may resemble each
other more than the question. Two ways of reaching them from the fused top, each with one knob,
are replayed over the two candidate lists ``hybrid_rows`` fuses (``fusion_replay.product_lists``
over ``fusion_replay.question_lists``' reading, here without the per-word BM25 scores) and every
entry's stored vector:

- ``hop``: second-hop expansion. Each of the first ``HOP_HITS`` fused hits (of a speaker the
  query names, when it names one) brings its ``HOP_NEAREST`` nearest entries of the same speaker
  (cosine on the stored vectors) in at ``decay`` x the hit's fused score x their cosine, when
  that is above their own fused score; the knob is ``decay``.
- ``centroid``: when the query names a speaker, the normalised mean vector of the first
  ``CENTROID_HITS`` fused hits of that speaker is a second vector query, ranked over that
  speaker's entries (``POOL`` deep), and fused by RRF as a third list at weight ``w``.

Variants fix the structure otherwise (hits 3 / 5 / 10; the centroid's ranking over every
speaker, with the neighbours' cosine, 100 deep; the second hop as a third RRF list instead).
At knob 0 each variant is the product's fusion, asserted for every question. ``reach`` counts,
for the multi-hop (category 1) questions naming a speaker, the evidence turns outside the fused
top 10 that each idea's candidates hold, and how many of those neither product list held.
Scored like ``locomo_recall.py --sweep``: turn R@5 / R@10 per value, category and conversation,
and leave-one-conversation-out over the values (``Fold``).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date as Date
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusion_replay import DEPTH, Lists, fuse, hybrid_settings, product_lists, score_found
from locomo_recall import KS, Conversation, Fold, expand, indexed, load_conversation, render_sweep

from obsmem.index.db import using_index
from obsmem.index.query import fts_query
from obsmem.search import hybrid
from obsmem.search.bm25 import (
    ROWS_SQL,
    Ranking,
    bm25_rows,
    date_condition,
    distinct_rows,
)
from obsmem.search.dates import query_dates
from obsmem.search.embeddings import Embedder, resolve_backend
from obsmem.search.speakers import ROLES, query_speakers
from obsmem.search.vectors import Neighbours, VectorStore, neighbour_positions, with_context
from obsmem.settings import Settings

HOP_HITS, HOP_NEAREST, CENTROID_HITS, POOL = 10, 5, 5, 50
_TEXT = 11  # the entry's text in a result row
_NONE = -9.0  # a cosine below any real one: left out of a ranking
Scores = dict[int, float]


@dataclass
class Entries:
    """One conversation's vectors: rowids (matrix rows), the matrix, each row's speaker
    (casefolded, "" for none), matrix row by rowid, and each row's neighbours."""

    rowids: list[int]
    matrix: npt.NDArray[np.float32]
    speakers: npt.NDArray[np.str_]
    at: dict[int, int]
    neighbours: Neighbours


def speaker_of(text: str) -> str:
    """The speaker an entry's text starts with (``name: ...``), casefolded; "" for none."""
    head, colon, _ = text.partition(":")
    return head.casefold() if colon and 0 < len(head) < 40 else ""


def collect(
    conn: sqlite3.Connection, texts: Sequence[str], embedder: Embedder, settings: Settings
) -> tuple[list[Lists | None], dict[int, str], Entries]:
    """Each question's lists (``fusion_replay.question_lists`` without the words' scores), the
    entries' ids by rowid and the conversation's vectors."""
    ids = {int(r): str(i) for r, i in conn.execute("SELECT rowid, id FROM entries")}
    rows = {r: tuple(conn.execute(ROWS_SQL.format(marks="?"), (r,)).fetchone()) for r in ids}
    snap = VectorStore(conn, embedder, 0.0)._loaded()
    assert snap.rowids is not None and snap.matrix is not None
    rowids = list(snap.rowids)
    speakers = np.array([speaker_of(str(rows[r][_TEXT])) for r in rowids])
    neighbours = neighbour_positions(conn, rowids, 1)
    entries = Entries(
        rowids, snap.matrix, speakers, {r: i for i, r in enumerate(rowids)}, neighbours
    )
    plain = settings.replace(search_nearby_weight=0.0, search_vector_date_boost=0.0)
    out: list[Lists | None] = []
    for text in texts:
        expression = fts_query(text)
        if expression is None:
            out.append(None)
            continue
        keyword = bm25_rows(conn, expression, DEPTH, Ranking.for_query(text, plain))
        semantic = hybrid._semantic(conn, text, embedder, DEPTH, plain) or []
        wanted = {int(str(row[-1])) for row in keyword} | {r for r, _ in semantic}
        spans = query_dates(text)
        dated = hybrid._passing(conn, list(wanted), *date_condition(spans)) if spans else set()
        names = {n.casefold() for n in query_speakers(text) if n.casefold() not in ROLES}
        out.append(Lists(keyword, semantic, rows, dated, {}, {}, {}, names))
    return out, ids, entries


def fused(
    lists: Lists,
    settings: Settings,
    third: Sequence[int] = (),
    weight: float = 0.0,
    more: Sequence[tuple[Sequence[int], float]] = (),
) -> tuple[Scores, int | None]:
    """``fuse``'s boosted fused scores and pinned winner, with an optional third RRF list (and
    any ``more`` lists with their weights)."""
    keyword, semantic = product_lists(lists, settings)
    ranks = [[int(str(row[-1])) for row in keyword], [r for r, _ in semantic]]
    weights = [settings.search_bm25_weight, settings.search_vector_weight]
    for extra, extra_weight in [(third, weight), *more]:
        if extra and extra_weight > 0:
            ranks.append(list(extra))
            weights.append(extra_weight)
    today = Date.today()
    scores = {
        r: hybrid.boost(
            s,
            hybrid._importance(lists.rows[r][9]),
            hybrid._age_days(lists.rows[r][5], today),
            importance_weight=settings.search_importance_boost,
            recency_weight=settings.search_recency_boost,
            half_life_days=settings.search_recency_half_life_days,
        )
        for r, s in hybrid.rrf_fuse(ranks, weights, settings.search_rrf_k).items()
    }
    bm25_scores = [0.0 - float(str(row[0])) for row in keyword]
    winner = hybrid.clear_winner(bm25_scores, settings.search_winner_ratio)
    return scores, int(str(keyword[0][-1])) if winner else None


def ordered(lists: Lists, scores: Scores, pinned: int | None) -> list[int]:
    """Rowids best first, vault copies dropped, as ``fuse`` ends."""
    rows = [lists.rows[r] for r in hybrid.fused_order(scores, pinned)]
    return [int(str(row[-1])) for row in distinct_rows(rows, max(KS))]


def _speaker_hits(
    lists: Lists, e: Entries, scores: Scores, pinned: int | None, n: int
) -> list[int]:
    """The first ``n`` fused hits with a vector, of a named speaker when the query names one."""
    hits = [h for h in hybrid.fused_order(scores, pinned) if h in e.at]
    if lists.names:
        hits = [h for h in hits if e.speakers[e.at[h]] in lists.names]
    return hits[:n]


def nearest(e: Entries, hit: int, n: int) -> list[tuple[int, float]]:
    """The ``n`` entries of ``hit``'s speaker most similar to it (not itself), best first."""
    i = e.at[hit]
    sims = e.matrix @ e.matrix[i]
    if e.speakers[i]:
        sims = np.where(e.speakers == e.speakers[i], sims, _NONE)
    sims[i] = _NONE
    order = np.argsort(-sims, kind="stable")[:n]
    return [(e.rowids[int(j)], float(sims[j])) for j in order if sims[j] > _NONE]


def hop(
    lists: Lists, settings: Settings, e: Entries, decay: float, hits: int = HOP_HITS
) -> list[int]:
    """Second-hop expansion (module doc) at ``decay``."""
    scores, pinned = fused(lists, settings)
    if decay <= 0:
        return ordered(lists, scores, pinned)
    raised = dict(scores)
    for h in _speaker_hits(lists, e, scores, pinned, hits):
        for r, cosine in nearest(e, h, HOP_NEAREST):
            raised[r] = max(raised.get(r, 0.0), decay * scores[h] * max(cosine, 0.0))
    return ordered(lists, raised, pinned)


def hop_list(
    lists: Lists, settings: Settings, e: Entries, weight: float, hits: int = HOP_HITS
) -> list[int]:
    """The second hop's entries as a third RRF list (the hits' first neighbours, then their
    second ones, ...) at ``weight``; only for a query naming a speaker."""
    scores, pinned = fused(lists, settings)
    if weight <= 0 or not lists.names:
        return ordered(lists, scores, pinned)
    near = [nearest(e, h, HOP_NEAREST) for h in _speaker_hits(lists, e, scores, pinned, hits)]
    third = [each[k][0] for k in range(HOP_NEAREST) for each in near if k < len(each)]
    return ordered(lists, *fused(lists, settings, third, weight))


def centroid_list(
    lists: Lists,
    e: Entries,
    scores: Scores,
    pinned: int | None,
    hits: int,
    *,
    every: bool = False,
    context: float = 0.0,
    depth: int = POOL,
) -> list[int]:
    """The centroid's ranking (module doc); empty when the query names no speaker or none of
    its hits has a vector."""
    head = _speaker_hits(lists, e, scores, pinned, hits) if lists.names else []
    if not head:
        return []
    mean = e.matrix[[e.at[h] for h in head]].mean(axis=0)
    sims = e.matrix @ (mean / np.linalg.norm(mean))
    if context > 0:
        sims = with_context(sims.astype(np.float32), e.neighbours, context)
    if not every:
        sims = np.where(np.isin(e.speakers, sorted(lists.names)), sims, _NONE)
    return [e.rowids[int(j)] for j in np.argsort(-sims, kind="stable")[:depth] if sims[j] > _NONE]


def centroid(
    lists: Lists,
    settings: Settings,
    e: Entries,
    weight: float,
    hits: int = CENTROID_HITS,
    **how: Any,
) -> list[int]:
    """The centroid as a third RRF list at ``weight`` (module doc)."""
    scores, pinned = fused(lists, settings)
    third = centroid_list(lists, e, scores, pinned, hits, **how) if weight > 0 else []
    if not third:
        return ordered(lists, scores, pinned)
    return ordered(lists, *fused(lists, settings, third, weight))


Variant = Callable[[Lists, Settings, Entries, float], list[int]]
_DECAYS = ["0", "0.25", "0.5", "0.75", "1"]
_WEIGHTS = ["0", "0.1", "0.15", "0.2", "0.3"]


def variants() -> dict[str, tuple[Variant, list[str]]]:
    """Every variant with its knob's values (0: the product)."""
    return {
        "hop decay, 10 hits": (hop, _DECAYS),
        "hop decay, 5 hits": (lambda li, s, e, v: hop(li, s, e, v, hits=5), _DECAYS),
        "hop as a list, 10 hits": (hop_list, _WEIGHTS),
        "hop as a list, 5 hits": (lambda li, s, e, v: hop_list(li, s, e, v, hits=5), _WEIGHTS),
        "centroid weight, 3 hits": (lambda li, s, e, v: centroid(li, s, e, v, hits=3), _WEIGHTS),
        "centroid weight, 5 hits": (centroid, _WEIGHTS),
        "centroid weight, 10 hits": (lambda li, s, e, v: centroid(li, s, e, v, hits=10), _WEIGHTS),
        "centroid, every speaker": (
            lambda li, s, e, v: centroid(li, s, e, v, every=True),
            _WEIGHTS,
        ),
        "centroid, neighbours 1": (
            lambda li, s, e, v: centroid(li, s, e, v, context=1.0),
            _WEIGHTS,
        ),
        "centroid, 100 deep": (lambda li, s, e, v: centroid(li, s, e, v, depth=100), _WEIGHTS),
    }


def reach(
    lists: Lists, settings: Settings, e: Entries, missed: Sequence[int], counts: dict[str, int]
) -> None:
    """Add to ``counts`` how many of ``missed`` (evidence rowids outside the fused top 10) the
    centroid's list and the second hop's entries hold, and those of them new to the product's
    candidates."""
    scores, pinned = fused(lists, settings)
    keyword, semantic = product_lists(lists, settings)
    known = {int(str(row[-1])) for row in keyword} | {r for r, _ in semantic}
    found = {
        "centroid": set(centroid_list(lists, e, scores, pinned, CENTROID_HITS)),
        "hop": {
            r
            for h in _speaker_hits(lists, e, scores, pinned, HOP_HITS)
            for r, _ in nearest(e, h, HOP_NEAREST)
        },
    }
    counts["missed"] += len(missed)
    for name, held in found.items():
        counts[name] += sum(r in held for r in missed)
        counts[f"{name}, new"] += sum(r in held and r not in known for r in missed)


Collected = tuple[
    Conversation, Mapping[str, list[str]], list[Lists | None], dict[int, str], Entries, Any
]


def collected_conversations(data: list[dict[str, Any]], settings: Settings) -> Iterator[Collected]:
    """Each conversation of ``data`` indexed and embedded, with its dia_ids by entry id, its
    questions' lists, its entries' ids by rowid, its vectors (``collect``) and its store."""
    for sample in data:
        conversation = load_conversation(sample)
        with indexed(conversation, settings) as (store, mapping):
            embedder = resolve_backend(settings).embedder
            assert embedder is not None
            texts = [q.text for q in conversation.questions]
            collected, ids, entries = using_index(
                store.index_path,
                partial(collect, texts=texts, embedder=embedder, settings=settings),
            )
            yield conversation, mapping, collected, ids, entries, store


def run(data: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """Every variant at every value on every conversation of ``data``, and the reach counts."""
    # These ideas are replayed on the fusion of two lists: the speaker centroid (a third list,
    # centroid_replay.py replays it) is off, in search() too.
    settings = settings.replace(search_speaker_centroid_weight=0.0)
    started = time.process_time()
    table = variants()
    folds = {name: Fold(values) for name, (_, values) in table.items()}
    counts = dict.fromkeys(["missed", "centroid", "centroid, new", "hop", "hop, new"], 0)
    for conversation, mapping, collected, ids, entries, _ in collected_conversations(
        data, settings
    ):
        questions = conversation.questions
        rowid_of = {dia: r for r, i in ids.items() for dia in mapping.get(i, ())}
        for question, lists in zip(questions, collected, strict=True):
            if lists is None:
                continue
            product = fuse(lists, settings)
            for name, (variant, _) in table.items():
                if variant(lists, settings, entries, 0.0) != product:
                    raise SystemExit(f"{name} at 0 is not the product on {question.text!r}")
            if question.category == 1 and lists.names:
                top = set(expand((ids[r] for r in product), mapping)[:10])
                missed = [rowid_of[d] for d in set(question.evidence) - top if d in rowid_of]
                reach(lists, settings, entries, missed, counts)
        for name, (variant, values) in table.items():
            for value in values:
                found = (
                    [ids[r] for r in variant(lists, settings, entries, float(value))]
                    if lists
                    else []
                    for lists in collected
                )
                scored = score_found(questions, found, mapping)
                folds[name].add(value, conversation.sample_id, scored)
    seconds = round(time.process_time() - started, 1)
    sweeps = {
        name: {**fold.summary(), "setting": name, "backend": "hybrid replay", "seconds": seconds}
        for name, fold in folds.items()
    }
    return {"sweeps": sweeps, "reach": counts, "cpu_seconds": seconds}


def render(report: Mapping[str, Any]) -> str:
    """The sweeps as ``locomo_recall.py --sweep`` prints them, then the reach counts."""
    parts = [render_sweep(part) for part in report["sweeps"].values()]
    counts = ", ".join(f"{name} {value}" for name, value in report["reach"].items())
    parts.append(f"multi-hop evidence outside the top 10 (questions naming a speaker): {counts}")
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--embed-cache", type=Path, metavar="DIR", required=True)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with hybrid_settings(args.embed_cache) as settings:
        report = run(data, settings)
    print(json.dumps(report, indent=1, sort_keys=True) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

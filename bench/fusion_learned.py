"""A small linear scorer in place of the RRF fusion, fitted and scored leave-one-conversation-out.

Usage: python bench/fusion_learned.py --data PATH --embed-cache DIR [--lists FILE]
       [--pairwise | --both] [--ridge R]

Each question's two candidate lists are taken as ``fusion_replay.py`` takes them (the product's
own functions, 300 deep; ``--lists`` keeps them in a pickle so a second run skips the indexing
and embedding). The candidates are what ``hybrid_rows`` fuses: BM25's first ``POOL`` rows
lifted and the vector ranking's first ``POOL`` after its date boost. Each candidate gets
``FEATURES`` (generic: meaningful for any memory, not only LoCoMo):

- ``rrf_bm25`` / ``rrf_vector``: 1 / (k + its rank) in BM25's / the vector pool (0 outside);
- ``bm25_share``: its lifted BM25 score over the query's best (0 outside BM25's pool);
- ``cosine`` / ``cosine_gap``: its vector score (context-weighted cosine; outside the 300 read,
  the 300th), and that minus the query's best;
- ``dated``: 1 when the query names a date and the entry is of it;
- ``word_share``: the share of the query's words (speakers' names left out) it matches;
- ``nearby``: the best ``rrf_bm25 + 0.3 rrf_vector`` of another candidate within
  ``NEARBY_LINES`` lines of it (same file, day and section).

The score is the weights' dot product with the features; BM25's unambiguous winner stays first
as in the product; the boosts are left out (on LoCoMo the order is the same without them). The
weights start at the product's RRF (1, 0.3, the rest 0) and are fitted by coordinate ascent on
mean turn R@10 (categories 1-4): each weight in turn tries its value +/- 1..4 steps, keeps the
best strict gain, and the steps halve after a pass without one (``fit``). ``--pairwise``
instead minimises a pairwise logistic loss (each evidence candidate above each other one of the
product's first 30, every question weighted once) plus ``--ridge`` x the squared distance from
the product's weights, by gradient descent (``fit_pairwise``); ``--both`` refines that by the
coordinate ascent (``fit_both``). All deterministic.

Reported: the product's replay, the fit on all five (not a result), and leave-one-conversation-
out: fitted on four, scored on the fifth, per conversation and per category, pooled over the
questions and as the mean of the five conversations' figures (printed as one JSON object).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusion_replay import Lists, _collect, _content, hybrid_settings, product_lists
from locomo_recall import SCORED_CATEGORIES, indexed, load_conversation

from obsmem.index.db import using_index
from obsmem.search import hybrid
from obsmem.search.bm25 import NEARBY_LINES, distinct_rows
from obsmem.search.embeddings import resolve_backend
from obsmem.settings import Settings

FEATURES = (
    "rrf_bm25", "rrf_vector", "bm25_share", "cosine", "cosine_gap", "dated", "word_share",
    "nearby",
)  # fmt: skip
#: The first step of each weight in the coordinate ascent (about a tenth of what moves a rank).
STEPS = np.array([0.5, 0.15, 0.01, 0.01, 0.01, 0.005, 0.005, 0.3])


@dataclass
class Question:
    """One question's candidates as features, ready to be scored."""

    sample: str
    category: int
    rowids: list[int]
    features: np.ndarray
    pinned: int | None
    rows: dict[int, tuple[object, ...]]
    dias: dict[int, list[str]]
    evidence: set[str]


def features(lists: Lists, settings: Settings) -> tuple[list[int], np.ndarray, int | None]:
    """The candidates' rowids, their ``FEATURES`` matrix, and BM25's unambiguous winner."""
    keyword, semantic = product_lists(lists, settings)
    k = settings.search_rrf_k
    kw = {int(str(row[-1])): (rank, -float(str(row[0]))) for rank, row in enumerate(keyword, 1)}
    vec_rank = {rowid: rank for rank, (rowid, _) in enumerate(semantic, 1)}
    cosine = dict(reversed(lists.semantic))
    floor = lists.semantic[-1][1] if lists.semantic else 0.0
    best_cos = lists.semantic[0][1] if lists.semantic else 0.0
    best_bm25 = max((score for _, score in kw.values()), default=1.0) or 1.0
    rowids = sorted(set(kw) | set(vec_rank))
    content = _content(lists)
    x = np.zeros((len(rowids), len(FEATURES)))
    for i, rowid in enumerate(rowids):
        rb = kw.get(rowid)
        x[i, 0] = 1 / (k + rb[0]) if rb else 0.0
        x[i, 1] = 1 / (k + vec_rank[rowid]) if rowid in vec_rank else 0.0
        x[i, 2] = rb[1] / best_bm25 if rb else 0.0
        x[i, 3] = cosine.get(rowid, floor)
        x[i, 4] = x[i, 3] - best_cos
        x[i, 5] = 1.0 if rowid in lists.dated else 0.0
        held = sum(1 for term in content if rowid in lists.terms[term])
        x[i, 6] = held / len(content) if content else 0.0
    base = x[:, 0] + settings.search_vector_weight * x[:, 1]
    for i, rowid in enumerate(rowids):
        row = lists.rows[rowid]
        line = row[4]
        if not isinstance(line, int):
            continue
        near = [
            base[j]
            for j, other in enumerate(rowids)
            if j != i
            and isinstance(lists.rows[other][4], int)
            and abs(int(str(lists.rows[other][4])) - line) <= NEARBY_LINES
            and lists.rows[other][3] == row[3]
            and lists.rows[other][5] == row[5]
            and lists.rows[other][10] == row[10]
        ]
        x[i, 7] = max(near, default=0.0)
    bm25_scores = [0.0 - float(str(row[0])) for row in keyword]
    winner = hybrid.clear_winner(bm25_scores, settings.search_winner_ratio)
    return rowids, x, (int(str(keyword[0][-1])) if winner and keyword else None)


def ranked(question: Question, weights: np.ndarray) -> list[int]:
    """The first ten distinct rowids of ``question`` by ``weights``, BM25's winner first."""
    scores = question.features @ weights
    # rowids are sorted, so a stable sort by score alone breaks ties by rowid as the product does.
    order = [question.rowids[i] for i in np.argsort(-scores, kind="stable")[:40]]
    if question.pinned is not None:
        order = [question.pinned, *(r for r in order if r != question.pinned)]
    kept = distinct_rows([question.rows[r] for r in order], 10)
    return [int(str(row[-1])) for row in kept]


def recall10(question: Question, weights: np.ndarray) -> float:
    """Turn R@10 of ``question`` ranked by ``weights``."""
    if not question.evidence:
        return 0.0
    # As ``expand``: an entry holding several turns yields them all, the first ten distinct count.
    dias = [dia for rowid in ranked(question, weights) for dia in question.dias[rowid]]
    first = list(dict.fromkeys(dias))[:10]
    return len(question.evidence & set(first)) / len(question.evidence)


def mean_recall(questions: Sequence[Question], weights: np.ndarray) -> float:
    """Mean turn R@10 over ``questions``."""
    return sum(recall10(q, weights) for q in questions) / max(len(questions), 1)


def fit(questions: Sequence[Question], start: np.ndarray, rounds: int = 3) -> np.ndarray:
    """Coordinate ascent on mean R@10 from ``start`` (module doc)."""
    weights = start.copy()
    best = mean_recall(questions, weights)
    steps = STEPS.copy()
    for _ in range(rounds):
        gained = True
        while gained:
            gained = False
            for i in range(len(weights)):
                for move in (-4, -2, -1, 1, 2, 4):
                    trial = weights.copy()
                    trial[i] += move * steps[i]
                    value = mean_recall(questions, trial)
                    if value > best + 1e-9:
                        best, weights, gained = value, trial, True
        steps /= 2
    return weights


def pair_differences(
    questions: Sequence[Question], start: np.ndarray, depth: int = 30
) -> tuple[np.ndarray, np.ndarray]:
    """For each question, every (evidence candidate - other candidate) feature difference, the
    others being the first ``depth`` by ``start``'s score; and each pair's weight (1 / the
    question's pairs, so every question counts once)."""
    diffs: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for q in questions:
        if not q.rowids:
            continue
        good = [i for i, r in enumerate(q.rowids) if q.evidence & set(q.dias[r])]
        if not good:
            continue
        order = np.argsort(-(q.features @ start), kind="stable")[:depth]
        bad = [i for i in order if i not in good]
        if not bad:
            continue
        d = (q.features[good][:, None, :] - q.features[bad][None, :, :]).reshape(-1, len(FEATURES))
        diffs.append(d)
        weights.append(np.full(len(d), 1.0 / len(d)))
    return np.concatenate(diffs), np.concatenate(weights)


def fit_pairwise(
    questions: Sequence[Question], start: np.ndarray, ridge: float = 1e-3, iterations: int = 2000
) -> np.ndarray:
    """Weights minimising the pairwise logistic loss (evidence above the others) plus
    ``ridge`` x the squared distance from ``start``, by gradient descent on features scaled to
    unit spread; deterministic."""
    d, w = pair_differences(questions, start)
    scale = d.std(axis=0) + 1e-12
    z = d / scale
    theta = start * scale  # the same scores in the scaled space
    origin = theta.copy()
    total = w.sum()
    rate = 0.5
    for _ in range(iterations):
        margin = z @ theta
        # d/dm log(1 + exp(-m)) = -1 / (1 + exp(m))
        grad = -(z * (w / (1.0 + np.exp(np.clip(margin, -50, 50))))[:, None]).sum(0) / total
        grad += 2 * ridge * (theta - origin)
        theta -= rate * grad
    return np.asarray(theta / scale)


def fit_both(questions: Sequence[Question], start: np.ndarray, ridge: float) -> np.ndarray:
    """The pairwise fit, scaled so that its BM25 rank weight is the product's (the order is
    unchanged by a positive scale), then refined by coordinate ascent on R@10."""
    weights = fit_pairwise(questions, start, ridge)
    if weights[0] > 0:
        weights = weights * (start[0] / weights[0])
    return fit(questions, weights)


#: One question as stored: conversation, category, evidence, lists, entry ids, turns by entry id.
Stored = tuple[str, int, list[str], Lists | None, dict[int, str], dict[str, list[str]]]


def stored_lists(
    data: list[dict[str, Any]], settings: Settings, cache: Path | None
) -> list[Stored]:
    """Every question's lists (vectors dropped), from the pickle ``cache`` if there, else
    collected from the product and written there."""
    if cache is not None and cache.exists():
        stored = pickle.loads(cache.read_bytes())
    else:
        stored = []
        for sample in data:
            conversation = load_conversation(sample)
            with indexed(conversation, settings) as (store, mapping):
                embedder = resolve_backend(settings).embedder
                assert embedder is not None
                texts = [q.text for q in conversation.questions]
                collected = using_index(
                    store.index_path,
                    partial(_collect, texts=texts, embedder=embedder, settings=settings),
                )
                for question, (lists, ids) in zip(conversation.questions, collected, strict=True):
                    if lists is not None:
                        lists = replace(lists, vectors={})
                    stored.append(
                        (
                            conversation.sample_id,
                            question.category,
                            list(question.evidence),
                            lists,
                            ids,
                            mapping,
                        )
                    )
        if cache is not None:
            cache.write_bytes(pickle.dumps(stored))
    return list(stored)


def gather(data: list[dict[str, Any]], settings: Settings, cache: Path | None) -> list[Question]:
    """Every question's features (module doc), from the lists pickled in ``cache`` if there."""
    return [
        question_of(lists, ids, mapping, settings, sample_id, category, evidence)
        for sample_id, category, evidence, lists, ids, mapping in stored_lists(
            data, settings, cache
        )
        if category in SCORED_CATEGORIES
    ]


def question_of(
    lists: Lists | None,
    ids: Mapping[int, str],
    mapping: Mapping[str, Sequence[str]],
    settings: Settings,
    sample: str,
    category: int,
    evidence: Sequence[str],
) -> Question:
    """One question ready to be scored, from its lists (None: no words, no candidates), the
    entries' ids by rowid and the turns of each entry id."""
    if lists is None:
        empty = np.zeros((0, len(FEATURES)))
        return Question(sample, category, [], empty, None, {}, {}, set(evidence))
    rowids, x, pinned = features(lists, settings)
    rows = {r: lists.rows[r] for r in rowids}
    dias = {r: list(mapping.get(ids[r], ())) for r in rowids}
    return Question(sample, category, rowids, x, pinned, rows, dias, set(evidence))


def summary(questions: Sequence[Question], weights: np.ndarray) -> dict[str, float]:
    """Mean R@10 overall and per category."""
    out = {"all": round(mean_recall(questions, weights), 4)}
    for category in sorted(SCORED_CATEGORIES):
        picked = [q for q in questions if q.category == category]
        out[f"c{category}"] = round(mean_recall(picked, weights), 4)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--embed-cache", type=Path, metavar="DIR", required=True)
    parser.add_argument("--lists", type=Path, metavar="FILE", help="pickle of the lists")
    parser.add_argument("--pairwise", action="store_true", help="pairwise logistic fit")
    parser.add_argument("--both", action="store_true", help="pairwise, then coordinate ascent")
    parser.add_argument("--ridge", type=float, default=1e-3)
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with hybrid_settings(args.embed_cache) as settings:
        questions = gather(data, settings, args.lists)
    start = np.zeros(len(FEATURES))
    start[0], start[1] = settings.search_bm25_weight, settings.search_vector_weight
    report: dict[str, Any] = {"product": summary(questions, start)}
    fitter: Any = fit
    if args.pairwise:
        fitter = partial(fit_pairwise, ridge=args.ridge)
    if args.both:
        fitter = partial(fit_both, ridge=args.ridge)
    everything = fitter(questions, start)
    report["fit on all (not a result)"] = {
        **summary(questions, everything),
        "weights": {n: float(v) for n, v in zip(FEATURES, everything.round(4), strict=True)},
    }
    samples = sorted({q.sample for q in questions})
    held_all: list[Question] = []
    folds = {}
    for held in samples:
        train = [q for q in questions if q.sample != held]
        test = [q for q in questions if q.sample == held]
        weights = fitter(train, start)
        folds[held] = {
            "product": round(mean_recall(test, start), 4),
            **summary(test, weights),
            "weights": {n: float(v) for n, v in zip(FEATURES, weights.round(4), strict=True)},
        }
        held_all += test
        print(held, folds[held], file=sys.stderr, flush=True)
    report["folds"] = folds
    # The held-out figures: each question scored under the weights fitted without its
    # conversation; pooled over questions, and the mean of the five conversations' figures.
    scored = [(q, folds[q.sample]) for q in held_all]
    report["loo"] = {
        "all": round(sum(_held(q, f, FEATURES) for q, f in scored) / len(scored), 4),
        "per conversation mean": round(sum(f["all"] for f in folds.values()) / len(folds), 4),
        "product per conversation mean": round(
            sum(f["product"] for f in folds.values()) / len(folds), 4
        ),
    }
    for category in sorted(SCORED_CATEGORIES):
        picked = [(q, f) for q, f in scored if q.category == category]
        report["loo"][f"c{category}"] = round(
            sum(_held(q, f, FEATURES) for q, f in picked) / max(len(picked), 1), 4
        )
    print(json.dumps(report, indent=1, default=float))
    return 0


def _held(question: Question, fold: dict[str, Any], names: Sequence[str]) -> float:
    return recall10(question, np.array([fold["weights"][n] for n in names]))


if __name__ == "__main__":
    sys.exit(main())

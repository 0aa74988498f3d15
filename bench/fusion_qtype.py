"""Which questions want the vector list more: query-level signals against the best vector weight.

Usage: python bench/fusion_qtype.py --data PATH --embed-cache DIR [--lists FILE] [--dump FILE]

Each question's two candidate lists are taken as ``fusion_replay.py`` takes them (``--lists``
keeps them in a pickle, as ``fusion_learned.py`` does) and the product's fusion is replayed at
each vector weight of ``WEIGHTS`` (RRF, BM25 weight 1, k 20, every other setting as the
product's). For each question the signals of ``SIGNALS`` are measured before ranking (the
question's form and words, their idf) or from the two lists' shapes (their agreement), and
for each signal the report gives:

- the mean turn R@10 (categories 1-4) at each weight within each group of the signal (its
  values for a form, its quartiles for a number), with the weight best per question averaged
  there, to show whether the best weight moves with the signal;
- a rule with one knob: a form's questions get weight ``v`` (the others the setting's), or
  a number's questions above / below a threshold ``t`` get ``HIGH`` (0.6, the weight at
  which the questions that want more of the vectors most often gain); the knob swept at 3-4
  values plus "off", chosen leave-one-conversation-out (``Fold``), per category and per
  conversation.

``--dump`` writes every question's signals and R@10 by weight as JSON lines for other looks.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusion_learned import stored_lists
from fusion_replay import (
    Lists,
    Replayed,
    _content,
    _idf,
    _same,
    fuse,
    hybrid_settings,
    product_lists,
)
from locomo_recall import (
    SCORED_CATEGORIES,
    Fold,
    expand,
    load_conversation,
    recall_at,
    render_sweep,
)

from obsmem.settings import Settings

#: The vector weights each question is replayed at (the product's is 0.3).
WEIGHTS = (0.1, 0.3, 0.6, 1.0, 2.0)
#: The weight a number's rule gives the questions past its threshold.
HIGH = 0.6

# The question's form, from its first words (English; what a coding agent's user asks has the
# same shapes: "which tests failed", "why did we drop the cache", "when did we switch").
_LIST = re.compile(
    r"^(what|which) (kinds?|types?|sorts?) of\b|^(what|which) (\w+ ){0,2}\w+s (has|have|did|do|does"
    r"|are|were)\b|^how many\b|^what are (some|the)\b|\b(activities|hobbies|things|ways|places)\b",
    re.I,
)
_WHY = re.compile(r"^(why|how)\b(?! (many|much|long|old|often))|\b(would|likely|might)\b", re.I)
_WHEN = re.compile(r"^when\b|\b(what|which) (date|day|year|month|time)\b|\bhow long\b", re.I)


def form(text: str) -> str:
    """The question's form: ``when``, ``why`` (why/how, or a hypothetical), ``list``, or
    ``one`` (one thing asked for)."""
    if _WHEN.search(text):
        return "when"
    if _WHY.search(text):
        return "why"
    if _LIST.search(text):
        return "list"
    return "one"


def overlap(lists: Lists, settings: Settings, depth: int = 10) -> float:
    """The share of BM25's first ``depth`` (lifted) that are in the vector list's first
    ``depth``: how far the two lists agree."""
    keyword, semantic = product_lists(lists, settings)
    kw = {int(str(row[-1])) for row in keyword[:depth]}
    vec = {rowid for rowid, _ in semantic[:depth]}
    return len(kw & vec) / max(len(kw), 1)


def rank_agreement(lists: Lists, settings: Settings, depth: int = 10) -> float:
    """Spearman's correlation of the two lists' ranks over the union of their first ``depth``
    (an entry outside a list's first ``POOL`` ranks just past it): 1 when they agree."""
    keyword, semantic = product_lists(lists, settings)
    kw = {int(str(row[-1])): rank for rank, row in enumerate(keyword)}
    vec = {rowid: rank for rank, (rowid, _) in enumerate(semantic)}
    union = [r for r in kw if kw[r] < depth] + [
        r for r in vec if vec[r] < depth and kw.get(r, depth) >= depth
    ]
    if len(union) < 3:
        return 0.0
    a = [kw.get(r, len(keyword)) for r in union]
    b = [vec.get(r, len(semantic)) for r in union]
    return _pearson(_ranks(a), _ranks(b))


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    for place, i in enumerate(order):
        out[i] = float(place)
    return out


def _pearson(a: Sequence[float], b: Sequence[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return num / den if den > 0 else 0.0


def cosine_gap(lists: Lists) -> float:
    """The vector list's best score less its tenth: how clearly the vectors pick a winner."""
    scores = [score for _, score in lists.semantic[:10]]
    return scores[0] - scores[-1] if scores else 0.0


def bm25_ratio(lists: Lists) -> float:
    """BM25's tenth raw score over its best: near 1 when no entry stands out."""
    scores = [float(str(row[0])) for row in lists.keyword[:10]]
    return scores[-1] / scores[0] if scores and scores[0] else 1.0


def idf_profile(lists: Lists, pick: Callable[[list[float]], float]) -> float:
    """``pick`` (max or mean) of the query's content words' own-text idf over log N: 1 for a
    word no entry holds, near 0 for a word half the entries hold."""
    entries = len(lists.rows)
    values = [_idf(entries, len(lists.own[t])) for t in _content(lists)]
    return pick(values) / math.log(entries + 0.5) if values and entries > 1 else 0.0


@dataclass
class Asked:
    """One scored question: its conversation, category, signals and R@10 by vector weight."""

    sample: str
    category: int
    text: str
    signals: dict[str, Any]
    recall: dict[float, float]


SIGNALS: dict[str, Callable[[str, Lists, Settings], Any]] = {
    "form": lambda text, lists, s: form(text),
    "named": lambda text, lists, s: "named" if lists.names else "no name",
    "words": lambda text, lists, s: len(_content(lists)),
    "overlap10": lambda text, lists, s: overlap(lists, s),
    "rank_agreement": lambda text, lists, s: rank_agreement(lists, s),
    "cosine_top": lambda text, lists, s: lists.semantic[0][1] if lists.semantic else 0.0,
    "cosine_gap": lambda text, lists, s: cosine_gap(lists),
    "bm25_ratio": lambda text, lists, s: bm25_ratio(lists),
    "idf_max": lambda text, lists, s: idf_profile(lists, max),
    "idf_mean": lambda text, lists, s: idf_profile(lists, lambda v: sum(v) / len(v)),
}


def fused_at(lists: Lists, settings: Settings, weight: float) -> list[int]:
    """The rowids of the product's fusion over ``lists`` with the vector list at ``weight``."""

    def idea(li: Lists, value: float) -> Replayed:
        return Replayed(*product_lists(li, settings), _same, value)

    return fuse(lists, settings, idea, weight)


def replay(data: list[dict[str, Any]], settings: Settings, cache: Path | None) -> list[Asked]:
    """Every scored question's signals and R@10 at each of ``WEIGHTS``."""
    texts = [q.text for sample in data for q in load_conversation(sample).questions]
    stored = stored_lists(data, settings, cache)
    assert len(texts) == len(stored), "the pickle is of other data"
    asked = []
    for text, (sample, category, evidence, lists, ids, mapping) in zip(texts, stored, strict=True):
        if category not in SCORED_CATEGORIES:
            continue
        recall = {}
        for w in WEIGHTS:
            order = fused_at(lists, settings, w) if lists else []
            recall[w] = recall_at(expand((ids[r] for r in order), mapping)[:10], evidence, 10)
        signals = {n: f(text, lists, settings) if lists else None for n, f in SIGNALS.items()}
        asked.append(Asked(sample, category, text, signals, recall))
    return asked


def by_group(asked: Sequence[Asked], name: str) -> dict[str, Any]:
    """Mean R@10 by weight, and the mean best weight, within each group of signal ``name``."""
    values = [a.signals[name] for a in asked if a.signals[name] is not None]
    if isinstance(values[0], str):
        group = {a.text: str(a.signals[name]) for a in asked}
    else:
        cuts = sorted(values)
        edges = [cuts[len(cuts) * i // 4] for i in (1, 2, 3)]

        def quartile(v: float | None) -> str:
            q = sum(1 for e in edges if v is not None and v >= e)
            return f"q{q + 1} (>= {edges[q - 1]:.3g})" if q else f"q1 (< {edges[0]:.3g})"

        group = {a.text: quartile(a.signals[name]) for a in asked}
    out: dict[str, Any] = {}
    for g in sorted(set(group.values())):
        inside = [a for a in asked if group[a.text] == g]
        row: dict[str, Any] = {"n": len(inside)}
        for w in WEIGHTS:
            row[str(w)] = round(sum(a.recall[w] for a in inside) / len(inside), 4)
        # The best weight of a question: the smallest of its best (ties: nearest the product's).
        best = [min(WEIGHTS, key=lambda w: (-a.recall[w], abs(w - 0.3))) for a in inside]
        row["mean best"] = round(sum(best) / len(best), 3)
        row["wants more"] = sum(
            1 for a in inside if max(a.recall[w] for w in WEIGHTS[2:]) > a.recall[0.3]
        )
        row["wants less"] = sum(1 for a in inside if a.recall[0.1] > a.recall[0.3])
        out[g] = row
    return out


def rule_fold(
    asked: Sequence[Asked], values: Sequence[str], weight_of: Callable[[Asked, float], float]
) -> Fold:
    """The rule ``weight_of(question, knob)`` at each knob value (``"off"``: the setting's 0.3
    for every question), scored per conversation as ``Fold`` scores a sweep."""
    fold = Fold(["off", *values])
    for value in fold.values:
        for sample in sorted({a.sample for a in asked}):
            scored = []
            for a in (a for a in asked if a.sample == sample):
                w = 0.3 if value == "off" else weight_of(a, float(value))
                scored.append((a.category, 0.0, a.recall[w]))
            fold.add(value, sample, scored)
    return fold


def rules(asked: Sequence[Asked]) -> dict[str, Fold]:
    """Each one-knob rule (module doc), swept and scored per conversation."""
    out: dict[str, Fold] = {}
    for shape in ("list", "why", "when", "one"):
        out[f"form={shape}: weight v"] = rule_fold(
            asked,
            ["0.1", "0.6", "1.0", "2.0"],
            lambda a, v, shape=shape: v if a.signals["form"] == shape else 0.3,
        )
    out["named: weight v for questions naming no one"] = rule_fold(
        asked, ["0.1", "0.6", "1.0"], lambda a, v: v if a.signals["named"] == "no name" else 0.3
    )
    # The thresholds: about the signal's quartiles on the dev split.
    numbers = {
        "words": ["2", "3", "4"],
        "overlap10": ["0.1", "0.2", "0.3"],
        "rank_agreement": ["-0.5", "-0.3", "0"],
        "cosine_top": ["0.93", "1.04", "1.14"],
        "cosine_gap": ["0.12", "0.17", "0.24"],
        "bm25_ratio": ["0.37", "0.5", "0.6"],
        "idf_max": ["0.5", "0.6", "0.7"],
        "idf_mean": ["0.4", "0.5", "0.6"],
    }
    for name, cuts in numbers.items():
        for sign, label in ((-1, "below"), (1, "above")):
            out[f"{name}: {HIGH} {label} t"] = rule_fold(
                asked,
                cuts,
                lambda a, t, n=name, s=sign: (
                    HIGH if a.signals[n] is not None and s * (a.signals[n] - t) > 0 else 0.3
                ),
            )
    return out


def report(asked: Sequence[Asked]) -> dict[str, Any]:
    """The groups of every signal and every rule's sweep with its LOO choice."""
    oracle = sum(max(a.recall.values()) for a in asked) / len(asked)
    return {
        "questions": len(asked),
        "oracle over WEIGHTS": round(oracle, 4),
        "groups": {name: by_group(asked, name) for name in SIGNALS},
        "rules": {name: {**fold.summary(), "setting": name} for name, fold in rules(asked).items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--embed-cache", type=Path, metavar="DIR", required=True)
    parser.add_argument("--lists", type=Path, metavar="FILE", help="pickle of the lists")
    parser.add_argument("--dump", type=Path, metavar="FILE", help="per-question JSON lines")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with hybrid_settings(args.embed_cache) as settings:
        asked = replay(data, settings, args.lists)
    if args.dump:
        with args.dump.open("w", encoding="utf-8") as out:
            for a in asked:
                row = {"sample": a.sample, "category": a.category, "text": a.text}
                out.write(json.dumps({**row, **a.signals, "recall": a.recall}) + "\n")
    result = report(asked)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(json.dumps({k: v for k, v in result.items() if k != "rules"}, indent=1))
        for part in result["rules"].values():
            print(render_sweep(part) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

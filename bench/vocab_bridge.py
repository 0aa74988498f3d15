"""A vocabulary bridge for list questions on LoCoMo, replayed over hybrid search's own lists.

Usage: python bench/vocab_bridge.py --data PATH --embed-cache DIR [--probe] [--json]

A list question ("What pets does Audrey have?", "What activities does Melanie partake in?") has
evidence turns that each name one instance ("my dog", "pottery class") and share only the
speaker's name with the question. The bridge asks the sentence model which words of the
memory's own vocabulary are nearest the question's category word, and fetches the entries
holding those words as a third candidate list:

- Vocabulary: the distinct content words of the entries' own text (the ``name:`` label left
  out; letters only, three or more, not a ``STOPWORDS`` word), and the two-word phrases of
  adjacent content words found at least ``PHRASE_MIN`` times, each embedded once (alone, as the
  model embeds a query) with the packaged model; ``--embed-cache`` keeps them.
- Expansion: for each content word of the question (speakers' names left out), the ``n``
  vocabulary items with the highest cosine to that word alone, at or above ``floor``, other
  than the question's own words and words of the same porter stem (FTS5's stemmer, so BM25
  already matches them). Each keeps its cosine.
- The third list: entries holding an expansion item in their own text (a scan over the
  entries' words), of the speaker the question names when it names one, scored by the sum of
  cosine x idf (own text) of the items they hold, best ``POOL``; fused by RRF at weight ``w``
  beside BM25's and the vectors' lists (``list_candidates.fused``).

Variants fix the structure; the knob is ``w`` (0: the product's fusion, asserted for every
question). Structures: n and floor; whether a question must name a speaker; only the question's
category word (``head_words``: the words right after "what" / "which") instead of all its
content words; and entry-side (``best_word_list``): each entry of the speaker scored by the best
cosine of one of its items to the category word, with no n or floor (over every speaker too,
and on top of the speaker centroid of ``list_candidates.py`` at ``CENTROID_WEIGHT``, whose 0
is the centroid's fusion). A joint fold (``JOINT``) chooses structure and weight together per
conversation. ``reach`` counts, as ``list_candidates.py`` does, for the multi-hop questions
naming a speaker, the evidence turns outside the fused top 10 that each list holds, how many of
those neither product list holds, and how near the category word each such turn's nearest item
is (its rank in the vocabulary, ``RANK_BUCKETS``). ``--probe`` prints instead the nearest
vocabulary items of a few category words in each conversation. Scored like ``locomo_recall.py
--sweep`` (turn R@5 / R@10 per value, category and conversation, and leave-one-conversation-out
over the values).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sqlite3
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusion_replay import Lists, fuse, hybrid_settings, product_lists, score_found
from list_candidates import (
    CENTROID_HITS,
    centroid_list,
    collected_conversations,
    fused,
    ordered,
    speaker_of,
)
from locomo_recall import Fold, expand, indexed, load_conversation, render_sweep

from obsmem.index.db import using_index
from obsmem.index.query import query_tokens
from obsmem.search.bm25 import ROWS_SQL
from obsmem.search.bridge import head_words
from obsmem.search.embeddings import Embedder, resolve_backend
from obsmem.search.vocabulary import entry_words
from obsmem.search.vocabulary import stems as vocabulary_stems
from obsmem.settings import Settings

POOL = 50
#: A two-word phrase enters the vocabulary when it occurs at least this often.
PHRASE_MIN = 3
_TEXT = 11  # the entry's text in a result row
PROBES = ("activities", "authors", "pets", "hobbies", "instruments", "places", "books")


def words_of(text: str) -> list[str]:
    """The content words of an entry's own text, in order ("" marks a dropped word, so phrases
    never span one): the product's rule (``vocabulary.entry_words``)."""
    return entry_words(text)


def stems(words: Sequence[str]) -> dict[str, str]:
    """Each word's porter stem, from FTS5 with the index's tokenizer (``vocabulary.stems``)."""
    return dict(zip(words, vocabulary_stems(list(words)), strict=True))


@dataclass
class Vocabulary:
    """One memory's vocabulary: items, their unit vectors, each item's entries (rowids), its
    idf over the entries' own text, and each item's stem."""

    items: list[str]
    matrix: npt.NDArray[np.float32]
    holders: list[set[int]]
    idf: npt.NDArray[np.float64]
    stem: dict[str, str]
    seconds: float
    items_of: dict[int, list[int]]

    @classmethod
    def build(cls, rows: Mapping[int, Sequence[object]], embedder: Embedder) -> Vocabulary:
        """The vocabulary of ``rows`` (rowid -> result row), embedded; ``seconds`` is the CPU
        time of embedding it (zero when every item came from the cache)."""
        holders: dict[str, set[int]] = defaultdict(set)
        phrases: Counter[str] = Counter()
        for rowid, row in rows.items():
            words = words_of(str(row[_TEXT]))
            for word in words:
                if word:
                    holders[word].add(rowid)
            for a, b in itertools.pairwise(words):
                if a and b:
                    phrases[f"{a} {b}"] += 1
                    holders[f"{a} {b}"].add(rowid)
        items = sorted(w for w in holders if " " not in w or phrases[w] >= PHRASE_MIN)
        started = time.process_time()
        matrix = np.asarray(embedder.embed(items), dtype=np.float32)
        seconds = time.process_time() - started
        n = len(rows)
        idf = np.array([math.log((n + 1) / (len(holders[w]) + 0.5)) for w in items])
        items_of: dict[int, list[int]] = defaultdict(list)
        for i, item in enumerate(items):
            for rowid in holders[item]:
                items_of[rowid].append(i)
        held = [holders[w] for w in items]
        return cls(items, matrix, held, idf, stems(items), seconds, dict(items_of))


def own_stems(vocab: Vocabulary, words: Sequence[str]) -> set[str]:
    """The porter stems of ``words`` (the vocabulary's when it holds them)."""
    return {vocab.stem.get(w) or stems([w])[w] for w in words}


def expansion(
    vocab: Vocabulary, words: Sequence[str], vectors: npt.NDArray[np.float32], n: int, floor: float
) -> dict[int, float]:
    """Vocabulary item index -> its best cosine to one of ``words`` (embedded as ``vectors``),
    the ``n`` nearest of each word at or above ``floor``, the words' own stems left out."""
    own = own_stems(vocab, words)
    out: dict[int, float] = {}
    for vector in vectors:
        sims = vocab.matrix @ vector
        taken = 0
        for i in np.argsort(-sims, kind="stable"):
            if sims[i] < floor or taken >= n:
                break
            item = vocab.items[int(i)]
            if set(vocab.stem[item].split()) & own:
                continue
            out[int(i)] = max(out.get(int(i), 0.0), float(sims[i]))
            taken += 1
    return out


@dataclass
class Bridge:
    """The third list's inputs for one conversation: the vocabulary, each question's content
    words' vectors (by word) and the entries' speakers."""

    vocab: Vocabulary
    word_vectors: dict[str, npt.NDArray[np.float32]]
    speakers: dict[int, str]


def content_words(query: str, names: set[str]) -> list[str]:
    """The question's words the bridge expands: its search words, names and short ones left out."""
    return [w for w in query_tokens(query) if w not in names and len(w) > 2 and w.isalpha()]


def bridge_list(
    lists: Lists,
    query: str,
    bridge: Bridge,
    n: int,
    floor: float,
    named_only: bool,
    head_only: bool = False,
) -> list[int]:
    """The third list (module doc), best first; empty when nothing is expanded."""
    if named_only and not lists.names:
        return []
    words = (head_words if head_only else content_words)(query, lists.names)
    if not words:
        return []
    vectors = np.stack([bridge.word_vectors[w] for w in words])
    items = expansion(bridge.vocab, words, vectors, n, floor)
    scores: dict[int, float] = defaultdict(float)
    for i, cosine in items.items():
        for rowid in bridge.vocab.holders[i]:
            if not lists.names or bridge.speakers.get(rowid) in lists.names:
                scores[rowid] += cosine * float(bridge.vocab.idf[i])
    return sorted(scores, key=lambda r: (-scores[r], r))[:POOL]


def item_cosines(bridge: Bridge, words: Sequence[str]) -> npt.NDArray[np.float32]:
    """Each vocabulary item's best cosine to one of ``words`` (their own stems at -1)."""
    vocab = bridge.vocab
    sims = np.max(vocab.matrix @ np.stack([bridge.word_vectors[w] for w in words]).T, axis=1)
    own = own_stems(vocab, words)
    mask = np.array([bool(set(vocab.stem[item].split()) & own) for item in vocab.items])
    return np.where(mask, -1.0, sims).astype(np.float32)


def best_word_list(
    lists: Lists, query: str, bridge: Bridge, head_only: bool = True, every: bool = False
) -> list[int]:
    """Entry-side: the named speaker's entries (every entry when none is named, or with
    ``every``) by the best cosine of one of their items to the question's category word (its
    content words unless ``head_only``), best ``POOL``."""
    words = (head_words if head_only else content_words)(query, lists.names)
    if not words:
        return []
    sims = item_cosines(bridge, words)
    best: dict[int, float] = {}
    for rowid, items in bridge.vocab.items_of.items():
        if lists.names and not every and bridge.speakers.get(rowid) not in lists.names:
            continue
        if items:
            best[rowid] = float(sims[items].max())
    return sorted(best, key=lambda r: (-best[r], r))[:POOL]


def best_rank(bridge: Bridge, words: Sequence[str], rowids: Sequence[int]) -> list[int]:
    """For each of ``rowids``, the rank (1 = nearest) among the vocabulary, by cosine to
    ``words``, of the entry's nearest item (the words' own stems left out)."""
    sims = item_cosines(bridge, words)
    rank = np.empty(len(sims), dtype=np.int64)
    rank[np.argsort(-sims, kind="stable")] = np.arange(1, len(sims) + 1)
    items = bridge.vocab.items_of
    return [int(rank[items[r]].min()) if items.get(r) else len(sims) for r in rowids]


@dataclass(frozen=True)
class Variant:
    """One structure of the bridge; the knob is its list's RRF weight."""

    n: int
    floor: float
    named_only: bool = False
    head_only: bool = False
    best_only: bool = False
    every: bool = False
    centroid: bool = False

    def third(self, lists: Lists, query: str, bridge: Bridge) -> list[int]:
        """This variant's list for one question."""
        if self.best_only:
            return best_word_list(lists, query, bridge, self.head_only, self.every)
        return bridge_list(
            lists, query, bridge, self.n, self.floor, self.named_only, self.head_only
        )


VARIANTS = {
    "bridge n 5, floor 0.5": Variant(5, 0.5),
    "bridge n 3, floor 0.55": Variant(3, 0.55),
    "bridge n 10, floor 0.45": Variant(10, 0.45),
    "bridge n 5, floor 0.5, named only": Variant(5, 0.5, True),
    "bridge n 10, floor 0.45, category word": Variant(10, 0.45, head_only=True),
    "bridge n 20, floor 0.4, category word": Variant(20, 0.4, head_only=True),
    "bridge n 40, floor 0.35, category word": Variant(40, 0.35, head_only=True),
    "entry-side, best item, category word": Variant(0, 0.0, head_only=True, best_only=True),
    "entry-side, best item, content words": Variant(0, 0.0, best_only=True),
    "entry-side, best item, category word, every speaker": Variant(
        0, 0.0, head_only=True, best_only=True, every=True
    ),
    "entry-side, best item, category word, on the centroid": Variant(
        0, 0.0, head_only=True, best_only=True, centroid=True
    ),
}
WEIGHTS = ["0", "0.1", "0.2", "0.3", "0.5"]
#: The speaker centroid (``list_candidates.py``: 5 hits, the neighbours' cosine at 1) at its
#: leave-one-conversation-out weight (docs/benchmarks.md), for the variants on top of it.
CENTROID_WEIGHT = 0.15
#: Buckets of the rank of a missed evidence turn's nearest vocabulary item.
RANK_BUCKETS = (20, 40, 100, 300, 10**9)
#: The fold over every variant and weight at once (the structure chosen by LOO too).
JOINT = "every variant and weight"


def bridged(
    lists: Lists,
    settings: Settings,
    third: Sequence[int],
    weight: float,
    before: Sequence[int] = (),
) -> list[int]:
    """The fused rowids with the bridge's list ``third`` at ``weight`` (0: the product's), and
    the speaker centroid's list ``before`` at ``CENTROID_WEIGHT`` when given."""
    more = [(before, CENTROID_WEIGHT)] if before else []
    if weight <= 0 or not third:
        return ordered(lists, *fused(lists, settings, more=more))
    return ordered(lists, *fused(lists, settings, third, weight, more))


def probe(data: list[dict[str, Any]], settings: Settings) -> str:
    """The nearest vocabulary items of ``PROBES`` in each conversation (nothing excluded)."""
    out = []
    for sample in data:
        conversation = load_conversation(sample)
        with indexed(conversation, settings) as (store, _):
            embedder = resolve_backend(settings).embedder
            assert embedder is not None
            rows = using_index(store.index_path, all_rows)
            vocab = Vocabulary.build(rows, embedder)
            out.append(f"{conversation.sample_id}: {len(vocab.items)} items")
            for word, vector in zip(PROBES, embedder.embed(list(PROBES)), strict=True):
                sims = vocab.matrix @ vector
                best = np.argsort(-sims, kind="stable")[:12]
                near = ", ".join(f"{vocab.items[int(i)]} {sims[i]:.2f}" for i in best)
                out.append(f"  {word}: {near}")
    return "\n".join(out)


def all_rows(conn: sqlite3.Connection) -> dict[int, tuple[object, ...]]:
    """Every entry's result row (``ROWS_SQL``) by rowid."""
    rowids = [int(r) for (r,) in conn.execute("SELECT rowid FROM entries")]
    return {r: tuple(conn.execute(ROWS_SQL.format(marks="?"), (r,)).fetchone()) for r in rowids}


def run(data: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """Every variant at every weight on every conversation of ``data``, and the reach counts."""
    started = time.process_time()
    folds = {name: Fold(WEIGHTS) for name in VARIANTS}
    joint = [
        "0",
        *(f"{name} @ {w}" for name, v in VARIANTS.items() if not v.centroid for w in WEIGHTS[1:]),
    ]
    folds[JOINT] = Fold(joint)
    counts: dict[str, int] = defaultdict(int)
    embed_seconds, items = 0.0, 0
    for conversation, mapping, collected, ids, entries, _ in collected_conversations(
        data, settings
    ):
        embedder = resolve_backend(settings).embedder
        assert embedder is not None
        questions = conversation.questions
        texts = [q.text for q in questions]
        rows = next(li.rows for li in collected if li is not None)
        vocab = Vocabulary.build(rows, embedder)
        embed_seconds += vocab.seconds
        items += len(vocab.items)
        wanted = sorted(
            {
                w
                for q, li in zip(texts, collected, strict=True)
                if li
                for w in content_words(q, li.names)
            }
        )
        word_vectors = dict(zip(wanted, np.asarray(embedder.embed(wanted)), strict=True))
        speakers = {r: speaker_of(str(row[_TEXT])) for r, row in rows.items()}
        bridge = Bridge(vocab, word_vectors, speakers)
        rowid_of = {dia: r for r, i in ids.items() for dia in mapping.get(i, ())}
        thirds = {
            name: [
                v.third(li, q, bridge) if li else [] for q, li in zip(texts, collected, strict=True)
            ]
            for name, v in VARIANTS.items()
        }
        centroids = [
            centroid_list(li, entries, *fused(li, settings), CENTROID_HITS, context=1.0)
            if li
            else []
            for li in collected
        ]
        for at, (question, lists) in enumerate(zip(questions, collected, strict=True)):
            if lists is None:
                continue
            product = fuse(lists, settings)
            for name, v in VARIANTS.items():
                if not v.centroid and bridged(lists, settings, thirds[name][at], 0) != product:
                    raise SystemExit(f"{name} at 0 is not the product on {question.text!r}")
            if question.category == 1 and lists.names:
                top = set(expand((ids[r] for r in product), mapping)[:10])
                missed = [rowid_of[d] for d in set(question.evidence) - top if d in rowid_of]
                held = {name: third[at] for name, third in thirds.items()}
                reach(lists, settings, held, missed, counts)
                heads = head_words(question.text, lists.names)
                if not heads:
                    counts["missed, no category word"] += len(missed)
                for rank in best_rank(bridge, heads, missed) if heads else []:
                    bucket = next(f"<= {b}" for b in RANK_BUCKETS if rank <= b)
                    counts[f"missed, nearest item's rank {bucket}"] += 1
        for name, v in VARIANTS.items():
            before = centroids if v.centroid else [[] for _ in collected]
            for value in WEIGHTS:
                found = (
                    [ids[r] for r in bridged(li, settings, third, float(value), c)] if li else []
                    for li, third, c in zip(collected, thirds[name], before, strict=True)
                )
                scored = score_found(questions, found, mapping)
                folds[name].add(value, conversation.sample_id, scored)
                if v.centroid:
                    continue  # its 0 is the centroid's fusion, not the product's
                joint_value = f"{name} @ {value}" if value != "0" else "0"
                folds[JOINT].add(joint_value, conversation.sample_id, scored)
    seconds = round(time.process_time() - started, 1)
    sweeps = {
        name: {**fold.summary(), "setting": name, "backend": "hybrid replay", "seconds": seconds}
        for name, fold in folds.items()
    }
    cost = {"items": items, "embed_cpu_seconds": round(embed_seconds, 2)}
    return {"sweeps": sweeps, "reach": dict(counts), "cpu_seconds": seconds, "vocabulary": cost}


def reach(
    lists: Lists,
    settings: Settings,
    held: Mapping[str, Sequence[int]],
    missed: Sequence[int],
    counts: dict[str, int],
) -> None:
    """Add to ``counts`` how many of ``missed`` (evidence rowids outside the fused top 10) each
    variant's list (``held``, by name) holds, and those of them new to the product's lists."""
    keyword, semantic = product_lists(lists, settings)
    known = {int(str(row[-1])) for row in keyword} | {r for r, _ in semantic}
    counts["missed"] += len(missed)
    for name, third in held.items():
        got = set(third)
        counts[name] += sum(r in got for r in missed)
        counts[f"{name}, new"] += sum(r in got and r not in known for r in missed)


def render(report: Mapping[str, Any]) -> str:
    """The sweeps as ``locomo_recall.py --sweep`` prints them, then reach and cost."""
    parts = [render_sweep(part) for part in report["sweeps"].values()]
    counts = ", ".join(f"{name} {value}" for name, value in report["reach"].items())
    parts.append(f"multi-hop evidence outside the top 10 (questions naming a speaker): {counts}")
    parts.append(f"vocabulary: {report['vocabulary']}; CPU {report['cpu_seconds']} s")
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--embed-cache", type=Path, metavar="DIR", required=True)
    parser.add_argument("--probe", action="store_true", help="print the probes' nearest items")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with hybrid_settings(args.embed_cache) as settings:
        if args.probe:
            print(probe(data, settings))
            return 0
        report = run(data, settings)
    print(json.dumps(report, indent=1, sort_keys=True) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the evidence LoCoMo's questions miss lies: every candidate list's rank, grouped by cause.

Usage: python bench/locomo_misses.py --data PATH --embed-cache DIR [--json] [--out FILE]

Each conversation is indexed and embedded as ``locomo_recall.py --backend hybrid`` does (the
settings of the environment, so the product's defaults), and each question goes through
``search()`` (limit 10) as there. While it runs, the lists ``hybrid_rows`` fuses are recorded
(``rrf_fuse``'s first call: BM25's pool lifted, the vector pool after its date boost; and what
``bridge_list`` and ``_centroid_list`` return, when the query gets those lists), and so is the
whole fused order (the last ``fused_order`` call), so every evidence turn has its rank in each
list and in the fusion, not only "in the top 10 or not". Deeper ranks are read apart: BM25 300
rows deep with the product's ranking (``bm25_rows``), and the vector ranking 300 deep
(neighbours' cosine, no date boost).

Each evidence turn outside the fused top 10 gets one cause, the first that applies:

- ``fused 11-20``: the fusion has it just below the cut.
- ``fused 21-50``: further down the fusion.
- ``in a list, fused below 50``: one of the fused lists holds it, the fusion ranks it lower.
- ``in no list, shares a word``: no fused list holds it, though its own text holds a content
  word of the question (speakers' names and one-letter pieces such as the "s" of "Tim's" left
  out).
- ``in no list, no shared word``: no fused list holds it and its own text shares no content
  word with the question (a vocabulary gap).

Beside the cause, each missed turn records whether its own text holds a query word (names of
speakers left out), and each question whether it names a date, how many evidence turns it has
and how many it found (a multi-evidence question half found). ``--out`` writes every miss
(question, category, evidence text, ranks) as JSON lines, for reading.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_recall import (
    CATEGORIES,
    KS,
    SCORED_CATEGORIES,
    embed_cache,
    indexed,
    load_conversation,
)

from obsmem.index.db import using_index
from obsmem.index.query import fts_query, query_tokens
from obsmem.search import hybrid, search
from obsmem.search.bm25 import Ranking, bm25_rows
from obsmem.search.dates import query_dates
from obsmem.search.embeddings import packaged_model_folder, resolve_backend
from obsmem.search.speakers import ROLES, query_speakers
from obsmem.search.vectors import VectorStore
from obsmem.settings import Settings, load_settings

#: How deep BM25 and the vector ranking are read for the "deep" ranks.
DEEP = 300
LIST_NAMES = ("bm25", "vector", "bridge", "centroid")
CAUSES = (
    "fused 11-20",
    "fused 21-50",
    "in a list, fused below 50",
    "in no list, shares a word",
    "in no list, no shared word",
)


class Recorder:
    """Keeps what ``hybrid_rows`` computed for its last query: the two first lists it fused
    (``rrf_fuse``'s first call), the bridge's and the centroid's lists, and the fused order."""

    def __init__(self) -> None:
        self.lists: dict[str, list[int]] = {}
        self.order: list[int] = []

    @contextlib.contextmanager
    def wrapping(self) -> Iterator[None]:
        """Wrap the functions in ``hybrid`` (where ``hybrid_rows`` looks them up)."""
        saved = hybrid.rrf_fuse, hybrid.fused_order, hybrid.bridge_list, hybrid._centroid_list
        fuse, order, bridge, centroid = saved
        self.lists, self.order = {}, []

        def rrf(rankings: Any, weights: Any, k: float = 60.0) -> dict[int, float]:
            if "bm25" not in self.lists:
                self.lists["bm25"], self.lists["vector"] = (list(r) for r in rankings[:2])
            return fuse(rankings, weights, k)

        def ordered(scores: Any, pinned: int | None = None) -> list[int]:
            self.order = order(scores, pinned)
            return self.order

        def bridged(*args: Any, **kwargs: Any) -> list[int]:
            self.lists["bridge"] = list(bridge(*args, **kwargs))
            return self.lists["bridge"]

        def centred(*args: Any, **kwargs: Any) -> list[int]:
            self.lists["centroid"] = list(centroid(*args, **kwargs))
            return self.lists["centroid"]

        hybrid.rrf_fuse, hybrid.fused_order = rrf, ordered  # type: ignore[assignment]
        hybrid.bridge_list, hybrid._centroid_list = bridged, centred  # type: ignore[assignment]
        try:
            yield
        finally:
            hybrid.rrf_fuse, hybrid.fused_order = fuse, order  # type: ignore[assignment]
            hybrid.bridge_list, hybrid._centroid_list = bridge, centroid  # type: ignore[assignment]


def rank_in(ranking: Sequence[int], rowid: int) -> int | None:
    """1-based rank of ``rowid`` in ``ranking``, None when absent."""
    try:
        return ranking.index(rowid) + 1
    except ValueError:
        return None


def deep_ranks(
    conn: sqlite3.Connection, query: str, settings: Settings, embedder: Any
) -> tuple[list[int], list[int], dict[str, set[int]]]:
    """BM25's rowids ``DEEP`` deep, the vector ranking's ``DEEP`` deep, and for each content word
    of the query (names left out) the rowids holding it in their own text."""
    expression = fts_query(query)
    keyword: list[int] = []
    own: dict[str, set[int]] = {}
    if expression is not None:
        ranking = Ranking.for_query(query, settings)
        keyword = [int(str(row[-1])) for row in bm25_rows(conn, expression, DEEP, ranking)]
        names = {n.casefold() for n in query_speakers(query)} | set(ROLES)
        for term in query_tokens(query):
            if term in names or len(term) < 2:  # "s" of "Caroline's" is no shared word
                continue
            alone = fts_query(term)
            assert alone is not None
            found = conn.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?", (f"{{text}} : {alone}",)
            )
            own[term] = {int(r) for (r,) in found}
    vectors = VectorStore(conn, embedder, settings.search_vector_context_weight)
    semantic = [rowid for rowid, _ in vectors.rank(query, DEEP)]
    return keyword, semantic, own


def cause(ranks: Mapping[str, Any], shared: Sequence[str]) -> str:
    """The first cause of ``CAUSES`` that applies to one missed evidence turn (module doc)."""
    fused = ranks["fused"]
    if fused is not None and fused <= 20:
        return CAUSES[0]
    if fused is not None and fused <= 50:
        return CAUSES[1]
    if any(ranks[name] is not None for name in LIST_NAMES):
        return CAUSES[2]
    return CAUSES[3] if shared else CAUSES[4]


def analyse(data: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """Every missed evidence turn of ``data`` with its ranks and cause; the counts by cause."""
    misses: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    recorder = Recorder()
    for sample in data:
        conversation = load_conversation(sample)
        by_dia = {t.dia_id: t for t in conversation.turns}
        with indexed(conversation, settings) as (store, mapping):
            embedder = resolve_backend(settings).embedder
            assert embedder is not None
            dia_rowid: dict[str, int] = {}

            def read_ids(conn: sqlite3.Connection) -> dict[int, str]:
                return {int(r): str(i) for r, i in conn.execute("SELECT rowid, id FROM entries")}

            ids = using_index(store.index_path, read_ids)
            for rowid, entry_id in ids.items():
                for dia in mapping.get(entry_id, ()):
                    dia_rowid[dia] = rowid
            for question in conversation.questions:
                if question.category not in SCORED_CATEGORIES:
                    continue
                with recorder.wrapping():
                    hits = search(store, question.text, limit=max(KS), settings=settings)
                top = {dia for h in hits for dia in mapping.get(h.id, ())}
                lists = {n: r for n, r in recorder.lists.items() if r}
                keyword, semantic, own = using_index(
                    store.index_path,
                    partial(deep_ranks, query=question.text, settings=settings, embedder=embedder),
                )

                def matched(conn: sqlite3.Connection, q: str = question.text) -> set[int]:
                    expression = fts_query(q)
                    if expression is None:
                        return set()
                    rows = conn.execute(
                        "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?", (expression,)
                    )
                    return {int(r) for (r,) in rows}

                any_word = using_index(store.index_path, matched)
                found = [e for e in question.evidence if e in top]
                questions.append(
                    {
                        "conversation": conversation.sample_id,
                        "category": question.category,
                        "evidence": len(question.evidence),
                        "found": len(found),
                        "dated": bool(query_dates(question.text)),
                        "named": bool(query_speakers(question.text)),
                        "lists": sorted(lists),
                        "recall@10": len(found) / len(set(question.evidence)),
                    }
                )
                for dia in question.evidence:
                    if dia in top:
                        continue
                    rowid = dia_rowid[dia]
                    ranks: dict[str, Any] = {
                        name: rank_in(lists.get(name, []), rowid) for name in LIST_NAMES
                    }
                    ranks["fused"] = rank_in(recorder.order, rowid)
                    ranks["bm25_deep"] = rank_in(keyword, rowid)
                    ranks["vector_deep"] = rank_in(semantic, rowid)
                    ranks["bm25_matched"] = rowid in any_word
                    shared = sorted(t for t, holders in own.items() if rowid in holders)
                    misses.append(
                        {
                            "conversation": conversation.sample_id,
                            "category": question.category,
                            "question": question.text,
                            "evidence": dia,
                            "evidence_count": len(question.evidence),
                            "found_of_question": len(found),
                            "dated": bool(query_dates(question.text)),
                            "text": by_dia[dia].text,
                            "shared_words": shared,
                            "same_session_as_a_hit": any(
                                d.split(":")[0] == dia.split(":")[0] for d in top
                            ),
                            "cause": cause(ranks, shared),
                            **ranks,
                        }
                    )
    return {"misses": misses, "questions": questions, "summary": summarise(misses, questions)}


def summarise(misses: Sequence[Mapping[str, Any]], questions: Sequence[Mapping[str, Any]]) -> Any:
    """Counts: missed turns by cause and category; questions missing some evidence, by kind."""
    by_cause: dict[str, Counter[int]] = defaultdict(Counter)
    own_word: Counter[str] = Counter()
    same_session: Counter[str] = Counter()
    for miss in misses:
        by_cause[miss["cause"]][miss["category"]] += 1
        own_word[miss["cause"]] += bool(miss["shared_words"])
        same_session[miss["cause"]] += miss["same_session_as_a_hit"]
    missing = [q for q in questions if q["found"] < q["evidence"]]
    kinds = Counter(
        "none found" if q["found"] == 0 else "some found (multi-evidence, part found)"
        for q in missing
    )
    by_conv: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        by_conv[q["conversation"]].append(q["recall@10"])
    return {
        "turn.recall@10": round(sum(q["recall@10"] for q in questions) / len(questions), 4),
        "turn.recall@10.conversations": {c: round(sum(v) / len(v), 4) for c, v in by_conv.items()},
        "questions": len(questions),
        "questions_missing_evidence": len(missing),
        "questions_missing_by_category": dict(Counter(q["category"] for q in missing)),
        "questions_missing_by_kind": dict(kinds),
        "questions_missing_multi_evidence": sum(q["evidence"] > 1 for q in missing),
        "questions_missing_dated": sum(q["dated"] for q in missing),
        "questions_dated": sum(q["dated"] for q in questions),
        "missed_turns": len(misses),
        "missed_turns_by_cause": {
            c: {
                "total": sum(by_cause[c].values()),
                **{CATEGORIES[k]: v for k, v in by_cause[c].items()},
            }
            for c in CAUSES
        },
        "missed_turns_own_text_shares_a_word": dict(own_word),
        "missed_turns_same_session_as_a_hit": dict(same_session),
    }


@contextlib.contextmanager
def product_settings(cache: Path) -> Iterator[Settings]:
    """The environment's settings with the hybrid backend, the embedding cache in ``cache`` and
    (unless ``OM_EMBED_MODEL_PATH`` names one) the packaged model, as ``locomo_recall.py`` runs."""
    env = dict(os.environ, OM_SEARCH_BACKEND="hybrid")
    with contextlib.ExitStack() as stack:
        model_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="om-model-"))
        stack.enter_context(embed_cache(cache))
        if not env.get("OM_EMBED_MODEL_PATH"):
            env["OM_EMBED_MODEL_PATH"] = str(packaged_model_folder(Path(model_dir)))
        yield load_settings(env)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--embed-cache", type=Path, metavar="DIR", required=True)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--out", type=Path, help="write every miss as one JSON line here")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    with product_settings(args.embed_cache) as settings:
        report = analyse(data, settings)
    if args.out:
        with args.out.open("w", encoding="utf-8") as out:
            for miss in report["misses"]:
                out.write(json.dumps(miss) + "\n")
    print(json.dumps(report["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

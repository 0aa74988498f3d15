"""The fusion replay (``bench/fusion_replay.py``) on the LoCoMo smoke test's tiny conversation.

The replay's figures stand for hybrid search only if replaying the fusion gives what
``search()`` gives: ``--check`` asserts it for every question, and this runs that check, then
checks that each idea's value "as the product does" scores the same figure, and that BM25's
score is the sum of its words' scores, which the word-weighting ideas rebuild its list from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

L = load_script("locomo_recall")
R = load_script("fusion_replay")


def test_the_replay_matches_search_and_each_idea_starts_from_the_product(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    report = R.run([SAMPLE], settings, check=True)  # raises SystemExit on any difference
    assert set(report) == set(R.ideas(settings))
    # Each idea's first value is the product as it is, so all of them score one figure; not
    # so the two whose first value is the product without something (BM25's lift, the date).
    products = {
        name: part["values"][next(iter(part["values"]))]["turn.recall@10"]
        for name, part in report.items()
        if name not in {"fused-nearby-only", "vector-date"}
    }
    assert len(set(products.values())) == 1
    assert "leave-one-conversation-out" in R.render_sweep(report["day-cap"])


def test_bm25s_score_is_the_sum_of_its_words_scores_so_words_can_be_weighted(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    # The word-weighting ideas rebuild BM25's list from each word's score alone; that stands
    # for BM25 only if FTS5's score of the OR query (with the speaker factor) is their sum.
    from obsmem.index.db import using_index
    from obsmem.search.embeddings import resolve_backend
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    conversation = L.load_conversation(SAMPLE)
    with L.indexed(conversation, settings) as (store, _):
        embedder = resolve_backend(settings).embedder
        [(lists, _)] = using_index(
            store.index_path,
            lambda conn: R._collect(conn, ["What did Ben make in pottery?"], embedder, settings),
        )
    assert set(lists.terms) == {"ben", "make", "pottery"} and lists.names == {"ben"}
    raw = {int(str(row[-1])): float(str(row[0])) for row in lists.keyword}
    summed = {r: sum(scores.get(r, 0.0) for scores in lists.terms.values()) for r in raw}
    assert summed == pytest.approx(raw)
    # D1:2 and D2:1 hold "pottery" in their own text; the neighbours column reaches the rest.
    assert len(lists.own["pottery"]) == 2
    # Doubling a word adds its score once more, and nothing else changes.
    plain = settings.replace(search_nearby_weight=0.0)
    doubled = {
        int(str(r[-1])): float(str(r[0])) for r in R.rebuilt_keyword(lists, {"pottery": 2.0}, plain)
    }
    expected = {r: raw[r] + lists.terms["pottery"].get(r, 0.0) for r in raw}
    assert doubled == pytest.approx(expected)

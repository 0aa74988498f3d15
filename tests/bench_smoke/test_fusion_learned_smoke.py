"""The learned fusion's fit (``bench/fusion_learned.py``) on the LoCoMo smoke conversation.

Its held-out figures compare with the product's only if the scorer at the product's weights
(RRF's two, the rest 0) ranks every question as the product's fusion does, so that is checked
against the replay (itself checked against ``search()`` in ``test_fusion_replay_smoke.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

L = load_script("locomo_recall")
R = load_script("fusion_replay")
F = load_script("fusion_learned")


def _questions(tmp_path: Path, hybrid_env: dict[str, str]) -> tuple[list[object], list[object]]:
    from obsmem.index.db import using_index
    from obsmem.search.embeddings import resolve_backend
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    conversation = L.load_conversation(SAMPLE)
    with L.indexed(conversation, settings) as (store, mapping):
        embedder = resolve_backend(settings).embedder
        texts = [q.text for q in conversation.questions]
        collected = using_index(
            store.index_path, lambda conn: R._collect(conn, texts, embedder, settings)
        )
    questions = [
        F.question_of(lists, ids, mapping, settings, "s", q.category, q.evidence)
        for q, (lists, ids) in zip(conversation.questions, collected, strict=True)
    ]
    replayed = [R.fuse(lists, settings) if lists else [] for lists, _ in collected]
    return questions, replayed


def test_the_scorer_at_the_products_weights_is_the_products_fusion(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    questions, replayed = _questions(tmp_path, hybrid_env)
    start = np.zeros(len(F.FEATURES))
    start[:2] = 1.0, 0.3  # OM_SEARCH_BM25_WEIGHT, OM_SEARCH_VECTOR_WEIGHT
    assert any(replayed)
    assert [F.ranked(q, start) for q in questions] == replayed
    # A different weighting gives a different order somewhere (the comparison can fail).
    other = start.copy()
    other[0] = 0.0
    assert [F.ranked(q, other) for q in questions] != replayed


def test_fitting_never_lowers_the_figure_it_is_fitted_on(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    questions, _ = _questions(tmp_path, hybrid_env)
    start = np.zeros(len(F.FEATURES))
    start[0] = 1.0  # BM25 alone: the vectors' weight has room to help
    before = F.mean_recall(questions, start)
    fitted = F.fit(questions, start, rounds=1)
    assert F.mean_recall(questions, fitted) >= before
    both = F.fit_both(questions, start, ridge=0.1)
    assert np.isfinite(both).all()

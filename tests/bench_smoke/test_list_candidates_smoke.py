"""The list-question candidates (``bench/list_candidates.py``) on the LoCoMo smoke conversation.

Its figures compare with the product only if each variant at 0 is the product's fusion (``run``
stops otherwise, and is run here), and they mean what the docs say only if the second hop and
the centroid keep to the speaker and a weight reaches the fusion: both are checked here.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

L = load_script("locomo_recall")
C = load_script("list_candidates")


def test_speaker_of_an_entry() -> None:
    assert C.speaker_of("Ben: My pottery bowl won a prize.") == "ben"
    assert C.speaker_of("no speaker here") == ""
    assert C.speaker_of(": empty name") == ""


def test_every_variant_at_0_is_the_product(tmp_path: Path, hybrid_env: dict[str, str]) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    report = C.run([SAMPLE], settings)  # raises SystemExit if a variant at 0 is not the product
    assert set(report["sweeps"]) == set(C.variants())
    products = {part["values"]["0"]["turn.recall@10"] for part in report["sweeps"].values()}
    assert len(products) == 1
    assert "leave-one-conversation-out" in C.render(report)


def test_the_hop_and_the_centroid_keep_to_the_speaker(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.index.db import using_index
    from obsmem.search.embeddings import resolve_backend
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    conversation = L.load_conversation(SAMPLE)
    question = "What did Ben make in pottery?"
    with L.indexed(conversation, settings) as (store, _):
        embedder = resolve_backend(settings).embedder
        [lists], _, entries = using_index(
            store.index_path,
            partial(C.collect, texts=[question], embedder=embedder, settings=settings),
        )
    ben = {r for r, i in entries.at.items() if entries.speakers[i] == "ben"}
    assert lists.names == {"ben"} and len(ben) == 3
    some = next(iter(ben))
    assert {r for r, _ in C.nearest(entries, some, 5)} == ben - {some}
    scores, pinned = C.fused(lists, settings)
    assert set(C.centroid_list(lists, entries, scores, pinned, 5)) == ben
    assert len(C.centroid_list(lists, entries, scores, pinned, 5, every=True)) == 6
    # A heavy third list reaches the fusion: its order is the centroid's, not the product's.
    third = C.centroid_list(lists, entries, scores, pinned, 5)
    product = C.ordered(lists, scores, pinned)
    assert C.centroid(lists, settings, entries, 10.0)[:3] == third != product[:3]
    assert C.centroid(lists, settings, entries, 0.0) == C.ordered(lists, scores, pinned)

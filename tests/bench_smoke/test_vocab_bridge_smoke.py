"""The vocabulary bridge (``bench/vocab_bridge.py``) on the LoCoMo smoke conversation.

Its figures compare with the product only if every variant at 0 is the product's fusion
(``run`` stops otherwise, and is run here); they mean what the docs say only if the category
word is the one after "what", the vocabulary is the entries' own words, the lists keep to the
named speaker and a weight reaches the fusion: each is checked here.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

L = load_script("locomo_recall")
C = load_script("list_candidates")
B = load_script("vocab_bridge")


def test_the_category_word_follows_what_or_which() -> None:
    names = {"melanie", "caroline", "audrey"}
    assert B.head_words("What activities does Melanie partake in?", names) == ["activities"]
    assert B.head_words("What kind of pets does Audrey have?", names) == ["pets"]
    assert B.head_words("What LGBTQ+ events has Caroline joined?", names) == ["lgbtq", "events"]
    assert B.head_words("What did Caroline research?", names) == []
    assert B.head_words("Where has Melanie camped?", names) == []


def test_the_vocabulary_is_the_entries_own_content_words() -> None:
    # The speaker's label, stopwords and words under three letters are left out; a gap ("")
    # keeps a phrase from spanning a dropped word.
    assert B.words_of("Ben: My pottery bowl won a prize.") == [
        "",
        "pottery",
        "bowl",
        "won",
        "",
        "prize",
    ]
    assert B.stems(["pets", "pet", "pottery bowl"]) == {
        "pets": "pet",
        "pet": "pet",
        "pottery bowl": "potteri bowl",
    }


def test_every_variant_at_0_is_the_product(tmp_path: Path, hybrid_env: dict[str, str]) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    report = B.run([SAMPLE], settings)  # raises SystemExit if a variant at 0 is not the product
    assert set(report["sweeps"]) == {*B.VARIANTS, B.JOINT}
    products = {part["values"]["0"]["turn.recall@10"] for part in report["sweeps"].values()}
    assert len(products) == 1
    assert report["vocabulary"]["items"] > 0
    assert "leave-one-conversation-out" in B.render(report)


def test_the_bridge_keeps_to_the_speaker_and_reaches_the_fusion(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.index.db import using_index
    from obsmem.search.embeddings import resolve_backend
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    conversation = L.load_conversation(SAMPLE)
    question = "What pets does Ana have?"
    with L.indexed(conversation, settings) as (store, _):
        embedder = resolve_backend(settings).embedder
        [lists], _, _ = using_index(
            store.index_path,
            partial(C.collect, texts=[question], embedder=embedder, settings=settings),
        )
        vocab = B.Vocabulary.build(lists.rows, embedder)
        vectors = dict(zip(["pets"], np.asarray(embedder.embed(["pets"])), strict=True))
    speakers = {r: C.speaker_of(str(row[B._TEXT])) for r, row in lists.rows.items()}
    bridge = B.Bridge(vocab, vectors, speakers)
    ana = {r for r, s in speakers.items() if s == "ana"}
    assert lists.names == {"ana"} and len(ana) == 3
    entry_side = B.best_word_list(lists, question, bridge)
    assert set(entry_side) == ana
    # The greyhound is the pet: its entry's nearest word ("greyhound") is nearest "pets".
    assert "greyhound" in str(lists.rows[entry_side[0]][B._TEXT])
    everyone = B.best_word_list(lists, question, bridge, every=True)
    assert len(everyone) == len(speakers)
    # A heavy third list reaches the fusion (BM25's speaker boost puts Ana's lines first in
    # the product, the list over every speaker does not); at 0 it is the product's order.
    product = C.ordered(lists, *C.fused(lists, settings))
    assert B.bridged(lists, settings, everyone, 0.0) == product
    assert B.bridged(lists, settings, everyone, 10.0)[:3] == everyone[:3] != product[:3]

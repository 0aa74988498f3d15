"""The vocabulary's holders kept between index states, bounded: rare phrases in compact arrays.

``phrases.RarePhrases`` on its own (exact holders when keys collide, changes kept aside then
merged), and ``load_vocabulary`` across writes that take phrases over and under
``PHRASE_MIN`` holders, store phrases as items (one held by a single entry among them), with
the real key and with one under which nearly every phrase collides: the result is a fresh
read's each time, and phrases held by few entries get no list of their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from obsmem.index.db import open_index
from obsmem.index.sync import refresh
from obsmem.search import phrases as phrases_module
from obsmem.search import vocabulary as vocabulary_module
from obsmem.search.phrases import RarePhrases
from obsmem.search.vocabulary import (
    PHRASE_MIN,
    Vocabulary,
    clear_vocabulary_cache,
    embed_vocabulary,
    load_vocabulary,
)
from tests.search.test_vocab_bridge import WordEmbedder, _add, _fresh_load, _same, _store


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear_vocabulary_cache()


def _pairs(text: str) -> list[str]:
    words = text.split()
    return [f"{a} {b}" for a, b in itertools.pairwise(words)]


def test_rare_phrases_give_exact_holders_when_keys_collide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = {1: "red wine", 2: "blue sky", 3: "red wine here", 7: "green tea"}

    def key(phrase: str) -> int:
        return 0  # every phrase under one key

    listed = [(key(p), rowid) for rowid, text in texts.items() for p in _pairs(text)]
    rare = RarePhrases((k for k, _ in listed), (r for _, r in listed), texts, _pairs, key)
    assert rare.holders("red wine") == [1, 3] and rare.holders("green tea") == [7]
    assert rare.listed(0) == [1, 2, 3, 3, 7]  # the key's list: a superset
    texts[9] = "red wine"
    rare.add("red wine", 9)
    rare.remove("red wine", 1)
    assert rare.holders("red wine") == [3, 9]
    # Taken (its holders are kept elsewhere now): 3 stays listed once, for "wine here".
    rare.take("red wine", [3, 9])
    assert rare.listed(0) == [2, 3, 7] and rare.holders("wine here") == [3]
    # Changes merged into the arrays answer as before.
    monkeypatch.setattr(phrases_module, "MERGE_AT", 1)
    texts[4] = "blue sky"
    rare.add("blue sky", 4)
    assert rare.holders("blue sky") == [2, 4] and rare.holders("green tea") == [7]
    assert rare.common_keys(2) == {0} and rare.rows_of({0}) == [2, 3, 4, 7]
    assert rare.common_keys(5) == set()
    rare.drop({0})
    assert rare.holders("blue sky") == [] and len(rare) == 0


def _colliding(phrase: str) -> int:
    return sum(map(ord, phrase)) % 5  # a few keys: many phrases share one


@pytest.mark.parametrize("key", [hash, _colliding], ids=["hash", "colliding"])
def test_holders_across_writes_are_a_fresh_reads_and_rare_phrases_get_no_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: Callable[[str], int]
) -> None:
    monkeypatch.setattr(vocabulary_module, "_phrase_key", key)
    assert PHRASE_MIN == 3  # the texts below are written for it
    coffee = ["Cat: black coffee beans", "Dan: black coffee beans", "Eve: black coffee beans"]
    store = _store(tmp_path, ["Ann: green tea daily", "Bob: green tea often", *coffee])
    embedder = WordEmbedder()
    observations = tmp_path / "mem" / "observations.md"
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        embed_vocabulary(conn, embedder, 100)

        def step(change: Callable[[], object]) -> Vocabulary:
            change()
            refresh(store, conn)
            loaded = load_vocabulary(conn, embedder)
            _same(loaded, _fresh_load(conn, embedder))
            assert loaded is not None
            return loaded

        first = step(lambda: None)
        assert "green tea" not in first.position and first.holders[first.position["tea"]] == [1, 2]
        if key is hash:  # the bound: no list for a phrase two entries hold, one for three
            kept = vocabulary_module._LOADED[embedder.name].postings
            assert "green tea" not in kept and kept["black coffee"] == [3, 4, 5]
        # A third entry holds "green tea": it becomes an item, with all three holders.
        step(lambda: _add(store, ["Fay: green tea again"]))
        stored = step(lambda: embed_vocabulary(conn, embedder, 100))
        assert stored.holders[stored.position["green tea"]] == [1, 2, 6]
        # A stored phrase that falls under PHRASE_MIN keeps exact holders until it is deleted.
        edit = observations.read_text().replace(coffee[0], "Cat: x")
        fewer = step(lambda: observations.write_text(edit))
        assert fewer.holders[fewer.position["black coffee"]] == [4, 5]
        step(lambda: _add(store, ["Gus: black coffee beans"]))
        # A phrase repeated in one entry is an item (seen three times) held by that entry.
        step(lambda: _add(store, ["Hal: red wine red wine red wine"]))
        wine = step(lambda: embed_vocabulary(conn, embedder, 100))
        (hal,) = conn.execute("SELECT rowid FROM entries WHERE text LIKE 'Hal:%'").fetchone()
        assert wine.holders[wine.position["red wine"]] == [hal]
        gone = observations.read_text().replace("Hal: red wine red wine red wine", "Hal: x")
        step(lambda: observations.write_text(gone))
        final = step(lambda: embed_vocabulary(conn, embedder, 100))
        assert "red wine" not in final.position
    finally:
        conn.close()


def test_an_added_entry_with_two_phrases_under_one_key_holds_each_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two phrases of one new entry share a key. The one looked at second must not find the
    # entry itself listed under the key (by the first): it would be taken with the entry as a
    # holder already, which then holds it twice, and the first would lose the entry.
    shared = {"green tea", "black coffee"}
    monkeypatch.setattr(vocabulary_module, "_phrase_key", lambda p: 0 if p in shared else hash(p))
    store = _store(tmp_path, ["Ann: green tea", "Bob: black coffee"])
    embedder = WordEmbedder()
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        assert load_vocabulary(conn, embedder) is None  # read once: both phrases rare
        _add(store, ["Cat: green tea black coffee", "Dan: green tea black coffee"])
        refresh(store, conn)
        load_vocabulary(conn, embedder)
        embed_vocabulary(conn, embedder, 100)  # both phrases seen three times: items now
        loaded = load_vocabulary(conn, embedder)
        _same(loaded, _fresh_load(conn, embedder))
        assert loaded is not None
        rowids = [r for (r,) in conn.execute("SELECT rowid FROM entries ORDER BY rowid")]
        assert loaded.holders[loaded.position["green tea"]] == [rowids[0], *rowids[2:]]
        assert loaded.holders[loaded.position["black coffee"]] == rowids[1:]
    finally:
        conn.close()

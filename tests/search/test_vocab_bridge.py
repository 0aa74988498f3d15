"""The vocabulary bridge: a question's category word to the entries that name its instances.

The pieces on their own (the category word, the vocabulary's items and bound, the porter stems,
the walk over the items against scoring every entry), the background step (incremental, with
progress, stale items deleted, nothing while the bridge is off), and ``hybrid_rows`` end to end
with hand-made word vectors: a conversation ("What pets does Audrey have?" finds her line about
her dog), a coding session ("what tests fail" reaches "pytest"; "what did the user ask" has no
category word and is not changed), a query naming no speaker, an empty vocabulary and entries
added after the vocabulary was built.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import date as Date
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from obsmem.index.db import open_index
from obsmem.index.query import fts_query
from obsmem.index.sync import refresh
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import vocabulary as vocabulary_module
from obsmem.search.bridge import best_entries, bridge_list, head_words
from obsmem.search.hybrid import hybrid_rows
from obsmem.search.indexing import embed_bridge_vocabulary
from obsmem.search.vectors import VectorStore
from obsmem.search.vocabulary import (
    Vocabulary,
    chosen_items,
    clear_vocabulary_cache,
    embed_vocabulary,
    entry_words,
    load_vocabulary,
    stems,
)
from obsmem.settings import load_settings

DAY = Date(2026, 12, 2)
_DIM = 16


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear_vocabulary_cache()


# -- the category word and the items ------------------------------------------------------------


def test_the_category_word_follows_what_or_which_up_to_a_stopword() -> None:
    assert head_words("What pets does Audrey have?", {"audrey"}) == ["pets"]
    assert head_words("What kind of music does Tim like?", {"tim"}) == ["music"]
    assert head_words("Which types of books has Joanna read?") == ["books"]
    assert head_words("what tests fail") == ["tests", "fail"]
    assert head_words("which files changed in the refactor") == ["files", "changed"]
    # No category word: the word after "what" is a stopword, or there is no "what" / "which".
    assert head_words("What did Caroline say about the parade?", {"caroline"}) == []
    assert head_words("what did the user ask about the build", {"user"}) == []
    assert head_words("When did Melanie paint a sunrise?", {"melanie"}) == []
    # A name right after "what" is not a category; nor is a word under three letters.
    assert head_words("What Melanie likes", {"melanie"}) == ["likes"]
    assert head_words("what UI bugs", set()) == ["bugs"]


def test_entry_words_leave_out_the_label_digits_and_stopwords() -> None:
    assert entry_words("Audrey: my dog and I ran 5 km") == ["", "dog", "", "", "ran", ""]
    assert entry_words("user: the pytest run failed") == ["", "pytest", "run", "failed"]
    # No label (a colon far in, or none): the whole text counts.
    assert entry_words("note: x")[0] == "" and entry_words("deploy broke")[0] == "deploy"


def test_an_entry_s_words_are_casefolded_once_found_as_a_query_s_are() -> None:
    # Casefolded first, "İ" became "i" and a combining dot (no letter): "İstanbul" fell apart
    # into "i" and "stanbul", a word the query's "İstanbul" never is.
    assert entry_words("Ann: İstanbul trips") == ["i\u0307stanbul", "trips"]
    assert head_words("Which İstanbul trips") == entry_words("Ann: İstanbul trips")
    assert entry_words("Bob: STRASSE Straße") == ["strasse", "strasse"]


def test_the_vocabulary_holds_every_word_and_the_phrases_seen_three_times() -> None:
    texts = [
        "Ann: pottery class today",
        "Ann: pottery class tonight",
        "Bob: the pottery class was fun",
        "Bob: pottery and class",  # "and" breaks the phrase
        "Ann: dog walk",
    ]
    items = chosen_items(texts, 100)
    assert "pottery class" in items and "dog walk" not in items
    assert {"pottery", "class", "dog", "walk", "today", "tonight", "fun"} <= set(items)
    assert "ann" not in items and "and" not in items
    assert items == sorted(items)
    # The bound keeps the items held by the most entries, ties alphabetical.
    assert chosen_items(texts, 3) == ["class", "pottery", "pottery class"]
    assert chosen_items(texts, 0) == []


def test_stems_are_fts5s_porter_stems() -> None:
    assert stems(["tests", "failing", "pottery class"]) == ["test", "fail", "potteri class"]


@pytest.mark.parametrize("seed", range(6))
def test_the_walk_over_the_items_is_scoring_every_entry_by_its_best_item(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items, entries = 300, 400
    # Scores on a coarse grid, so that ties between items and between entries are common.
    scores = (rng.integers(-10, 10, items) / 10).astype(np.float32)
    holders = [sorted(rng.choice(entries, rng.integers(0, 6), replace=False)) for _ in scores]
    allowed = None if seed % 2 else (lambda rowid: rowid % 3 != 0)
    best: dict[int, float] = {}
    for i, held in enumerate(holders):
        for rowid in held:
            if allowed is None or allowed(int(rowid)):
                best[int(rowid)] = max(best.get(int(rowid), -9.0), float(scores[i]))
    for depth in (1, 50, 1000):
        want = sorted(best, key=lambda r: (-best[r], r))[:depth]
        assert best_entries(scores, holders, depth, allowed) == want


# -- the background step ------------------------------------------------------------------------


class WordEmbedder:
    """Set vectors for some texts; any other text a unit vector on axes 8-15, by its hash (so
    it is orthogonal to the set ones' axes 0-7). Counts the texts it embeds."""

    name = "bridge-test-model"
    dim = _DIM

    def __init__(self, words: dict[str, npt.NDArray[np.float32]] | None = None) -> None:
        self.words = words or {}
        self.calls: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text."""
        self.calls.extend(texts)
        out = np.zeros((len(texts), _DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            if text in self.words:
                out[i] = self.words[text]
                continue
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vec = np.random.default_rng(seed).standard_normal(8)
            out[i, 8:] = vec / np.linalg.norm(vec)
        return out


def _unit(*parts: tuple[int, float]) -> npt.NDArray[np.float32]:
    vec = np.zeros(_DIM, dtype=np.float32)
    for axis, value in parts:
        vec[axis] = value
    return vec / np.float32(np.linalg.norm(vec))


def _store(tmp_path: Path, texts: Sequence[str]) -> MemoryStore:
    store = MemoryStore(tmp_path / "mem", environ={"OM_HOME": str(tmp_path / "mem")}).ensure()
    _add(store, texts)
    return store


def _add(store: MemoryStore, texts: Sequence[str]) -> None:
    # One entry a day: no neighbours, so each entry's vector score is its own.
    store.add_observations(
        new_observation(text, date=f"2026-0{1 + n // 28}-{1 + n % 28:02d}")
        for n, text in enumerate(texts)
    )


def test_the_vocabulary_is_embedded_once_and_kept_in_step_with_the_entries(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, ["Ann: pottery wheel", "Bob: garden shed"])
    embedder = WordEmbedder()
    seen: list[tuple[int, int]] = []
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        count = embed_vocabulary(conn, embedder, 100, progress=lambda d, t: seen.append((d, t)))
        assert count == 4 and sorted(embedder.calls) == ["garden", "pottery", "shed", "wheel"]
        assert seen[0] == (0, 4) and seen[-1] == (4, 4)
        embedder.calls.clear()
        assert embed_vocabulary(conn, embedder, 100) == 0 and embedder.calls == []
        stored = dict(conn.execute("SELECT item, stem FROM vocabulary"))
        assert stored["pottery"] == "potteri"
    finally:
        conn.close()
    # An entry added, one forgotten: only the new words are embedded, the gone ones deleted.
    store.add_observations([new_observation("Ann: pottery kiln", date="2026-03-01")])
    (tmp_path / "mem").joinpath("observations.md").write_text(
        (tmp_path / "mem" / "observations.md").read_text().replace("Bob: garden shed", "Bob: x")
    )
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        assert embed_vocabulary(conn, embedder, 100) == 1 and embedder.calls == ["kiln"]
        items = {str(i) for (i,) in conn.execute("SELECT item FROM vocabulary")}
        assert items == {"kiln", "pottery", "wheel"}
    finally:
        conn.close()


def test_the_background_step_embeds_no_vocabulary_while_the_bridge_is_off(tmp_path: Path) -> None:
    store = _store(tmp_path, ["Ann: pottery wheel"])
    on = load_settings({"OM_SEARCH_BACKEND": "hybrid"})
    assert on.search_vocab_bridge_weight > 0  # on by default
    off = on.replace(search_vocab_bridge_weight=0.0)
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        embedder = WordEmbedder()
        assert embed_bridge_vocabulary(conn, embedder, off) == 0 and embedder.calls == []
        unbounded = on.replace(search_vocab_max_items=0)
        assert embed_bridge_vocabulary(conn, embedder, unbounded) == 0
        assert embed_bridge_vocabulary(conn, embedder, on.replace(search_vocab_max_items=1)) == 1
        assert embed_bridge_vocabulary(conn, embedder, on) == 1  # the other word only
    finally:
        conn.close()


# -- hybrid search end to end -------------------------------------------------------------------

_PETS = {
    "pets": _unit((0, 1.0)),
    "dog": _unit((0, 0.9), (1, 0.44)),
    "kitty": _unit((0, 0.85), (2, 0.53)),
    "tests": _unit((3, 1.0)),
    "fail": _unit((4, 1.0)),
    "pytest": _unit((3, 0.9), (5, 0.44)),
}


def _embedded(store: MemoryStore, embedder: WordEmbedder, vocabulary: bool = True) -> None:
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        VectorStore(conn, embedder).sync()
        if vocabulary:
            embed_vocabulary(conn, embedder, 1000)
    finally:
        conn.close()


def _search(
    store: MemoryStore, query: str, embedder: WordEmbedder, weight: float, limit: int = 10
) -> list[str]:
    expression = fts_query(query)
    assert expression is not None
    settings = load_settings({"OM_SEARCH_BACKEND": "hybrid"}).replace(
        search_vocab_bridge_weight=weight
    )
    conn = open_index(store.index_path)
    try:
        rows = hybrid_rows(conn, query, expression, limit, embedder, settings, today=DAY)
    finally:
        conn.close()
    return [str(row[11]) for row, _ in rows]


def _conversation() -> list[str]:
    """Audrey's line about her dog among thirty of her others, and Bob's about his kitty."""
    fillers = [f"Audrey: we talked about topic{n} for a while today" for n in range(30)]
    return [*fillers, "Audrey: my dog ran along the beach all morning", "Bob: the kitty slept"]


def test_a_category_word_reaches_the_named_speakers_line_about_an_instance(
    tmp_path: Path,
) -> None:
    texts = _conversation()
    store = _store(tmp_path, texts)
    embedder = WordEmbedder(_PETS)
    _embedded(store, embedder)
    query = "What pets does Audrey have?"
    dog, kitty = texts[-2], texts[-1]
    # Off, the dog line is 17th of Audrey's (BM25 on her name; its vector is far from the
    # question's); the bridge's list has it first, which lifts it into the first ten.
    assert dog not in _search(store, query, embedder, 0.0)
    assert dog in _search(store, query, embedder, 1.0)
    conn = open_index(store.index_path)
    try:
        text = dict(conn.execute("SELECT rowid, text FROM entries"))
        named = [text[r] for r in bridge_list(conn, embedder, query, 50, 1.0)]
        anyone = [text[r] for r in bridge_list(conn, embedder, "which pets are there", 50, 1.0)]
    finally:
        conn.close()
    # Bob's kitty is nearer "pets" than anything of Audrey's but her dog; he is not named.
    assert named[0] == dog and kitty not in named and len(named) == 31
    # Naming nobody, every speaker's entries are scored: both lines come first.
    assert anyone[:2] == [dog, kitty]


def test_with_filters_the_bridge_ranks_among_the_entries_they_keep(tmp_path: Path) -> None:
    # Sixty of Audrey's lines of January to March about a puppy show, nearer "pets" than her
    # dog line of April: ranked over all her lines and filtered after, they would fill the
    # bridge's list, and a filter from March 10 would leave it empty.
    puppies = [f"Audrey: the puppy show number{n} was loud" for n in range(60)]
    texts = [*puppies, *_conversation()]
    store = _store(tmp_path, texts)
    embedder = WordEmbedder({**_PETS, "puppy": _unit((0, 0.95), (1, 0.31))})
    _embedded(store, embedder)
    query = "What pets does Audrey have?"
    dog = texts[-2]
    expression = fts_query(query)
    assert expression is not None
    where = ("e.date >= ?", ["2026-03-10"])
    found = {}
    for weight in (0.0, 1.0):
        settings = load_settings({"OM_SEARCH_BACKEND": "hybrid"}).replace(
            search_vocab_bridge_weight=weight
        )
        conn = open_index(store.index_path)
        try:
            rows = hybrid_rows(
                conn, query, expression, 10, embedder, settings, today=DAY, where=where
            )
        finally:
            conn.close()
        assert rows and all(str(row[5]) >= "2026-03-10" for row, _ in rows)
        found[weight] = [str(row[11]) for row, _ in rows]
    assert dog not in found[0.0] and dog in found[1.0]


def test_a_query_without_a_category_word_is_not_changed_and_embeds_nothing_more(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, _conversation())
    embedder = WordEmbedder(_PETS)
    _embedded(store, embedder)
    query = "What did Audrey do at the beach?"
    off = _search(store, query, embedder, 0.0)
    embedder.calls.clear()
    assert _search(store, query, embedder, 1.0) == off
    assert embedder.calls == [query]


def test_a_category_word_not_in_the_vocabulary_is_embedded_in_the_querys_own_call(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, _conversation())
    embedder = WordEmbedder({**_PETS, "animals": _PETS["pets"]})
    _embedded(store, embedder)
    batches: list[list[str]] = []
    embed = embedder.embed

    def counted(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        batches.append(list(texts))
        return embed(texts)

    embedder.embed = counted  # type: ignore[method-assign]
    query = "What animals does Audrey have?"
    found = _search(store, query, embedder, 1.0)
    # One model call for the query and "animals" (no item), the same list as two calls give.
    assert batches == [[query, "animals"]]
    conn = open_index(store.index_path)
    try:
        text = dict(conn.execute("SELECT rowid, text FROM entries"))
        assert text[bridge_list(conn, embedder, query, 50, 1.0)[0]] == _conversation()[-2]
    finally:
        conn.close()
    assert batches[1:] == [["animals"]] and _conversation()[-2] in found


def test_an_empty_vocabulary_leaves_search_as_it_was(tmp_path: Path) -> None:
    store = _store(tmp_path, _conversation())
    embedder = WordEmbedder(_PETS)
    _embedded(store, embedder, vocabulary=False)
    query = "What pets does Audrey have?"
    assert _search(store, query, embedder, 1.0) == _search(store, query, embedder, 0.0)
    conn = open_index(store.index_path)
    try:
        assert load_vocabulary(conn, embedder) is None
        assert bridge_list(conn, embedder, query, 50, 1.0) == []
    finally:
        conn.close()


def test_entries_added_after_the_vocabulary_are_held_by_its_items_and_their_new_words_wait(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, ["Audrey: my dog barks", "Audrey: topic one", "Audrey: topic two"])
    embedder = WordEmbedder(_PETS)
    _embedded(store, embedder)
    store.add_observations(
        [
            new_observation("Audrey: the dog again", date="2026-05-01"),
            new_observation("Audrey: a kitty joined us", date="2026-05-02"),
        ]
    )
    query = "What pets does Audrey have?"
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        texts = dict(conn.execute("SELECT rowid, text FROM entries"))
        # "dog" was an item already: the new line holding it is found at once; "kitty" has no
        # vector until the next background step, so its line is not reached by it yet.
        found = [texts[r] for r in bridge_list(conn, embedder, query, 2, 1.0)]
        assert set(found) == {"Audrey: my dog barks", "Audrey: the dog again"}
        assert embed_vocabulary(conn, embedder, 1000) == 2  # kitty, joined ("again" is a stopword)
        found = [texts[r] for r in bridge_list(conn, embedder, query, 3, 1.0)]
        assert set(found) == {"Audrey: my dog barks", "Audrey: the dog again", texts[max(texts)]}
    finally:
        conn.close()


def _session() -> list[str]:
    """A coding session: the assistant's pytest report among thirty other lines."""
    others = [f"{('user', 'assistant')[n % 2]}: misc{n} note about the parser" for n in range(30)]
    return [*others, "assistant: pytest reports two errors in the parser module"]


def test_in_a_coding_session_the_bridge_reaches_tool_words_and_leaves_role_questions(
    tmp_path: Path,
) -> None:
    texts = _session()
    store = _store(tmp_path, texts)
    embedder = WordEmbedder(_PETS)
    _embedded(store, embedder)
    target = texts[-1]
    conn = open_index(store.index_path)
    try:
        text = dict(conn.execute("SELECT rowid, text FROM entries"))
        # "tests" and "fail" name no speaker: every entry is scored, and "pytest" is nearest.
        anyone = [text[r] for r in bridge_list(conn, embedder, "what tests fail", 50, 1.0)]
        # Naming a role keeps that role's lines: the user never said "pytest".
        user = [text[r] for r in bridge_list(conn, embedder, "which tests did user run", 50, 1.0)]
    finally:
        conn.close()
    assert anyone[0] == target and len(anyone) == len(texts)
    assert target not in user and user and all(t.startswith("user:") for t in user)
    off = _search(store, "what tests fail", embedder, 0.0)
    assert _search(store, "what tests fail", embedder, 1.0)[0] == target != off[0]
    # "What did the user ask" has no category word: the same as without the bridge.
    query = "what did the user ask about the parser"
    assert _search(store, query, embedder, 1.0) == _search(store, query, embedder, 0.0)


def test_a_bm25_search_never_loads_the_vocabulary(tmp_path: Path) -> None:
    store = _store(tmp_path, ["Audrey: my dog barks"])
    home = str(tmp_path / "mem")
    code = (
        "import sys\n"
        "from obsmem.memory.store import MemoryStore\n"
        "from obsmem.search import search\n"
        "from obsmem.settings import load_settings\n"
        f"env = {{'OM_HOME': {home!r}, 'OM_SEARCH_BACKEND': 'bm25'}}\n"
        "hits = search(MemoryStore(environ=env), 'What pets does Audrey have?',"
        " settings=load_settings(env))\n"
        "assert hits, 'nothing found'\n"
        "loaded = {'numpy', 'obsmem.search.vocabulary'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    assert store.home.is_dir()
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the loaded vocabulary across writes --------------------------------------------------------


def _fresh_load(conn: sqlite3.Connection, embedder: WordEmbedder) -> Vocabulary | None:
    """A full read of the vocabulary, the incremental cache put back afterwards."""
    kept = dict(vocabulary_module._LOADED)
    clear_vocabulary_cache()
    try:
        return load_vocabulary(conn, embedder)
    finally:
        vocabulary_module._LOADED.clear()
        vocabulary_module._LOADED.update(kept)


def _same(one: Vocabulary | None, other: Vocabulary | None) -> None:
    assert one is not None and other is not None
    assert one.items == other.items and one.item_stems == other.item_stems
    assert one.position == other.position and one.by_stem == other.by_stem
    assert one.holders == other.holders and one.speakers == other.speakers
    assert np.array_equal(one.matrix, other.matrix)


def test_after_a_write_only_what_changed_is_read_and_the_result_is_a_full_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path, ["Ann: pottery wheel", "Bob: garden shed", "Ann: pottery kiln"])
    embedder = WordEmbedder()
    observations = tmp_path / "mem" / "observations.md"
    tokenized: list[str] = []
    held = vocabulary_module._held

    def counted(text: str) -> set[str]:
        tokenized.append(text)
        return held(text)

    monkeypatch.setattr(vocabulary_module, "_held", counted)
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        embed_vocabulary(conn, embedder, 100)
        first = load_vocabulary(conn, embedder)
        _same(first, _fresh_load(conn, embedder))
        assert first is not None and first.holders[first.position["pottery"]] == [1, 3]

        def step(change: Callable[[], object], expect: int) -> Vocabulary | None:
            change()
            refresh(store, conn)
            tokenized.clear()
            loaded = load_vocabulary(conn, embedder)
            assert len(tokenized) == expect  # the changed entries only, not every entry
            _same(loaded, _fresh_load(conn, embedder))
            return loaded

        # An entry added: held by the items it names, before its new words are embedded.
        added = step(lambda: _add(store, ["Bob: garden pottery"]), 1)
        assert added is not None and added.holders[added.position["garden"]] == [2, 4]
        # New items embedded (no entry changed): their holders without reading any entry.
        step(lambda: embed_vocabulary(conn, embedder, 100), 0)
        # The newest entry edited: its new text reuses its rowid, so the rowid alone proves
        # nothing; the old text's items drop it and the new one's take it.
        edit = observations.read_text().replace("Bob: garden pottery", "Cat: shed wheel")
        edited = step(lambda: observations.write_text(edit), 2)
        assert edited is not None and edited.holders[edited.position["garden"]] == [2]
        assert edited.speakers[4] == "cat"
        # An entry removed, and the items no entry holds deleted from the table.
        gone = observations.read_text().replace("Bob: garden shed", "Bob: x")
        removed = step(lambda: observations.write_text(gone), 2)
        assert removed is not None and removed.holders[removed.position["garden"]] == []
        final = step(lambda: embed_vocabulary(conn, embedder, 100), 0)
        assert final is not None and "garden" not in final.position
        # The vocabulary handed out before a change keeps its own holders.
        assert first.holders[first.position["pottery"]] == [1, 3]
    finally:
        conn.close()

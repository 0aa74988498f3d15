"""The memory's vocabulary, embedded word by word, for hybrid search's bridge (``bridge.py``).

A question asking for a list ("What pets does Audrey have?") names a category; its evidence
names instances ("my dog", "the kitty") and shares no word with it. The sentence model knows
that "dog" is near "pets" when both are embedded alone, so each item of the memory's own
vocabulary is embedded once, alone, as a query is:

- Items: the distinct content words of the entries' own text (a ``Name:`` label left out;
  letters only, three or more, not a ``STOPWORDS`` word) and the two-word phrases of adjacent
  content words seen at least ``PHRASE_MIN`` times. With more than ``OM_SEARCH_VOCAB_MAX_ITEMS``
  items, those held by the most entries are kept (ties: alphabetical), so the table and the
  query's matrix product stay bounded in a large memory.
- ``embed_vocabulary`` runs in the background embedding step, after the entries' vectors
  (``indexing.update_vectors``, the search daemon's pass), only while the bridge is on: it embeds
  the items that have no vector under the model yet, in committed batches with progress, and
  deletes the items no entry holds any longer. An unchanged memory embeds nothing.
- ``load_vocabulary`` (a search) reads the stored items and which entries hold each, only when
  a query has a category word (a BM25 search never imports this module), once per connection
  in a process, then keeps them: after a write (``om observe`` beside an MCP server or the
  daemon) it reads every entry's rowid and text but tokenizes only the entries whose text is
  new or gone under its rowid, and reads the vectors of new items only. The result is the same
  as a fresh read's (a test compares them after adds, edits, removals and new items). The
  search daemon (and the resident processes running one) calls it in its warm-up and after
  each embedding pass, so that its queries find it read (``daemon.py``).
- Which entries hold each word and phrase is kept for all of them, so that an item embedded
  later needs no scan; the phrases fewer than ``PHRASE_MIN`` entries hold (most phrases) are
  kept as compact pairs of numbers rather than a list each (``phrases.py``): at 100,000 entries
  the load's peak memory grew by 63 MB rather than 164 (docs/benchmarks.md).

Each item's porter stem (FTS5's own tokenizer) is stored with it: the bridge leaves out the
items of the category word's own stem, which BM25 already matches.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import threading
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from obsmem.index.query import STOPWORDS
from obsmem.search.phrases import RarePhrases
from obsmem.search.speakers import speaker_label
from obsmem.search.vectors import ENTRIES_SQL, Progress, embed_in_batches, write_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from obsmem.search.embeddings import Embedder

__all__ = [
    "PHRASE_MIN",
    "Vocabulary",
    "chosen_items",
    "clear_vocabulary_cache",
    "embed_vocabulary",
    "entry_words",
    "load_vocabulary",
    "stems",
]

#: A two-word phrase becomes an item when it occurs at least this often.
PHRASE_MIN = 3


# Letters only: a number or an identifier's digits say nothing a category word could reach.
_WORD = re.compile(r"[^\W\d_]+")


def entry_words(text: str) -> list[str]:
    """The content words of an entry's own text in order, its ``Name:`` label left out; a
    dropped word leaves "" in its place, so that no phrase spans it."""
    body = text.partition(":")[2] if speaker_label(text) else text
    # Found, then casefolded, as a query's words are (``bridge.head_words``): casefolding may
    # make a mark of a letter ("İ": "i" and a combining dot), which would split the word.
    words = (match.casefold() for match in _WORD.findall(body))
    return [word if len(word) > 2 and word not in STOPWORDS else "" for word in words]


def _items_of(words: Sequence[str]) -> tuple[set[str], list[str]]:
    """The distinct words of ``words`` and its adjacent pairs (with repeats)."""
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(words) if a and b]
    return {word for word in words if word}, pairs


def chosen_items(texts: Iterable[str], limit: int) -> list[str]:
    """The vocabulary of ``texts`` (module doc), at most ``limit`` items, sorted."""
    held: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for text in texts:
        words, pairs = _items_of(entry_words(text))
        held.update(words)
        held.update(set(pairs))
        seen.update(pairs)
    items = [item for item in held if " " not in item or seen[item] >= PHRASE_MIN]
    if len(items) > limit:
        items.sort(key=lambda item: (-held[item], item))
        items = items[:limit]
    return sorted(items)


def stems(words: Sequence[str]) -> list[str]:
    """Each of ``words``' porter stem(s) (space-separated), from FTS5 with the index's
    tokenizer, so that they match what BM25 matches."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE v USING fts5(w, tokenize='porter unicode61')")
        conn.execute("CREATE VIRTUAL TABLE vv USING fts5vocab(v, 'instance')")
        conn.executemany("INSERT INTO v(rowid, w) VALUES (?, ?)", enumerate(words, start=1))
        found: dict[int, list[str]] = defaultdict(list)
        for term, doc in conn.execute("SELECT term, doc FROM vv ORDER BY doc, offset"):
            found[int(doc)].append(str(term))
    finally:
        conn.close()
    return [" ".join(found[i]) for i in range(1, len(words) + 1)]


def embed_vocabulary(
    conn: sqlite3.Connection,
    embedder: Embedder,
    limit: int,
    *,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Embed the vocabulary items of ``conn``'s entries (module doc) that have no vector under
    ``embedder``; delete the stored items that are no longer in it. Returns how many were
    embedded. ``progress(done, total)`` counts items; ``stop`` is asked between batches."""
    import numpy as np

    model = embedder.name
    wanted = chosen_items((str(text) for _, _, text in conn.execute(ENTRIES_SQL)), limit)
    stored = _stored_items(conn, embedder)
    # With nothing stored every item is missing: the dim is not asked for, since an endpoint's
    # costs a probe request (``endpoint.py``).
    dim = embedder.dim if stored else 0
    missing = [item for item in wanted if stored.get(item) != dim]
    keep = set(wanted)
    stale = [(item, model) for item in stored if item not in keep]

    def rows(start: int, matrix: npt.NDArray[np.float32]) -> list[tuple[object, ...]]:
        batch = missing[start : start + len(matrix)]
        return [
            (item, model, stem, int(matrix.shape[1]), np.ascontiguousarray(vec, "<f4").tobytes())
            for item, stem, vec in zip(batch, stems(batch), matrix, strict=True)
        ]

    embedded = embed_in_batches(
        conn,
        embedder,
        missing,
        rows,
        "INSERT OR REPLACE INTO vocabulary VALUES (?, ?, ?, ?, ?)",
        total=len(wanted),
        progress=progress,
        stop=stop,
    )
    if stale:
        write_rows(conn, "DELETE FROM vocabulary WHERE item = ? AND model = ?", stale)
    return embedded


@dataclass
class Vocabulary:
    """One index state's vocabulary under one model: the items, their unit vectors (one row
    each), each item's stem(s), its position by name, the items of each stem word, the entries
    (rowids, ascending) holding each item, and each entry's speaker label ("" for none)."""

    items: list[str]
    matrix: npt.NDArray[np.float32]
    item_stems: list[str]
    position: dict[str, int]
    by_stem: dict[str, list[int]]
    holders: list[list[int]]
    speakers: dict[int, str]

    def stem_words(self, words: Sequence[str]) -> set[str]:
        """The stem words of ``words``: stored ones for items, FTS5's for the others."""
        unknown = [word for word in words if word not in self.position]
        found = dict(zip(unknown, stems(unknown), strict=True)) if unknown else {}
        out: set[str] = set()
        for word in words:
            at = self.position.get(word)
            out.update((found[word] if at is None else self.item_stems[at]).split())
        return out


@dataclass
class _Loaded:
    """What ``load_vocabulary`` keeps per model between index states (module doc): the
    connection and its state, the result, and what a change is compared with: each entry's
    text by rowid, the rowids (ascending) holding each word and each phrase held by at least
    ``PHRASE_MIN`` entries or stored as an item (``postings``), those holding the other phrases
    (``rare``: compact, ``phrases.py``), each entry's speaker label, and the stored items with
    their dims. Every word or phrase some entry holds is in exactly one of ``postings`` and
    ``rare``, so an item embedded later needs no scan."""

    conn: sqlite3.Connection
    state: tuple[int, int]
    vocabulary: Vocabulary | None
    texts: dict[int, str]
    postings: dict[str, list[int]]
    rare: RarePhrases | None
    speakers: dict[int, str]
    stored: dict[str, int]


_LOADED: dict[str, _Loaded] = {}
# A resident process answers queries on threads sharing one connection: one update at a time,
# since an update changes the kept postings (a fresh read used to build everything anew).
_LOCK = threading.Lock()


def clear_vocabulary_cache() -> None:
    """Forget the loaded vocabularies (tests; after replacing an index file)."""
    _LOADED.clear()


def load_vocabulary(conn: sqlite3.Connection, embedder: Embedder) -> Vocabulary | None:
    """The vocabulary stored in ``conn``'s index for ``embedder`` with its holders, or None when
    none is stored yet. Read once per connection; after a change of the index only what changed
    is tokenized or read (``_update``), the result the same as a fresh read's."""
    with _LOCK:
        state = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
        cached = _LOADED.get(embedder.name)
        if cached is not None and cached.conn is conn:
            if cached.state != state:
                _update(cached, embedder)
                cached.state = state
            return cached.vocabulary
        loaded = _Loaded(conn, state, None, {}, {}, None, {}, {})
        _update(loaded, embedder)
        _LOADED[embedder.name] = loaded
        return loaded.vocabulary


# The rare phrases' key (``phrases.py``): this process's string hash (tests force collisions).
_phrase_key: Callable[[str], int] = hash


def _held(text: str) -> set[str]:
    """The words and two-word phrases ``text`` holds (any count)."""
    words, pairs = _items_of(entry_words(text))
    return words.union(pairs)


def _stored_items(conn: sqlite3.Connection, embedder: Embedder) -> dict[str, int]:
    """The dim of each item stored under ``embedder``."""
    sql = "SELECT item, dim FROM vocabulary WHERE model = ?"
    return {str(item): int(dim) for item, dim in conn.execute(sql, (embedder.name,))}


def _first_read(loaded: _Loaded, current: dict[int, str], stored: Collection[str]) -> None:
    """``loaded``'s holders from every entry, in rowid order (appended as they come).

    Phrases are first listed by key only (``RarePhrases``); those held by ``PHRASE_MIN``
    entries or more (by key: a key two phrases share counts both) get a list of their own from
    a second look at the entries holding them, so that no string or list is made for the
    phrases held once, most of them."""
    built: defaultdict[str, list[int]] = defaultdict(list)
    keys: array[int] = array("q")
    rowids: array[int] = array("q")
    for rowid, text in current.items():
        for item in _held(text):
            if " " not in item or item in stored:
                built[item].append(rowid)
            else:
                keys.append(_phrase_key(item))
                rowids.append(rowid)
    rare = RarePhrases(keys, rowids, current, _pairs, _phrase_key)
    del keys, rowids  # copied, sorted, into ``rare``: freed before the second look
    common = rare.common_keys(PHRASE_MIN)
    for rowid in rare.rows_of(common):
        for phrase in set(_pairs(current[rowid])):
            if _phrase_key(phrase) in common and phrase not in stored:
                built[phrase].append(rowid)
    rare.drop(common)
    loaded.postings, loaded.rare = dict(built), rare
    loaded.speakers = {rowid: speaker_label(text) for rowid, text in current.items()}


def _pairs(text: str) -> list[str]:
    """The two-word phrases of ``text``, with repeats (``RarePhrases``' ``phrases_of``)."""
    return _items_of(entry_words(text))[1]


def _update(loaded: _Loaded, embedder: Embedder) -> None:
    """Bring ``loaded`` in line with its connection's index: its holders (``_follow_texts``),
    then its items when the stored ones changed, and the holders of each item."""
    conn = loaded.conn
    current = {int(rowid): str(text) for rowid, _, text in conn.execute(ENTRIES_SQL)}
    stored = _stored_items(conn, embedder)
    entries_changed = _follow_texts(loaded, current, stored)
    vocabulary = loaded.vocabulary
    if vocabulary is None or stored != loaded.stored:
        vocabulary = _read_items(conn, embedder, vocabulary)
        loaded.stored = stored
    elif not entries_changed:
        return
    if vocabulary is not None:
        postings, rare = loaded.postings, loaded.rare
        assert rare is not None  # set by _follow_texts
        holders = [
            postings.get(item, []) if item in postings or " " not in item else rare.holders(item)
            for item in vocabulary.items
        ]
        vocabulary = replace(vocabulary, holders=holders, speakers=loaded.speakers)
    loaded.vocabulary = vocabulary


def _follow_texts(loaded: _Loaded, current: dict[int, str], stored: Collection[str]) -> bool:
    """Bring ``loaded``'s holders and speakers in line with the entries' texts ``current``
    (rowid to text); whether any entry's text changed.

    Every entry's rowid and text are read (no embedding, no tokenizing): a rowid is not proof
    of a text, because ``entries`` reuses the rowids of the last rows deleted (editing the
    newest observation gives its new text the old rowid). Only the entries whose text is new or
    gone under a rowid are tokenized. The postings lists touched are replaced, not changed in
    place, so a ``Vocabulary`` handed out before keeps its holders. A rare phrase that an added
    entry makes held by ``PHRASE_MIN`` entries moves to ``postings``."""
    import bisect

    old = loaded.texts
    gone = [rowid for rowid, text in old.items() if current.get(rowid) != text]
    added = [rowid for rowid, text in current.items() if old.get(rowid) != text]
    entries_changed = bool(gone or added)
    if loaded.rare is None:
        _first_read(loaded, current, stored)
        gone, added = [], []
    rare = loaded.rare
    assert rare is not None
    rare.texts = current  # the texts its holders are checked against: the index's now
    postings, speakers = loaded.postings, dict(loaded.speakers) if gone or added else None
    touched: dict[str, list[int]] = {}

    def listed(item: str) -> list[int] | None:
        """``item``'s list in ``touched`` (copied there first), None for a rare phrase."""
        held = touched.get(item)
        if held is None and (" " not in item or item in postings):
            held = touched[item] = list(postings.get(item, ()))
        return held

    for rowid in gone:
        for item in _held(old[rowid]):
            held = listed(item)
            if held is None:
                rare.remove(item, rowid)
            else:
                del held[bisect.bisect_left(held, rowid)]
        if speakers is not None:
            del speakers[rowid]
    for rowid in added:
        text = current[rowid]
        # Its rare phrases are listed once all of its phrases are judged: listed at once, the
        # entry would be among the holders found for another of its phrases under that key.
        still_rare: list[str] = []
        for item in _held(text):
            held = listed(item)
            if held is None:
                held = _taken(rare, item)
                if held is None:
                    still_rare.append(item)
                    continue
                touched[item] = held
            bisect.insort(held, rowid)
        for item in still_rare:
            rare.add(item, rowid)
        if speakers is not None:
            speakers[rowid] = speaker_label(text)
    for item, held in touched.items():
        if held:
            postings[item] = held
        else:
            postings.pop(item, None)
    loaded.texts = current
    if speakers is not None:
        loaded.speakers = speakers
    return entries_changed


def _taken(rare: RarePhrases, phrase: str) -> list[int] | None:
    """The holders of the rare ``phrase``, taken out of ``rare``, when one more entry makes
    them ``PHRASE_MIN``; None while it stays rare."""
    # The key's list is a superset of the phrase's holders: often short enough to tell.
    found = rare.listed(rare.key(phrase))
    if len(found) + 1 >= PHRASE_MIN:
        found = rare.holders(phrase)
    if len(found) + 1 < PHRASE_MIN:
        return None
    rare.take(phrase, found)
    return found


def _read_items(
    conn: sqlite3.Connection, embedder: Embedder, before: Vocabulary | None
) -> Vocabulary | None:
    """The stored items under ``embedder``, their stems and vectors (the holders left empty);
    the vectors of ``before``'s items are reused rather than read again (an item's vector is
    written once per model and dim: ``embed_vocabulary``)."""
    import numpy as np

    dim = embedder.dim
    known = before.position if before is not None else {}
    items: list[str] = []
    item_stems: list[str] = []
    rows: list[npt.NDArray[np.float32]] = []
    new: list[str] = []
    listed = conn.execute(
        "SELECT item, stem, dim FROM vocabulary WHERE model = ? ORDER BY item", (embedder.name,)
    )
    for item, stem, size in listed:
        if int(size) == dim:
            items.append(str(item))
            item_stems.append(str(stem))
            if str(item) not in known:
                new.append(str(item))
    fresh = _vectors(conn, embedder, new)
    for item in items:
        at = known.get(item)
        if at is not None and before is not None:
            rows.append(before.matrix[at])
        elif item in fresh:
            rows.append(fresh[item])
    if len(rows) != len(items):  # a vector of the wrong size: left out, as a fresh read does
        keep = [i for i, item in enumerate(items) if item in known or item in fresh]
        items = [items[i] for i in keep]
        item_stems = [item_stems[i] for i in keep]
    if not items:
        return None
    matrix = np.stack(rows).astype(np.float32, copy=False)
    position = {item: i for i, item in enumerate(items)}
    by_stem: dict[str, list[int]] = defaultdict(list)
    for i, stem in enumerate(item_stems):
        for word in stem.split():
            by_stem[word].append(i)
    return Vocabulary(items, matrix, item_stems, position, dict(by_stem), [], {})


def _vectors(
    conn: sqlite3.Connection, embedder: Embedder, items: Sequence[str]
) -> dict[str, npt.NDArray[np.float32]]:
    """The stored vectors of ``items`` under ``embedder`` that have its dimension."""
    import numpy as np

    if not items:
        return {}
    out: dict[str, npt.NDArray[np.float32]] = {}
    wanted = set(items)
    every = len(wanted) > 500  # many: one pass over the table beats one lookup each
    sql = "SELECT item, vec FROM vocabulary WHERE model = ?"
    rows = (
        conn.execute(sql, (embedder.name,))
        if every
        else itertools.chain.from_iterable(
            conn.execute(sql + " AND item = ?", (embedder.name, item)) for item in items
        )
    )
    for item, blob in rows:
        if str(item) in wanted and len(blob) == 4 * embedder.dim:
            out[str(item)] = np.frombuffer(bytes(blob), dtype="<f4")
    return out

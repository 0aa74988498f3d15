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
- ``load_vocabulary`` (a search) reads the stored items and which entries hold each, once per
  index state in a process (as ``VectorStore`` keeps its matrix), and only when a query has a
  category word: a BM25 search never imports this module.

Each item's porter stem (FTS5's own tokenizer) is stored with it: the bridge leaves out the
items of the category word's own stem, which BM25 already matches.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from obsmem.index.query import STOPWORDS
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
    return [
        word if len(word) > 2 and word not in STOPWORDS else ""
        for word in _WORD.findall(body.casefold())
    ]


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
    stored = {
        str(item): int(dim)
        for item, dim in conn.execute("SELECT item, dim FROM vocabulary WHERE model = ?", (model,))
    }
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


# The last vocabulary loaded per model: its connection, that connection's state, the result.
_LOADED: dict[str, tuple[sqlite3.Connection, tuple[int, int], Vocabulary | None]] = {}


def clear_vocabulary_cache() -> None:
    """Forget the loaded vocabularies (tests; after replacing an index file)."""
    _LOADED.clear()


def load_vocabulary(conn: sqlite3.Connection, embedder: Embedder) -> Vocabulary | None:
    """The vocabulary stored in ``conn``'s index for ``embedder`` with its holders, or None when
    none is stored yet. Read once per index state and connection (module doc)."""
    state = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
    cached = _LOADED.get(embedder.name)
    if cached is not None and cached[0] is conn and cached[1] == state:
        return cached[2]
    vocabulary = _read(conn, embedder)
    _LOADED[embedder.name] = (conn, state, vocabulary)
    return vocabulary


def _read(conn: sqlite3.Connection, embedder: Embedder) -> Vocabulary | None:
    import numpy as np

    items: list[str] = []
    item_stems: list[str] = []
    blobs: list[bytes] = []
    rows = conn.execute(
        "SELECT item, stem, dim, vec FROM vocabulary WHERE model = ? ORDER BY item",
        (embedder.name,),
    )
    dim = 0
    for item, stem, size, blob in rows:
        if dim == 0:
            dim = embedder.dim
        if int(size) == dim and len(blob) == 4 * dim:
            items.append(str(item))
            item_stems.append(str(stem))
            blobs.append(bytes(blob))
    if not items:
        return None
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(items), dim)
    position = {item: i for i, item in enumerate(items)}
    by_stem: dict[str, list[int]] = defaultdict(list)
    for i, stem in enumerate(item_stems):
        for word in stem.split():
            by_stem[word].append(i)
    holders: list[list[int]] = [[] for _ in items]
    speakers: dict[int, str] = {}
    for rowid, _, text in conn.execute(ENTRIES_SQL):
        words, pairs = _items_of(entry_words(str(text)))
        rowid = int(rowid)
        speakers[rowid] = speaker_label(str(text))
        for item in words.union(pairs):
            at = position.get(item)
            if at is not None:
                holders[at].append(rowid)
    return Vocabulary(items, matrix, item_stems, position, dict(by_stem), holders, speakers)

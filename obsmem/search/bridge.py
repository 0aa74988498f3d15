"""Hybrid search's vocabulary bridge: from a question's category word to the entries that name
its instances.

"What pets does Audrey have?" is answered by lines that say "my dog" or "the kitty": they share
only the speaker's name with the question, BM25 cannot reach them, and the question's own
vector is closer to lines about pets in general. Embedded alone, though, "pets" is near "dog",
"cat" and "kitty". So (``OM_SEARCH_VOCAB_BRIDGE_WEIGHT`` above 0):

1. The category word(s) (``head_words``): the words right after the question's first "what" or
   "which" ("kind of", "types of" skipped), up to the next stopword; the speakers it names left
   out. "What did ..." and "What is ..." have none, and the bridge does nothing.
2. Each item of the memory's vocabulary (``vocabulary.py``: words and frequent two-word
   phrases, each embedded alone) is scored by its cosine to the category word (the best of
   several), a plain matrix product; items of the word's own porter stem, which BM25 already
   matches, score -1.
3. Each entry scores its best item, over the entries the named speaker said (``speakers.py``'s
   rule, the roles ``user`` / ``assistant`` included) or every entry when none is named; the
   best ``depth`` (ties: lower rowid) are the list (``best_entries`` walks the items from the
   nearest down until that many entries are found, instead of scoring every entry).
4. That list joins the fusion as one more RRF list at the setting's weight (``hybrid.py``).

In a coding memory, "what tests fail" bridges from "tests" and "fail" to "pytest", "assertion",
"traceback" (not "test" or "failing": BM25 has those); "which files changed" to file and change
words; "what did the user ask" has no category word. A query with none, or a memory with no
vocabulary embedded yet, costs one regular expression.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from obsmem.index.query import STOPWORDS
from obsmem.search.speakers import centroid_names

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from obsmem.search.embeddings import Embedder
    from obsmem.search.vocabulary import Vocabulary

__all__ = ["best_entries", "bridge_list", "head_words", "item_scores", "words_to_embed"]

_WORD = re.compile(r"[^\W\d_]+")
_WH = frozenset(("what", "which"))
# Skipped before the category word: "What kind of music ...", "Which types of tests ...".
_KIND = frozenset(("kind", "kinds", "type", "types", "sort", "sorts", "of"))
# Items first taken from the top of the cosines; more (times 4) when they hold too few entries.
_FIRST_ITEMS = 64


def head_words(query: str, names: Collection[str] = ()) -> list[str]:
    """The category word(s) of ``query`` (module doc, 1), casefolded; ``names`` (casefolded
    speakers) and words under three letters left out. Empty when there is none."""
    words = [match.group(0).casefold() for match in _WORD.finditer(query)]
    start = next((i + 1 for i, word in enumerate(words) if word in _WH), len(words))
    out: list[str] = []
    for word in words[start:]:
        if word in _KIND and not out:
            continue
        if word in STOPWORDS:
            break
        out.append(word)
    return [word for word in out if word not in names and len(word) > 2]


def item_scores(
    vocabulary: Vocabulary, words: Sequence[str], vectors: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each item's best cosine to one of ``words`` (embedded as ``vectors``, one row each), -1
    for the items sharing a stem word with them."""
    import numpy as np

    products = vocabulary.matrix @ vectors.T
    # Column by column: ``max(axis=1)`` over a few columns walks them slowly (1.2 ms of CPU at
    # 30,000 items), and a maximum is exact either way.
    scores: npt.NDArray[np.float32] = products[:, 0].copy()
    for column in range(1, products.shape[1]):
        np.maximum(scores, products[:, column], out=scores)
    own = [i for word in vocabulary.stem_words(words) for i in vocabulary.by_stem.get(word, ())]
    scores[own] = np.float32(-1.0)
    return scores


def best_entries(
    scores: npt.NDArray[np.float32],
    holders: Sequence[Sequence[int]],
    depth: int,
    allowed: Callable[[int], bool] | None = None,
) -> list[int]:
    """The ``depth`` entries with the best score of an item they hold (``holders[i]``: the
    entries holding item i), best first, ties to the lower rowid; only those ``allowed`` when
    given. Walks the items from the best down, the entries met first keeping that item's score,
    and stops once ``depth`` are met and the next item scores lower (its ties are still met)."""
    import numpy as np

    from obsmem.search.vectors import top_positions

    best: dict[int, float] = {}
    every = np.arange(len(scores))
    taken, width = 0, _FIRST_ITEMS
    last: float | None = None
    while taken < len(scores):
        top = top_positions(every, scores, width)
        for i in top[taken:]:
            score = float(scores[int(i)])
            if len(best) >= depth and last is not None and score < last:
                return sorted(best, key=lambda r: (-best[r], r))[:depth]
            last = score
            for rowid in holders[int(i)]:
                if rowid not in best and (allowed is None or allowed(rowid)):
                    best[rowid] = score
        taken, width = len(top), width * 4
    return sorted(best, key=lambda r: (-best[r], r))[:depth]


def words_to_embed(
    conn: sqlite3.Connection, embedder: Embedder, query: str, weight: float
) -> list[str]:
    """The category words of ``query`` the bridge must embed (those not in the vocabulary),
    so that hybrid search embeds them in the query's own model call; empty when ``weight`` is
    0, there is no category word or no vocabulary is stored yet."""
    if weight <= 0:
        return []
    words = head_words(query, set(centroid_names(query)))
    if not words:
        return []
    from obsmem.search.vocabulary import load_vocabulary

    vocabulary = load_vocabulary(conn, embedder)
    return [] if vocabulary is None else [w for w in words if w not in vocabulary.position]


def bridge_list(
    conn: sqlite3.Connection,
    embedder: Embedder,
    query: str,
    depth: int,
    weight: float,
    embedded: Mapping[str, npt.NDArray[np.float32]] | None = None,
    among: Callable[[], Collection[int]] | None = None,
) -> list[int]:
    """The bridge's list for ``query`` (module doc), ``depth`` rowids best first; empty when
    ``weight`` is 0, the query has no category word, the index holds no vocabulary under
    ``embedder``'s model yet, or a category word cannot be embedded. ``embedded``: category
    words' vectors already computed (``words_to_embed``, in the query's call); the others not
    in the vocabulary are embedded here. ``among``, when given, reads the only rowids that may
    be ranked (search filters), once the list is known to be wanted."""
    import numpy as np

    if weight <= 0:
        return []
    names = set(centroid_names(query))
    words = head_words(query, names)
    if not words:
        return []
    from obsmem.search.vocabulary import load_vocabulary

    vocabulary = load_vocabulary(conn, embedder)
    if vocabulary is None:
        return []
    # A word of the vocabulary was embedded alone already: its stored vector is the same.
    fresh = dict(embedded or {})
    unknown = [word for word in words if word not in vocabulary.position and word not in fresh]
    try:
        if unknown:
            fresh.update(zip(unknown, embedder.embed(unknown), strict=True))
    except Exception:  # an endpoint down: the other lists still answer (hybrid says so once)
        return []
    vectors = np.stack(
        [
            vocabulary.matrix[vocabulary.position[word]]
            if word in vocabulary.position
            else fresh[word]
            for word in words
        ]
    ).astype(np.float32)
    scores = item_scores(vocabulary, words, vectors)
    speakers = vocabulary.speakers
    kept = among() if among is not None else None

    def allowed(rowid: int) -> bool:
        said = not names or speakers.get(rowid, "") in names
        return said and (kept is None or rowid in kept)

    wanted = allowed if names or kept is not None else None
    return best_entries(scores, vocabulary.holders, depth, wanted)

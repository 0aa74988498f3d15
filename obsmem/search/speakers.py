"""Who said an entry, and hybrid search's speaker centroid.

A memory of a conversation records each turn as ``Name: text`` (a coding session as ``user:`` /
``assistant:``). ``query_speakers`` reads the speakers a query names (the speaker boost's rule,
bm25.py), ``speaker_label`` reads an entry's label the way the boost matches it (``Name:`` at
the start of the text), and ``speaker_rows`` groups a vector matrix's rows by it, once per
snapshot (``VectorStore.rank_vector(..., said_by=...)``).

``labelled`` keeps the names some entry carries as a label, by one lookup each in the index on
the head of every entry's text (``entries_label``, schema version 6): a coding memory's
observations carry no ``user:`` label, so "what did the user decide" skips the boost (which
tests every match's text) instead of paying for it to change nothing.

The speaker centroid (``OM_SEARCH_SPEAKER_CENTROID_WEIGHT``): when a query names a speaker
(``bm25.query_speakers``), the normalised mean vector of the first ``CENTROID_HITS`` fused hits
that speaker said is a second vector query, ranked over that speaker's entries (with the
neighbours' cosine, as the first), and its list joins the fusion as a third RRF list. A question
that asks for a list ("What activities has Melanie done with her family?") has evidence that
names one instance each and shares little with the question; those lines resemble the speaker's
lines already found on the topic more than they resemble the question.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Sequence

from obsmem.index.query import STOPWORDS

TYPE_CHECKING = False  # not typing's: bm25.py imports this module (see obsmem/__init__.py)
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from obsmem.search.vectors import VectorStore

__all__ = [
    "CENTROID_HITS",
    "LABEL_HEAD",
    "MAX_SPEAKERS",
    "ROLES",
    "centroid_names",
    "centroid_vector",
    "labelled",
    "matrix_rows",
    "query_speakers",
    "speaker_centroid",
    "speaker_label",
    "speaker_rows",
]

#: Fused hits of the named speaker whose vectors make the centroid.
CENTROID_HITS = 5
# A label is at most this long (the speaker boost matches any prefix; a longer "label" is prose).
_LABEL_MAX = 40
#: How many characters of each entry's text the label index holds: a label and its colon.
LABEL_HEAD = _LABEL_MAX + 1
# Whether some entry's text starts with a label. The expression and the collation are the
# index's own (schema.py, version 6), so that this is a range in it, not a scan; NOCASE folds
# ASCII letters only, as the boost's LIKE does, so both agree on which texts carry the label.
_HEAD = f"substr(text, 1, {LABEL_HEAD})"
_ANY_LABELLED = (
    f"SELECT 1 FROM entries WHERE {_HEAD} >= ? COLLATE NOCASE AND {_HEAD} < ? COLLATE NOCASE "
    "LIMIT 1"
)

#: Roles that name a speaker in any case: coding sessions are between a user and an assistant.
ROLES = frozenset({"user", "assistant"})
#: At most this many speakers are looked for: a query naming more says little about who spoke.
MAX_SPEAKERS = 4
_WORD = re.compile(r"[^\W_]+")


def query_speakers(query: str) -> list[str]:
    """The speakers ``query`` may name: capitalised words that are not stopwords, and roles.

    "What did Caroline say about Melanie's painting?" names ``Caroline`` and ``Melanie``;
    "what did the user ask about the build" names ``user``. A capitalised word that names
    nobody costs nothing: no entry's text starts with ``What:``.
    """
    found: dict[str, None] = {}
    for word in _WORD.findall(query):
        folded = word.casefold()
        if folded in ROLES or (word[0].isupper() and folded not in STOPWORDS and len(word) > 1):
            found.setdefault(word if folded not in ROLES else folded, None)
    return list(found)[:MAX_SPEAKERS]


def label_range(name: str) -> tuple[str, str]:
    """The bounds (from, below) of the label index's keys of the texts that start with
    ``name:``: ``name;`` is the first key after every ``name:...`` (``;`` follows ``:``)."""
    return f"{name}:", f"{name};"


def labelled(conn: sqlite3.Connection, names: Sequence[str]) -> tuple[str, ...]:
    """Those of ``names`` that some entry's text starts with as ``name:`` (ASCII letters in any
    case, as the speaker boost matches), in their order: one indexed lookup each. A name too
    long for the label index is kept (the boost, which reads the whole text, then decides)."""
    return tuple(
        name
        for name in names
        if len(name) >= LABEL_HEAD
        or conn.execute(_ANY_LABELLED, label_range(name)).fetchone() is not None
    )


def speaker_label(text: str) -> str:
    """Who an entry's text says spoke it, casefolded: what comes before its first colon when
    that is 1 to 39 characters (``Caroline: ...``, ``user: ...``); "" for none."""
    head, colon, _ = text.partition(":")
    return head.casefold() if colon and 0 < len(head) < _LABEL_MAX else ""


def centroid_names(query: str) -> list[str]:
    """The speakers ``query`` names (the speaker boost's rule, roles included), casefolded."""
    return [name.casefold() for name in query_speakers(query)]


def matrix_rows(
    known: Sequence[int] | npt.NDArray[np.int64], rowids: Sequence[int]
) -> tuple[list[int], npt.NDArray[np.int64]]:
    """Those of ``rowids`` that are in ``known`` (a matrix's rowids, ascending), in their order,
    and their rows in the matrix."""
    import numpy as np

    ordered = np.asarray(known, dtype=np.int64)
    asked = np.asarray(rowids, dtype=np.int64)
    if not len(ordered) or not len(asked):
        return [], np.zeros(0, dtype=np.int64)
    at = np.minimum(np.searchsorted(ordered, asked), len(ordered) - 1)
    hit = ordered[at] == asked
    rows: npt.NDArray[np.int64] = at[hit]
    return [int(r) for r in asked[hit]], rows


def speaker_rows(
    conn: sqlite3.Connection, known: Sequence[int]
) -> dict[str, npt.NDArray[np.int64]]:
    """The rows of a vector matrix (rowids ``known``, ascending) by their entries' speaker
    labels, each ascending; entries without a label or a row are left out."""
    import numpy as np

    labels: dict[str, list[int]] = {}
    # The label is in the first _LABEL_MAX characters: the rest of the text is not read.
    sql = f"SELECT rowid, {_HEAD} FROM entries"
    for rowid, head in conn.execute(sql):
        label = speaker_label(str(head))
        if label:
            labels.setdefault(label, []).append(int(rowid))
    return {label: np.sort(matrix_rows(known, ids)[1]) for label, ids in labels.items()}


def centroid_vector(vectors: VectorStore, said: Sequence[int]) -> npt.NDArray[np.float32] | None:
    """The centroid query (module doc): the normalised mean vector of the first
    ``CENTROID_HITS`` of ``said`` (fused hits, best first) that have a vector; None when none
    has one."""
    import numpy as np

    rowids, matrix = vectors.vectors_of(said)
    if not rowids:
        return None
    mean = matrix[:CENTROID_HITS].mean(axis=0)
    size = float(np.linalg.norm(mean))
    if size == 0.0:
        return None
    centroid: npt.NDArray[np.float32] = mean / np.float32(size)
    return centroid


def speaker_centroid(
    vectors: VectorStore, names: Collection[str], said: Sequence[int], depth: int
) -> list[int]:
    """The centroid's ranking (module doc), ``depth`` rowids best first, over the entries that
    ``names`` (casefolded labels) said, from the fused hits of those speakers ``said`` (best
    first; ``centroid_vector``). Empty when none has a vector."""
    centroid = centroid_vector(vectors, said) if names else None
    if centroid is None:
        return []
    ranked = vectors.rank_vector(centroid, depth, said_by=sorted(set(names)))
    return [rowid for rowid, _ in ranked]

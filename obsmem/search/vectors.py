"""Entry vectors kept in the index (table ``vectors``) and scored with numpy.

Python builds often lack ``sqlite3``'s ``enable_load_extension`` (this project's machine does), so
no vector extension can be relied on: vectors are float32 BLOBs in SQLite and a query is one
matrix-vector product in numpy. ``VectorStore`` is the one class that knows this, so a faster
backend (an ANN index, sqlite-vec where it loads) can replace it behind the same three methods.

Vectors are keyed by the SHA-256 of the embedded text and the model's name. ``sync`` runs when
the index is updated (``obsmem/search/indexing.py``: after ``om observe`` and ``om reflect``
write, and by ``om reindex``), never during a search: it embeds only texts that have no vector
of the model's dimension yet (new or edited entries), so unchanged text is never embedded again,
and a query embeds only the query itself. Vectors of texts no entry has any longer are pruned in
the same step. An entry edited by hand between two updates has no vector until the next one:
``rank`` leaves it out (BM25 still finds it) and ``unembedded`` counts it. Vault copies of
observations get no vector of their own: the original is ranked instead.

Neighbours (``context_weight``): an entry's score can take in the mean cosine of the entries
just before and after it in its file and day (observations) or section (``CONTEXT_WIDTH`` on
each side, linked once per snapshot by ``neighbour_positions``). The cosine of a sum of vectors
is the sum of their cosines, so this ranks as if each entry had been embedded with its
neighbours' vectors added, without embedding anything again: an answer ("Three times a week")
rarely says what it answers, and the line before it does. Vectors stay one per text.

Large memories (``TWO_STAGE_FROM`` entries or more) are ranked in two stages, because one
product over every full vector reads the whole matrix (150 MB at 100,000 entries), which is
most of a warm query's time. The vectors' ``REDUCED_DIMS`` principal directions (of the stored
vectors themselves, computed once per snapshot) give each entry a short vector; the query's
short vector scores every entry approximately, and the best ``CANDIDATES`` (at least 20 times
the number asked for) are scored again exactly. The exact ranking of those is the result: on
real sentence embeddings, what the approximation keeps out of the candidates is almost never
in the exact top (docs/architecture.md, Search). Filtered rankings (``among``) stay exact. With
neighbours, both stages take them in: the short scores of every entry, then the exact ones of
the candidates, from their own and their neighbours' exact cosines.

In-process cache: a long-lived process (an MCP server) asks many queries on one open connection.
``sync`` and ``rank`` would otherwise re-read every entry and vector and re-hash every text per
query. So the last state of each model is kept per process: the connection it was read on, that
connection's ``PRAGMA data_version`` (changes when any other connection commits) and
``total_changes`` (changes when this one writes), whether ``sync`` found nothing left to do, and
the rowids with their vectors as one matrix (and how many entries have none). While all three
are unchanged, ``sync`` returns 0 at once and ``rank`` is one matrix-vector product. A different
connection is a miss, so a process that opens a connection per query gets the behaviour without
the cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from obsmem.errors import IndexError_

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from obsmem.search.embeddings import Embedder

__all__ = [
    "CANDIDATES",
    "ENTRIES_SQL",
    "REDUCED_DIMS",
    "TWO_STAGE_FROM",
    "Neighbours",
    "VectorStore",
    "clear_cache",
    "count_unembedded",
    "embed_in_batches",
    "embed_missing",
    "embed_text",
    "neighbour_positions",
    "principal_directions",
    "text_hash",
    "top_positions",
    "two_stage_top",
    "with_context",
    "write_rows",
]

#: How many entries on each side of an entry count as its neighbours in the vector ranking.
CONTEXT_WIDTH = 1

#: Texts embedded per model call and per write transaction while catching up.
_BATCH = 256

#: From this many entries with a vector, rankings take two stages (module doc).
TWO_STAGE_FROM = 20_000
#: Dimensions of the short vectors of the first stage.
REDUCED_DIMS = 96
#: Entries the first stage passes to the exact one (at least; 20 per result asked for).
CANDIDATES = 1000
# The covariance that gives the principal directions is estimated on at most this many
# vectors (evenly spaced): more adds time at every reload, not precision.
_FIT_ROWS = 25_000

#: The entries that get a vector (rowid, section, text): all but the vault's copies of
#: observations that are indexed where they were written (search shows the original anyway,
#: and the copy would double the embedding work for every observation).
ENTRIES_SQL = """
SELECT e.rowid, e.section, e.text FROM entries AS e
WHERE e.kind != 'vault'
   OR NOT EXISTS (SELECT 1 FROM entries AS p WHERE p.id = e.id AND p.kind != 'vault')
ORDER BY e.rowid
"""


def embed_text(section: str | None, text: str) -> str:
    """What is embedded for an entry: its text, after its section heading when it has one.

    The heading says what a section entry is about ("Preferences / Editor"), which the line alone
    often does not.
    """
    return f"{section}: {text}" if section else text


def text_hash(text: str) -> str:
    """The key a vector is stored under: SHA-256 (hex) of the embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def count_unembedded(conn: sqlite3.Connection, model: str) -> tuple[int, int]:
    """(entries with no vector under ``model``, entries that should have one), without loading
    the model or any vector (``om doctor``): SQLite hashes each entry's text and looks it up.
    A vector of the wrong dimension counts as present here."""
    conn.create_function(
        "om_text_hash",
        2,
        lambda section, text: text_hash(embed_text(section, str(text))),
        deterministic=True,
    )
    missing, total = conn.execute(
        f"""SELECT coalesce(sum(NOT EXISTS (
                SELECT 1 FROM vectors AS v
                WHERE v.hash = om_text_hash(w.section, w.text) AND v.model = ?)), 0),
            count(*)
            FROM ({ENTRIES_SQL}) AS w""",
        (model,),
    ).fetchone()
    return int(missing), int(total)


#: ``progress(done, total)``: entries with a vector so far, of those that should have one.
Progress = Callable[[int, int], None]


def embed_missing(
    conn: sqlite3.Connection,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Embed the entry texts of ``conn``'s index with no vector under ``embedder``; return how
    many were embedded. Vectors no entry uses any longer are deleted on the way.

    Works in batches of ``_BATCH`` texts, each committed on its own, so that what is embedded
    is searchable at once and an interrupted run keeps its work. ``progress`` is called before
    the first batch and after each one; ``stop`` is asked between batches (a daemon leaving).
    Uses no cache (``VectorStore``'s snapshots): a background thread runs it on a connection of
    its own while searches use theirs.
    """
    import numpy as np

    model = embedder.name
    wanted: dict[str, str] = {}
    for _, section, text in conn.execute(ENTRIES_SQL):
        body = embed_text(section, str(text))
        wanted.setdefault(text_hash(body), body)
    stored = {
        str(h): int(dim)
        for h, dim in conn.execute("SELECT hash, dim FROM vectors WHERE model = ?", (model,))
    }
    # A vector of another dimension (the server's model changed under the same name) is
    # useless to ``rank``: embedded again and replaced. ``dim`` is asked only when needed,
    # because an endpoint learns it with a request.
    dim = embedder.dim if stored else 0
    missing = [(h, body) for h, body in wanted.items() if h not in stored or stored[h] != dim]
    stale = [(h, model) for h in stored if h not in wanted]
    keys = [h for h, _ in missing]

    def rows(start: int, matrix: npt.NDArray[np.float32]) -> list[tuple[object, ...]]:
        return [
            (h, model, int(matrix.shape[1]), np.ascontiguousarray(vec, dtype="<f4").tobytes())
            for h, vec in zip(keys[start : start + len(matrix)], matrix, strict=True)
        ]

    embedded = embed_in_batches(
        conn,
        embedder,
        [body for _, body in missing],
        rows,
        "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
        total=len(wanted),
        progress=progress,
        stop=stop,
    )
    if stale:
        write_rows(conn, "DELETE FROM vectors WHERE hash = ? AND model = ?", stale)
    return embedded


def embed_in_batches(
    conn: sqlite3.Connection,
    embedder: Embedder,
    texts: Sequence[str],
    rows: Callable[[int, npt.NDArray[np.float32]], list[tuple[object, ...]]],
    sql: str,
    *,
    total: int,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Embed ``texts`` ``_BATCH`` at a time, each batch stored by ``sql`` over ``rows(start,
    matrix)`` (the batch's first index in ``texts``, its vectors) in a transaction of its own;
    how many were embedded. ``progress(done, total)`` counts from ``total - len(texts)``,
    before the first batch and after each; ``stop`` is asked between batches."""
    done = total - len(texts)
    if progress is not None:
        progress(done, total)
    embedded = 0
    for start in range(0, len(texts), _BATCH):
        if stop is not None and stop():
            break
        matrix = embedder.embed(list(texts[start : start + _BATCH]))
        write_rows(conn, sql, rows(start, matrix))
        embedded += len(matrix)
        if progress is not None:
            progress(done + embedded, total)
    return embedded


def write_rows(conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
    """Run ``sql`` for each of ``rows`` in one write transaction; ``IndexError_`` if it fails."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise IndexError_(
            f"cannot store embeddings in the search index: {exc}",
            "another om process may be writing it; try again, or run `om reindex`",
        ) from exc


# Entries in file order with what groups them as neighbours: the day for observations and
# archives, the section for the other files (as ``schema.neighbour_context`` groups them).
_NEIGHBOUR_SQL = """
SELECT e.rowid, e.file,
       CASE WHEN e.kind IN ('observation', 'archive') THEN 'd' || coalesce(e.date, '')
            ELSE 's' || coalesce(e.section, '') END
FROM entries AS e ORDER BY e.file, e.line, e.rowid
"""


@dataclass(frozen=True)
class Neighbours:
    """Each matrix row's neighbours (``neighbour_positions``), ready for ``with_context``.

    ``links`` holds one row per place beside an entry (the nearest before, the nearest after,
    then the next ones out), each giving a matrix row, or the matrix's length where there is
    none (a padding score of 0 sits there); ``share`` is 1 / how many neighbours a row has (0
    for none), so that the mean is a few gathers, a sum and a product.
    """

    links: npt.NDArray[np.intp]
    share: npt.NDArray[np.float32]


def neighbour_positions(
    conn: sqlite3.Connection, rowids: Sequence[int], width: int = 1
) -> Neighbours:
    """For each of ``rowids`` (the rows of a vector matrix, ascending), the matrix rows of the
    ``width`` entries on each side of it in its file and group (day or section)."""
    import numpy as np

    at = {rowid: i for i, rowid in enumerate(rowids)}
    none = len(rowids)
    links = np.full((2 * width, none), none, dtype=np.intp)
    group: list[int] = []  # the current group's rows, in file order
    last: tuple[object, object] | None = None
    for rowid, file, key in conn.execute(_NEIGHBOUR_SQL):
        if (file, key) != last:
            group = []
        last = (file, key)
        here = at.get(int(rowid), none)
        # A neighbour with no vector (a vault copy, an entry not embedded yet) links nothing:
        # it takes its place, so the rows beyond it are no nearer.
        for step in range(1, width + 1):
            if step <= len(group) and here != none and (there := group[-step]) != none:
                links[2 * step - 2, here] = there
                links[2 * step - 1, there] = here
        group.append(here)
    count = (links != none).sum(axis=0).astype(np.float32)
    share = np.divide(1.0, count, out=np.zeros(none, dtype=np.float32), where=count > 0)
    return Neighbours(links, share)


def with_context(
    scores: npt.NDArray[np.float32],
    neighbours: Neighbours,
    weight: float,
    rows: npt.NDArray[np.intp] | None = None,
) -> npt.NDArray[np.float32]:
    """``scores`` plus ``weight`` times the mean score of each row's neighbours (those it has).

    Adding a neighbour's cosine is the cosine of the entry's vector plus the neighbour's, so
    this is an embedding of the entry with its context at no embedding cost. ``rows`` limits it
    to those rows (the others are returned unchanged); their neighbours' scores must be set.
    """
    import numpy as np

    if weight <= 0.0:
        return scores
    padded = np.append(scores, np.float32(0.0))
    links = neighbours.links if rows is None else neighbours.links[:, rows]
    near = padded[links[0]]
    for place in links[1:]:
        near += padded[place]
    share = neighbours.share if rows is None else neighbours.share[rows]
    if rows is None:
        out: npt.NDArray[np.float32] = scores + np.float32(weight) * share * near
        return out
    padded[rows] += np.float32(weight) * share * near
    result: npt.NDArray[np.float32] = padded[:-1]
    return result


@dataclass
class _Snapshot:
    """What ``VectorStore`` knows of one connection's index at one ``state`` (module doc)."""

    conn: sqlite3.Connection
    state: tuple[int, int]
    synced: bool = False
    rowids: list[int] | None = None
    matrix: npt.NDArray[np.float32] | None = None
    missing: int = 0
    # The first stage of a two-stage ranking: directions (dims x REDUCED_DIMS) and every
    # entry's short vector, computed on first use.
    basis: npt.NDArray[np.float32] | None = None
    reduced: npt.NDArray[np.float32] | None = None
    # Each row's neighbours (``neighbour_positions``), read on first use with a context weight.
    neighbours: Neighbours | None = None
    # Matrix rows by speaker label (``speaker_label``), read on first use by a speaker, and
    # the rowids as an array (``vectors_of``).
    speakers: dict[str, npt.NDArray[np.int64]] | None = None
    ids: npt.NDArray[np.int64] | None = None


# One snapshot per model name. It holds its connection so that identity checks stay sound.
_SNAPSHOTS: dict[str, _Snapshot] = {}


def clear_cache() -> None:
    """Forget every cached snapshot (tests; after replacing an index file under a connection)."""
    _SNAPSHOTS.clear()


def top_positions(
    positions: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], limit: int
) -> npt.NDArray[np.int64]:
    """The ``limit`` positions with the best ``scores``, best first, ties to the lower position.

    The same as a full sort, without sorting every score: a partition finds the cut and only
    the positions scoring at least the cut (ties at the cut included) are sorted.
    """
    import numpy as np

    negated = -scores[positions]
    if 0 < limit < len(positions):
        cut = np.partition(negated, limit - 1)[limit - 1]
        keep = np.flatnonzero(negated <= cut)
        positions, negated = positions[keep], negated[keep]
    # lexsort's last key is the primary one: best score first, then lower position.
    result: npt.NDArray[np.int64] = positions[np.lexsort((positions, negated))[:limit]]
    return result


def principal_directions(
    matrix: npt.NDArray[np.float32], dims: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """The ``dims`` directions that keep most of ``matrix``'s rows' inner products (the top
    eigenvectors of its uncentred second moment, as columns) and every row projected on them.

    Uncentred, because what must survive is each row's dot product with a query, not its
    distance to the mean.
    """
    import numpy as np

    step = max(1, len(matrix) // _FIT_ROWS)
    sample = matrix[::step].astype(np.float64)
    # eigh sorts eigenvalues ascending. An eigenvector's sign is arbitrary, and harmless: the
    # approximate score multiplies the query's and the row's coordinates on the same direction.
    vectors = np.linalg.eigh(sample.T @ sample)[1]
    basis = np.ascontiguousarray(vectors[:, ::-1][:, :dims], dtype=np.float32)
    return basis, np.ascontiguousarray(matrix @ basis)


def two_stage_top(
    matrix: npt.NDArray[np.float32],
    basis: npt.NDArray[np.float32],
    reduced: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    limit: int,
    candidates: int,
    *,
    neighbours: Neighbours | None = None,
    context_weight: float = 0.0,
    allowed: npt.NDArray[np.int64] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The ``limit`` best rows of ``matrix`` for ``query`` among the ``candidates`` best by the
    approximate scores of ``reduced`` (``principal_directions``), best first, ties to the lower
    row; and the scores array, exact at those rows. With ``neighbours`` and a
    ``context_weight``, scores take in the neighbours' (``with_context``) in both stages.
    ``allowed`` (ascending rows) holds the only rows that may be ranked; their neighbours still
    count."""
    import numpy as np

    approx = reduced @ (query @ basis)
    context = neighbours is not None and context_weight > 0.0
    if context:
        assert neighbours is not None
        approx = with_context(approx, neighbours, context_weight)
    size = len(approx)
    if allowed is None and candidates < size:
        # The same partition as over ``approx[arange(size)]``, without that copy.
        picked = np.sort(np.argpartition(-approx, candidates - 1)[:candidates])
    elif allowed is None:
        picked = np.arange(size)
    elif candidates < len(allowed):
        picked = np.sort(allowed[np.argpartition(-approx[allowed], candidates - 1)[:candidates]])
    else:
        picked = allowed
    scores = np.zeros(size, dtype=np.float32)
    if context:
        assert neighbours is not None
        near = neighbours.links[:, picked].ravel()
        # The rows picked and their neighbours, ascending, once each (a mask: no sort).
        marked = np.zeros(size + 1, dtype=np.bool_)
        marked[picked] = True
        marked[near] = True  # "no neighbour" is ``size``: the mask's extra last place
        needed = np.flatnonzero(marked[:size])
        scores[needed] = matrix[needed] @ query
        scores = with_context(scores, neighbours, context_weight, rows=picked)
    else:
        scores[picked] = matrix[picked] @ query
    return top_positions(picked, scores, limit), scores


class VectorStore:
    """The vectors of one index connection for one embedder, scored by cosine similarity.

    Vectors are stored normalised, so cosine similarity is a dot product.
    """

    def __init__(
        self, conn: sqlite3.Connection, embedder: Embedder, context_weight: float = 0.0
    ) -> None:
        self.conn = conn
        self.embedder = embedder
        # With a weight, an entry's score takes in its neighbours' (``with_context``).
        self.context_weight = context_weight

    def _state(self) -> tuple[int, int]:
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        return int(version), self.conn.total_changes

    def _snapshot(self) -> _Snapshot:
        """The cached snapshot for this connection and model, a fresh one when it is stale."""
        state = self._state()
        snap = _SNAPSHOTS.get(self.embedder.name)
        if snap is None or snap.conn is not self.conn or snap.state != state:
            snap = _Snapshot(self.conn, state)
            _SNAPSHOTS[self.embedder.name] = snap
        return snap

    def sync(self, progress: Progress | None = None) -> int:
        """Embed every entry text that has no vector under this model yet; return how many.

        Also deletes this model's vectors that no entry uses any longer, so the table does not
        grow with every edit. ``progress`` is ``embed_missing``'s.
        """
        if self._snapshot().synced:
            return 0
        count = embed_missing(self.conn, self.embedder, progress=progress)
        # After our own writes: the state they left is the one known to be in sync.
        snap = self._snapshot()
        snap.synced = True
        return count

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` entries most similar to ``query``: (entry rowid, cosine), best first.

        Entries whose text has no vector yet (``sync`` not run since they changed) are left out.
        Ties go to the lower rowid, so the order is the same on every run.
        """
        return self.rank_vector(self.embedder.embed([query])[0], limit)

    def rank_vector(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        among: Collection[int] | None = None,
        *,
        exact_for: int | None = None,
        said_by: Collection[str] = (),
    ) -> list[tuple[int, float]]:
        """``rank`` for a query already embedded by this store's embedder.

        ``among``, when given, holds the only entry rowids that may be ranked (search filters).
        ``exact_for`` (default ``limit``): a two-stage ranking passes as many candidates to the
        exact stage as for this many results, so a longer list read for re-sorting (hybrid
        search's date boost) costs no more exact scoring than the list it is cut to.
        ``said_by`` (speakers, casefolded): only entries whose text starts with one of them as
        a label (``speaker_label``) are ranked; with ``among``, those of them it holds.
        """
        import numpy as np

        snap = self._loaded()
        if not snap.rowids or snap.matrix is None:
            return []
        rowids, matrix = snap.rowids, snap.matrix
        allowed = self._said_by(snap, said_by) if said_by else None
        candidates = max(CANDIDATES, 20 * (exact_for or limit), limit)
        if among is None and len(rowids) >= TWO_STAGE_FROM and candidates < len(rowids) // 2:
            return self._two_stage(snap, query, limit, candidates, allowed)
        scores = matrix @ query
        if self.context_weight > 0.0:
            scores = with_context(scores, self._neighbours(snap), self.context_weight)
        positions = np.arange(len(rowids)) if allowed is None else allowed
        if among is not None:
            wanted = np.fromiter(among, dtype=np.int64, count=len(among))
            found = np.flatnonzero(np.isin(np.asarray(rowids, dtype=np.int64), wanted))
            positions = found if allowed is None else np.intersect1d(found, allowed)
        order = top_positions(positions, scores, limit)
        return [(rowids[int(i)], float(scores[int(i)])) for i in order]

    def _two_stage(
        self,
        snap: _Snapshot,
        query: npt.NDArray[np.float32],
        limit: int,
        candidates: int,
        allowed: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """``rank_vector`` over a large matrix (module doc)."""
        assert snap.rowids is not None and snap.matrix is not None
        if snap.basis is None or snap.reduced is None:
            snap.basis, snap.reduced = principal_directions(snap.matrix, REDUCED_DIMS)
        neighbours = self._neighbours(snap) if self.context_weight > 0.0 else None
        order, scores = two_stage_top(
            snap.matrix,
            snap.basis,
            snap.reduced,
            query,
            limit,
            candidates,
            neighbours=neighbours,
            context_weight=self.context_weight,
            allowed=allowed,
        )
        return [(snap.rowids[int(i)], float(scores[int(i)])) for i in order]

    def _neighbours(self, snap: _Snapshot) -> Neighbours:
        if snap.neighbours is None:
            assert snap.rowids is not None
            snap.neighbours = neighbour_positions(self.conn, snap.rowids, CONTEXT_WIDTH)
        return snap.neighbours

    def _said_by(self, snap: _Snapshot, names: Collection[str]) -> npt.NDArray[np.int64]:
        """The matrix rows (ascending) of the entries whose speaker label is one of ``names``."""
        import numpy as np

        from obsmem.search.speakers import speaker_rows

        assert snap.rowids is not None
        if snap.speakers is None:
            snap.speakers = speaker_rows(self.conn, snap.rowids)
        parts = [snap.speakers[name] for name in set(names) if name in snap.speakers]
        if len(parts) == 1:
            return parts[0]
        # Each row has one label, so the parts are disjoint: a sort, no search for repeats.
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def vectors_of(self, rowids: Sequence[int]) -> tuple[list[int], npt.NDArray[np.float32]]:
        """Those of ``rowids`` that have a vector (in their order), and their vectors."""
        import numpy as np

        from obsmem.search.speakers import matrix_rows

        snap = self._loaded()
        assert snap.matrix is not None
        if snap.ids is None:  # once per snapshot: converting the rowids costs ms at 100,000
            snap.ids = np.asarray(snap.rowids or [], dtype=np.int64)
        found, rows = matrix_rows(snap.ids, rowids)
        return found, snap.matrix[rows]

    def unembedded(self) -> int:
        """How many entries have no vector under this model (they are left out of ``rank``)."""
        return self._loaded().missing

    def _loaded(self) -> _Snapshot:
        """The snapshot with its rowids and matrix read."""
        snap = self._snapshot()
        if snap.rowids is None or snap.matrix is None:
            snap.rowids, snap.matrix, snap.missing = self._matrix()
        return snap

    def _matrix(self) -> tuple[list[int], npt.NDArray[np.float32], int]:
        """Rowids of the entries with a vector (ascending), those vectors, how many have none."""
        import numpy as np

        rowids: list[int] = []
        hashes: list[str] = []
        for rowid, section, text in self.conn.execute(ENTRIES_SQL):
            rowids.append(int(rowid))
            hashes.append(text_hash(embed_text(section, str(text))))
        vectors = self._load(hashes)
        keep = [i for i, h in enumerate(hashes) if h in vectors]
        missing = len(hashes) - len(keep)
        if not keep:
            return [], np.zeros((0, 0), dtype=np.float32), missing
        matrix = np.stack([vectors[hashes[i]] for i in keep])
        return [rowids[i] for i in keep], matrix, missing

    def _load(self, hashes: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        import numpy as np

        out: dict[str, npt.NDArray[np.float32]] = {}
        wanted = set(hashes)
        rows = self.conn.execute(
            "SELECT hash, dim, vec FROM vectors WHERE model = ?", (self.embedder.name,)
        )
        for h, dim, blob in rows:
            if h in wanted and len(blob) == 4 * int(dim) == 4 * self.embedder.dim:
                out[str(h)] = np.frombuffer(blob, dtype="<f4")
        return out

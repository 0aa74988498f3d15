"""Entry vectors kept in the index (table ``vectors``) and scored with numpy.

Python builds often lack ``sqlite3``'s ``enable_load_extension`` (this project's machine does), so
no vector extension can be relied on: vectors are float32 BLOBs in SQLite and a query is one
matrix-vector product in numpy. ``VectorStore`` is the one class that knows this, so a faster
backend (an ANN index, sqlite-vec where it loads) can replace it behind the same three methods.

Vectors are keyed by the SHA-256 of the embedded text and the model's name. ``sync`` is called
right before a hybrid query, after the index refresh: it embeds only texts that have no vector
yet (new or edited entries), so unchanged text is never embedded again, and a query embeds only
the query itself. Vectors of texts no entry has any longer are pruned in the same step.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from obsmem.errors import IndexError_

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from obsmem.search.embeddings import Embedder

__all__ = ["VectorStore", "embed_text", "text_hash"]

#: Texts embedded per model call and per write transaction while catching up.
_BATCH = 256


def embed_text(section: str | None, text: str) -> str:
    """What is embedded for an entry: its text, after its section heading when it has one.

    The heading says what a section entry is about ("Preferences / Editor"), which the line alone
    often does not.
    """
    return f"{section}: {text}" if section else text


def text_hash(text: str) -> str:
    """The key a vector is stored under: SHA-256 (hex) of the embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorStore:
    """The vectors of one index connection for one embedder, scored by cosine similarity.

    Vectors are stored normalised, so cosine similarity is a dot product.
    """

    def __init__(self, conn: sqlite3.Connection, embedder: Embedder) -> None:
        self.conn = conn
        self.embedder = embedder

    def sync(self) -> int:
        """Embed every entry text that has no vector under this model yet; return how many.

        Also deletes this model's vectors that no entry uses any longer, so the table does not
        grow with every edit.
        """
        import numpy as np

        model = self.embedder.name
        wanted: dict[str, str] = {}
        for section, text in self.conn.execute("SELECT section, text FROM entries"):
            body = embed_text(section, str(text))
            wanted.setdefault(text_hash(body), body)
        have = {
            str(row[0])
            for row in self.conn.execute("SELECT hash FROM vectors WHERE model = ?", (model,))
        }
        missing = [(h, body) for h, body in wanted.items() if h not in have]
        stale = [(h, model) for h in have if h not in wanted]
        for start in range(0, len(missing), _BATCH):
            batch = missing[start : start + _BATCH]
            matrix = self.embedder.embed([body for _, body in batch])
            rows = [
                (h, model, int(matrix.shape[1]), np.ascontiguousarray(vec, dtype="<f4").tobytes())
                for (h, _), vec in zip(batch, matrix, strict=True)
            ]
            self._write("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        if stale:
            self._write("DELETE FROM vectors WHERE hash = ? AND model = ?", stale)
        return len(missing)

    def _write(self, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(sql, rows)
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise IndexError_(
                f"cannot store embeddings in the search index: {exc}",
                "another om process may be writing it; try again, or run `om reindex`",
            ) from exc

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` entries most similar to ``query``: (entry rowid, cosine), best first.

        Entries whose text has no vector yet (``sync`` not run) are left out. Ties go to the
        lower rowid, so the order is the same on every run.
        """
        import numpy as np

        rowids: list[int] = []
        hashes: list[str] = []
        for rowid, section, text in self.conn.execute(
            "SELECT rowid, section, text FROM entries ORDER BY rowid"
        ):
            rowids.append(int(rowid))
            hashes.append(text_hash(embed_text(section, str(text))))
        vectors = self._load(hashes)
        keep = [i for i, h in enumerate(hashes) if h in vectors]
        if not keep:
            return []
        matrix = np.stack([vectors[hashes[i]] for i in keep])
        scores = matrix @ self.embedder.embed([query])[0]
        # lexsort's last key is the primary one: best score first, then lower rowid.
        order = np.lexsort((np.arange(len(keep)), -scores))[:limit]
        return [(rowids[keep[int(i)]], float(scores[int(i)])) for i in order]

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

"""Which entries hold each rare phrase, in two arrays, for the vocabulary bridge's holders.

``vocabulary.load_vocabulary`` keeps which entries hold every word and two-word phrase of the
memory, so that an item embedded later needs no scan of the entries. Most phrases are held by
one or two entries, and one Python list per phrase (with its key and its dict slot) costs about
200 bytes: 150 MB at 100,000 entries, for phrases that seldom become items (an item is a phrase
seen ``vocabulary.PHRASE_MIN`` times). ``RarePhrases`` keeps those instead as one (key, rowid)
pair per holder in two int64 arrays sorted together (16 bytes a pair, plus one byte that says it
still holds), the key being the phrase's ``hash`` (this process's string hash: the arrays live
in memory only).

Two phrases can share a key, so what the arrays give for a key is a superset: ``holders``
keeps only the entries whose text (``texts``, kept current by the owner) holds the phrase
itself (``phrases_of``), so the answer is exact. A phrase is asked about here only while it is
kept nowhere else: once ``take`` moved it out (to a list of its own), rows of other phrases
under its key may still name its holders. Changes go to a small dict beside the arrays
(``_more``) and a mask (``_alive``); once the dict holds ``MERGE_AT`` keys, both are merged into
new arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["MERGE_AT", "RarePhrases"]

#: Keys added since the arrays were built after which they are built again.
MERGE_AT = 50_000


class RarePhrases:
    """The holders of phrases held by few entries (module doc).

    ``texts`` maps each rowid to its entry's current text, ``phrases_of(text)`` gives the
    phrases a text holds; both are read only for the entries listed under a phrase's key.
    ``key`` (``hash``; any function to int64 is exact, a poor one only slower) gave ``keys``.
    """

    def __init__(
        self,
        keys: Iterable[int],
        rowids: Iterable[int],
        texts: Mapping[int, str],
        phrases_of: Callable[[str], Collection[str]],
        key: Callable[[str], int] = hash,
    ) -> None:
        import numpy as np

        keys_array = np.fromiter(keys, dtype=np.int64)
        rows_array = np.fromiter(rowids, dtype=np.int64, count=len(keys_array))
        order = np.lexsort((rows_array, keys_array))
        self._keys: npt.NDArray[np.int64] = keys_array[order]
        self._rows: npt.NDArray[np.int64] = rows_array[order]
        self._alive: npt.NDArray[np.bool_] = np.ones(len(order), dtype=np.bool_)
        self._more: dict[int, list[int]] = {}
        self.texts = texts
        self._phrases_of = phrases_of
        self.key = key

    def __len__(self) -> int:
        """How many (key, rowid) pairs are held."""
        return int(self._alive.sum()) + sum(len(rows) for rows in self._more.values())

    def _span(self, key: int) -> tuple[int, int]:
        """Where ``key``'s pairs are in the arrays."""
        import numpy as np

        lo = int(np.searchsorted(self._keys, key, side="left"))
        return lo, int(np.searchsorted(self._keys, key, side="right"))

    def listed(self, key: int) -> list[int]:
        """The rowids listed under ``key`` (those of every phrase with that key), ascending."""
        lo, hi = self._span(key)
        rows = [int(r) for r in self._rows[lo:hi][self._alive[lo:hi]]]
        more = self._more.get(key)
        return sorted([*rows, *more]) if more else rows

    def holders(self, phrase: str) -> list[int]:
        """The rowids of the entries holding ``phrase`` (exact), ascending."""
        # A rowid is listed once per phrase of its entry under the key: once each here.
        listed = dict.fromkeys(self.listed(self.key(phrase)))
        return [rowid for rowid in listed if phrase in self._phrases_of(self.texts[rowid])]

    def add(self, phrase: str, rowid: int) -> None:
        """``rowid`` holds ``phrase`` (it did not before)."""
        key = self.key(phrase)
        self._more.setdefault(key, []).append(rowid)
        if len(self._more) >= MERGE_AT:
            self._merge()

    def remove(self, phrase: str, rowid: int) -> None:
        """``rowid`` no longer holds ``phrase`` (it did)."""
        key = self.key(phrase)
        more = self._more.get(key)
        if more is not None and rowid in more:
            more.remove(rowid)
            if not more:
                del self._more[key]
            return
        lo, hi = self._span(key)
        for at in range(lo, hi):
            if self._rows[at] == rowid and self._alive[at]:
                self._alive[at] = False
                return

    def take(self, phrase: str, rowids: Iterable[int]) -> None:
        """Remove ``rowids``, holders of ``phrase`` (it is kept elsewhere now)."""
        for rowid in rowids:
            self.remove(phrase, rowid)

    def common_keys(self, least: int) -> set[int]:
        """The keys of the arrays with at least ``least`` rowids."""
        import numpy as np

        keys, counts = np.unique(self._keys[self._alive], return_counts=True)
        return {int(key) for key in keys[counts >= least]}

    def rows_of(self, keys: Collection[int]) -> list[int]:
        """The rowids (ascending, once each) listed under any of ``keys`` in the arrays."""
        import numpy as np

        wanted = np.fromiter(keys, dtype=np.int64, count=len(keys))
        found = np.isin(self._keys, wanted) & self._alive
        return [int(rowid) for rowid in np.unique(self._rows[found])]

    def drop(self, keys: Collection[int]) -> None:
        """Forget every rowid listed under ``keys`` in the arrays."""
        import numpy as np

        wanted = np.fromiter(keys, dtype=np.int64, count=len(keys))
        self._alive &= ~np.isin(self._keys, wanted)
        self._merge()

    def _merge(self) -> None:
        """The arrays built again from their live pairs and those of ``_more``, sorted."""
        import numpy as np

        count = sum(len(more) for more in self._more.values())
        keys = np.fromiter(
            (key for key, more in self._more.items() for _ in more), np.int64, count=count
        )
        rows = np.fromiter((r for more in self._more.values() for r in more), np.int64, count)
        keys = np.concatenate((self._keys[self._alive], keys))
        rows = np.concatenate((self._rows[self._alive], rows))
        order = np.lexsort((rows, keys))
        self._keys, self._rows = keys[order], rows[order]
        self._alive = np.ones(len(order), dtype=np.bool_)
        self._more = {}

"""Entries as the public dicts search returns, the filters that narrow a search, and
``search_entries``: what every search of the memory goes through.

Kept apart from ``recall.py`` (citations, excerpts, timelines) and light on imports, so that a
cold ``om search`` loads neither the memory modules nor the index's sync code when the index is
fresh: a search answers from the index alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date as Date

from obsmem.errors import UsageError
from obsmem.records import dataclass
from obsmem.search.bm25 import ENTRY_COLUMNS, search_rows

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from obsmem.memory.store import MemoryStore
    from obsmem.search.recall import KeptIndex
    from obsmem.settings import Settings

__all__ = ["SELECT", "Filters", "LazyStore", "check_date", "entry_dict", "search_entries"]

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

# The order of an entry's keys in the public dict (the columns are read as search reads them).
_COLUMNS = (
    "id", "kind", "file", "line", "line_end", "date", "time", "priority", "type", "confidence",
    "importance", "referenced_date", "section", "text", "source_path", "source_line_start",
    "source_line_end", "session", "agent", "project",
)  # fmt: skip
SELECT = ", ".join(f"e.{name}" for name in ENTRY_COLUMNS)


def entry_dict(row: Sequence[Any]) -> dict[str, Any]:
    """An ``entries`` row (``ENTRY_COLUMNS``) as the public dict, with citation and provenance."""
    read = dict(zip(ENTRY_COLUMNS, row, strict=True))
    data = {name: read[name] for name in _COLUMNS}
    source = data.pop("source_path")
    start, end = data.pop("source_line_start"), data.pop("source_line_end")
    session, agent, project = data.pop("session"), data.pop("agent"), data.pop("project")
    data["citation"] = (
        f"{data['file']}:{data['line']}" if data["line"] is not None else data["file"]
    )
    data["provenance"] = (
        None
        if source is None
        else {
            "source_path": source or None,  # "" marks an entry added explicitly (remember)
            "line_start": start,
            "line_end": end,
            "session": session,
            "agent": agent,
            "project": project,
        }
    )
    return data


def check_date(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not _DATE.fullmatch(value):
        raise UsageError(f"{name} {value!r} is not a date", "give it as YYYY-MM-DD")
    try:
        Date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{name} {value!r} is not a real date", "give it as YYYY-MM-DD") from None
    return value


@dataclass(frozen=True)
class Filters:
    """Conditions an entry must meet; None means "any". Dates are ``YYYY-MM-DD``, inclusive.

    ``project`` and ``agent`` come from provenance, so they only match observations whose source
    is known; ``type`` and ``min_importance`` only match entries that carry them.
    """

    since: str | None = None
    until: str | None = None
    type: str | None = None
    min_importance: float | None = None
    project: str | None = None
    agent: str | None = None

    def validated(self) -> Filters:
        """Self, after checking every value; raises ``UsageError`` naming the bad one."""
        check_date(self.since, "since")
        check_date(self.until, "until")
        if self.type is not None:
            # Here, not at the top: a cold ``om search`` never loads the memory modules.
            from obsmem.memory.model import OBSERVATION_TYPES

        if self.type is not None and self.type not in OBSERVATION_TYPES:
            raise UsageError(
                f"unknown type {self.type!r}", f"use one of {', '.join(OBSERVATION_TYPES)}"
            )
        if self.min_importance is not None and not 0.0 <= self.min_importance <= 1.0:
            raise UsageError("min_importance must be between 0 and 1")
        for name in ("project", "agent"):
            value = getattr(self, name)
            try:
                (value or "").encode("utf-8")
            except UnicodeEncodeError:
                # A command-line argument in bytes that are not UTF-8: no entry can match it,
                # and SQLite cannot even be asked.
                raise UsageError(
                    f"the {name} {value!r} is not valid UTF-8 text", "type the name again"
                ) from None
        return self

    def is_empty(self) -> bool:
        """True when no condition is set."""
        return all(value in (None, "") for value in self.__dict__.values())

    def sql(self) -> tuple[str, list[object]]:
        """A ``WHERE``-ready condition over ``entries AS e`` and its parameters (``1`` if empty)."""
        parts: list[str] = []
        params: list[object] = []
        for column, op, value in (
            ("date", ">=", self.since),
            ("date", "<=", self.until),
            ("type", "=", self.type),
            ("importance", ">=", self.min_importance),
            ("project", "=", self.project),
            ("agent", "=", self.agent),
        ):
            if value not in (None, ""):
                parts.append(f"e.{column} {op} ?")
                params.append(value)
        return (" AND ".join(parts) or "1"), params


def search_entries(
    store: MemoryStore,
    query: str,
    *,
    filters: Filters | None = None,
    limit: int = 10,
    settings: Settings | None = None,
    index: KeptIndex | None = None,
    kinds: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """``search`` restricted by ``filters``: entry dicts with ``rank`` and ``score``, best first.

    The same search as ``om search`` (hybrid when a model loads, BM25 otherwise; ``settings``
    are read from the environment when None), with the conditions applied inside the query to
    the keyword and the vector candidates alike (not to a cut list of hits), so a filter never
    hides a match that ranked below unrelated entries and never lets in one that fails it.
    ``index`` runs the search on a connection kept between calls. ``kinds`` keeps only entries
    of those index kinds (``observation``, ``archive``, ``reflection``, ...).
    """
    filters = (filters or Filters()).validated()
    where = None if filters.is_empty() else filters.sql()
    if kinds is not None:
        condition, params = where or ("1", [])
        marks = ", ".join("?" for _ in kinds)
        where = (f"({condition}) AND e.kind IN ({marks})", [*params, *kinds])
    rows = search_rows(store, query, limit=limit, settings=settings, where=where, index=index)
    out: list[dict[str, Any]] = []
    for rank, (row, score) in enumerate(rows, start=1):
        entry = entry_dict(row[1:-1])
        entry["rank"], entry["score"] = rank, score
        out.append(entry)
    return out


class LazyStore:
    """The ``MemoryStore`` of ``OM_HOME``, built only when something beyond its paths is used.

    A search of an index that its stamp shows fresh (``index/sync.py``) reads ``home`` and
    ``index_path`` and nothing else; building the store imports the memory modules (parsers,
    ledger, locks), which cost a cold process more than the query does. Anything else asked of
    this object builds the real store and is answered by it.
    """

    def __init__(
        self, lock_timeout: float = 30.0, environ: Mapping[str, str] | None = None
    ) -> None:
        from obsmem import paths

        self._lock_timeout = lock_timeout
        self._environ = environ
        self._store: MemoryStore | None = None
        self.home = paths.memory_dir(environ)
        self.index_path = paths.index_path(environ)
        self.turns_path = paths.turns_path(environ)
        if not (self.home.is_dir() and paths.state_dir(environ).is_dir()):
            self._real().ensure()  # as the command line's store: created if missing

    def _real(self) -> MemoryStore:
        if self._store is None:
            from obsmem.memory.store import MemoryStore

            self._store = MemoryStore(environ=self._environ, lock_timeout=self._lock_timeout)
        return self._store

    def __getattr__(self, name: str) -> object:
        return getattr(self._real(), name)

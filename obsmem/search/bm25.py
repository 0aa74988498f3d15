"""Keyword search over the whole memory: SQLite FTS5 ranked by BM25.

``search`` is always fresh: it refreshes the index before querying (a stat per memory file when
nothing changed), so a line added by hand is found by the very next search and the first search
of a directory that was never indexed builds the index. A missing or damaged index is rebuilt on
the way, without a message: it is derived data.

SQLite's ``bm25()`` returns lower-is-better negative numbers; a ``Hit`` carries its negation, so
a higher ``score`` is a better match, and ``rank`` 1 is the best hit. Scores are comparable only
within one query.

How entries are scored (``Ranking``): BM25 over three columns, the entry's text (weight 1), its
section heading (0.5) and its neighbours' text (``OM_SEARCH_CONTEXT_WEIGHT``, see
``index/schema.py``). So an entry can be found without holding a word of the query, when the
lines around it do (the answer below a question), usually below the entries that hold the words;
with the weight at 0 only an entry's own text and section are matched. Then, when the query
names a date (``dates.query_dates``: "on 3 March 2026", "in May", "yesterday"), the score of an
entry dated within it (its day or the date its message referred to) is multiplied by
``1 + OM_SEARCH_DATE_BOOST``. The date is applied inside the query, so an entry of that day is
found however far down the plain ranking it was.

A process that answers one query and exits (``om search``) never loads a local embedding model
or reranker (seconds, far longer than the query): it asks the search daemon, which keeps them
loaded (``client.cold_search``), and when that cannot answer passes its settings through
``for_cold_process``, which searches with BM25 and says why on stderr.

A query that names a speaker raises the entries that speaker said: an entry whose text starts
with ``Name:`` (how a memory of a conversation records a turn), when
the query holds that name as a capitalised word ("What did Caroline research?") or names the
role ``user`` / ``assistant``, has its score multiplied by ``1 + OM_SEARCH_SPEAKER_BOOST``. The
neighbours column carries the names of everyone around an entry, so a name in the query alone
no longer tells who said what.

Last, matches lift the matches around them: each matched entry's score gains
``OM_SEARCH_NEARBY_WEIGHT`` times the best score among the other matched entries within
``NEARBY_LINES`` lines of it in the same file, day and section (``lift_nearby``). In a memory of
a conversation the answer usually lies a few lines from the line that holds the question's
words, further than the neighbours column reaches, and a stretch of good matches marks the part
of a day a query is about. Only entries already matched are reordered; in hybrid search this is
BM25's list.

``search_rows`` is the one path every search takes (``search`` here, ``recall.search_entries``
with filters, the MCP ``search`` tool): BM25 alone, or hybrid (``hybrid.py``) when a model loads
or a reranker is set. Filters are a ``WHERE`` condition over ``entries AS e`` applied inside the
query, to both the keyword and the vector candidates.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_left
from collections.abc import Callable, Sequence
from datetime import date as Date

from obsmem.errors import UsageError
from obsmem.index.db import using_index
from obsmem.index.query import fts_query
from obsmem.index.stamp import unchanged
from obsmem.records import dataclass
from obsmem.search.answers import asked_form, form_order
from obsmem.search.dates import DateSpan, query_dates
from obsmem.search.speakers import labelled, query_speakers
from obsmem.settings import Settings, load_settings

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Protocol, TypeVar

    # Only its paths are read here: a search of a fresh index never loads the memory modules.
    from obsmem.memory.store import MemoryStore

    T = TypeVar("T")

    class Connections(Protocol):
        """Something that runs ``work`` on a connection to one index (``recall.KeptIndex``).

        A type only (a cold search does not import ``typing``): any object with this method.
        """

        def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
            """``work(conn)``'s result."""


__all__ = [
    "COLD_NOTE",
    "COLD_RERANK_NOTE",
    "ENTRY_COLUMNS",
    "NEARBY_LINES",
    "ROWS_SQL",
    "SECTION_WEIGHT",
    "TEXT_AT",
    "TEXT_WEIGHT",
    "Connections",
    "Hit",
    "Ranking",
    "Scored",
    "Where",
    "answer_ordered",
    "bm25_rows",
    "date_condition",
    "distinct_rows",
    "for_cold_process",
    "hit_from_row",
    "lift_nearby",
    "needs_local_model",
    "query_index",
    "search",
    "search_rows",
]

#: A condition over ``entries AS e`` and its parameters (``recall.Filters.sql()``).
Where = tuple[str, Sequence[object]]
#: A result row (the raw BM25 score, ``ENTRY_COLUMNS``, the rowid last) and its final score.
Scored = tuple[tuple[object, ...], float]

#: BM25 column weights. A section heading ("Preferences / Editor") says what an entry is about,
#: but a word in it is shared by every entry below it, so it counts for less than the entry's text.
TEXT_WEIGHT = 1.0
SECTION_WEIGHT = 0.5

_PROVENANCE_KEYS = ("source_path", "line_start", "line_end", "session", "agent", "project")

#: The entry columns of a result row, after its raw score (``hit_from_row`` reads the first 17;
#: ``recall`` reads them all by name).
ENTRY_COLUMNS: tuple[str, ...] = (
    "id", "kind", "file", "line", "date", "time", "priority", "type", "importance", "section",
    "text", "source_path", "source_line_start", "source_line_end", "session", "agent", "project",
    "line_end", "confidence", "referenced_date",
)  # fmt: skip
_COLUMNS = ", ".join(f"e.{name}" for name in ENTRY_COLUMNS)
#: Where a result row holds the entry's text (after its raw score).
TEXT_AT = 1 + ENTRY_COLUMNS.index("text")

# The CTE lets FTS5 produce and sort only the matches; entries are joined for the top ``limit``.
# Ties are broken by rowid so that a query gives the same order on every run.
_SQL = f"""
WITH matched AS (
    SELECT rowid AS rid, bm25(entries_fts, ?, ?, ?) AS raw
    FROM entries_fts
    WHERE entries_fts MATCH ?
    ORDER BY raw, rowid
    LIMIT ?
)
SELECT m.raw, {_COLUMNS}, m.rid
FROM matched AS m JOIN entries AS e ON e.rowid = m.rid
ORDER BY m.raw, m.rid
"""

# With dates or filters, every match's entry is needed to score or test it, so entries are
# joined before sorting.
_JOINED_SQL = """
SELECT {score} AS raw, {columns}, e.rowid
FROM entries_fts JOIN entries AS e ON e.rowid = entries_fts.rowid
WHERE entries_fts MATCH ? AND ({where})
ORDER BY raw, e.rowid
LIMIT ?
"""

#: The same columns as ``_SQL`` for entries by rowid (raw score 0), for hits BM25 did not find:
#: ``marks`` is one ``?`` per rowid, comma-separated.
ROWS_SQL = f"SELECT 0.0, {_COLUMNS}, e.rowid FROM entries AS e WHERE e.rowid IN ({{marks}})"


@dataclass(frozen=True)
class Ranking:
    """How BM25 scores entries: the neighbours column's weight, the dates and the speakers the
    query names.

    The defaults are the settings' defaults; ``for_query`` reads them from ``Settings``.
    """

    context_weight: float = Settings.search_context_weight
    dates: tuple[DateSpan, ...] = ()
    date_boost: float = Settings.search_date_boost
    speakers: tuple[str, ...] = ()
    speaker_boost: float = Settings.search_speaker_boost
    nearby_weight: float = Settings.search_nearby_weight

    @classmethod
    def for_query(cls, query: str, settings: Settings, today: Date | None = None) -> Ranking:
        """The ranking for ``query``: its dates (relative ones against ``today``), its speakers
        and the settings."""
        dates = tuple(query_dates(query, today)) if settings.search_date_boost > 0 else ()
        speakers = tuple(query_speakers(query)) if settings.search_speaker_boost > 0 else ()
        return cls(
            settings.search_context_weight,
            dates,
            settings.search_date_boost,
            speakers,
            settings.search_speaker_boost,
            settings.search_nearby_weight,
        )

    def match(self, expression: str) -> str:
        """The ``MATCH`` expression to run: with the neighbours' weight at 0, entries are matched
        on their own text and section only, as a plain keyword search."""
        if self.context_weight > 0:
            return expression
        return f"{{text section}} : ({expression})"

    @property
    def dated(self) -> bool:
        """True when entries are scored by their dates too (the score then reads ``e``)."""
        return bool(self.dates) and self.date_boost > 0

    @property
    def by_speaker(self) -> bool:
        """True when entries are scored by who said them too (the score then reads ``e``)."""
        return bool(self.speakers) and self.speaker_boost > 0

    def said_by(self, speakers: tuple[str, ...]) -> Ranking:
        """This ranking with ``speakers`` as the query's speakers."""
        return Ranking(
            self.context_weight,
            self.dates,
            self.date_boost,
            speakers,
            self.speaker_boost,
            self.nearby_weight,
        )

    @property
    def reads_entry(self) -> bool:
        """True when the score reads the entry (``e``), not only the FTS5 row."""
        return self.dated or self.by_speaker

    def score_sql(self) -> tuple[str, list[object]]:
        """An SQL expression of the raw score (lower is better) and its parameters.

        It reads ``entries_fts`` and, when there are dates or speakers, the entry as ``e``.
        """
        params: list[object] = [TEXT_WEIGHT, SECTION_WEIGHT, self.context_weight]
        score = "bm25(entries_fts, ?, ?, ?)"
        if self.dated:
            within, date_params = date_condition(self.dates)
            score += f" * (CASE WHEN {within} THEN ? ELSE 1.0 END)"
            params += [*date_params, 1.0 + self.date_boost]
        if self.by_speaker:
            # LIKE is case-blind for ASCII; the label is matched at the start of the text only.
            labels = " OR ".join("e.text LIKE ? ESCAPE '\\'" for _ in self.speakers)
            score += f" * (CASE WHEN {labels} THEN ? ELSE 1.0 END)"
            params += [_like_prefix(name) + ":%" for name in self.speakers]
            params.append(1.0 + self.speaker_boost)
        return score, params


def date_condition(spans: Sequence[DateSpan]) -> tuple[str, list[object]]:
    """An SQL condition over ``entries AS e`` (and its parameters): the entry is dated within
    one of ``spans``, by its day or by the date its message referred to. ``spans`` is not empty.
    """
    tests: list[str] = []
    params: list[object] = []
    for span in spans:
        for column in ("e.date", "e.referenced_date"):
            if span.month is not None:
                tests.append(f"substr({column}, 5, 4) = ?")
                params.append(f"-{span.month:02d}-")
            else:
                tests.append(f"substr({column}, 1, 10) BETWEEN ? AND ?")
                params += [span.start, span.end]
    return " OR ".join(tests), params


def _like_prefix(text: str) -> str:
    """``text`` as a literal for a ``LIKE ... ESCAPE '\\'`` pattern."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class Hit:
    """One search result: where the entry is, what it says, how well it matched, where it came from.

    ``provenance`` (for observations the ledger knows) has the keys ``source_path``,
    ``line_start``, ``line_end``, ``session``, ``agent`` and ``project``; it is None otherwise.
    """

    rank: int
    score: float
    id: str
    kind: str
    file: str
    line: int | None
    date: str | None
    time: str | None
    priority: str | None
    type: str | None
    importance: float | None
    section: str | None
    text: str
    provenance: dict[str, object] | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict with every field (``None`` for what is unknown)."""
        return {
            "rank": self.rank,
            "score": self.score,
            "id": self.id,
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "date": self.date,
            "time": self.time,
            "priority": self.priority,
            "type": self.type,
            "importance": self.importance,
            "section": self.section,
            "text": self.text,
            "provenance": dict(self.provenance) if self.provenance is not None else None,
        }


def hit_from_row(rank: int, row: Sequence[object], score: float | None = None) -> Hit:
    """A ``Hit`` from a row of ``_SQL`` (or ``ROWS_SQL``); ``score`` replaces the BM25 score."""
    (raw, entry_id, kind, file, line, date, time, priority, type_, importance, section, text,
     source_path, line_start, line_end, session, agent, project) = row[:18]  # fmt: skip
    provenance: dict[str, object] | None = None
    if source_path is not None:
        values = (source_path, line_start, line_end, session, agent, project)
        provenance = dict(zip(_PROVENANCE_KEYS, values, strict=True))
    return Hit(
        rank=rank,
        # 0.0 - x: bm25 is never positive, and this keeps a perfect 0 from printing as -0.0.
        score=score if score is not None else 0.0 - float(raw),  # type: ignore[arg-type]
        id=str(entry_id),
        kind=str(kind),
        file=str(file),
        line=_int_or_none(line),
        date=_str_or_none(date),
        time=_str_or_none(time),
        priority=_str_or_none(priority),
        type=_str_or_none(type_),
        importance=float(importance) if importance is not None else None,  # type: ignore[arg-type]
        section=_str_or_none(section),
        text=str(text),
        provenance=provenance,
    )


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) else None


def bm25_rows(
    conn: sqlite3.Connection,
    expression: str,
    limit: int,
    ranking: Ranking | None = None,
    where: Where | None = None,
) -> list[tuple[object, ...]]:
    """The best ``limit`` raw rows for an FTS5 expression: ``_SQL``'s columns, rowid last.

    ``ranking`` (default: ``Ranking()``, no dates) sets the column weights and date boosts;
    ``where`` keeps only the entries that meet it, inside the query, so a filter never hides a
    match that ranked below unrelated entries.
    """
    ranking = ranking or Ranking()
    if ranking.by_speaker:
        # A speaker no entry carries as a label changes no score: left out, the boost does not
        # test every match's text for nothing (a coding memory and "what did the user say").
        ranking = ranking.said_by(labelled(conn, ranking.speakers))
    score, params = ranking.score_sql()
    condition, where_params = where or ("1", ())
    if ranking.reads_entry or where is not None:
        sql = _JOINED_SQL.format(score=score, columns=_COLUMNS, where=condition)
    else:
        sql = _SQL
    bound = (*params, ranking.match(expression), *where_params, limit)
    rows = [tuple(row) for row in conn.execute(sql, bound).fetchall()]
    if ranking.nearby_weight > 0:
        rows = lift_nearby(rows, ranking.nearby_weight)
    return rows


#: How far (in lines of the same file, day and section) a match lifts the entries around it.
NEARBY_LINES = 8
_NEG_INF = float("-inf")
# Where these entry columns sit in a result row (after its raw score).
_FILE, _LINE, _DATE, _SECTION = (
    1 + ENTRY_COLUMNS.index(name) for name in ("file", "line", "date", "section")
)


def lift_nearby(rows: Sequence[tuple[object, ...]], weight: float) -> list[tuple[object, ...]]:
    """``rows`` (raw score first, lower is better) re-scored and re-sorted by their surroundings.

    Each row's raw score gains ``weight`` times the best raw score among the other rows within
    ``NEARBY_LINES`` lines of it in the same file, day and section. In a conversation the answer
    is usually a few lines from where the question's words are (the question asked, the story
    told a few turns before), and several good matches in one stretch mark the place a question
    is about. Only the rows already matched are looked at: the lift reorders them, it finds
    nothing new (the neighbours column does that). Ties keep the rowid order.
    """
    groups: dict[tuple[object, ...], list[tuple[int, float]]] = {}
    # Each row's line and group, or None for a row without a line.
    placed: list[tuple[int, list[tuple[int, float]]] | None] = []
    for row in rows:
        line = row[_LINE]
        if isinstance(line, int):
            members = groups.setdefault((row[_FILE], row[_DATE], row[_SECTION]), [])
            members.append((line, float(row[0])))  # type: ignore[arg-type]
            placed.append((line, members))
        else:
            placed.append(None)
    for members in groups.values():
        members.sort()
    lifted: list[tuple[float, int, tuple[object, ...]]] = []
    for row, place in zip(rows, placed, strict=True):
        raw = float(row[0])  # type: ignore[arg-type]
        if place is not None:
            line, members = place
            # Only the rows within reach are read: at most 2 x NEARBY_LINES + 1 lines.
            first = bisect_left(members, (line - NEARBY_LINES, _NEG_INF))
            best = 0.0
            for other, score in members[first:]:
                if other > line + NEARBY_LINES:
                    break
                if other != line:
                    best = min(best, score)  # scores are negative: the best is the least
            raw += weight * best
        lifted.append((raw, int(row[-1]), (raw, *row[1:])))  # type: ignore[call-overload]
    lifted.sort(key=lambda item: (item[0], item[1]))
    return [row for _, _, row in lifted]


def answer_ordered(
    rows: Sequence[tuple[object, ...]], query: str, boost: float
) -> list[tuple[object, ...]]:
    """``rows`` (raw score first, lower is better) re-scored for the form of answer ``query``
    asks for (``answers.raised``: the raw score of an entry stating it x (1 + ``boost``)) and
    re-sorted; ties keep their order. The same rows when the query asks for no form."""
    form = asked_form(query) if boost > 0.0 else None
    if form is None:
        return list(rows)
    scores = [-float(str(row[0])) for row in rows]
    ranked = form_order(form, boost, scores, [str(row[TEXT_AT]) for row in rows])
    if ranked is None:
        return list(rows)
    return [(-score, *rows[position][1:]) for position, score in ranked]


def distinct_rows(rows: Sequence[Sequence[object]], limit: int) -> list[Sequence[object]]:
    """The first ``limit`` rows (``_SQL`` columns) once vault copies of other entries are dropped.

    Vault pages copy observations under the observation's own id; a hit on both places is one
    entry, shown where it was first written.
    """
    primary = {row[1] for row in rows if row[2] != "vault"}
    seen: set[tuple[str, str]] = set()
    kept: list[Sequence[object]] = []
    for row in rows:
        key = (str(row[1]), str(row[3]) if row[2] != "vault" else "vault")
        if (row[2] == "vault" and row[1] in primary) or key in seen:
            continue
        seen.add(key)
        kept.append(row)
        if len(kept) == limit:
            break
    return kept


def query_index(
    conn: sqlite3.Connection, expression: str, limit: int, ranking: Ranking | None = None
) -> list[Hit]:
    """Run an FTS5 ``MATCH`` expression (from ``fts_query``) and return the best ``limit`` hits."""
    # Fetch extra rows so that dropping vault copies still leaves ``limit`` distinct entries.
    kept = distinct_rows(bm25_rows(conn, expression, limit * 3, ranking), limit)
    return [hit_from_row(rank, row) for rank, row in enumerate(kept, start=1)]


def _may_embed(settings: Settings) -> bool:
    """False when the settings mean BM25 alone without looking further: ``bm25``, or ``auto``
    with fastembed and no model folder (``embeddings.backend_status`` says the same, silently),
    so that the default search never imports the embeddings module."""
    if settings.search_backend == "bm25":
        return False
    return not (
        settings.search_backend == "auto"
        and settings.embed_provider == "fastembed"
        and not settings.embed_model_path
    )


def search_rows(
    store: MemoryStore,
    query: str,
    *,
    limit: int = 10,
    refresh: bool = True,
    settings: Settings | None = None,
    where: Where | None = None,
    index: Connections | None = None,
) -> list[Scored]:
    """The best ``limit`` result rows for ``query`` with their scores, best first (``search``).

    ``where`` restricts every candidate, keyword and vector alike, to the entries that meet it.
    ``index`` runs the query on a connection kept between calls (its vector cache stays warm);
    by default the index is opened for this search alone.
    """
    if limit < 1:
        raise UsageError(
            f"the result limit must be at least 1, not {limit}", "pass a positive limit"
        )
    expression = fts_query(query)
    if expression is None:
        return []
    if not store.home.is_dir() and not store.index_path.exists():
        return []  # nothing to search, and no reason to create a state directory for it
    if settings is None:
        settings = load_settings()
    embedder = None
    if _may_embed(settings):
        # Imported here: BM25-only searches never pay for the hybrid modules.
        from obsmem.search.embeddings import resolve_backend

        embedder = resolve_backend(settings).embedder
    config = settings

    def run(conn: sqlite3.Connection) -> list[Scored]:
        if refresh and not unchanged(conn, store.home):
            # Imported only now: a fresh index (the usual case) needs neither sync nor parsers.
            from obsmem.index.sync import refresh as refresh_index

            refresh_index(store, conn)
        if embedder is None and not config.rerank_model:
            ranking = Ranking.for_query(query, config)
            # Extra rows so that dropping vault copies still leaves ``limit`` distinct entries.
            rows = bm25_rows(conn, expression, limit * 3, ranking, where)
            rows = answer_ordered(rows, query, config.search_answer_form_boost)
            return [(tuple(row), 0.0 - float(str(row[0]))) for row in distinct_rows(rows, limit)]
        from obsmem.search.hybrid import hybrid_rows

        return hybrid_rows(conn, query, expression, limit, embedder, config, where=where)

    if index is not None:
        return index.run(run)
    return using_index(store.index_path, run)


def search(
    store: MemoryStore,
    query: str,
    *,
    limit: int = 10,
    refresh: bool = True,
    settings: Settings | None = None,
) -> list[Hit]:
    """The best ``limit`` entries of the memory for ``query``, best first.

    Any text is accepted: it is reduced to its words (``fts_query``), so FTS5 operators and
    punctuation are searched as words or ignored, never interpreted. A query with no word in it
    returns ``[]``, as does a memory directory that does not exist. ``refresh=False`` skips
    bringing the index up to date first (for callers that just did).

    The backend follows ``settings`` (read from the environment when None): hybrid BM25 +
    embeddings when ``OM_SEARCH_BACKEND`` allows it and a model loads (``embeddings.py``), BM25
    otherwise. Raises ``UsageError`` for a ``limit`` below 1, ``SettingsError`` for a bad
    setting and ``IndexError_`` when the index can be neither used nor rebuilt.
    """
    rows = search_rows(store, query, limit=limit, refresh=refresh, settings=settings)
    return [hit_from_row(rank, row, score) for rank, (row, score) in enumerate(rows, start=1)]


#: What a cold process prints when it answers with BM25 instead of loading a local model and
#: the search daemon is off (``client.py`` has the notes of the daemon's cases).
COLD_NOTE = (
    "hybrid search needs the search daemon (OM_SEARCH_DAEMON=off) or `om mcp`; "
    "showing keyword (BM25) results"
)
#: The same, when only the reranker (always a local model) is left out.
COLD_RERANK_NOTE = (
    "reranking needs the search daemon (OM_SEARCH_DAEMON=off) or `om mcp`; "
    "showing results without it"
)


def needs_local_model(settings: Settings) -> bool:
    """True when searching with ``settings`` could load a local model (a fastembed embedder or
    a reranker): what a cold process leaves to the search daemon. Decided without importing the
    embeddings module, so it may be true of settings whose model cannot load."""
    local_model = _may_embed(settings) and settings.embed_provider == "fastembed"
    return local_model or bool(settings.rerank_model)


def for_cold_process(settings: Settings, note: str | None = None) -> Settings:
    """``settings`` for a process that answers one query and exits: no local model loaded.

    When the settings would load a local embedding model (fastembed) or a reranker, both take
    seconds, so the search runs with BM25 alone (``search_backend="bm25"``, no reranker) and
    ``note`` is printed on stderr once (by default ``COLD_NOTE``, or ``COLD_RERANK_NOTE``;
    ``""``: nothing). An endpoint embedder (which loads no model here) and settings that are
    BM25 already are returned unchanged, silently.
    """
    if not needs_local_model(settings):
        return settings  # decided without importing the embeddings module
    from obsmem.search.embeddings import backend_status, notice

    local_model = _may_embed(settings) and settings.embed_provider == "fastembed"
    if local_model:
        local_model = backend_status(settings)[0] == "hybrid"
    if not local_model and not settings.rerank_model:
        return settings
    if note is None:
        note = COLD_NOTE if local_model else COLD_RERANK_NOTE
    if note:
        notice(note)
    backend = "bm25" if local_model else settings.search_backend
    return settings.replace(search_backend=backend, rerank_model="")

"""The search index's schema, as an ordered list of migrations recorded in ``PRAGMA user_version``.

The index is derived data: every row comes from the markdown memory files and the provenance
ledger, so a database that cannot be migrated is simply deleted and rebuilt (see ``db.py``).
Migrations still exist so that a newer ``om`` can evolve the schema without discarding an index
that may take a while to rebuild on a large memory.

Tables (version 1):

``files``
    One row per indexed memory file: its path relative to the memory directory (posix), its kind,
    and the size, ``mtime_ns`` and SHA-256 seen when it was last indexed. A refresh compares the
    stat first and hashes only when the stat moved, so an unchanged memory costs a stat per file.
``entries``
    One row per observation or section entry, with its location (file, lines), its scores and its
    provenance (copied from the ledger, so a hit can be traced to its transcript).
``entries_fts``
    FTS5 over ``entries.text`` and ``entries.section``, external content (the text is stored once,
    in ``entries``). ``sync.py`` keeps it in step with explicit inserts and deletes rather than
    triggers, so a rebuild can clear it in one statement (``delete-all``).
``issues``
    Parse issues of each file (line and message), so ``om doctor`` can show them without reparsing.
``meta``
    Key/value pairs: the memory directory the index describes and the ledger's last-seen stat.

Tables (version 2):

``vectors``
    Embeddings for hybrid search (``obsmem/search/vectors.py``), keyed by the SHA-256 of the text
    that was embedded and the model that embedded it, not by entry: a rebuild, a moved line or a
    second copy of the same text reuses the vector, so unchanged text is never embedded twice.
    ``vec`` is ``dim`` little-endian float32 values, normalised to unit length.

Version 3:

``entries.context`` and ``entries_fts.context``
    The text of the entry's neighbours (``neighbour_context``): the ``CONTEXT_NEIGHBOURS``
    entries before and after it in the same file and the same day (observations) or section,
    each cut to ``CONTEXT_CHARS``. An entry rarely repeats the words of the question it answers
    ("three times a week" answers "how often do you work out?", asked the line before), and its
    neighbours often do, so BM25 searches them as a low-weight column. The migration recreates
    ``entries_fts`` with the new column and empties the tables that record what was indexed, so
    the next refresh reindexes every file (the vectors are kept: they are keyed by text).

Version 5:

``vocabulary``
    The vocabulary of hybrid search's bridge from a question's category word to its instances
    (``obsmem/search/vocabulary.py``): each content word and frequent two-word phrase of the
    entries, with its porter stem and its embedding under one model, keyed by item and model.

Version 6:

``entries_label``
    An index on the first 41 characters of each entry's text, ASCII letters folded
    (``COLLATE NOCASE``): whether any entry starts with a speaker's label (``Caroline:``), the
    label being at most 40 characters, is one range in it (``search/speakers.labelled``), so a
    query naming a speaker nobody is labelled as skips the speaker boost.

To change the schema, append a script to ``MIGRATIONS``; never edit one that has shipped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from obsmem.errors import IndexError_

__all__ = [
    "CONTEXT_CHARS",
    "CONTEXT_NEIGHBOURS",
    "ENTRY_COLUMNS",
    "ENTRY_KINDS",
    "FTS_COLUMNS",
    "MIGRATIONS",
    "REQUIRED_TABLES",
    "SCHEMA_VERSION",
    "SchemaTooNew",
    "migrate",
    "missing_tables",
    "neighbour_context",
    "schema_version",
    "split_statements",
]

#: What an entry can be: which file (or family of files) it was read from.
ENTRY_KINDS: tuple[str, ...] = (
    "observation",
    "reflection",
    "profile",
    "active",
    "archive",
    "vault",
)

#: The columns of ``entries`` written by ``sync.py``, in insertion order (``rowid`` is automatic).
ENTRY_COLUMNS: tuple[str, ...] = (
    "id",
    "kind",
    "file",
    "line",
    "line_end",
    "date",
    "time",
    "priority",
    "type",
    "confidence",
    "importance",
    "referenced_date",
    "section",
    "text",
    "context",
    "session",
    "agent",
    "project",
    "source_path",
    "source_line_start",
    "source_line_end",
)

#: The columns of ``entries_fts``, in order; each is a column of ``entries`` (external content).
FTS_COLUMNS: tuple[str, ...] = ("text", "section", "context")

#: How many entries on each side of an entry make up its ``context``.
CONTEXT_NEIGHBOURS = 2

#: Each neighbour's text is cut to about this many characters (at a space), so that a long
#: entry does not swamp its neighbours' postings.
CONTEXT_CHARS = 300

_V1 = """
CREATE TABLE files (
    path TEXT PRIMARY KEY,           -- relative to the memory directory, posix separators
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,       -- -1 when the file was too fresh to trust its mtime
    sha256 TEXT NOT NULL,
    indexed_at TEXT NOT NULL         -- ISO 8601, UTC
);

CREATE TABLE entries (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,              -- observation|reflection|profile|active|archive|vault
    file TEXT NOT NULL,
    line INTEGER,
    line_end INTEGER,
    date TEXT,
    time TEXT,
    priority TEXT,
    type TEXT,
    confidence REAL,
    importance REAL,
    referenced_date TEXT,
    section TEXT,
    text TEXT NOT NULL,
    session TEXT,
    agent TEXT,
    project TEXT,
    source_path TEXT,
    source_line_start INTEGER,
    source_line_end INTEGER
);
CREATE INDEX entries_id ON entries(id);
CREATE INDEX entries_file ON entries(file, line);
CREATE INDEX entries_date ON entries(date);

CREATE VIRTUAL TABLE entries_fts USING fts5(
    text,
    section,
    content='entries',
    content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);

CREATE TABLE issues (
    file TEXT NOT NULL,
    line INTEGER NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX issues_file ON issues(file);

CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

_V2 = """
CREATE TABLE vectors (
    hash TEXT NOT NULL,              -- SHA-256 (hex) of the embedded text
    model TEXT NOT NULL,             -- the embedder's name, so two models never mix
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,               -- dim little-endian float32 values, unit length
    PRIMARY KEY (hash, model)
) WITHOUT ROWID;
"""

# Rows indexed without a context must not survive: emptying ``files`` and ``meta`` makes the
# next refresh see a new memory directory, which clears and reindexes everything.
_V3 = """
DROP TABLE entries_fts;
DELETE FROM entries;
DELETE FROM issues;
DELETE FROM files;
DELETE FROM meta;
ALTER TABLE entries ADD COLUMN context TEXT;
CREATE VIRTUAL TABLE entries_fts USING fts5(
    text,
    section,
    context,
    content='entries',
    content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
"""

# A timeline filtered by project or agent (``om ui``, ``search.browse``) walks these newest
# first instead of reading every row: a rare project no longer costs a scan of the whole index.
_V4 = """
CREATE INDEX entries_project_date ON entries(project, date);
CREATE INDEX entries_agent_date ON entries(agent, date);
"""

# Hybrid search's vocabulary bridge (``obsmem/search/vocabulary.py``): each word or phrase of
# the entries, embedded alone, keyed by the item and the model (like ``vectors``, not by entry).
_V5 = """
CREATE TABLE vocabulary (
    item TEXT NOT NULL,              -- a content word or a two-word phrase, casefolded
    model TEXT NOT NULL,             -- the embedder's name
    stem TEXT NOT NULL,              -- its porter stem(s), as FTS5's tokenizer gives them
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,               -- dim little-endian float32 values, unit length
    PRIMARY KEY (item, model)
) WITHOUT ROWID;
"""

# Whether any entry's text starts with a speaker's label (``Caroline:``, ``user:``) is one range
# in this index (``search/speakers.labelled``): the head of each text, folded as LIKE folds it.
# Built from the rows already there, so an index of version 5 is not reindexed.
_V6 = """
CREATE INDEX entries_label ON entries(substr(text, 1, 41) COLLATE NOCASE);
"""

#: Ordered schema migrations; migration ``n`` (1-based) brings ``user_version`` from n-1 to n.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6)

#: The schema version this code writes and reads.
SCHEMA_VERSION = len(MIGRATIONS)

#: Tables a usable index must have; one missing means someone damaged it, so it is rebuilt.
REQUIRED_TABLES: frozenset[str] = frozenset({"files", "entries", "entries_fts", "issues", "meta"})


class SchemaTooNew(Exception):
    """The database was written by a newer om; ``db.open_index`` answers by rebuilding it."""

    def __init__(self, found: int) -> None:
        super().__init__(f"schema version {found} is newer than this om knows ({SCHEMA_VERSION})")
        self.found = found


def split_statements(script: str) -> list[str]:
    """Split an SQL script into complete statements.

    ``sqlite3.Connection.executescript`` commits any open transaction first, which would let a
    second process interleave with a half-applied migration; running statements one by one inside
    our own ``BEGIN IMMEDIATE`` avoids that. ``sqlite3.complete_statement`` knows about string
    literals and ``CREATE TRIGGER ... END``, so a semicolon inside either does not split.
    """
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \t\r\n;"):
        raise IndexError_(
            "an index migration ends with an incomplete SQL statement",
            "this is a bug in om; please report it",
        )
    return statements


def schema_version(conn: sqlite3.Connection) -> int:
    """The ``PRAGMA user_version`` of the database (0 for a new one)."""
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the migrations the database lacks; return the version it ends at.

    The version is read again under ``BEGIN IMMEDIATE`` so that two processes opening a new index
    at once apply each migration exactly once. Raises ``SchemaTooNew`` for a database written by
    a newer om (the caller rebuilds it). ``conn`` must be in autocommit mode
    (``isolation_level=None``).
    """
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version)
    if version == SCHEMA_VERSION:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(conn)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(version)
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in split_statements(MIGRATIONS[number - 1]):
                conn.execute(statement)
            # user_version lives in the database header, so it commits (or not) with the rest.
            conn.execute(f"PRAGMA user_version = {number:d}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return SCHEMA_VERSION


def missing_tables(conn: sqlite3.Connection) -> set[str]:
    """Required tables that the database does not have."""
    names = {
        str(row[0])
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    }
    return set(REQUIRED_TABLES - names)


_KIND, _DATE, _SECTION, _TEXT, _CONTEXT = (
    ENTRY_COLUMNS.index(name) for name in ("kind", "date", "section", "text", "context")
)
_DAY_KINDS = frozenset({"observation", "archive"})


def _clip(text: str) -> str:
    if len(text) <= CONTEXT_CHARS:
        return text
    cut = text[:CONTEXT_CHARS]
    space = cut.rfind(" ")
    return cut[:space] if space > CONTEXT_CHARS // 2 else cut


def neighbour_context(rows: Sequence[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """``rows`` (one file's ``entries`` rows, in line order) with their ``context`` filled in.

    An entry's neighbours are the ``CONTEXT_NEIGHBOURS`` rows on each side that share its day
    (observations and archives) or its section (every other file): a day of observations is one
    stretch of work, a section one topic, and across either boundary the text is unrelated.
    """
    groups = [row[_DATE] if row[_KIND] in _DAY_KINDS else row[_SECTION] for row in rows]
    clipped = [_clip(str(row[_TEXT])) for row in rows]
    out: list[tuple[object, ...]] = []
    for i, row in enumerate(rows):
        window = range(max(0, i - CONTEXT_NEIGHBOURS), min(len(rows), i + CONTEXT_NEIGHBOURS + 1))
        near = [clipped[j] for j in window if j != i and groups[j] == groups[i]]
        out.append((*row[:_CONTEXT], " ".join(near) or None, *row[_CONTEXT + 1 :]))
    return out

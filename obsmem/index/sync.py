"""Keeping the index in step with the memory files, with no flag to remember.

Every search calls ``refresh`` first. It lists the memory files and stats each one (plus the
provenance ledger) and compares size and ``mtime_ns`` with what the ``files`` table recorded; when
nothing moved, that is the whole cost: no file is read and nothing is written. A file whose stat
moved is read and hashed; only when its SHA-256 differs too are its rows replaced from a fresh
parse, so a ``touch`` or an editor saving the same bytes costs a hash, not a reindex.

Writes happen in one ``BEGIN IMMEDIATE`` transaction, and the staleness check is done again once
the write lock is held: two processes that both saw a stale file do the work once, and because a
file's rows are always deleted before they are inserted, no interleaving can duplicate a row.

A file modified within ``RACY_WINDOW_NS`` of being indexed is recorded with ``mtime_ns = -1``:
filesystem timestamps are coarse (milliseconds on ext4, seconds on some), so a same-size rewrite
in the same tick would otherwise look unchanged forever (git's "racily clean" problem). Such a
file is hashed once more on the next refresh, which settles it.

A refresh that leaves the index in step records what it saw (``stamp.py``): the stat of every
file it covered, of the ledger, of the list of external files, and of the folders a new memory
file would appear in. The next refresh first stats those paths again; when all match, the index
is fresh without listing a folder, and the parsers (and the memory modules behind them) are never
imported: a cold ``om search`` pays for them only when a file changed. A stamp is not recorded
while any of its paths is racy, nor after a file could not be read.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from obsmem import paths
from obsmem.errors import IndexError_, MemoryFileError
from obsmem.index.db import index_generation, is_corruption, open_index, using_index
from obsmem.index.schema import ENTRY_COLUMNS, FTS_COLUMNS, neighbour_context, schema_version
from obsmem.index.stamp import EXTERNAL, RACY_WINDOW_NS, STAMP_KEY, of_stat, unchanged
from obsmem.index.stamp import signature as _signature

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from obsmem.memory.model import ParseIssue, Provenance
    from obsmem.memory.store import MemoryStore

__all__ = [
    "RACY_WINDOW_NS",
    "FileIssue",
    "RefreshReport",
    "entry_kind",
    "index_issues",
    "index_status",
    "rebuild",
    "refresh",
]


_TOP_KINDS: dict[str, str] = {
    paths.OBSERVATIONS_FILE: "observation",
    paths.REFLECTIONS_FILE: "reflection",
    paths.PROFILE_FILE: "profile",
    paths.ACTIVE_FILE: "active",
}
_DIR_KINDS: dict[str, str] = {paths.ARCHIVE_DIR: "archive", paths.VAULT_DIR: "vault"}
_OBSERVATION_KINDS = frozenset({"observation", "archive"})

_INSERT = (
    f"INSERT INTO entries ({', '.join(ENTRY_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in ENTRY_COLUMNS)})"
)
# The schema lists the provenance columns last, in this order.
_PROVENANCE_COLUMNS = ENTRY_COLUMNS[ENTRY_COLUMNS.index("session") :]

ProvenanceValues = tuple[str | None, str | None, str | None, str | None, int | None, int | None]
_NO_PROVENANCE: ProvenanceValues = (None, None, None, None, None, None)


@dataclass(frozen=True)
class FileIssue:
    """Something in a memory file the parser could not understand (the line is kept as written)."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass
class RefreshReport:
    """What one refresh (or rebuild) did.

    ``files_indexed`` files were parsed and their ``entries`` rows inserted; ``files_removed``
    files had disappeared; ``files_rehashed`` had a new stat but the same bytes. ``issues`` are
    the parse issues of the files parsed by this refresh (``index_issues`` has every file's).
    """

    files_indexed: int = 0
    files_removed: int = 0
    entries: int = 0
    issues: list[FileIssue] = field(default_factory=list)
    files_rehashed: int = 0
    provenance_updated: int = 0

    @property
    def changed(self) -> bool:
        """True when the index's search results may differ from before the refresh."""
        return bool(self.files_indexed or self.files_removed or self.provenance_updated)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "files_indexed": self.files_indexed,
            "files_removed": self.files_removed,
            "entries": self.entries,
            "files_rehashed": self.files_rehashed,
            "provenance_updated": self.provenance_updated,
            "issues": [issue.to_dict() for issue in self.issues],
        }


def entry_kind(relative: str) -> str | None:
    """The entry kind of a memory file, from its path relative to the memory directory."""
    if relative in _TOP_KINDS:
        return _TOP_KINDS[relative]
    top, sep, _ = relative.partition("/")
    return _DIR_KINDS.get(top) if sep else None


@dataclass(frozen=True)
class _FileState:
    path: Path
    rel: str
    kind: str
    size: int
    mtime_ns: int


@dataclass
class _Scan:
    files: dict[str, _FileState]
    ledger: str  # the ledger's stat signature
    home: str
    at_ns: int  # when the scan started: files modified after it minus the window are racy
    ledger_path: str = ""
    # Paths whose stat says whether a file appeared (folders, the list of external files),
    # with their signatures taken before the listing, so a file added meanwhile moves them.
    watched: dict[str, str] = field(default_factory=dict)
    unread: bool = False  # a file could not be read: its stat was not recorded
    # The external files' signatures by real path, which the stamp never stores (see stamp.py).
    external: dict[str, str] = field(default_factory=dict)
    external_list: str = ""

    def stamp(self) -> str | None:
        """What this scan saw, as the ``stamp`` meta value; None when part of it is racy."""
        seen = dict(self.watched)
        seen[self.ledger_path] = self.ledger
        for state in self.files.values():
            if state.mtime_ns > self.at_ns - RACY_WINDOW_NS:
                return None
            if str(state.path) not in self.external:
                seen[str(state.path)] = f"{state.size}:{state.mtime_ns}"
        names = sorted(self.external)
        seen[EXTERNAL + self.external_list] = "|".join(self.external[n] for n in names)
        if self.unread or any("racy:" in sig for sig in seen.values()):
            return None
        return json.dumps([self.home, sorted(seen.items())], ensure_ascii=False)


@dataclass
class _Plan:
    stale: list[_FileState]
    removed: list[str]
    ledger_changed: bool
    home_changed: bool

    @property
    def empty(self) -> bool:
        return not (self.stale or self.removed or self.ledger_changed or self.home_changed)


def _folders(store: MemoryStore, at_ns: int) -> dict[str, str]:
    """The signatures of every folder a memory file could appear in, and of the external list."""
    watched = {str(store.home): _signature(store.home, at_ns)}
    for top in (store.archive_dir, store.vault_dir):
        watched[str(top)] = _signature(top, at_ns)
        for folder, subfolders, _ in os.walk(top):
            for name in subfolders:
                path = os.path.join(folder, name)
                watched[path] = _signature(path, at_ns)
    watched[str(store.external_list_path)] = _signature(store.external_list_path, at_ns)
    return watched


def _scan(store: MemoryStore) -> _Scan:
    at_ns = time.time_ns()
    watched = _folders(store, at_ns)
    files: dict[str, _FileState] = {}
    for path in store.memory_files():
        rel = store.relative(path)
        kind = entry_kind(rel)
        if kind is None:
            continue
        try:
            st = path.stat()
        except OSError:
            continue  # vanished since it was listed: treated as removed
        files[rel] = _FileState(path, rel, kind, st.st_size, st.st_mtime_ns)
    # Files outside the memory directory (Claude Code's auto-memory) are indexed under their
    # absolute path with its secrets redacted (a folder named after a working directory can hold
    # one); only the stat and the read use the real path. One that was deleted drops out and
    # loses its rows.
    external: dict[str, str] = {}
    for name, info in store.external_files().items():
        try:
            st = os.stat(name)
        except OSError:
            external[name] = _signature(name, at_ns)  # missing or unreadable, as stamp.py sees it
            continue
        external[name] = of_stat(st, at_ns)
        from obsmem.sources.claude_memory import shown_path

        rel = shown = shown_path(name)
        copy = 1
        while rel in files:  # paths that differ only in their secrets: both stay searchable
            copy += 1
            rel = f"{shown} ({copy})"
        files[rel] = _FileState(Path(name), rel, str(info.get("kind", "external")),
                                st.st_size, st.st_mtime_ns)  # fmt: skip
    ledger = _signature(store.ledger_path, at_ns)
    return _Scan(files, ledger, os.path.abspath(store.home), at_ns, str(store.ledger_path), watched,
                 external=external, external_list=str(store.external_list_path))  # fmt: skip


def _record_stamp(conn: sqlite3.Connection, scan: _Scan) -> None:
    """Write (or clear) the stamp inside the caller's write transaction."""
    stamp = scan.stamp()
    if stamp is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (STAMP_KEY,))
    else:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (STAMP_KEY, stamp))


def _plan(conn: sqlite3.Connection, scan: _Scan, *, clear: bool = False) -> _Plan:
    meta = {
        str(k): str(v)
        for k, v in conn.execute("SELECT key, value FROM meta WHERE key != ?", (STAMP_KEY,))
    }
    home_changed = clear or meta.get("home") != scan.home
    recorded: dict[str, tuple[int, int]] = {}
    if not home_changed:
        recorded = {
            str(p): (int(s), int(m))
            for p, s, m in conn.execute("SELECT path, size, mtime_ns FROM files")
        }
    stale = [
        state
        for rel, state in scan.files.items()
        if recorded.get(rel) != (state.size, state.mtime_ns)
    ]
    removed = [rel for rel in recorded if rel not in scan.files]
    ledger_changed = home_changed or meta.get("ledger") != scan.ledger
    return _Plan(stale, removed, ledger_changed, home_changed)


@contextmanager
def _write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _provenance_values(prov: Provenance | None) -> ProvenanceValues:
    if prov is None:
        return _NO_PROVENANCE
    return (prov.session, prov.agent, prov.project, prov.path, prov.line_start, prov.line_end)


def _storable(value: object) -> object:
    """Text SQLite can store: bytes that were not UTF-8 (kept in the markdown through
    ``surrogateescape``) become U+FFFD here; the index is derived, the file keeps its bytes."""
    if isinstance(value, str) and any("\udc80" <= ch <= "\udcff" for ch in value):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return value


def _parse(
    state: _FileState, data: bytes, ledger: dict[str, Provenance]
) -> tuple[list[tuple[object, ...]], list[ParseIssue]]:
    rows, issues = _parse_rows(state, data, ledger)
    rows = neighbour_context(rows)
    if not data.isascii() and not _is_utf8(data):
        rows = [tuple(_storable(v) for v in row) for row in rows]
    return rows, issues


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse_rows(
    state: _FileState, data: bytes, ledger: dict[str, Provenance]
) -> tuple[list[tuple[object, ...]], list[ParseIssue]]:
    """The ``entries`` rows of one file (columns in ``ENTRY_COLUMNS`` order) and its issues."""
    # The parsers are imported here, not above: a search over an unchanged memory never parses.
    from obsmem.memory.markdown import blank_generated
    from obsmem.memory.observations import parse_shared
    from obsmem.memory.sections import parse_sections
    from obsmem.memory.store import SECTION_FILES
    from obsmem.sources.claude_memory import indexable_text

    rows: list[tuple[object, ...]] = []
    if state.kind in _OBSERVATION_KINDS:
        doc = parse_shared(data)  # often parsed just before (the vault, reflect): read only
        for obs in doc.observations:
            rows.append((
                obs.id, state.kind, state.rel, obs.line, obs.line_end, obs.date, obs.time,
                obs.priority, obs.type, obs.confidence, obs.importance, obs.referenced_date,
                None, obs.text, None, *_provenance_values(ledger.get(obs.id)),
            ))  # fmt: skip
        return rows, doc.issues
    # Vault pages are seeded with their own path so equal lines on two pages get distinct ids.
    seed = SECTION_FILES.get(state.rel, state.rel)
    if state.kind == "claude-memory":
        data = indexable_text(data)
    elif state.kind in ("profile", "active"):
        # Their generated blocks copy reflections and observations, which are indexed already;
        # only what people wrote there is searched from these files.
        data = blank_generated(data)
    sections = parse_sections(data, kind=seed)
    for entry in sections.entries:
        if state.kind == "vault" and len(entry.cites) == 1:
            # A vault line files one observation: it takes that observation's id, so search
            # shows the observation once and `om show` finds it from either place.
            entry.id = entry.cites[0]
        rows.append((
            entry.id, state.kind, state.rel, entry.line, entry.line, entry.date, None,
            entry.priority, entry.type, None, entry.importance, None,
            entry.section or None, entry.text, None, *_provenance_values(ledger.get(entry.id)),
        ))  # fmt: skip
    return rows, sections.issues


def _delete_rows(conn: sqlite3.Connection, rel: str) -> None:
    # External-content FTS5 must be told the exact indexed values of each row it forgets.
    conn.execute(
        f"INSERT INTO entries_fts (entries_fts, rowid, {_FTS}) "
        f"SELECT 'delete', rowid, {_FTS} FROM entries WHERE file = ?",
        (rel,),
    )
    conn.execute("DELETE FROM entries WHERE file = ?", (rel,))
    conn.execute("DELETE FROM issues WHERE file = ?", (rel,))


_FTS = ", ".join(FTS_COLUMNS)
_ID, _FILE, _SECTION, _TEXT, _CONTEXT = (
    ENTRY_COLUMNS.index(name) for name in ("id", "file", "section", "text", "context")
)
_UPDATE = f"UPDATE entries SET {', '.join(f'{c} = ?' for c in ENTRY_COLUMNS)} WHERE rowid = ?"


def _replace_rows(conn: sqlite3.Connection, files: dict[str, list[tuple[object, ...]]]) -> None:
    """Make each file's rows in ``entries`` (and ``entries_fts``) exactly its rows in ``files``.

    A new observation changes a few lines of a file that may hold thousands, and rewriting every
    row's full-text postings costs far more than parsing. So rows are matched to the ones already
    there by (id, section, text): a match keeps its rowid and its postings (other columns, such as
    a shifted line number, are updated in place), and only the rest is deleted or inserted. A
    match whose neighbours changed (its ``context``) keeps its rowid but is reindexed. A row left
    over in one file that reappears in another with the same id, section, text and context (a
    day moved to the archive) moves there with its postings.
    """
    inserts: list[tuple[object, ...]] = []
    updates: list[tuple[object, ...]] = []
    recontext: list[tuple[int]] = []
    left: list[tuple[int, tuple[object, ...]]] = []  # old rows not found again in their file
    new_files: set[str] = set()  # files without rows so far
    for rel, rows in files.items():
        pool: dict[tuple[object, object, object], list[tuple[int, tuple[object, ...]]]] = {}
        for rowid, *values in conn.execute(
            f"SELECT rowid, {', '.join(ENTRY_COLUMNS)} FROM entries WHERE file = ?", (rel,)
        ):
            old = tuple(values)
            pool.setdefault((old[_ID], old[_SECTION], old[_TEXT]), []).append((int(rowid), old))
        if not pool:
            new_files.add(rel)
        for row in rows:
            bucket = pool.get((row[_ID], row[_SECTION], row[_TEXT]))
            if bucket:
                rowid, old = bucket.pop(0)
                if old != row:
                    updates.append((*row, rowid))
                if old[_CONTEXT] != row[_CONTEXT]:
                    recontext.append((rowid,))
            else:
                inserts.append(row)
        left += [item for bucket in pool.values() for item in bucket]
    moved: dict[tuple[object, ...], list[int]] = {}
    for rowid, old in left:
        moved.setdefault(_posted(old), []).append(rowid)
    fresh: list[tuple[object, ...]] = []
    for row in inserts:
        ids = moved.get(_posted(row))
        if ids:
            updates.append((*row, ids.pop(0)))  # same postings: only the row changes
            new_files.discard(str(row[_FILE]))
        else:
            fresh.append(row)
    gone = [(rowid,) for bucket in moved.values() for rowid in bucket]
    conn.executemany(
        f"INSERT INTO entries_fts (entries_fts, rowid, {_FTS}) "
        f"SELECT 'delete', rowid, {_FTS} FROM entries WHERE rowid = ?",
        gone + recontext,
    )
    conn.executemany("DELETE FROM entries WHERE rowid = ?", gone)
    # Matched rows have the same text and section, so their postings stay valid as they are,
    # except those whose context changed: forgotten above with the old one, indexed again below.
    conn.executemany(_UPDATE, updates)
    # A file new to the index (a rebuild: every file) gets its rows and postings in bulk.
    conn.executemany(_INSERT, [row for row in fresh if row[_FILE] in new_files])
    for rel in sorted(new_files):
        conn.execute(
            f"INSERT INTO entries_fts (rowid, {_FTS}) "
            f"SELECT rowid, {_FTS} FROM entries WHERE file = ?",
            (rel,),
        )
    added = [
        (int(conn.execute(_INSERT, row).lastrowid or 0),)
        for row in fresh
        if row[_FILE] not in new_files
    ]
    conn.executemany(
        f"INSERT INTO entries_fts (rowid, {_FTS}) "
        f"SELECT rowid, {_FTS} FROM entries WHERE rowid = ?",
        recontext + added,
    )


def _posted(row: tuple[object, ...]) -> tuple[object, ...]:
    """What a row's full-text postings depend on, and its id."""
    return (row[_ID], row[_SECTION], row[_TEXT], row[_CONTEXT])


def _clear(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')")
    for table in ("entries", "files", "issues", "meta"):
        conn.execute(f"DELETE FROM {table}")


def _sync_provenance(conn: sqlite3.Connection, ledger: dict[str, Provenance]) -> int:
    """Bring every row's provenance columns in line with the ledger; return how many changed."""
    columns = ", ".join(_PROVENANCE_COLUMNS)
    updates = [
        (*want, rowid)
        for rowid, entry_id, *have in conn.execute(f"SELECT rowid, id, {columns} FROM entries")
        if tuple(have) != (want := _provenance_values(ledger.get(str(entry_id))))
    ]
    assignments = ", ".join(f"{name} = ?" for name in _PROVENANCE_COLUMNS)
    conn.executemany(f"UPDATE entries SET {assignments} WHERE rowid = ?", updates)
    return len(updates)


def _apply(
    store: MemoryStore, conn: sqlite3.Connection, scan: _Scan, plan: _Plan, report: RefreshReport
) -> None:
    """Carry out ``plan`` inside the caller's write transaction."""
    import hashlib
    from datetime import UTC, datetime

    if plan.home_changed:
        _clear(conn)  # paths are relative to the memory directory: another one shares nothing
    ledger: dict[str, Provenance] | None = None
    parsed: dict[str, list[tuple[object, ...]]] = {}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for rel in plan.removed:
        _delete_rows(conn, rel)
        conn.execute("DELETE FROM files WHERE path = ?", (rel,))
        report.files_removed += 1
    for state in plan.stale:
        try:
            data = store.read_bytes(state.path)
        except MemoryFileError as exc:
            # Keep its old rows and leave the stat unrecorded, so the next refresh tries again.
            # An external file's message names it as the index does (secrets redacted).
            message = str(exc)
            if os.path.isabs(state.rel):
                message = message.replace(str(state.path), state.rel)
            report.issues.append(FileIssue(state.rel, 0, message))
            scan.unread = True
            continue
        digest = hashlib.sha256(data).hexdigest()
        mtime_ns = state.mtime_ns if state.mtime_ns <= scan.at_ns - RACY_WINDOW_NS else -1
        row = conn.execute("SELECT sha256 FROM files WHERE path = ?", (state.rel,)).fetchone()
        if row is not None and row[0] == digest:
            conn.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                (state.size, mtime_ns, state.rel),
            )
            report.files_rehashed += 1
            continue
        if ledger is None:
            ledger = store.provenance()
        rows, issues = _parse(state, data, ledger)
        parsed[state.rel] = rows
        conn.execute("DELETE FROM issues WHERE file = ?", (state.rel,))
        conn.executemany(
            "INSERT INTO issues (file, line, message) VALUES (?, ?, ?)",
            [(state.rel, issue.line, issue.message) for issue in issues],
        )
        conn.execute(
            "INSERT OR REPLACE INTO files (path, kind, size, mtime_ns, sha256, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (state.rel, state.kind, state.size, mtime_ns, digest, now),
        )
        report.files_indexed += 1
        report.entries += len(rows)
        report.issues.extend(FileIssue(state.rel, i.line, i.message) for i in issues)
    # All files at once, so what moved from one file to another keeps its postings.
    _replace_rows(conn, parsed)
    if plan.ledger_changed:
        if ledger is None:
            ledger = store.provenance()
        report.provenance_updated = _sync_provenance(conn, ledger)
    # A racy ledger stat is recorded as a value no scan produces, so the next refresh rereads it.
    ledger_seen = "unverified" if scan.ledger.startswith("racy:") else scan.ledger
    meta = {"home": scan.home, "ledger": ledger_seen}
    conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta.items())
    _record_stamp(conn, scan)


def _index_error(store: MemoryStore, exc: sqlite3.Error) -> IndexError_:
    if is_corruption(exc):
        return IndexError_(
            f"the search index {store.index_path} is damaged: {exc}",
            "run `om reindex` to rebuild it",
        )
    return IndexError_(
        f"cannot update the search index {store.index_path}: {exc}",
        "another om process may be rebuilding it; try again, or run `om reindex`",
    )


def refresh(store: MemoryStore, conn: sqlite3.Connection) -> RefreshReport:
    """Bring the index up to date with the memory directory and the provenance ledger.

    Unchanged files cost one ``stat`` each (after the listing) and are never read. Raises
    ``IndexError_`` when the index cannot be written (busy for over 10 s, damaged, disk full);
    ``db.is_corruption(err)`` tells damage, which ``db.reset_index`` repairs, from the rest.
    """
    return _refresh(store, conn, clear=False)


def _refresh(store: MemoryStore, conn: sqlite3.Connection, *, clear: bool) -> RefreshReport:
    report = RefreshReport()
    try:
        if not clear:
            if unchanged(conn, store.home):
                return report
            scan = _scan(store)
            if _plan(conn, scan).empty:
                if scan.stamp() is not None:
                    # Nothing to index, but the stamp is out of date (a folder moved, or no
                    # stamp yet): record it, so that the next search needs no listing. It only
                    # saves time: an index that cannot be written now is still fresh.
                    with contextlib.suppress(sqlite3.Error), _write_transaction(conn):
                        _record_stamp(conn, scan)
                return report
        with _write_transaction(conn):
            # Check again with the write lock held: another process may have done the work.
            scan = _scan(store)
            plan = _plan(conn, scan, clear=clear)
            if not plan.empty:
                _apply(store, conn, scan, plan, report)
            if clear:
                conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
    except sqlite3.Error as exc:
        # Chained, so ``is_corruption(err)`` can tell damage (rebuild) from a busy index (wait).
        raise _index_error(store, exc) from exc
    return report


def rebuild(store: MemoryStore) -> RefreshReport:
    """Drop everything in the index and reindex every memory file (``om reindex``).

    A damaged index file is deleted and recreated first. The old contents stay visible to other
    processes until the new ones are committed, in a single transaction.
    """
    return using_index(store.index_path, lambda conn: _refresh(store, conn, clear=True))


def index_issues(conn: sqlite3.Connection) -> list[FileIssue]:
    """The parse issues of every indexed file, by file and line (for ``om doctor``)."""
    return [
        FileIssue(str(f), int(line), str(message))
        for f, line, message in conn.execute(
            "SELECT file, line, message FROM issues ORDER BY file, line, rowid"
        )
    ]


def _content_changed(conn: sqlite3.Connection, store: MemoryStore, state: _FileState) -> bool:
    import hashlib

    row = conn.execute("SELECT sha256 FROM files WHERE path = ?", (state.rel,)).fetchone()
    if row is None:
        return True
    try:
        data = store.read_bytes(state.path)
    except MemoryFileError:
        return True
    return hashlib.sha256(data).hexdigest() != str(row[0])


def index_status(store: MemoryStore, *, check: bool = False) -> dict[str, object]:
    """What ``om status`` (and ``om doctor``) show about the index, without refreshing it.

    Keys: ``exists``, ``path``, ``healthy`` (False when the database was damaged and had to be
    replaced by an empty one just now), ``schema_version``, ``entries``, ``files``,
    ``stale_files`` (memory files that are new, deleted, or whose bytes changed since they were
    indexed: a file whose stat moved is hashed to tell), ``ledger_stale`` and ``issues`` (parse
    issues recorded). A missing index is not created. ``check=True`` (``om doctor``) runs the
    full integrity check on the way, so damage anywhere in the file reads as not healthy.
    """
    path = store.index_path
    scan = _scan(store)
    status: dict[str, object] = {
        "exists": path.is_file(),
        "path": str(path),
        "healthy": True,
        "schema_version": None,
        "entries": 0,
        "files": 0,
        "stale_files": len(scan.files),
        "ledger_stale": True,
        "issues": 0,
    }
    if not status["exists"]:
        return status
    before = index_generation(path)
    conn = open_index(path, check=check)
    try:
        plan = _plan(conn, scan)
        if plan.home_changed:
            stale = len(scan.files)  # the rows describe another directory, or none at all
        else:
            stale = sum(_content_changed(conn, store, state) for state in plan.stale)

        def count(table: str) -> int:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

        status.update(
            healthy=index_generation(path) == before,
            schema_version=schema_version(conn),
            entries=count("entries"),
            files=count("files"),
            stale_files=stale + len(plan.removed),
            ledger_stale=plan.ledger_changed,
            issues=count("issues"),
        )
    except sqlite3.Error as exc:
        raise _index_error(store, exc) from exc
    finally:
        conn.close()
    return status

"""``om forget``: remove a memory from everywhere om keeps it, and keep it from coming back.

A memory lives in several places: its line in ``observations.md`` or an archive month, the
reflection lines that cite it, its copies on vault pages, the startup context prepared from it
(``profile.md``, ``active.md``, ``context.json``), the search index (full-text rows and vectors)
and the redacted transcript turns it was observed from (``turns.sqlite3``). ``forget`` removes it
from all of them, in an order a crash cannot undo:

1. under the memory lock: find every line that carries one of the ids (as its own id or as a
   citation), write a tombstone per id to the ledger (id and time, never the text), then rewrite
   each memory file without those lines (atomically, through the store);
2. delete the transcript turns of each observation's provenance and, with a query, every kept
   turn holding all of its words (the rule lines are chosen by); before deleting, append a keyed
   hash of each one's text to the ledger (``memory.ledger.turn_digest``), and remember their line
   ranges: reading the transcript again stores nothing there, and capture drops a turn with a
   forgotten text from any file (a copy of the session elsewhere);
3. regenerate what is derived (startup context, vault pages) and bring the index up to date, with
   the deleted text overwritten and the full-text index merged, so the words leave the files.

A run killed after step 1 is finished by running it again: the tombstoned ids are no longer in
memory and are reported as already forgotten, while steps 2 and 3 run once more.

Only lines that carry an id are touched: a hand-written line that does not is kept as it is. The
one exception is a day's Current Context, which om writes from the same turns (the session's
active task often is the request an observation quotes): a bullet of it that quotes a forgotten
line (or holds every word of the query) goes too, else the startup context would serve the text
straight back. Forgetting a reflection line (or any line that cites observations)
forgets the observations it cites too, since the line states their fact. Claude Code's own
auto-memory files are searched but never edited by om: their entries are refused with a note.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.errors import NotFound, OmError, UsageError
from obsmem.forget_turns import (
    ForgottenTurn,
    forget_turns,
    listed,
    matches_all,
    planned_turns,
    turns_holding,
    turns_of,
)
from obsmem.index.db import using_index
from obsmem.index.query import query_tokens
from obsmem.index.sync import entry_kind, refresh
from obsmem.memory.ledger import (
    append_forgotten,
    forgotten_ids,
    scrub_lines,
)
from obsmem.memory.markdown import BULLET, body, decode, encode, split_lines
from obsmem.memory.observations import parse_observations
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import SECTION_FILES, MemoryStore
from obsmem.settings import Settings

__all__ = ["ForgetReport", "ForgottenLine", "ForgottenTurn", "forget"]

_ID = re.compile(r"^[0-9a-z]{6,16}$")
_OBSERVATION_KINDS = ("observation", "archive")
_WORD = re.compile(r"[^\W_]+")
_CONTEXT_BULLET = re.compile(r"^\*\*[^*]+?:?\*\*:?\s*(?P<value>.*)$")


@dataclass(frozen=True)
class ForgottenLine:
    """One markdown line removed (or, in a dry run, to be removed)."""

    id: str  # the line's own id
    file: str  # relative to the memory directory
    line: int  # 1-based, as it was before the removal
    text: str
    cites: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {**self.__dict__, "cites": list(self.cites)}


@dataclass
class ForgetReport:
    """What ``forget`` removed (or, with ``dry_run``, would remove), place by place.

    ``ids`` are every id forgotten: those asked for (or found by ``query``) and the observations
    cited by a line asked for. ``already_forgotten`` were tombstoned before and are in no file.
    ``skipped`` are search hits om cannot forget (``{"id", "file", "reason"}``).
    ``raw_turns`` are the kept transcript turns holding every word of ``query``; ``turns``
    counts every turn removed, these and those the observations were observed from.
    """

    dry_run: bool
    query: str | None = None
    ids: list[str] = field(default_factory=list)
    already_forgotten: list[str] = field(default_factory=list)
    lines: list[ForgottenLine] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)
    tombstones: int = 0
    turns: int = 0
    index_entries: int = 0
    vectors: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: Current Context bullets removed for quoting a forgotten line: ``file:line``.
    contexts: list[str] = field(default_factory=list)
    raw_turns: list[ForgottenTurn] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when there is nothing to forget."""
        return not self.ids and not self.already_forgotten and not self.raw_turns

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = dict(self.__dict__)
        out["lines"] = [line.to_dict() for line in self.lines]
        out["raw_turns"] = [turn.to_dict() for turn in self.raw_turns]
        return out


@dataclass
class _Item:
    """A line (or an observation's lines) of a memory file that carries ids."""

    id: str
    cites: frozenset[str]
    start: int  # 0-based index of its first line
    end: int  # one past its last line
    line: int
    text: str


@dataclass
class _File:
    path: Path
    rel: str
    lines: list[str]
    items: list[_Item]
    #: Current Context bullets (observation files): 0-based line index and the bullet's value.
    contexts: list[tuple[int, str]] = field(default_factory=list)


def normalise_ids(ids: Iterable[str]) -> list[str]:
    """Ids as ``om search`` and ``om show`` print them (a leading ``^`` and case forgiven)."""
    out: list[str] = []
    for raw in ids:
        value = raw.strip().lstrip("^").lower()
        if not _ID.match(value):
            raise UsageError(f"{raw.strip()!r} is not a memory id", "copy one from `om search`")
        out.append(value)
    return list(dict.fromkeys(out))


def _parse_file(path: Path, rel: str, kind: str, data: bytes) -> _File:
    """One memory file with the id-carrying lines in it, as ``sync`` indexes them."""
    items: list[_Item] = []
    contexts: list[tuple[int, str]] = []
    if kind in _OBSERVATION_KINDS:
        doc = parse_observations(data)
        for obs in doc.observations:
            assert obs.line is not None and obs.line_end is not None
            items.append(_Item(obs.id, frozenset(), obs.line - 1, obs.line_end, obs.line,
                               obs.text))  # fmt: skip
        for day in doc.days:
            if day.context_start is None:
                continue
            for index in range(day.context_start + 1, day.context_end or day.end):
                bullet = BULLET.match(body(doc.lines[index]))
                m = _CONTEXT_BULLET.match(bullet.group("rest").strip()) if bullet else None
                if m is not None:
                    contexts.append((index, m.group("value")))
    else:
        for entry in parse_sections(data, kind=SECTION_FILES.get(rel, rel)).entries:
            own = entry.cites[0] if kind == "vault" and len(entry.cites) == 1 else entry.id
            items.append(_Item(own, frozenset(entry.cites), entry.line - 1, entry.line,
                               entry.line, entry.text))  # fmt: skip
    return _File(path, rel, split_lines(decode(data)[0]), items, contexts)


class _Files:
    """The memory files om writes, parsed only where the ids looked for can be.

    An id is in a file as text (an observation's ``^id``, a citation) or, for a line without a
    block id, as an id computed from its text, which only the index knows (``where``: id ->
    files). So a file is parsed when its bytes hold one of the ids, when the index places one
    there, or when it is a small top-level file (reflections, profile, active: their generated
    blocks are not indexed). Without the index (``where`` None), every file is parsed, as a
    large memory's dozens of archive months and vault pages used to be on every ``om forget``.
    """

    def __init__(self, store: MemoryStore, where: dict[str, set[str]] | None) -> None:
        self.where = where
        self.parsed: dict[str, _File] = {}
        self.raw: list[tuple[Path, str, str, bytes]] = []
        for path in store.memory_files():
            rel = store.relative(path)
            kind = entry_kind(rel)
            if kind is not None:
                self.raw.append((path, rel, kind, store.read_bytes(path)))

    def holding(self, ids: set[str]) -> list[_File]:
        """Every file that can hold one of ``ids`` (every file without the index), file order."""
        named = set() if self.where is None else {f for i in ids for f in self.where.get(i, ())}
        needles = [i.encode() for i in ids]
        out: list[_File] = []
        for path, rel, kind, data in self.raw:
            if rel not in self.parsed and not (
                self.where is None
                or rel in SECTION_FILES
                or rel in named
                or any(n in data for n in needles)
            ):
                continue
            if rel not in self.parsed:
                self.parsed[rel] = _parse_file(path, rel, kind, data)
            out.append(self.parsed[rel])
        return out


def _index_places(store: MemoryStore, ids: list[str]) -> dict[str, set[str]] | None:
    """Which files the (refreshed) index has each of ``ids`` in; None when it cannot say."""

    def work(conn: sqlite3.Connection) -> dict[str, set[str]]:
        refresh(store, conn)  # what the files hold now: the same parse as below
        marks = ", ".join("?" for _ in ids)
        out: dict[str, set[str]] = {}
        for entry_id, file in conn.execute(
            f"SELECT id, file FROM entries WHERE id IN ({marks})", ids
        ):
            out.setdefault(str(entry_id), set()).add(str(file))
        return out

    try:
        return using_index(store.index_path, work)
    except OmError:
        return None


def _expand(files: list[_File], asked: set[str]) -> set[str]:
    """``asked`` plus the observations cited by a line asked for (the fact that line states)."""
    observed = {
        item.id for f in files if entry_kind(f.rel) in _OBSERVATION_KINDS for item in f.items
    }
    out = set(asked)
    for f in files:
        for item in f.items:
            if item.id in asked:
                out |= item.cites & observed
    return out


def _hits(files: list[_File], ids: set[str]) -> dict[str, list[_Item]]:
    """The items to remove, by file: those whose own id or a citation is in ``ids``."""
    out: dict[str, list[_Item]] = {}
    for f in files:
        found = [item for item in f.items if item.id in ids or item.cites & ids]
        if found:
            out[f.rel] = found
    return out


def _words(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


def _quoting(f: _File, texts: list[str], tokens: list[str]) -> list[int]:
    """The Current Context bullets of ``f`` that quote one of the forgotten ``texts`` (a value of
    three words or more found whole in one, or holding one whole) or hold every query word."""
    said = [_words(text) for text in texts]
    out: list[int] = []
    for index, value in f.contexts:
        words = _words(value)
        if words.strip() and (
            (words.count(" ") > 3 and any(words in text for text in said))
            or any(text.strip() and text in words for text in said)
            or (tokens and matches_all(tokens, value))
        ):
            out.append(index)
    return out


def _without(lines: list[str], items: list[_Item], also: Iterable[int] = ()) -> bytes:
    drop = {index for item in items for index in range(item.start, item.end)} | set(also)
    return encode("".join(line for index, line in enumerate(lines) if index not in drop))


def _external(store: MemoryStore, ids: list[str]) -> dict[str, str]:
    """Ids of entries in files om indexes but does not own (Claude Code's auto-memory): file."""
    from obsmem.search.recall import get_entries

    try:
        entries = get_entries(store, ids)
    except OmError:
        return {}
    return {str(e["id"]): str(e["file"]) for e in entries if entry_kind(str(e["file"])) is None}


def _refuse_unknown(store: MemoryStore, unknown: list[str]) -> None:
    outside = _external(store, unknown)
    if outside:
        entry_id, where = next(iter(outside.items()))
        raise UsageError(
            f"{entry_id} is in {where}, a file om searches but does not write",
            "remove it from that file yourself; om forgets what it wrote",
        )
    names = ", ".join(unknown)
    raise NotFound(f"no memory entry has the id {names}", "find ids with `om search`")


def _search(
    store: MemoryStore, query: str, limit: int, settings: Settings | None
) -> tuple[list[str], list[dict[str, str]]]:
    """The ids of the entries the search finds for ``query`` that hold every one of its words,
    and the hits om cannot forget."""
    from obsmem.search.recall import search_entries

    tokens = query_tokens(query)
    if not tokens:
        raise UsageError("the query has no words to search for", "give one or more words")
    ids: list[str] = []
    skipped: list[dict[str, str]] = []
    for hit in search_entries(store, query, limit=limit, settings=settings):
        if not matches_all(tokens, f"{hit.get('section') or ''} {hit['text']}"):
            continue  # a near match (one word of several, or only a meaning) is not forgotten
        if entry_kind(str(hit["file"])) is None:
            skipped.append({"id": str(hit["id"]), "file": str(hit["file"]),
                            "reason": "om searches this file but does not write it"})  # fmt: skip
            continue
        ids.append(str(hit["id"]))
    return list(dict.fromkeys(ids)), skipped


def forget(
    store: MemoryStore,
    ids: Iterable[str] = (),
    *,
    query: str | None = None,
    limit: int = 10,
    dry_run: bool = False,
    settings: Settings | None = None,
    plan: ForgetReport | None = None,
) -> ForgetReport:
    """Forget the memory entries ``ids`` (or those the search finds for ``query``) everywhere.

    Ids are the ones ``om search`` and ``om show`` print. With ``query``, the best ``limit``
    search hits that contain every word of the query are forgotten, and so is every kept
    transcript turn that does. ``dry_run`` reports what would go and writes nothing; ``plan``
    (a dry run's report) forgets exactly what it lists, so what a user agreed to is what goes.
    Raises ``NotFound`` naming any unknown id (nothing is changed then), ``UsageError`` for ids
    and a query together, or neither.
    """
    wanted = list(ids)
    if plan is not None:
        if wanted or query:
            raise UsageError("give a plan, or the ids or query to forget, not both")
        query = plan.query
    elif wanted and query:
        raise UsageError("give the ids to forget or a query, not both")
    elif not wanted and not query:
        raise UsageError("nothing to forget", "give one or more ids (from `om search`) or a query")
    report = ForgetReport(dry_run=dry_run, query=query)
    tokens = query_tokens(query) if query else []
    if plan is not None:
        asked, report.skipped = [*plan.ids, *plan.already_forgotten], list(plan.skipped)
        matched = planned_turns(store, plan.raw_turns)
    elif query:
        asked, report.skipped = _search(store, query, limit, settings)
        matched = turns_holding(store, tokens)
    else:
        asked, matched = normalise_ids(wanted), []
    report.raw_turns = [listed(turn, tokens) for turn in matched]
    if not asked and not matched:
        return report
    if dry_run:
        if asked:
            _plan(store, asked, report)
        report.turns = len(turns_of(store, report.ids, matched))
        return report
    if asked:
        with store.lock():
            hits = _plan(store, asked, report)
            fresh = [i for i in report.ids if i not in forgotten_ids(store.ledger_path)]
            # The tombstones first: killed after them, capture cannot write the memory back and
            # a second run finishes the removal.
            report.tombstones = append_forgotten(store.ledger_path, fresh)
            for rel, (path, data) in hits.items():
                store.write_file(path, data)
                report.files.append(rel)
            # The ledger keeps each observation's line (for om doctor --restore): not once
            # forgotten.
            scrub_lines(store.ledger_path, [*report.ids, *report.already_forgotten])
    every = [*report.ids, *report.already_forgotten]
    report.turns = forget_turns(store, turns_of(store, every, matched))
    _update_derived(store, report)
    return report


def _plan(
    store: MemoryStore, asked: list[str], report: ForgetReport
) -> dict[str, tuple[Path, bytes]]:
    """Fill ``report`` with what goes; return each file to rewrite with its new bytes."""
    found = _Files(store, _index_places(store, asked))
    files = found.holding(set(asked))
    # The observations a line asked for cites are forgotten too: the files that hold them.
    cited = {c for f in files for item in f.items if item.id in asked for c in item.cites}
    if cited:
        more = _index_places(store, sorted(cited)) if found.where is not None else None
        if more is None or found.where is None:
            found.where = None  # the index cannot say: every file
        else:
            for entry_id, where in more.items():
                found.where.setdefault(entry_id, set()).update(where)
        files = found.holding(set(asked) | cited)
    known = {i for f in files for item in f.items for i in (item.id, *item.cites)}
    tombstoned = forgotten_ids(store.ledger_path)
    report.already_forgotten = [i for i in asked if i not in known and i in tombstoned]
    unknown = [i for i in asked if i not in known and i not in tombstoned]
    if unknown:
        _refuse_unknown(store, unknown)
    present = [i for i in asked if i in known]
    every = _expand(files, set(present))
    report.ids = present + sorted(every - set(present))
    hits = _hits(files, every)
    texts = [item.text for found_here in hits.values() for item in found_here]
    tokens = query_tokens(report.query) if report.query else []
    out: dict[str, tuple[Path, bytes]] = {}
    for f in files:
        quoting = _quoting(f, texts, tokens) if texts else []
        report.contexts += [f"{f.rel}:{index + 1}" for index in quoting]
        if f.rel in hits or quoting:
            report.lines += [
                ForgottenLine(item.id, f.rel, item.line, item.text, tuple(sorted(item.cites)))
                for item in hits.get(f.rel, ())
            ]
            out[f.rel] = (f.path, _without(f.lines, hits.get(f.rel, []), quoting))
    return out


def _update_derived(store: MemoryStore, report: ForgetReport) -> None:
    """Regenerate the startup context and the vault, then purge the index (problems noted)."""
    from obsmem.context.prepare import prepare_context
    from obsmem.reflect.router import route
    from obsmem.search.scrub import scrub_index

    try:
        report.derived += prepare_context(store).written
    except OmError as exc:
        report.problems.append(f"startup context not prepared: {exc}")
    try:
        report.derived += route(store).pages_written
    except OmError as exc:
        report.problems.append(f"vault not updated: {exc}")
    changed = {*report.files, *(d for d in report.derived if entry_kind(d) is not None)}
    removed = {line.id for line in report.lines} | set(report.ids)
    try:
        report.index_entries, report.vectors = using_index(
            store.index_path, lambda conn: scrub_index(store, conn, removed, len(changed))
        )
    except OmError as exc:
        report.problems.append(f"index not updated: {exc} (the next search updates it)")

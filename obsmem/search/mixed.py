"""One search over everything om knows: observations, reflections and the transcript turns.

With offline rules most of a conversation never becomes an observation, so what was said is
found only in the turns om keeps (redacted). ``search_everything`` ranks the memory's entries
and the turns in one list:

- the two lists are fused by reciprocal rank (``1 / (RRF_K + rank)``; BM25 scores of two
  different tables are not on one scale, ranks are), the turns' share weighted by
  ``TURN_WEIGHT`` (below 1: a statement om chose to keep is worth more than a raw line);
- a turn that an observation in the list already stands for (the observation's provenance
  covers the turn's lines) is left out: it would repeat what the observation says, and the
  observation names the turn it came from (``om show``);
- every other turn hit names its session and date (``provenance``) and, when one exists, the
  observation that covers it (``covered_by``).

``kinds`` picks what is searched: ``observation`` (observations and archived days),
``reflection`` (reflections, the profile, the active context, vault pages, Claude Code's
auto-memory files) and ``turn``.
Filters on type or importance apply to entries only, so they leave turns out rather than fail
(unless only turns are asked for: then they are a usage error).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from obsmem.errors import UsageError
from obsmem.search.answers import AnswerForm, asked_form, form_order
from obsmem.search.entries import Filters, search_entries
from obsmem.settings import load_settings

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from obsmem.memory.store import MemoryStore
    from obsmem.search.recall import KeptIndex
    from obsmem.settings import Settings

__all__ = ["KIND_GROUPS", "RRF_K", "TURN_WEIGHT", "search_everything"]

#: What each ``--kind`` covers, as the index's ``kind`` column names entries.
KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "observation": ("observation", "archive"),
    # Claude Code's own auto-memory files (``claude-memory``) are long-term notes too.
    "reflection": ("reflection", "profile", "active", "vault", "claude-memory"),
    "turn": (),
}

#: The usual reciprocal-rank constant: the fused order depends little on it above ~20.
RRF_K = 60

#: The weight of a turn's rank against an entry's (measured in bench/locomo_pipeline.py).
TURN_WEIGHT = 0.9


def _kinds(kinds: Iterable[str] | None) -> tuple[str, ...]:
    chosen = tuple(kinds) if kinds is not None else tuple(KIND_GROUPS)
    for kind in chosen:
        if kind not in KIND_GROUPS:
            raise UsageError(f"unknown kind {kind!r}", f"use one of {', '.join(KIND_GROUPS)}")
    if not chosen:
        raise UsageError("no kind to search", f"use one or more of {', '.join(KIND_GROUPS)}")
    return chosen


def _covers(entry: dict[str, Any]) -> tuple[str, int, int] | None:
    prov = entry.get("provenance") or {}
    path, start = prov.get("source_path"), prov.get("line_start")
    if not path or not isinstance(start, int):
        return None
    end = prov.get("line_end")
    return str(path), start, end if isinstance(end, int) else start


def _covering(store: MemoryStore, turns: Sequence[dict[str, Any]]) -> dict[int, str]:
    """For each turn (by position), the id of an observation whose provenance covers it."""
    if not turns or not store.index_path.exists():
        return {}
    found: dict[int, str] = {}
    try:
        conn = sqlite3.connect(f"file:{store.index_path}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        for position, turn in enumerate(turns):
            span = _covers(turn)
            if span is None:
                continue
            row = conn.execute(
                "SELECT id FROM entries WHERE source_path = ? AND source_line_start <= ? "
                "AND COALESCE(source_line_end, source_line_start) >= ? "
                "AND kind IN ('observation', 'archive') ORDER BY importance DESC LIMIT 1",
                span,
            ).fetchone()
            if row is not None:
                found[position] = str(row[0])
    except sqlite3.Error:
        return found  # an index being rebuilt: the links are a courtesy, the hits stand
    finally:
        conn.close()
    return found


def _answer_ordered(
    turns: list[dict[str, Any]], form: AnswerForm | None, boost: float
) -> list[dict[str, Any]]:
    """Turn hits reordered for the form of answer their query asks for, as entries are
    (``search/answers.py``): a turn stating it rises, its ``score`` raised with it."""
    scores = [float(turn["score"]) for turn in turns]
    ranked = form_order(form, boost, scores, [str(turn["text"]) for turn in turns])
    if ranked is None:
        return turns
    for position, score in ranked:
        turns[position]["score"] = score
    return [turns[position] for position, _ in ranked]


def search_everything(
    store: MemoryStore,
    query: str,
    *,
    kinds: Iterable[str] | None = None,
    filters: Filters | None = None,
    limit: int = 10,
    settings: Settings | None = None,
    index: KeptIndex | None = None,
    max_chars: int | None = None,
    turn_weight: float = TURN_WEIGHT,
) -> list[dict[str, Any]]:
    """Entries and transcript turns for ``query`` in one ranked list of hit dicts, best first.

    Entry hits are what ``search_entries`` returns; turn hits what ``search_turns`` returns
    (``kind`` ``"turn"``), plus ``covered_by`` (an observation id or None). Each hit's
    ``score`` is its fused score (reciprocal rank, higher is better; ``om search`` prints it as
    a share of the best).
    """
    chosen = _kinds(kinds)
    if limit < 1:
        raise UsageError(f"the result limit must be at least 1, not {limit}")
    filters = (filters or Filters()).validated()
    entry_only = filters.type is not None or filters.min_importance is not None
    if chosen == ("turn",) and entry_only:
        raise UsageError(
            "transcript turns have no type or importance",
            "drop the type and importance filters, or search observations too",
        )
    entry_kinds = tuple(k for group in chosen for k in KIND_GROUPS[group])
    # Both entry groups asked for: every entry, whatever kind a later version indexes.
    restrict = None if {"observation", "reflection"} <= set(chosen) else entry_kinds
    # Each list is fetched deeper than ``limit``: the fusion and the covered turns thin it.
    depth = limit * 2
    entries: list[dict[str, Any]] = []
    if entry_kinds:
        entries = search_entries(
            store, query, filters=filters, limit=depth, settings=settings, index=index,
            kinds=restrict,
        )  # fmt: skip
    turns: list[dict[str, Any]] = []
    if "turn" in chosen and not entry_only:
        from obsmem.index.turns_search import search_turns

        boost = (settings or load_settings()).search_answer_form_boost
        form = asked_form(query) if boost > 0.0 else None
        # Deeper only when a turn stating the asked form may rise from below the first ``depth``.
        fetch = depth * 3 if form is not None else depth
        found = search_turns(store, query, filters=filters, limit=fetch, max_chars=max_chars)
        turns = _answer_ordered(found, form, boost)[:depth]
    covering = _covering(store, turns)
    shown = {entry["id"] for entry in entries}
    scored: list[tuple[float, int, dict[str, Any]]] = []
    for rank, entry in enumerate(entries, start=1):
        scored.append((1.0 / (RRF_K + rank), 0, entry))
    for rank, turn in enumerate(turns, start=1):
        cover = covering.get(rank - 1)
        if cover is not None and cover in shown:
            continue
        turn["covered_by"] = cover
        scored.append((turn_weight / (RRF_K + rank), 1, turn))
    # Ties go to entries (the 0 before the 1), then to the list's own order (stable sort).
    scored.sort(key=lambda item: (-item[0], item[1]))
    out: list[dict[str, Any]] = []
    for position, (value, _, hit) in enumerate(scored[:limit], start=1):
        hit["rank"], hit["score"] = position, round(value, 6)
        out.append(hit)
    return out

"""The transcript turns of ``om forget``: which kept turns go, and keeping them gone.

A forgotten memory's turns are those its observations were observed from (their provenance in
the ledger) and, with a query, every kept turn holding all of its words (the rule memory lines
are chosen by, :func:`matches_all`). Before their rows are deleted, each text's keyed hash goes
to the ledger (``memory.ledger.turn_digest``), so capture drops the same text read again from
any copy of the session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from obsmem.index.turns import KeptTurn, TurnStore
from obsmem.memory.ledger import append_forgotten_turns, read_ledger, turn_digest, turn_key
from obsmem.memory.store import MemoryStore

__all__ = [
    "ForgottenTurn",
    "forget_turns",
    "listed",
    "matches_all",
    "planned_turns",
    "turns_holding",
    "turns_of",
]

_WORD = re.compile(r"[^\W_]+")
_EXCERPT_CHARS = 100


@dataclass(frozen=True)
class ForgottenTurn:
    """A kept transcript turn holding every word of the query, removed (or to be removed)."""

    source_path: str  # the transcript, as shown (redacted)
    line_start: int
    line_end: int
    part: int  # its place among the turns that start on that line
    role: str
    session: str | None
    date: str | None
    excerpt: str  # a short piece of its text, around the first query word

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def matches_all(tokens: list[str], text: str) -> bool:
    """True when every search word is in ``text`` (as a word, its start, or its stem)."""
    words = {w.casefold() for w in _WORD.findall(text)}
    return all(
        any(w.startswith(t) or (len(w) >= 4 and t.startswith(w)) for w in words) for t in tokens
    )


def turns_of(store: MemoryStore, ids: list[str], matched: list[KeptTurn]) -> list[KeptTurn]:
    """The kept turns the observations ``ids`` were observed from, and ``matched``."""
    ledger, _ = read_ledger(store.ledger_path, include_forgotten=True)
    ranges = []
    for entry_id in ids:
        prov = ledger.get(entry_id)
        if prov and prov.path and prov.line_start is not None:
            ranges.append((prov.path, prov.line_start, prov.line_end or prov.line_start))
    if not ranges or not store.turns_path.exists():
        return matched
    with TurnStore(store.turns_path) as turns:
        found = {turn.key: turn for turn in turns.overlapping(ranges)}
    return sorted({**found, **{turn.key: turn for turn in matched}}.values(), key=lambda t: t.key)


def forget_turns(store: MemoryStore, gone: list[KeptTurn]) -> int:
    """Remove the kept turns ``gone``: their texts' keyed hashes go to the ledger first (killed
    after that, capture already drops them from any copy), then the rows, their line ranges
    remembered."""
    if not gone:
        return 0
    key = turn_key(store.forget_key_path, create=True)
    assert key is not None
    append_forgotten_turns(store.ledger_path, (turn_digest(key, t.text) for t in gone))
    with TurnStore(store.turns_path) as turns:
        return turns.remove(gone)


def turns_holding(store: MemoryStore, tokens: list[str]) -> list[KeptTurn]:
    """The kept turns holding every word of the query, by the rule lines are chosen by."""
    if not tokens or not store.turns_path.exists():
        return []
    with TurnStore(store.turns_path) as turns:
        return [turn for turn in turns.holding(tokens) if matches_all(tokens, turn.text)]


def planned_turns(store: MemoryStore, listed: list[ForgottenTurn]) -> list[KeptTurn]:
    """The kept turns a plan listed, as they are now (those gone meanwhile are left out)."""
    if not listed or not store.turns_path.exists():
        return []
    wanted = {(t.source_path, t.line_start, t.part) for t in listed}
    with TurnStore(store.turns_path) as turns:
        found = turns.overlapping({(t.source_path, t.line_start, t.line_end) for t in listed})
    return [turn for turn in found if turn.key in wanted]


def listed(turn: KeptTurn, tokens: list[str]) -> ForgottenTurn:
    """A turn as the report lists it, with a short excerpt around the first query word."""
    text = " ".join(turn.text.split())
    folded = text.casefold()
    found = [folded.find(t) for t in tokens if t in folded]
    start = max(0, min(found, default=0) - 30) if len(folded) == len(text) else 0
    if start:
        start = text.find(" ", start, min(found)) + 1  # from a word's start (0: from the first)
    excerpt = text[start : start + _EXCERPT_CHARS]
    if start:
        excerpt = "…" + excerpt
    if start + _EXCERPT_CHARS < len(text):
        excerpt += "…"
    return ForgottenTurn(turn.source_path, turn.line_start, turn.line_end, turn.part, turn.role,
                         turn.session, turn.date, excerpt)  # fmt: skip

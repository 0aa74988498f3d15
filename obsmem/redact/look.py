"""The look every text gets before redaction: which passes can find anything in it.

Part of :mod:`obsmem.redact`. A pass runs only when its trigger occurs: a trigger word (one of
:data:`TRIGGER_WORDS`, in the lowercased text), a run of 20 token characters (whole, or made by
joining the lines of a wrapped token), or enough colons for a ``.pgpass`` line; a text with
none of them (most short turns, and short lines of prose or code) is returned as it is.
:func:`look` looks at one text, :func:`looks` at a batch (the turns of one read) at once.

The batch look searches the texts joined, as one byte a character, for every trigger word in
one pass of an Aho-Corasick automaton (``ahocorasick_rs``, a compiled dependency, when it is
installed) or with one ``bytes.find`` per word (the fallback, same result); for the short turns
of a transcript the automaton costs about a quarter of the finds.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Protocol

from obsmem.redact.forms import PGPASS_COLONS, TRIGGERS
from obsmem.redact.keys import KEYWORDS, ascii_lower
from obsmem.redact.wraps import RUN_NEEDLE, RUN_TABLE, wrapped_run

__all__ = ["HEADER_WORDS", "TRIGGER_WORDS", "has_run", "look", "looks", "words_in"]

#: The words of the header rules (``Authorization: Bearer ...``, ``secret_access_key``).
HEADER_WORDS = ("bearer", "authorization", "secret_access", "secretaccess")

# --- What a text must hold for any pass to find anything -----------------------------------
# Every token shape, gated shape, header rule, key body and blob is a run of at least 20 of the
# characters of the shapes' runs (see obsmem.redact.shapes); the lines of a wrapped token may
# each be shorter, hence a run made by joining wrapped lines (wraps.wrapped_run) counts too: a
# line break alone does not. A base64 blob is a longer run still.


def has_run(text: str) -> bool:
    """Whether ``text`` has a run of 20 token characters (cheap pre-check)."""
    return text.encode("ascii", "replace").translate(RUN_TABLE).find(RUN_NEEDLE) != -1


# Every trigger word of the other passes, all lowercase: the private, PEM and data URI spans,
# the header rules, URL passwords, the command-line and file forms, the key assignments. They
# are found once per text, and the passes are handed what was found.
TRIGGER_WORDS = sorted(
    {
        "<private",
        "-----begin ",
        "data:",
        "://",
        *HEADER_WORDS,
        *TRIGGERS,
        *KEYWORDS,
    },
    key=lambda word: (len(word), word),
)
# A word that holds a shorter one ("sshpass" holds "pass") is looked for only when that one
# occurs: it cannot occur otherwise.
_INSIDE: dict[str, tuple[str, ...]] = {}
_OUTER: list[str] = []
for _i, _word in enumerate(TRIGGER_WORDS):
    _holder = next((shorter for shorter in TRIGGER_WORDS[:_i] if shorter in _word), None)
    if _holder is None:
        _OUTER.append(_word)
    else:
        _INSIDE[_holder] = (*_INSIDE.get(_holder, ()), _word)


# Characters from the rarest in prose and code to the most common: each trigger word is looked
# for from its rarest character, so the regex engine stops at few positions of a text.
_RARITY = "<*=_zqjxkvbpgfmcu:-/7ywlhdrsnioate "


def _anchored(words: list[str]) -> tuple[re.Pattern[str], dict[str, tuple[str, ...]]]:
    """One regex that matches wherever one of ``words`` occurs, each word matched from its
    rarest character (``k(?<=tok)en`` for "token"): a position holding none of those characters
    costs the engine one table lookup. Also the words looked for from each character."""
    by_anchor: dict[str, list[tuple[str, int]]] = {}
    for word in words:
        at = min(range(len(word)), key=lambda i: _RARITY.find(word[i]))
        by_anchor.setdefault(word[at], []).append((word, at))
    parts = []
    for anchor, entries in sorted(by_anchor.items()):
        branches = [
            (f"(?<={re.escape(word[: at + 1])})" if at else "") + re.escape(word[at + 1 :])
            for word, at in entries
        ]
        parts.append(re.escape(anchor) + "(?:" + "|".join(branches) + ")")
    same = {anchor: tuple(word for word, _ in entries) for anchor, entries in by_anchor.items()}
    return re.compile("|".join(parts)), same


_OUTER_PATTERN, _SAME_ANCHOR = _anchored(_OUTER)
_OUTER_SEARCH = _OUTER_PATTERN.search


def words_in(low: str, m: re.Match[str] | None = None) -> set[str]:
    """The trigger words that occur in the lowercase text ``low`` (``m``: the first match of
    the trigger regex in it, when the caller has it)."""
    found: set[str] = set()
    if m is None:
        m = _OUTER_SEARCH(low)
        if m is None:
            return found
    # Where the regex matched, a word looked for from that character occurs: those few words
    # are then looked up one by one (two may match at one place, "mysqlcmd").
    anchors = set()
    while m is not None:
        anchors.add(low[m.start()])
        m = _OUTER_SEARCH(low, m.start() + 1)
    for anchor in anchors:
        for word in _SAME_ANCHOR[anchor]:
            if word in low:
                found.add(word)
    more = [word for held in found if held in _INSIDE for word in _INSIDE[held]]
    while more:
        word = more.pop()
        if word in low and word not in found:
            found.add(word)
            more.extend(_INSIDE.get(word, ()))
    return found


def look(text: str, low: str) -> tuple[set[str], bool] | None:
    """What the passes need to know of ``text`` (``low`` its lowercase copy): the trigger words
    in it, and whether it has a run of 20 token characters; None when no pass can find anything
    there (no run, whole or wrapped, too few colons for a ``.pgpass`` line, no trigger word), as
    in most short turns ("Running the tests.")."""
    run = has_run(text)
    if run or text.count(":") >= PGPASS_COLONS:
        return words_in(low), run
    m = _OUTER_SEARCH(low)
    if m is None:
        # Only the token shapes can find something without a trigger word: in a wrapped run.
        return (set(), run) if wrapped_run(text) else None
    return words_in(low, m), run


#: What joins the texts that :func:`looks` looks at together: no trigger word holds it and it
#: is no token character, so nothing it looks for can reach from one text into the next.
_JOIN = "\x00"


def looks(texts: Sequence[str]) -> Iterator[tuple[int, str, tuple[set[str], bool]]]:
    """``(i, low, seen)`` for each text that :func:`look` does not rule out: its index, its
    lowercase copy and what ``look`` says of it, the same, found over all the texts at once.

    The texts joined, as ASCII bytes lowercased, are searched once for each trigger word
    (``bytes.find``), and only a word found there is looked for again to tell which texts hold
    it; the runs of token characters are found in one map of the same bytes. For the thousands of
    short turns of a transcript that is fewer steps than a look at each: the trigger regex
    stops at every "c", "p" or "r" of a text, and each look is a few calls more. A word or a
    run is the text's it starts in: none crosses a ``_JOIN``.
    """
    if len(texts) < _FEW:
        for i, text in enumerate(texts):
            low = ascii_lower(text)
            seen = look(text, low)
            if seen is not None:
                yield i, low, seen
        return
    starts: list[int] = []
    at = 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    joined = _JOIN.join(texts)
    # One byte a character (anything not ASCII is "?", which no trigger word and no token
    # holds), so every search below runs over one byte a character, however wide the text is.
    narrow = joined.encode("ascii", "replace")
    runs: set[int] = set()
    mask = narrow.translate(RUN_TABLE)
    found = mask.find(RUN_NEEDLE)
    while found != -1:
        i = bisect_right(starts, found) - 1
        runs.add(i)
        found = mask.find(RUN_NEEDLE, starts[i + 1]) if i + 1 < len(texts) else -1
    if not joined.isascii() and _KELVIN in joined:
        # The one character that str.lower() makes an ASCII letter: searched as ascii_lower
        # has it, text by text.
        lowered = _JOIN.join([ascii_lower(text) for text in texts]).encode("ascii", "replace")
    else:
        lowered = narrow.lower()
    automaton = _automaton()
    if automaton is None:
        words = _words_by_find(lowered, starts)
    else:
        words = _words_by_automaton(automaton, lowered, starts)
    for i, text in enumerate(texts):
        held = words.get(i)
        run = i in runs
        if held is None:
            if not run and text.count(":") < PGPASS_COLONS and not wrapped_run(text):
                continue
            held = set()
        yield i, ascii_lower(text), (held, run)


def _words_by_find(lowered: bytes, starts: list[int]) -> dict[int, set[str]]:
    """The trigger words of each text in ``lowered`` (the texts that start at ``starts``,
    joined), by index: one ``bytes.find`` over them all for each word, and one more for each
    text that holds it."""
    words: dict[int, set[str]] = {}
    last = len(starts) - 1
    todo = list(_OUTER_BYTES)
    while todo:
        word, needle = todo.pop()
        found = lowered.find(needle)
        if found == -1:
            continue
        todo.extend(_INSIDE_BYTES.get(word, ()))
        while found != -1:
            i = bisect_right(starts, found) - 1
            held = words.get(i)
            if held is None:
                held = words[i] = set()
            held.add(word)
            found = lowered.find(needle, starts[i + 1]) if i < last else -1
    return words


def _words_by_automaton(
    automaton: _Automaton, lowered: bytes, starts: list[int]
) -> dict[int, set[str]]:
    """What :func:`_words_by_find` gives, from one pass of ``automaton`` over ``lowered``: it
    reports every occurrence of every word (overlapping ones too), each told to its text here.
    The bytes go in windows, so that a text made of trigger words cannot fill memory with
    occurrences; a window reaches past its end by the longest word, so that none is cut."""
    words: dict[int, set[str]] = {}
    for at in range(0, len(lowered), _WINDOW):
        window = lowered[at : at + _WINDOW + _LONGEST] if len(lowered) > _WINDOW else lowered
        for index, start, _ in automaton.find_matches_as_indexes(window, overlapping=True):
            i = bisect_right(starts, at + start) - 1
            held = words.get(i)
            if held is None:
                held = words[i] = set()
            held.add(TRIGGER_WORDS[index])
    return words


class _Automaton(Protocol):
    def find_matches_as_indexes(
        self, haystack: bytes, overlapping: bool = ...
    ) -> list[tuple[int, int, int]]: ...


@cache
def _automaton() -> _Automaton | None:
    """The trigger words' automaton, built on first use; None without ``ahocorasick_rs``."""
    try:
        from ahocorasick_rs import BytesAhoCorasick
    except ImportError:
        return None
    return BytesAhoCorasick([word.encode("ascii") for word in TRIGGER_WORDS])


#: How many bytes the automaton is handed at once (see _words_by_automaton).
_WINDOW = 1 << 20
_LONGEST = max(map(len, TRIGGER_WORDS)) - 1

#: KELVIN SIGN: lowercased, "k".
_KELVIN = "\u212a"
_OUTER_BYTES = [(word, word.encode("ascii")) for word in _OUTER]
_INSIDE_BYTES = {
    word: tuple((inner, inner.encode("ascii")) for inner in inside)
    for word, inside in _INSIDE.items()
}


#: Below this many texts, :func:`looks` looks at each on its own.
_FEW = 4

"""What code enforces on every observation, whoever wrote it: importance floors and de-duplication.

A model may under-rate what matters, so some kinds of fact get a minimum importance by rule (as
ClawVault does): releases and deployments, decisions, pricing, blockers. And the same fact seen
again (the observer re-reading a session, or two agents saying the same thing) is dropped when it
matches a recent observation by normalised text, by containment, or by word-bigram Jaccard
similarity of 0.8 or more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from obsmem.memory.model import Observation, normalise_text, priority_for

__all__ = [
    "FLOORS",
    "Deduper",
    "apply_floors",
    "bigram_jaccard",
    "floor_for",
    "without_near_duplicates",
]


@dataclass(frozen=True)
class Floor:
    """A minimum importance for observations whose text matches ``pattern`` (or of ``types``)."""

    name: str
    minimum: float
    pattern: re.Pattern[str]
    types: frozenset[str] = frozenset()


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


FLOORS: tuple[Floor, ...] = (
    Floor(
        "release",
        0.8,
        # A release, not a thing named after releases: "the release skill", "release notes"
        # or "the release branch" says nothing about shipping anything.
        _words(
            r"released?(?! (?:skills?|notes?|branch(?:es)?|scripts?|workflows?|tooling|process"
            r"|templates?|managers?|channels?)\b)",
            r"releasing",
            r"shipped",
            r"publish(?:ed)? to",
            r"tagged v?\d[\w.]*",
            r"v\d+\.\d+(?:\.\d+)?",
        ),
    ),
    Floor(
        "deployment",
        0.8,
        # Likewise a "deploy token", "deploy key" or "deploy user" is a credential, not a
        # deployment ("the staging deploy failed" is one).
        _words(
            r"deploy(?:ed|ment|ing|s)?(?! (?:tokens?|keys?|credentials?|users?|accounts?"
            r"|secrets?|passwords?)\b)",
            r"rolled (?:out|back)",
            r"roll-?back",
            r"in production",
            r"to prod",
        ),
    ),
    Floor(
        "decision",
        0.75,
        _words(
            r"decided",
            r"decision",
            r"chose",
            r"chosen",
            r"going with",
            r"switch(?:ed)? to",
            r"replac(?:e|ed|ing)",
        ),
        frozenset({"decision"}),
    ),
    Floor(
        "pricing",
        0.75,
        _words(
            r"pric(?:e|es|ing)",
            r"per month",
            r"subscription",
            r"invoice",
            r"\$\d[\d,.]*",
            r"budget",
        ),
    ),
    Floor(
        "blocker",
        0.8,
        _words(
            r"blocked",
            r"blocker",
            r"blocking",
            r"can(?:no|')t proceed",
            r"outage",
            r"data loss",
            r"security (?:issue|hole|bug)",
        ),
    ),
)


def floor_for(text: str, obs_type: str | None) -> float:
    """The highest importance floor that applies to an observation (0.0 when none does)."""
    best = 0.0
    for floor in FLOORS:
        if (obs_type in floor.types or floor.pattern.search(text)) and floor.minimum > best:
            best = floor.minimum
    return best


def apply_floors(obs: Observation) -> Observation:
    """Raise ``obs.importance`` to its floor (in place) and return it; never lowers it.

    Completed work keeps its ✅; everything else gets its priority emoji re-derived from the score.
    """
    floor = floor_for(obs.text, obs.type)
    if obs.importance < floor:
        obs.importance = floor
        if obs.priority != "✅":
            obs.priority = priority_for(floor)
    return obs


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def _bigrams(text: str) -> frozenset[tuple[str, str]]:
    words = _TOKEN.findall(text.casefold())
    if len(words) < 2:
        return frozenset((w, "") for w in words)
    return frozenset(pairwise(words))


def bigram_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the word bigrams of two texts (1.0 for identical word sequences)."""
    x, y = _bigrams(a), _bigrams(b)
    if not x and not y:
        return 1.0
    return len(x & y) / len(x | y)


class Deduper:
    """Remembers recent observations and says whether a new one repeats one of them."""

    #: Substring matches count only above this length, so "fixed it" does not swallow everything.
    MIN_CONTAINED = 24
    THRESHOLD = 0.8

    def __init__(self, recent: Iterable[Observation] = ()) -> None:
        self._norms: list[str] = []
        self._grams: list[frozenset[tuple[str, str]]] = []
        self._exact: set[str] = set()
        for obs in recent:
            self.remember(obs.text)

    def remember(self, text: str) -> None:
        """Remember ``text`` as seen."""
        norm = normalise_text(text)
        self._norms.append(norm)
        self._grams.append(_bigrams(norm))
        self._exact.add(norm)

    def is_duplicate(self, text: str) -> bool:
        """True when ``text`` repeats something already seen (exact, contained, or similar)."""
        norm = normalise_text(text)
        if norm in self._exact:
            return True
        grams = _bigrams(norm)
        for other, other_grams in zip(self._norms, self._grams, strict=True):
            shorter, longer = (norm, other) if len(norm) <= len(other) else (other, norm)
            if len(shorter) >= self.MIN_CONTAINED and shorter in longer:
                return True
            union = grams | other_grams
            if union and len(grams & other_grams) / len(union) >= self.THRESHOLD:
                return True
        return False

    def admit(self, obs: Observation) -> bool:
        """Remember ``obs`` and return True unless it repeats something already seen."""
        if self.is_duplicate(obs.text):
            return False
        self.remember(obs.text)
        return True


def without_near_duplicates(
    batch: list[Observation], known: list[Observation]
) -> list[Observation]:
    """``batch`` without the observations that repeat one in ``known`` or an earlier one of the
    batch. The store calls it under the memory lock with what memory holds at that moment, so
    two runs observing the same content at once cannot both write it."""
    deduper = Deduper(known)
    return [obs for obs in batch if deduper.admit(obs)]

"""The reflector's look-ups and pruning give what the plain, slow versions give.

Reflecting 10,000 observations in seconds rests on indexes (same fact: a bigram posting list;
same subject: prefix filtering) and on pruning only the sections a move emptied. Each must find
exactly what comparing everything with everything finds, so the test reflects one generated
memory, full of repeated, reworded and contradicting statements, once with the fast paths and
once with plain versions of them, and compares every byte written.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable
from datetime import date, timedelta
from pathlib import Path
from typing import Generic, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect import reflections as reflections_module
from obsmem.reflect import rules as rules_module
from obsmem.reflect.facts import FactIndex, same_fact
from obsmem.reflect.offline import reflect
from obsmem.reflect.reflections import DORMANT, ReflectionsDoc, name_key
from obsmem.settings import load_settings

K = TypeVar("K", bound=Hashable)
TODAY = date(2026, 6, 30)
# Few words, unevenly used: many texts share bigrams, some are near-duplicates of others.
VOCAB = (
    "the api cache deploy tests parser index queue worker billing atlas schema migrations "
    "postgres sqlite redis retries timeout config review commit branch release docs lint "
    "types errors logs metrics alerts backup restore tokens session prompt model budget"
).split()
WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCAB))]
TYPES = ("decision", "preference", "fact", "task", "milestone", "lesson", "error", "event")


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, weights=WEIGHTS, k=rng.randint(3, 12)))


def _variant(rng: random.Random, text: str) -> str:
    words = text.split()
    roll = rng.random()
    if roll < 0.3 and len(words) > 3:
        words.pop(rng.randrange(len(words)))  # one word fewer
    elif roll < 0.55:
        words.insert(rng.randrange(len(words) + 1), rng.choice(VOCAB))  # one word more
    elif roll < 0.75:
        words = [w.upper() if rng.random() < 0.3 else w for w in words]  # case only
    else:
        words[rng.randrange(len(words))] = rng.choice(VOCAB)  # one word changed
    return " ".join(words)


def build(home: Path, count: int = 500, seed: int = 5) -> MemoryStore:
    """``count`` observations over the 50 days before ``TODAY``, three projects."""
    rng = random.Random(seed)
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    said: list[str] = []
    batch = []
    for n in range(count):
        roll = rng.random()
        if said and roll < 0.15:
            text = rng.choice(said)  # the same fact again
        elif said and roll < 0.35:
            text = _variant(rng, rng.choice(said))  # nearly the same, or a changed choice
        else:
            text = _text(rng)
        said.append(text)
        type_ = rng.choice(TYPES)
        if rng.random() < 0.2:
            text = f"User decided: {text}"
            type_ = "decision"
        day = TODAY - timedelta(days=50 - n * 50 // count)
        project = ("atlas", "billing", "om")[n % 3]
        batch.append(
            new_observation(
                text,
                date=day.isoformat(),
                time=f"{8 + n % 12:02d}:{n % 60:02d}",
                type=type_,
                importance=round(rng.uniform(0.3, 0.95), 2),
                confidence=0.9,
                provenance=Provenance(path=f"/t/{project}.jsonl", project=project),
            )
        )
    store.add_observations(batch)
    return store


class PlainFactIndex(Generic[K]):
    """``FactIndex`` without an index: every text compared with every other."""

    def __init__(self, items: Iterable[tuple[K, str]] = ()) -> None:
        self._texts: dict[K, str] = {}
        for key, text in items:
            self.add(key, text)

    def __len__(self) -> int:
        return len(self._texts)

    def add(self, key: K, text: str) -> None:
        self._texts.pop(key, None)
        self._texts[key] = text

    def remove(self, key: K) -> None:
        self._texts.pop(key, None)

    def matches(self, text: str) -> list[K]:
        return [key for key, other in self._texts.items() if same_fact(text, other)]


class PlainSubjectIndex(Generic[K]):
    """``SubjectIndex`` without filtering: every key is a candidate."""

    def __init__(self) -> None:
        self._keys: dict[K, None] = {}

    def add(self, key: K, text: str) -> None:
        self._keys[key] = None

    def remove(self, key: K) -> None:
        self._keys.pop(key, None)

    def candidates(self, text: str, threshold: float) -> set[K]:
        return set(self._keys)


def plain_prune(self: ReflectionsDoc) -> None:
    """What ``prune`` did before it looked only at the sections lines were taken from."""
    for section in self.sections:
        section.subs = [s for s in section.subs if not (s.touched and s.empty())]
    self.sections = [
        s for s in self.sections if not (s.key == name_key(DORMANT) and s.touched and s.empty())
    ]


def reflected(home: Path) -> dict[str, bytes]:
    store = build(home)
    environ = {
        "OM_HOME": str(home),
        "OM_LLM_PROVIDER": "none",
        "OM_REFLECTIONS_MAX_LINES": "60",  # the cap moves lines out, the prune follows
        "OM_ARCHIVE_AFTER_DAYS": "10",
    }
    report = reflect(store, load_settings(environ=environ), today=TODAY, provider=None)
    assert report.promoted and report.merged and report.replaced and report.moved_out
    files = [home / "reflections.md", *sorted((home / "archive").rglob("*.md"))]
    return {store.relative(p): p.read_bytes() for p in files}


def test_the_fast_paths_reflect_exactly_as_the_plain_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = reflected(tmp_path / "fast")
    monkeypatch.setattr(rules_module, "FactIndex", PlainFactIndex)
    monkeypatch.setattr(rules_module, "SubjectIndex", PlainSubjectIndex)
    monkeypatch.setattr(reflections_module.ReflectionsDoc, "prune", plain_prune)
    plain = reflected(tmp_path / "plain")
    assert fast.keys() == plain.keys()
    for name in fast:
        assert fast[name] == plain[name], name


texts = st.lists(st.sampled_from(VOCAB[:12]), min_size=2, max_size=9).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(texts, min_size=1, max_size=40), st.lists(texts, max_size=10), st.data())
def test_fact_index_matches_what_comparing_every_pair_finds(
    stored: list[str], queries: list[str], data: st.DataObject
) -> None:
    index: FactIndex[int] = FactIndex(enumerate(stored))
    for n in range(0, len(stored), 3):
        index.remove(n)  # forgotten keys are never found
    kept = {n: t for n, t in enumerate(stored) if n % 3}
    # A stored text inside a longer one, and a longer one around a stored text: containment
    # both ways, besides the random queries and the stored texts themselves.
    wrapped = [
        f"{data.draw(texts)} {text} {data.draw(texts)}" for text in data.draw(st.lists(
            st.sampled_from(stored), max_size=5))
    ]  # fmt: skip
    for query in [*queries, *stored, *wrapped]:
        assert index.matches(query) == [n for n, t in kept.items() if same_fact(query, t)]
    for text in kept.values():
        longer = f"{data.draw(texts)} {text} {data.draw(texts)}"
        other = len(stored)
        index.add(other, longer)
        assert other in index.matches(text) or not same_fact(text, longer)
        index.remove(other)

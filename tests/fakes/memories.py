"""Small memories for the recall tests: forty ordinary lines and the few a test is about.

Recall keeps only what is relevant on the scale of the memory's size (a word found in one
entry of many), so a memory of two lines would make every word common; these forty lines give
the words of the lines under test their rarity, as in a real memory.
"""

from __future__ import annotations

from obsmem.index import rebuild
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation

ATLAS = "Atlas migration moved the billing tables to Postgres with a blue-green switch"
KAFKA = "Kafka consumer lag alerts page the on-call after ten minutes"
GRAFANA = "Grafana dashboards for atlas live in the observability repository"
FILLER = (
    "Reviewed the pull request and left comments on naming",
    "Ran the tests again after the rebase and they passed",
    "Updated the readme with the new install steps",
    "Paired on the parser change and wrote notes",
    "Fixed a typo in the changelog before the release",
)


def topical_memory(*extra: str, session: str | None = None, day: str = "2026-11-20") -> MemoryStore:
    """The memory of ``OM_HOME``: forty ordinary lines and ``extra`` (observed in session
    ``session`` when given), indexed."""
    store = MemoryStore().ensure()
    batch = [
        new_observation(f"{FILLER[i % len(FILLER)]} (round {i})", date=day, time="10:00")
        for i in range(40)
    ]
    provenance = Provenance("/t/s.jsonl", 1, 2, session, "claude", "atlas") if session else None
    batch += [
        new_observation(text, date=day, time="11:00", importance=0.8, provenance=provenance)
        for text in extra
    ]
    store.add_observations(batch)
    rebuild(store)
    return store

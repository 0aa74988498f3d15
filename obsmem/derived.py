"""Bringing everything derived from memory up to date after memory changed.

After ``om observe`` writes observations and after ``om reflect`` rewrites reflections, three
things follow from the markdown: the startup context (``profile.md``, ``active.md``,
``context.json``), the vault pages, and the search index with its entry embeddings. Each step
is independent and loses nothing when it fails (``om context`` prepares what is missing, the
next search refreshes the index, the next update embeds what is missing), so a failure is
reported as a problem, not raised.
"""

from __future__ import annotations

from obsmem.errors import OmError
from obsmem.memory.store import MemoryStore

__all__ = ["update_derived"]


def update_derived(store: MemoryStore) -> list[str]:
    """Regenerate the startup context and the vault, then refresh the index; return problems."""
    from obsmem.context.prepare import prepare_context
    from obsmem.reflect.router import route
    from obsmem.search.indexing import index_written

    problems: list[str] = []
    try:
        prepare_context(store)
    except OmError as exc:
        problems.append(f"startup context not prepared: {exc}")
    try:
        route(store)  # before the index refresh, so new vault lines are searchable at once
    except OmError as exc:
        problems.append(f"vault not updated: {exc}")
    try:
        # Entry embeddings follow the index here (or in the search daemon, told now), so that
        # searches embed only their query.
        vectors = index_written(store)
    except OmError as exc:
        problems.append(f"index not refreshed: {exc}")
    else:
        if vectors.problem:
            problems.append(f"embeddings not updated: {vectors.problem}")
    return problems

"""Adding one observation on request (``om remember``, the MCP ``remember`` tool).

An agent or a person can tell om something worth keeping without waiting for the observer. The
text gets exactly the treatment observed text gets, in the same order: secrets redacted, the
importance floors applied, and the same de-duplication against recent observations, so an agent
calling ``remember`` for something the observer already wrote (or calling it twice) adds nothing.

The provenance records who asked (``agent`` is ``mcp`` or ``cli``) and no transcript: its path is
empty, which ``om show`` reads as "added explicitly".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from obsmem.errors import OmError, UsageError
from obsmem.memory.model import OBSERVATION_TYPES, Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.scoring import Deduper, apply_floors
from obsmem.redact import redact

__all__ = ["MAX_TEXT_CHARS", "RECENT_WINDOW", "Remembered", "remember"]

#: An observation is one line a person reads at a glance; longer text belongs in a vault page.
MAX_TEXT_CHARS = 2000
#: How many of the latest observations a new one is compared with (the observer's own window).
RECENT_WINDOW = 200


@dataclass(frozen=True)
class Remembered:
    """What ``remember`` did: ``added`` or not, the observation's id, and why not when not.

    ``duplicate_of`` is the id of the recent observation it repeats (None when added).
    """

    added: bool
    id: str
    text: str
    date: str
    time: str | None
    type: str
    importance: float
    priority: str | None
    duplicate_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with ``status`` ``added`` or ``duplicate``."""
        return {
            "status": "added" if self.added else "duplicate",
            "id": self.id,
            "duplicate_of": self.duplicate_of,
            "text": self.text,
            "date": self.date,
            "time": self.time,
            "type": self.type,
            "importance": self.importance,
            "priority": self.priority,
        }


def _repeated(recent: list[Observation], obs: Observation) -> Observation | None:
    """The recent observation ``obs`` repeats, if any (same id, or the ``Deduper``'s verdict)."""
    if all(old.id != obs.id for old in recent) and not Deduper(recent).is_duplicate(obs.text):
        return None  # the usual case: one pass, no per-observation comparison
    for old in reversed(recent):
        if old.id == obs.id or Deduper([old]).is_duplicate(obs.text):
            return old
    return None


def remember(
    store: MemoryStore,
    text: str,
    *,
    type: str,  # the field's name in the data model
    importance: float,
    confidence: float = 0.9,
    date: str | None = None,
    time: str | None = None,
    agent: str = "cli",
    project: str | None = None,
) -> Remembered:
    """Add ``text`` as an observation of ``type`` (redacted, floored, de-duplicated).

    ``date``/``time`` default to now (local time, like observed turns). Raises ``UsageError`` for
    empty or over-long text, an unknown type, or scores outside 0..1.
    """
    if type not in OBSERVATION_TYPES:
        raise UsageError(f"unknown type {type!r}", f"use one of {', '.join(OBSERVATION_TYPES)}")
    clean = " ".join(redact(text or "").split())
    if not clean:
        raise UsageError("there is nothing to remember: the text is empty")
    if len(clean) > MAX_TEXT_CHARS:
        raise UsageError(
            f"the text is {len(clean)} characters; an observation holds at most {MAX_TEXT_CHARS}",
            "say it in one or two sentences",
        )
    now = datetime.now().astimezone()
    obs = new_observation(
        clean,
        date=date or now.date().isoformat(),
        time=time if time is not None or date is not None else now.strftime("%H:%M"),
        type=type,
        importance=importance,
        confidence=confidence,
        provenance=Provenance(path="", agent=agent, project=project or None),
    )
    apply_floors(obs)
    recent = store.recent_observations(RECENT_WINDOW)
    same = _repeated(recent, obs)
    # again: a user saying something once more is heard, even if it was forgotten or lost.
    added = [] if same is not None else store.add_observations([obs], again=True)
    if added:
        _refresh_context(store)
    return Remembered(
        added=bool(added),
        id=added[0].id if added else (same.id if same is not None else obs.id),
        text=obs.text,
        date=obs.date,
        time=obs.time,
        type=type,
        importance=obs.importance,
        priority=obs.priority,
        duplicate_of=None if added else (same.id if same is not None else obs.id),
    )


def _refresh_context(store: MemoryStore) -> None:
    """Re-prepare the startup context so the next session sees the new memory.

    A failure loses nothing (the observation is written; the next observe prepares it again),
    so it is not worth failing the call that wrote the memory.
    """
    from obsmem.context.prepare import prepare_context

    with contextlib.suppress(OmError):
        prepare_context(store)

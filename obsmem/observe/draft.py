"""What an observer (the LLM or the rules) hands to the store: drafts, then observations.

Both observers produce ``Draft`` objects; ``to_observation`` turns one into an ``Observation``
with its date and time in local time (the time people read in their memory files), its stable id
and its provenance, after the floors of ``scoring`` are applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from obsmem.memory.clean import clean_text
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import new_observation
from obsmem.observe.scoring import apply_floors
from obsmem.sources.model import Turn

__all__ = ["CurrentContext", "Draft", "local_date_time", "provenance_of", "to_observation"]


@dataclass
class Draft:
    """One observation before it is written: text, type, scores, and the turns it rests on."""

    text: str
    type: str
    importance: float
    confidence: float
    turns: list[Turn]
    timestamp: str | None = None
    referenced_date: str | None = None
    completed: bool = False


@dataclass
class CurrentContext:
    """The day's Current Context block: what the user is doing now."""

    active_task: str = ""
    key_entities: list[str] = field(default_factory=list)
    suggested_next: str = ""
    open_questions: list[str] = field(default_factory=list)

    def as_lines(self) -> dict[str, str]:
        """The block's ``**Key:** value`` pairs, without the empty ones."""
        pairs = {
            "Active task": self.active_task,
            "Key entities": ", ".join(self.key_entities),
            "Suggested next": self.suggested_next,
            "Open questions": "; ".join(self.open_questions),
        }
        # Transcript text, like observations: cleaned of escapes and controls before memory.
        pairs = {k: " ".join(clean_text(v).split()) for k, v in pairs.items()}
        return {k: v for k, v in pairs.items() if v}


def local_date_time(timestamp: str | None) -> tuple[str, str | None]:
    """The local date and ``HH:MM`` of an ISO UTC timestamp (today and no time when absent)."""
    if timestamp:
        try:
            moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            local = moment.astimezone()
            return local.date().isoformat(), local.strftime("%H:%M")
    return datetime.now().astimezone().date().isoformat(), None


def provenance_of(turns: list[Turn]) -> Provenance | None:
    """The transcript lines that a group of turns (all from one file) came from."""
    if not turns:
        return None
    first = turns[0]
    return Provenance(
        path=first.source_path,
        line_start=min(t.line_start for t in turns),
        line_end=max(t.line_end for t in turns),
        session=first.session,
        agent=first.agent,
        project=first.project,
        byte_start=min(t.byte_start for t in turns),
        byte_end=max(t.byte_end for t in turns),
    )


def to_observation(draft: Draft) -> Observation:
    """A written-ready observation from a draft, with floors applied and its provenance."""
    stamp = draft.timestamp or next((t.timestamp for t in draft.turns if t.timestamp), None)
    day, time = local_date_time(stamp)
    obs = new_observation(
        draft.text,
        date=day,
        time=time,
        type=draft.type,
        importance=min(1.0, max(0.0, draft.importance)),
        confidence=min(1.0, max(0.0, draft.confidence)),
        referenced_date=draft.referenced_date,
        completed=draft.completed,
        provenance=provenance_of(draft.turns),
    )
    return apply_floors(obs)

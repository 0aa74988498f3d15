"""The typed data model of memory: observations, their provenance, and entries of the other files.

An observation is one markdown line, readable by people and by the original tool::

    - 🔴 14:30 [decision|c=0.95|i=0.90] Chose PostgreSQL over SQLite ^k3v9q2m7xa

Priority emoji are derived from importance (``priority_for``); lines without a scored tag take
their importance from the emoji (``LEGACY_IMPORTANCE``, the mapping ClawVault and the original tool
use), and lines with neither take ``DEFAULT_IMPORTANCE``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_IMPORTANCE",
    "LEGACY_IMPORTANCE",
    "OBSERVATION_TYPES",
    "PRIORITIES",
    "Entry",
    "Observation",
    "ParseIssue",
    "Provenance",
    "make_id",
    "normalise_text",
    "priority_for",
]

#: Priority emoji and their meaning, in the order people read them.
PRIORITIES: dict[str, str] = {
    "🔴": "important",
    "🟡": "contextual",
    "🟢": "minor",
    "✅": "completed",
}

#: Importance implied by a legacy emoji when a line carries no ``i=`` score.
LEGACY_IMPORTANCE: dict[str, float] = {"🔴": 0.9, "🟡": 0.6, "🟢": 0.2, "✅": 0.6}

DEFAULT_IMPORTANCE = 0.5

OBSERVATION_TYPES: tuple[str, ...] = (
    "decision",
    "preference",
    "fact",
    "commitment",
    "task",
    "milestone",
    "lesson",
    "relationship",
    "project",
    "error",
    "event",
)

# Importance thresholds for the emoji, chosen so the legacy mapping reads back to its own emoji.
_HIGH = 0.8
_MEDIUM = 0.4


def priority_for(importance: float, *, completed: bool = False) -> str:
    """The priority emoji for an importance score (✅ for completed work, whatever its score)."""
    if completed:
        return "✅"
    if importance >= _HIGH:
        return "🔴"
    if importance >= _MEDIUM:
        return "🟡"
    return "🟢"


_SPACES = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Case-folded text with runs of whitespace collapsed: the form compared for identity."""
    return _SPACES.sub(" ", text).strip().casefold()


# Crockford-style base32 without i, l, o, u: ids are read aloud and typed by people.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 10  # 50 bits: collisions stay negligible well past a million observations


def make_id(*parts: str) -> str:
    """A short stable id (10 base32 characters) derived from ``parts``."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=8)
    number = int.from_bytes(digest.digest(), "big")
    chars = []
    for _ in range(ID_LENGTH):
        number, rem = divmod(number, 32)
        chars.append(_ALPHABET[rem])
    return "".join(chars)


@dataclass(frozen=True)
class Provenance:
    """Where an observation came from: the transcript and the lines of it that were read."""

    path: str
    line_start: int | None = None
    line_end: int | None = None
    session: str | None = None
    agent: str | None = None
    project: str | None = None
    byte_start: int | None = None
    byte_end: int | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict without the fields that are unset."""
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Provenance:
        """Build from ``to_dict`` output, ignoring keys this version does not know."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)  # type: ignore[arg-type]


@dataclass
class Observation:
    """One observation line of ``observations.md`` (or of an archive month).

    ``line`` and ``raw`` are set for observations read from a file (``raw`` is the exact line,
    without its line ending); ``tagged`` says whether the line carries a ``[type|c=|i=]`` tag and
    ``block_id`` whether it carries its id as a trailing ``^id``. Lines without one get an id
    derived from their date and text, so it stays the same across index rebuilds.
    """

    text: str
    date: str
    time: str | None = None
    priority: str | None = None
    type: str | None = None
    confidence: float | None = None
    importance: float = DEFAULT_IMPORTANCE
    referenced_date: str | None = None
    id: str = ""
    depth: int = 0
    tagged: bool = False
    block_id: bool = False
    line: int | None = None
    line_end: int | None = None
    raw: str | None = None
    provenance: Provenance | None = None

    @property
    def completed(self) -> bool:
        """True for work marked done (✅)."""
        return self.priority == "✅"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (for ``--json`` output and the MCP server)."""
        out: dict[str, object] = {
            "id": self.id,
            "date": self.date,
            "time": self.time,
            "priority": self.priority,
            "type": self.type,
            "confidence": self.confidence,
            "importance": self.importance,
            "referenced_date": self.referenced_date,
            "text": self.text,
            "depth": self.depth,
            "line": self.line,
        }
        if self.provenance is not None:
            out["provenance"] = self.provenance.to_dict()
        return out


@dataclass
class Entry:
    """One indexable line of ``reflections.md``, ``profile.md``, ``active.md`` or a vault page.

    ``section`` is the heading path (``"Active Projects / om"``); ``date`` is the date the entry
    is about when it names one, else the file's ``Last updated`` date if known.
    """

    id: str
    text: str
    section: str
    line: int
    depth: int = 0
    date: str | None = None
    importance: float | None = None
    priority: str | None = None
    type: str | None = None
    raw: str = ""
    cites: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ParseIssue:
    """Something in a memory file that could not be understood. The line is kept verbatim."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"

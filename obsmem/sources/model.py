"""What every transcript reader produces: normalised turns, with provenance back to the file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["ROLES", "ReadResult", "Turn"]

#: ``user`` and ``assistant`` are words; ``action`` is a tool call summarised in one line
#: (``Bash: npm test``); ``outcome`` is what a tool call produced, reduced to what matters
#: (exit status, error text, test counts); ``summary`` is an agent's own summary of earlier turns.
ROLES = ("user", "assistant", "action", "outcome", "summary")


@dataclass
class Turn:
    """One normalised turn of a conversation.

    ``line_start``/``line_end`` are 1-based line numbers in ``source_path``; ``byte_start`` and
    ``byte_end`` the byte range those lines cover (end exclusive). ``timestamp`` is ISO 8601 in
    UTC (``2026-02-10T14:30:00Z``) or None when the transcript gives none.
    ``subagent`` is True for turns of a sub-agent's conversation (its prompt included): the
    agent's work, not the user's words. ``excerpt`` is set on an ``action`` whose call succeeded
    without an outcome: the first and last lines of its result, redacted and short (see
    ``outcomes.result_excerpt``), for the LLM observer to read under the call.
    """

    role: str
    text: str
    timestamp: str | None
    session: str | None
    agent: str
    project: str | None
    source_path: str
    line_start: int
    line_end: int
    byte_start: int
    byte_end: int
    subagent: bool = False
    excerpt: str | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON shape of ``om observe --dry-run --json``."""
        data: dict[str, object] = {
            "role": self.role,
            "text": self.text,
            "timestamp": self.timestamp,
            "session": self.session,
            "agent": self.agent,
            "project": self.project,
            "source_path": self.source_path,
            "line_start": self.line_start,
            "line_end": self.line_end,
        }
        if self.subagent:
            data["subagent"] = True
        if self.excerpt:
            data["excerpt"] = self.excerpt
        return data


@dataclass
class ReadResult:
    """The turns read from one file between two byte offsets, and what had to be skipped.

    ``end_offset`` always lies just after a complete line (an incomplete last line is left for
    next time); ``end_line`` is the number of complete lines before it. ``skipped`` counts what
    was not turned into turns, by reason (``"broken json"``, ``"unknown type: foo"``, ...), so the
    command can say so in one line instead of failing.
    """

    turns: list[Turn]
    start_offset: int
    end_offset: int
    end_line: int
    skipped: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # A reason can quote a record's type or role, which comes from the transcript: it goes
        # through redaction like any other transcript text before anyone prints it.
        if any(":" in reason for reason in self.skipped):
            from obsmem.redact import redact

            cleaned: Counter[str] = Counter()
            for reason, count in self.skipped.items():
                cleaned[redact(reason) if ":" in reason else reason] += count
            self.skipped = cleaned

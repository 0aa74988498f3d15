"""Redaction: secrets out of every text om keeps or sends, shared by every stage.

Readers redact each turn as it leaves them (:func:`redact_turns`), ``om remember`` and the MCP
tools redact what they are given, search redacts transcript excerpts, and paths shown to the user
pass through :func:`redact_path`. The rules live in one module per family: token shapes
(``shapes``), keyed assignments and entropy (``keys``), file and command forms (``forms``),
paths (``paths``); ``look`` tells which of them can find anything in a text, and ``core`` runs
them in order.
"""

from __future__ import annotations

from obsmem.redact.core import KINDS, redact, redact_all, redact_counts, redact_turns, safe_cut
from obsmem.redact.paths import redact_path

__all__ = [
    "KINDS",
    "redact",
    "redact_all",
    "redact_counts",
    "redact_path",
    "redact_turns",
    "safe_cut",
]

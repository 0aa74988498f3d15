"""Text fit for memory: no terminal escapes, control characters or bidi overrides.

Memory is read by people in editors and terminals, and served to agents as context. A terminal
escape copied from a tool's coloured output can repaint or hide what a reader sees; a NUL breaks
tools that read the file as text; a bidi override (the "Trojan Source" trick) makes a line read
differently from what it says. Every observation passes through ``new_observation``, which calls
``clean_text``, whichever path it came by (the observer, ``om remember``, the MCP server).
"""

from __future__ import annotations

import re

__all__ = ["clean_text"]

# Escape sequences as terminals read them: CSI (``ESC [ ... final``, also its one-byte form
# 0x9B), OSC (``ESC ] ... BEL`` or ``ESC \``, window titles and hyperlinks), DCS/SOS/PM/APC
# strings, and the two-character escapes (``ESC c``, ``ESC 7``). Removed whole, so no stray
# "[31m" is left behind.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# C0 controls but tab, newline and carriage return (whitespace, collapsed later), DEL, C1
# controls; bidi embeddings, overrides, isolates and marks; the byte-order mark.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


def clean_text(text: str) -> str:
    """``text`` without terminal escape sequences, control characters and bidi controls.

    Tabs and line breaks are kept (callers fold whitespace as they need); everything else that
    is printed invisibly, or that changes how the text around it is displayed, is removed.
    """
    return _INVISIBLE.sub("", _ESCAPES.sub("", text))

"""Small normalisations every reader shares: timestamps, project names, bounded text."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from obsmem.redact import safe_cut

__all__ = ["MAX_OUTCOME_CHARS", "clip", "file_time", "iso_utc", "project_of"]

#: No single tool output or outcome is kept longer than this (characters).
MAX_OUTCOME_CHARS = 2000

_ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")


def iso_utc(value: object) -> str | None:
    """An ISO 8601 UTC timestamp (``2026-02-10T14:30:00Z``) from what transcripts carry.

    Accepts ISO strings (with ``Z`` or an offset, or naive, taken as UTC) and epoch numbers in
    seconds or milliseconds. Anything else is None: a missing time is better than a wrong one.
    """
    if isinstance(value, str) and _ISO_Z.match(value):
        # The common case first, without datetime parsing. Unstripped: a string the pattern
        # matches as it is has no leading space, and "$" allows the one trailing newline.
        return value[:19] + "Z"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if _ISO_Z.match(text):
        return text[:19] + "Z"
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_time(path: Path) -> str | None:
    """The file's modification time as an ISO UTC timestamp (a turn's last-resort time)."""
    try:
        return iso_utc(path.stat().st_mtime)
    except OSError:
        return None


@lru_cache(maxsize=1024)
def project_of(cwd: str | None) -> str | None:
    """The project a working directory belongs to: its git repository's folder name, else its own.

    Looks for ``.git`` upwards from ``cwd`` when the directory exists on this machine (a
    transcript may come from elsewhere; then the folder's own name is the best guess).
    """
    if not cwd:
        return None
    path = Path(cwd)
    try:
        if path.is_dir():
            for candidate in (path, *path.parents):
                if (candidate / ".git").exists():
                    return candidate.name or None
                if candidate == Path(candidate.anchor) or str(candidate) == os.path.expanduser("~"):
                    break
    except OSError:
        pass
    return path.name or None


def clip(text: str, limit: int = MAX_OUTCOME_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    cut = safe_cut(text, limit)
    return text[:cut].rstrip() + f" … [{len(text) - cut} more characters]"

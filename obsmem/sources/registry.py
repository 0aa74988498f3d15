"""Which readers exist, where their agents keep transcripts, and what format a given file is in."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from obsmem.errors import UsageError
from obsmem.redact.paths import redact_path
from obsmem.sources.model import ReadResult

__all__ = ["AGENTS", "FORMATS", "Reader", "check_transcript", "detect_format", "reader_for"]

#: Agents whose transcript folders ``om observe --source all`` scans, in that order.
AGENTS = ("claude", "codex", "hermes", "openclaw")
#: Every format a file given with ``--transcript`` can be read as.
FORMATS = (*AGENTS, "text")
# Most specific first: a Codex wrapper or an OpenClaw header cannot be mistaken for the others,
# while Hermes's plain chat messages are the loosest shape.
_DETECT_ORDER = ("codex", "openclaw", "claude", "hermes")
_SNIFF_BYTES = 256 * 1024
_SNIFF_RECORDS = 8
#: Past this share of control bytes or bytes that are not UTF-8, a file is binary, not text.
_BINARY_SHARE = 0.10
_CONTROL = bytes(range(32)).translate(None, b"\t\n\r\f\v\x1b")
_NAMES = {
    "claude": "Claude Code",
    "codex": "Codex CLI",
    "hermes": "Hermes Agent",
    "openclaw": "OpenClaw",
}


class Reader(Protocol):
    """What every module in ``obsmem/sources/`` named after an agent provides."""

    AGENT: str

    def read(
        self, path: Path, *, start_offset: int = 0, start_line: int = 0, flush: bool = False
    ) -> ReadResult: ...

    def detect(self, records: list[dict[str, Any]]) -> bool: ...

    def find_files(self, home: Path) -> list[Path]: ...


def reader_for(name: str) -> Reader:
    """The reader module for an agent or format name (imported on first use)."""
    if name not in FORMATS:
        raise UsageError(f"unknown source {name!r}", f"use one of: {', '.join(FORMATS)}")
    module: ModuleType = importlib.import_module(f"obsmem.sources.{name}")
    return cast(Reader, module)


def _sniff(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    records: list[dict[str, Any]] = []
    stripped = head.lstrip()
    if stripped.startswith(b"{") and path.suffix == ".json":
        # A whole-file JSON document (older Codex sessions): its top level is the record.
        try:
            value = json.loads(path.read_bytes())
        except (ValueError, RecursionError, OSError):
            value = None
        if isinstance(value, dict):
            return [value]
    for raw in head.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            records.append(value)
        if len(records) >= _SNIFF_RECORDS:
            break
    return records


def detect_format(path: Path) -> str:
    """The format of a transcript file, from its content: an agent's name, or ``text``."""
    records = _sniff(path)
    if records:
        for name in _DETECT_ORDER:
            if reader_for(name).detect(records):
                return name
    return "text"


def _binary(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) is no text: NUL bytes, or mostly not UTF-8."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    text = head.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") + sum(1 for byte in head if byte in _CONTROL)
    return bad > _BINARY_SHARE * len(head)


def check_transcript(path: Path, source: str | None = None) -> str:
    """The format to read ``path`` as (``source`` when given, else detected), or a refusal.

    Raises ``UsageError`` for a file that is no transcript: binary data (an executable, an
    image, NUL bytes) where no agent's records are found, JSON records of no agent's format,
    or a ``source`` whose records the file does not hold. Nothing is read or written then.
    """
    if source is not None:
        reader_for(source)  # validates the name
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    if not head.strip():
        return source or "text"  # nothing to read yet: not a refusal
    records = _sniff(path)
    found = next((n for n in _DETECT_ORDER if records and reader_for(n).detect(records)), None)
    shown = redact_path(str(path))
    if source is not None and source != "text":
        if found == source or (records and reader_for(source).detect(records)):
            return source
        seen = f"it looks like {_NAMES[found]}" if found else "none was found"
        raise UsageError(
            f"{shown} holds no {_NAMES[source]} record ({seen})",
            "check the file, or give --source for its agent",
        )
    if found is not None and source is None:
        return found
    if _binary(head):
        raise UsageError(
            f"{shown} is not a transcript: it holds binary data",
            "give a JSON Lines transcript of Claude Code, Codex, Hermes or OpenClaw, "
            "or a text or markdown conversation",
        )
    if source is None and records and _all_json(head):
        raise UsageError(
            f"{shown} holds JSON records of no agent om reads",
            "give a transcript of Claude Code, Codex, Hermes or OpenClaw, "
            "or --source text to read it as text",
        )
    return "text"


def _all_json(head: bytes) -> bool:
    """True when every complete non-empty line of ``head`` is a JSON value (JSON Lines)."""
    lines = [line for line in head.split(b"\n")[:-1] if line.strip()][:_SNIFF_RECORDS]
    if not lines:
        return False
    for line in lines:
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            return False
    return True

"""Which readers exist, where their agents keep transcripts, and what format a given file is in."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from obsmem.errors import UsageError
from obsmem.sources.model import ReadResult

__all__ = ["AGENTS", "FORMATS", "Reader", "detect_format", "reader_for"]

#: Agents whose transcript folders ``om observe --source all`` scans, in that order.
AGENTS = ("claude", "codex", "hermes", "openclaw")
#: Every format a file given with ``--transcript`` can be read as.
FORMATS = (*AGENTS, "text")
# Most specific first: a Codex wrapper or an OpenClaw header cannot be mistaken for the others,
# while Hermes's plain chat messages are the loosest shape.
_DETECT_ORDER = ("codex", "openclaw", "claude", "hermes")
_SNIFF_BYTES = 256 * 1024
_SNIFF_RECORDS = 8


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

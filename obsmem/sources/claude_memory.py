"""Claude Code's own auto-memory (``~/.claude/projects/*/memory/*.md``), indexed as it is.

These files are already distilled facts that Claude Code keeps per project (``MEMORY.md`` is
their index), so they skip the observer: the scan records which files exist, and the search index
covers them like memory files (by content hash, so only changed files are re-read). A deleted file
drops out of the list and its entries leave the index on the next refresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from obsmem import paths
from obsmem.memory.store import MemoryStore

__all__ = ["KIND", "AutoMemoryReport", "find_memory_files", "scan_auto_memory"]

KIND = "claude-memory"


@dataclass
class AutoMemoryReport:
    """What a scan of the auto-memory found, compared with the previous scan."""

    files: int = 0
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def find_memory_files(claude_home: Path) -> list[Path]:
    """Every ``projects/*/memory/*.md`` file under a Claude Code home, sorted."""
    projects = claude_home / "projects"
    try:
        return sorted(p for p in projects.glob("*/memory/*.md") if p.is_file())
    except OSError:
        return []


def scan_auto_memory(
    store: MemoryStore, environ: Mapping[str, str] | None = None
) -> AutoMemoryReport:
    """Record the current auto-memory files (path and content hash) for the index."""
    report = AutoMemoryReport()
    previous = {
        name: info for name, info in store.external_files().items() if info.get("kind") == KIND
    }
    others = {
        name: info for name, info in store.external_files().items() if info.get("kind") != KIND
    }
    current: dict[str, dict[str, str]] = {}
    for path in find_memory_files(paths.agent_home("claude", environ)):
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            report.unreadable.append(str(path))
            continue
        name = str(path)
        current[name] = {"kind": KIND, "sha256": digest}
        if name not in previous:
            report.added.append(name)
        elif previous[name].get("sha256") != digest:
            report.changed.append(name)
    report.removed = sorted(set(previous) - set(current))
    report.files = len(current)
    if current != previous:
        store.set_external_files({**others, **current})
    return report

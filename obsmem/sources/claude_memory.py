"""Claude Code's own auto-memory (``~/.claude/projects/*/memory/*.md``), indexed as written.

These files are already distilled facts that Claude Code keeps per project (``MEMORY.md`` is
their index), so they skip the observer: the scan records which files exist, and the search index
covers them like memory files (by content hash, so only changed files are re-read). A deleted file
drops out of the list and its entries leave the index on the next refresh.

Claude Code names a project's folder after its working directory, so a secret there is in the
path of every memory file of that project; and a memory file is text an agent wrote, which can
quote a secret. What om keeps or shows of these files goes through redaction: the index stores
each one under :func:`shown_path` and reads it through :func:`indexable_text`, and the scan's
report names files by their shown path. Only ``external-files.json`` (in the private ``.om``
folder, like the capture state) keeps the real paths, because the index has to stat and read the
files; the files themselves are Claude Code's and are never modified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path

from obsmem import paths
from obsmem.memory.markdown import decode, encode, split_lines
from obsmem.memory.store import MemoryStore

__all__ = [
    "KIND",
    "AutoMemoryReport",
    "blank_front_matter",
    "find_memory_files",
    "indexable_text",
    "scan_auto_memory",
    "shown_path",
]

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


@lru_cache(maxsize=4096)
def shown_path(path: str) -> str:
    """The name om keeps and shows for an auto-memory file: its path with each secret redacted
    (unchanged when it holds none). Cached: the index names every file so before each search."""
    # Imported here: the redactor's patterns cost an import that a memory without these files
    # never needs.
    from obsmem.redact.paths import redact_path

    return redact_path(path)


def blank_front_matter(data: bytes) -> bytes:
    """YAML front matter (``---`` ... ``---`` at the top) turned into empty lines, so it is not
    indexed as text while every other line keeps its number."""
    if not data.startswith(b"---"):
        return data
    lines = data.split(b"\n")
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() == b"---":
            return b"\n" * (end + 1) + b"\n".join(lines[end + 1 :])
    return data


def indexable_text(data: bytes) -> bytes:
    """What the index reads of an auto-memory file: front matter blanked, secrets redacted.

    Every line keeps its number, so a citation still points at the file's line: a secret that
    spanned lines (a key block, a ``<private>`` span) leaves its label on its first line and
    empty lines after it. A file with nothing to redact comes back byte for byte as
    :func:`blank_front_matter` gives it.
    """
    from obsmem.redact import redact  # as in shown_path

    data = blank_front_matter(data)
    text, _ = decode(data)
    redacted = redact(text)
    if redacted == text:
        return data
    return encode(_same_lines(text, redacted))


def _same_lines(text: str, redacted: str) -> str:
    """``redacted`` padded with empty lines where redaction joined lines of ``text``."""
    old, new = split_lines(text), split_lines(redacted)
    if len(old) == len(new):
        return redacted
    out: list[str] = []
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
        out.extend(new[j1:j2])
        missing = (i2 - i1) - (j2 - j1)
        if missing > 0:
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n"  # the last line: the padding must add lines, not end it
            out.extend("\n" for _ in range(missing))
    return "".join(out)


def scan_auto_memory(
    store: MemoryStore, environ: Mapping[str, str] | None = None
) -> AutoMemoryReport:
    """Record the current auto-memory files (path and content hash) for the index.

    The list keeps real paths (the index reads the files); the report names them by
    :func:`shown_path`, as everything om prints does.
    """
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
            report.unreadable.append(shown_path(str(path)))
            continue
        name = str(path)
        current[name] = {"kind": KIND, "sha256": digest}
        if name not in previous:
            report.added.append(shown_path(name))
        elif previous[name].get("sha256") != digest:
            report.changed.append(shown_path(name))
    report.removed = sorted(shown_path(name) for name in set(previous) - set(current))
    report.files = len(current)
    if current != previous:
        store.set_external_files({**others, **current})
    return report

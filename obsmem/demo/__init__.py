"""What ``om demo`` (and ``make demo``) runs: sample memory in a throw-away directory.

The sample files mix the original tool's untagged lines with om's scored lines, so the demo shows
both being read. ``prepare`` writes them through the store (atomic, 0600); the CLI then shows the
status, the memory and a few searches.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path

from obsmem.memory.atomic import atomic_write
from obsmem.memory.store import MemoryStore

__all__ = ["SAMPLE_FILES", "SAMPLE_QUERIES", "prepare"]

SAMPLE_FILES = ("observations.md", "reflections.md", "profile.md", "active.md")
SAMPLE_QUERIES = ("redis ci", "why tortoise orm", "release date")


def prepare(home: Path | None = None) -> MemoryStore:
    """Write the sample memory files into ``home`` (a new temporary directory when None)."""
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="om-demo-"))
    # Isolated from the user's own OM_STATE_DIR / OM_INDEX_PATH: the demo must not touch them.
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    data = resources.files("obsmem.demo") / "data"
    with store.lock():
        for name in SAMPLE_FILES:
            atomic_write(store.home / name, (data / name).read_bytes())
    return store

"""What ``om demo`` (and ``make demo``) runs: the whole pipeline on bundled samples, offline.

``prepare`` writes sample memory files (in the original tool's format, with some of om's scored
lines) into a throw-away memory directory and copies sample transcripts into throw-away agent
homes. ``run`` then observes those transcripts with the offline rules, so no network and no key is
needed; the CLI shows the result: what was observed, the memory, and searches.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from obsmem.memory.atomic import atomic_write
from obsmem.memory.store import MemoryStore

__all__ = ["SAMPLE_FILES", "SAMPLE_QUERIES", "Demo", "prepare"]

SAMPLE_FILES = ("observations.md", "reflections.md", "profile.md", "active.md")
SAMPLE_QUERIES = ("redis workers", "release date", "commit messages")


@dataclass
class Demo:
    """A prepared demo: its memory directory and the environment that points om at its samples."""

    store: MemoryStore
    environ: dict[str, str]


def prepare(
    home: Path | None = None, *, agents_dir: Path | None = None, transcripts: bool = True
) -> Demo:
    """Write the sample memory into ``home`` (a new temporary directory when None) and, with
    ``transcripts``, copy the sample transcripts into agent homes under ``agents_dir`` (default:
    ``<home>-agents`` beside it; transcripts never live inside the memory directory)."""
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="om-demo-")) / "memory"
    environ = {"OM_HOME": str(home)}
    # Isolated from the user's own OM_STATE_DIR / OM_INDEX_PATH: the demo must not touch them.
    store = MemoryStore(home, environ=environ).ensure()
    data = resources.files("obsmem.demo") / "data"
    with store.lock():
        for name in SAMPLE_FILES:
            atomic_write(store.home / name, (data / name).read_bytes())
    agents = agents_dir or home.parent / f"{home.name}-agents"
    for agent, variable in (
        ("claude", "CLAUDE_CONFIG_DIR"),
        ("codex", "CODEX_HOME"),
        ("hermes", "HERMES_HOME"),
        ("openclaw", "OPENCLAW_HOME"),
    ):
        target = agents / agent
        target.mkdir(parents=True, exist_ok=True)
        source = data / "transcripts" / agent
        if transcripts and source.is_dir():
            with resources.as_file(source) as folder:
                shutil.copytree(folder, target, dirs_exist_ok=True)
        environ[variable] = str(target)
    return Demo(store, environ)

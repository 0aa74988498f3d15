"""``om status``: what is in memory, the state of the index, and how om is configured."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from obsmem.index import index_status
from obsmem.integrations.checks import installed_summary
from obsmem.llm.usage import usage_totals
from obsmem.memory.model import PRIORITIES
from obsmem.memory.store import MemoryStore
from obsmem.paths import REFLECTIONS_FILE
from obsmem.settings import Settings

__all__ = ["StatusReport", "collect_status"]


@dataclass
class StatusReport:
    """Everything ``om status`` shows, as plain data (``to_dict`` for ``--json``)."""

    memory_dir: str
    files: dict[str, dict[str, Any]]
    observations: int
    by_day: dict[str, int]
    by_priority: dict[str, int]
    reflection_entries: int
    last_reflected: str | None
    index: dict[str, Any]
    provider: dict[str, str]
    integrations: list[str] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def collect_status(
    store: MemoryStore, settings: Settings, environ: Mapping[str, str] | None = None
) -> StatusReport:
    """Read the memory directory and index (without writing anything) and summarise them."""
    files: dict[str, dict[str, Any]] = {}
    for path in store.memory_files():
        info = path.stat()
        files[store.relative(path)] = {"bytes": info.st_size}
    doc = store.read_observations()
    by_day = Counter(obs.date for obs in doc.observations)
    by_priority = Counter(obs.priority or "none" for obs in doc.observations)
    reflections = store.read_sections(REFLECTIONS_FILE)
    model = settings.llm_observer_model or settings.llm_model or "(provider default)"
    return StatusReport(
        memory_dir=str(store.home),
        files=files,
        observations=len(doc.observations),
        by_day=dict(sorted(by_day.items())),
        by_priority={p: by_priority[p] for p in [*PRIORITIES, "none"] if by_priority[p]},
        reflection_entries=len(reflections.entries),
        last_reflected=reflections.last_reflected,
        index=index_status(store),
        provider={
            "setting": settings.llm_provider,
            "effective": settings.effective_provider(),
            "model": model,
        },
        integrations=installed_summary(environ),
        sources=_sources(store, environ),
        usage=usage_totals(store.usage_path, date.today()),
    )


def _sources(store: MemoryStore, environ: Mapping[str, str] | None) -> list[dict[str, Any]]:
    from obsmem.sources.select import open_state, source_status

    with open_state(store) as state:
        return [s.to_dict() for s in source_status(state, environ)]

"""``om status``: what is in memory, the state of the index, and how om is configured."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from obsmem.index import index_status
from obsmem.integrations.checks import installed_summary
from obsmem.llm.usage import period_totals
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
    #: Tokens in (``cached`` of them) and out and calls, today and this month.
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Dollars of the calls of known cost, the count of the others (``unpriced``) and of the
    #: known costs that are upper bounds (``upper``), today and this month.
    cost: dict[str, dict[str, float]] = field(default_factory=dict)
    search: dict[str, Any] = field(default_factory=dict)

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
    totals = period_totals(store.usage_path, date.today())  # one read of the usage log
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
        usage={
            period: {key: int(row[key]) for key in ("in", "cached", "out", "calls")}
            for period, row in totals.items()
        },
        cost={
            period: {"usd": row["usd"], **{key: int(row[key]) for key in ("unpriced", "upper")}}
            for period, row in totals.items()
        },
        search=search_status(store, settings),
    )


def search_status(store: MemoryStore, settings: Settings) -> dict[str, Any]:
    """The search backend, how many entries have a vector, and the search daemon.

    Keys: ``backend`` (``hybrid`` or ``bm25``) and ``reason``; ``model``, ``embedded`` and
    ``total`` (entries with a vector under the model, of those that should have one; None when
    BM25 alone or no index yet); ``daemon``: None when a cold search never uses one (BM25
    settings, an endpoint embedder, ``OM_SEARCH_DAEMON=off``), else what it reports
    (``running``, ``pid``, ``host``, its embedding progress) or ``{"running": False}``;
    ``model_failure``: the remembered load failure (``model_failures.remembered``) that turns a
    hybrid backend into BM25 for a while, or None. Loads no model.
    """
    from obsmem.errors import OmError
    from obsmem.search.bm25 import needs_local_model
    from obsmem.search.client import daemon_status
    from obsmem.search.embeddings import backend_status
    from obsmem.search.indexing import vector_counts

    kind, reason = backend_status(settings)
    out: dict[str, Any] = {
        "backend": kind,
        "reason": reason,
        "model": None,
        "embedded": None,
        "total": None,
        "daemon": None,
        "model_failure": None,
    }
    if kind == "hybrid":
        from obsmem.search.model_failures import remembered

        failure = remembered(settings)
        if failure is not None:
            # The model did not load lately: searches use BM25 until it is tried again.
            reason = f"the embedding model did not load: {failure['reason']}"
            out.update(backend="bm25", reason=reason, model_failure=failure)
    if kind == "hybrid" and store.index_path.is_file():
        try:
            model, missing, total = vector_counts(store, settings)
        except OmError:
            pass  # the index line of the status says what is wrong with it
        else:
            out.update(model=model, embedded=total - missing, total=total)
    if settings.search_daemon == "on" and needs_local_model(settings):
        found = daemon_status(store)
        out["daemon"] = {"running": False} if found is None else {"running": True, **found}
        out["daemon"].pop("ok", None)
    return out


def _sources(store: MemoryStore, environ: Mapping[str, str] | None) -> list[dict[str, Any]]:
    from obsmem.sources.select import open_state, source_status

    with open_state(store) as state:
        return [s.to_dict() for s in source_status(state, environ)]

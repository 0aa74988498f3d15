"""The pages about memory as a whole: reflections, the vault, the next session's context, status."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from obsmem.context.startup import (
    DEFAULT_BUDGET,
    build_context,
    startup_entries,
)
from obsmem.doctor import run_checks
from obsmem.errors import NotFound, UsageError
from obsmem.llm.usage import cost_text, daily_totals, prices_for
from obsmem.memory.model import Entry
from obsmem.paths import REFLECTIONS_FILE
from obsmem.search.browse import facets
from obsmem.status import collect_status

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from obsmem.ui.app import Viewer

__all__ = ["next_session", "reflections", "status", "vault_index", "vault_page"]

#: Days of LLM usage the status page shows.
USAGE_DAYS = 14


def _sections(entries: list[Entry]) -> list[tuple[str, list[Entry]]]:
    grouped: dict[str, list[Entry]] = {}
    for item in entries:
        grouped.setdefault(item.section or "(no section)", []).append(item)
    return list(grouped.items())


async def reflections(viewer: Viewer, request: Request) -> Response:
    """``reflections.md`` by section, each line linking to the observations it cites."""
    doc = await run_in_threadpool(viewer.store.read_sections, REFLECTIONS_FILE)
    return viewer.page(request, "reflections.html", doc=doc, sections=_sections(doc.entries))


def _vault_pages(viewer: Viewer) -> dict[str, str]:
    """Vault page name (``projects/atlas``) -> its file name under the memory directory."""
    folder = viewer.store.vault_dir
    if not folder.is_dir():
        return {}
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*.md")):
        if path.is_file():
            rel = path.relative_to(folder).with_suffix("").as_posix()
            out[rel] = viewer.store.relative(path)
    return out


async def vault_index(viewer: Viewer, request: Request) -> Response:
    """The vault's pages: categories, projects, people."""
    pages = await run_in_threadpool(_vault_pages, viewer)
    groups: dict[str, list[str]] = defaultdict(list)
    for name in pages:
        groups[name.split("/")[0] if "/" in name else "categories"].append(name)
    return viewer.page(request, "vault.html", groups=sorted(groups.items()), pages=pages)


async def vault_page(viewer: Viewer, request: Request) -> Response:
    """One vault page, its wiki-links and citations as links."""
    name = request.path_params["page"]
    pages = await run_in_threadpool(_vault_pages, viewer)
    # Only names the listing holds: a path from the request never reaches the file system.
    if name not in pages:
        raise NotFound(f"no vault page {name!r}", "pick one from the vault's list")
    doc = await run_in_threadpool(viewer.store.read_sections, pages[name])
    return viewer.page(request, "vault_page.html", name=name, doc=doc,
                       sections=_sections(doc.entries))  # fmt: skip


async def next_session(viewer: Viewer, request: Request) -> Response:
    """The startup context a new session in the chosen project would get, and its size."""
    project = request.query_params.get("project", "").strip() or None
    raw_budget = request.query_params.get("budget", "").strip()
    try:
        budget = int(raw_budget) if raw_budget else DEFAULT_BUDGET
    except ValueError:
        raise UsageError(f"budget {raw_budget!r} is not a number of tokens") from None
    if not 200 <= budget <= 200_000:
        raise UsageError(f"budget {budget} is outside 200..200000 tokens")

    def work() -> tuple[str, list[str]]:
        entries = startup_entries(viewer.environ)
        text = build_context(entries, budget=budget, project=project)
        known = {e.project for e in entries if e.project}
        known |= set(facets(viewer.store, index=viewer.index)["project"])
        return text, sorted(known)

    text, projects = await run_in_threadpool(work)
    from obsmem.observe.observer import estimate_tokens

    tokens = estimate_tokens(text)
    return viewer.page(request, "next.html", text=text, tokens=tokens, budget=budget,
                       project=project or "", projects=projects)  # fmt: skip


def _usage_by_day(viewer: Viewer) -> list[dict[str, Any]]:
    today = date.today()
    days = daily_totals(viewer.store.usage_path, today - timedelta(days=USAGE_DAYS - 1), today)
    budget = viewer.settings.daily_token_budget
    return [
        {
            "day": day.isoformat(),
            **row,
            "share": (row["in"] + row["out"]) / budget if budget else None,
            "cost": cost_text(row, fix=False) if row["calls"] else "–",
        }
        for day, row in days.items()
    ]


async def status(viewer: Viewer, request: Request) -> Response:
    """Sources, LLM usage per day against the budget, the index and the doctor's verdicts."""

    def work() -> tuple[Any, list[Any], list[dict[str, Any]]]:
        report = collect_status(viewer.store, viewer.settings, viewer.environ)
        checks = run_checks(viewer.store, viewer.environ)
        return report, checks, _usage_by_day(viewer)

    report, checks, usage = await run_in_threadpool(work)
    priced = prices_for(viewer.settings, "observer") is not None
    return viewer.page(request, "status.html", report=report, checks=checks, usage=usage,
                       budget=viewer.settings.daily_token_budget, priced=priced)  # fmt: skip

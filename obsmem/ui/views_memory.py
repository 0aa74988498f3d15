"""The pages that read memory entries: the timeline, search, and one entry with its source.

Filters are GET parameters, so a filtered page is a link that can be bookmarked and goes back
and forward like any other; an empty field means "any".
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from obsmem.errors import UsageError
from obsmem.search.browse import OBSERVATION_KINDS, PRIORITY_NAMES, browse, facets
from obsmem.search.entries import Filters
from obsmem.search.mixed import KIND_GROUPS, search_everything
from obsmem.search.recall import show

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from obsmem.ui.app import Viewer

__all__ = ["entry", "search", "timeline"]

#: Entries on one timeline page.
PAGE_SIZE = 50
#: Most search hits one page shows.
MAX_HITS = 100


def _text(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


def _number(request: Request, name: str, default: float | None, low: float, high: float) -> Any:
    raw = _text(request, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name} {raw!r} is not a number", f"give {low:g} to {high:g}") from None
    if not low <= value <= high:
        raise UsageError(f"{name} {raw!r} is outside {low:g}..{high:g}")
    return value


def filters_of(request: Request) -> Filters:
    """The filters of a page's GET parameters. ``browse`` and ``search_everything`` validate
    them, as for every caller: a bad value is a ``UsageError`` from there."""
    return Filters(
        since=_text(request, "since"),
        until=_text(request, "until"),
        type=_text(request, "type"),
        min_importance=_number(request, "min_importance", None, 0.0, 1.0),
        project=_text(request, "project"),
        agent=_text(request, "agent"),
    )


def _chosen(request: Request) -> dict[str, str]:
    """The GET parameters as given, for the form fields and the next-page link."""
    keys = ("since", "until", "type", "min_importance", "project", "agent", "priority", "q",
            "limit")  # fmt: skip
    return {k: v for k in keys if (v := request.query_params.get(k, "").strip())}


async def timeline(viewer: Viewer, request: Request) -> Response:
    """Observations by day, newest first, filtered, a page at a time (keyset: ``?after=``)."""
    filters = filters_of(request)
    priority = _text(request, "priority")
    after = _text(request, "after")

    def work() -> tuple[Any, dict[str, list[str]]]:
        page = browse(viewer.store, filters=filters, priority=priority,
                      cursor=after, limit=PAGE_SIZE,
                      index=viewer.index)  # fmt: skip
        return page, facets(viewer.store, index=viewer.index)

    page, choices = await run_in_threadpool(work)
    days = [(day, list(items)) for day, items in groupby(page.entries, key=lambda e: e["date"])]
    chosen = _chosen(request)
    return viewer.page(request, "timeline.html", days=days, page=page, chosen=chosen,
                       choices=choices, priorities=list(PRIORITY_NAMES),
                       first=after is None)  # fmt: skip


async def search(viewer: Viewer, request: Request) -> Response:
    """The same search as ``om search``: observations, reflections and transcript turns."""
    query = _text(request, "q")
    kinds = [k for k in request.query_params.getlist("kind") if k] or None
    limit = int(_number(request, "limit", 20, 1, MAX_HITS))
    hits: list[dict[str, Any]] = []
    if query:
        filters = filters_of(request)
        hits = await run_in_threadpool(
            lambda: search_everything(
                viewer.store,
                query,
                kinds=kinds,
                filters=filters,
                limit=limit,
                settings=viewer.settings,
                index=viewer.index,
            )
        )
    choices = await run_in_threadpool(lambda: facets(viewer.store, index=viewer.index))
    return viewer.page(request, "search.html", query=query or "", hits=hits,
                       chosen=_chosen(request), kinds=kinds or [], kind_names=list(KIND_GROUPS),
                       choices=choices)  # fmt: skip


async def entry(viewer: Viewer, request: Request) -> Response:
    """One entry as ``om show`` gives it: citation, provenance, the transcript excerpt."""
    entry_id = request.path_params["entry_id"]
    found = await run_in_threadpool(show, viewer.store, entry_id)
    editable = found["kind"] in OBSERVATION_KINDS
    return viewer.page(request, "entry.html", entry=found, editable=editable)

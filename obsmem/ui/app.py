"""The viewer as an ASGI application: its routes, the state every page shares, error pages.

``create_app`` builds it for one memory directory and one port. Each page is a function of a
views module (``views_memory``, ``views_corrections``, ``views_overview``) that reads or writes
through the library only (the store, the index and search functions, context, status, doctor,
forget, amend, remember) and renders one template. ``SecurityMiddleware`` wraps everything.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from obsmem.cli.entry import failure
from obsmem.errors import NotFound, explain
from obsmem.memory.model import OBSERVATION_TYPES
from obsmem.memory.store import MemoryStore
from obsmem.search.recall import KeptIndex
from obsmem.settings import Settings, load_settings
from obsmem.ui.render import environment
from obsmem.ui.security import Guard, SecurityMiddleware

__all__ = ["Viewer", "create_app"]

#: How many notes ("forgot 1 memory") are kept for the page a write redirects to.
_NOTES_KEPT = 50


@dataclass
class Viewer:
    """What every page needs: the memory, its settings, the run's guard, the kept index."""

    store: MemoryStore
    settings: Settings
    guard: Guard
    environ: Mapping[str, str] | None = None
    index: KeptIndex = field(init=False)
    notes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Every library call the pages make must see this store's memory directory, also the
        # ones that take an environment rather than a store (context, status, doctor).
        env = dict(self.environ if self.environ is not None else os.environ)
        env["OM_HOME"] = str(self.store.home)
        self.environ = env
        self.index = KeptIndex(self.store.index_path)
        self.templates = environment(
            {"csrf": self.guard.csrf, "types": OBSERVATION_TYPES, "home": str(self.store.home)}
        )

    def page(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        """``template`` rendered with ``values`` (and the note a redirect left, if any)."""
        note = self.notes.pop(request.query_params.get("note", ""), None)
        html = self.templates.get_template(template).render(
            request=request, note=note, path=request.url.path, **values
        )
        return HTMLResponse(html, status_code=status)

    def redirect(self, location: str, note: str) -> RedirectResponse:
        """A 303 to ``location`` (a path of this app) showing ``note`` once."""
        key = secrets.token_urlsafe(8)
        self.notes[key] = note
        while len(self.notes) > _NOTES_KEPT:
            self.notes.pop(next(iter(self.notes)))
        joiner = "&" if "?" in location else "?"
        return RedirectResponse(f"{location}{joiner}note={key}", status_code=303)


def create_app(
    store: MemoryStore,
    settings: Settings | None = None,
    *,
    port: int,
    environ: Mapping[str, str] | None = None,
    guard: Guard | None = None,
) -> Starlette:
    """The viewer for ``store``, answering on ``127.0.0.1:port`` (and ``localhost:port``)."""
    from obsmem.ui import views_corrections, views_memory, views_overview

    viewer = Viewer(store, settings or load_settings(environ), guard or Guard(port), environ)

    def bind(view: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                response: Response = await view(viewer, request)
            except Exception as exc:
                return failed(request, exc)
            return response

        return endpoint

    def failed(request: Request, exc: Exception) -> Response:
        """The error page: om's one-line message (and its fix) for what the user can fix, one
        line on the server's stderr for a bug (its traceback only with ``OM_DEBUG``)."""
        known = explain(exc)
        if known is None:
            if os.environ.get("OM_DEBUG"):
                raise exc
            line, _ = failure(exc)
            print(line, file=sys.stderr)
            return viewer.page(request, "error.html", status=500, message=line, hint=None)
        status = 404 if isinstance(known, NotFound) else 400
        return viewer.page(request, "error.html", status=status, message=known.message,
                           hint=known.hint)  # fmt: skip

    routes = [
        Route("/", bind(views_memory.timeline)),
        Route("/search", bind(views_memory.search)),
        Route("/entry/{entry_id}", bind(views_memory.entry)),
        Route("/entry/{entry_id}/forget", bind(views_corrections.forget), methods=["POST"]),
        Route("/entry/{entry_id}/amend", bind(views_corrections.amend), methods=["POST"]),
        Route("/remember", bind(views_corrections.remember), methods=["POST"]),
        Route("/reflections", bind(views_overview.reflections)),
        Route("/vault", bind(views_overview.vault_index)),
        Route("/vault/{page:path}", bind(views_overview.vault_page)),
        Route("/next", bind(views_overview.next_session)),
        Route("/status", bind(views_overview.status)),
        Mount("/static", StaticFiles(packages=[("obsmem.ui", "static")]), name="static"),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return viewer.page(request, "error.html", status=404, message="no such page", hint=None)

    app = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityMiddleware, guard=viewer.guard)],
        exception_handlers={404: not_found},
    )
    app.state.viewer = viewer
    return app

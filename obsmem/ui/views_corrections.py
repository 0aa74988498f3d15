"""The writes: forget an entry, change its importance or type, add a memory by hand.

Each is a POST carrying the run's CSRF token (checked here; the middleware has already checked
the cookie and the origin), calls the one library function the command line calls (``forget``
as ``om forget`` does it, ``amend``, ``remember`` as ``om remember`` does it), and redirects to
a page showing the result, so reloading that page never repeats the write.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from obsmem.amend import amend as run_amend
from obsmem.errors import UsageError
from obsmem.forgetting import forget as run_forget
from obsmem.observe.remember import remember as run_remember

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from obsmem.ui.app import Viewer

__all__ = ["amend", "forget", "read_form", "remember"]

#: A form larger than this is not one of the viewer's (a memory holds at most 2,000 characters).
MAX_FORM_BYTES = 64 * 1024


async def read_form(viewer: Viewer, request: Request) -> dict[str, str] | Response:
    """The POSTed form's fields, or a 403/413 answer when it lacks the CSRF token or is too big.

    Parsed here (URL-encoded only) rather than with ``request.form()``, which would need the
    ``python-multipart`` package for forms the viewer never sends."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return PlainTextResponse("form too large", status_code=413)
    try:
        fields = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        fields = {}
    if not viewer.guard.csrf_ok(fields.get("csrf")):
        return PlainTextResponse("missing or wrong form token: reload the page", status_code=403)
    return fields


def _importance(value: str | None) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"importance {value!r} is not a number", "give 0 to 1") from None


async def forget(viewer: Viewer, request: Request) -> Response:
    """Forget one entry everywhere; back to the timeline with what was removed."""
    form = await read_form(viewer, request)
    if isinstance(form, Response):
        return form
    entry_id = request.path_params["entry_id"]
    report = await run_in_threadpool(
        lambda: run_forget(viewer.store, [entry_id], settings=viewer.settings)
    )
    if report.ids:
        note = (f"forgot {', '.join(report.ids)}: {len(report.lines)} line(s) from "
                f"{len(report.files)} file(s), {report.turns} transcript turn(s)")  # fmt: skip
    else:
        note = f"nothing left to forget: {', '.join(report.already_forgotten)} already forgotten"
    for problem in report.problems:
        note += f"; {problem}"
    return viewer.redirect("/", note)


async def amend(viewer: Viewer, request: Request) -> Response:
    """Change an observation's importance and/or type; back to its page."""
    form = await read_form(viewer, request)
    if isinstance(form, Response):
        return form
    entry_id = request.path_params["entry_id"]
    importance = _importance(form.get("importance"))
    new_type = (form.get("type") or "").strip() or None
    result = await run_in_threadpool(
        lambda: run_amend(viewer.store, entry_id, importance=importance, type=new_type)
    )
    note = f"changed {result.file}:{result.line}" if result.changed else "nothing to change"
    for problem in result.problems:
        note += f"; {problem}"
    return viewer.redirect(f"/entry/{result.id}", note)


async def remember(viewer: Viewer, request: Request) -> Response:
    """Add a memory by hand, as ``om remember`` does (redacted, de-duplicated)."""
    form = await read_form(viewer, request)
    if isinstance(form, Response):
        return form
    importance = _importance(form.get("importance"))
    done = await run_in_threadpool(
        lambda: run_remember(
            viewer.store,
            form.get("text", ""),
            type=(form.get("type") or "fact").strip(),
            importance=0.7 if importance is None else importance,
            agent="ui",
        )
    )
    if done.added:
        return viewer.redirect(f"/entry/{done.id}", f"remembered {done.id}")
    return viewer.redirect("/", f"already remembered as {done.duplicate_of}; nothing added")

"""The ``om`` MCP server: the memory's search, citations, timeline, context, remember and forget
as tools.

A thin adapter, like the CLI: each tool validates nothing itself, calls one library function
(``obsmem.search.recall``, ``obsmem.observe.remember``, ``obsmem.context.startup``,
``obsmem.forgetting``) and returns
its JSON-ready result. Library errors (``OmError``) become MCP tool errors with their one-line
message, so the calling agent reads what went wrong and how to fix it.

Tools run in a worker thread: they touch SQLite and the disk, and the HTTP transport must keep
answering other requests meanwhile. ``search`` runs on one index connection kept for the
server's life (``recall.KeptIndex``, on a thread of its own), so the entries' vectors, read by
the first search, stay in memory until the index changes; the embedding model and the reranker
are loaded once per process. The other tools open a connection per call, which costs well
under a millisecond.

Transports: stdio (what agents launch), or streamable HTTP on loopback behind a bearer token
(``serve_http``). The token check is a plain ASGI wrapper in front of the SDK's app, compared in
constant time; the SDK's DNS-rebinding protection (``Host`` and ``Origin`` checked) is on for
every loopback address.
"""

from __future__ import annotations

import errno
import hmac
import math
import os
import socket
import sys
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field

from obsmem import __version__
from obsmem.errors import OmError, explain
from obsmem.memory.store import MemoryStore

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from obsmem.search.recall import KeptIndex

__all__ = ["INSTRUCTIONS", "BearerAuth", "build_server", "serve_http", "serve_stdio"]

T = TypeVar("T")

INSTRUCTIONS = (
    "om is the user's long-term memory of past coding-agent sessions (Claude Code, Codex and "
    "others): decisions, preferences, facts about their projects, errors and their fixes, "
    "commitments. Search it before asking the user something a previous session may have "
    "settled, and cite what you use by its id. Record lasting facts with `remember`."
)

_TYPES = (
    "decision, preference, fact, commitment, task, milestone, lesson, relationship, project, "
    "error or event"
)

_SEARCH = (
    "Search the user's long-term memory of past sessions: decisions, preferences, project facts, "
    "errors and how they were fixed, commitments and open tasks. Call this before asking the "
    "user something they may have told a previous session, before re-investigating an error that "
    'may have been solved before, and when the user refers to earlier work ("like last time", '
    '"the bug we fixed"). Matches the words and, when om has an embedding model, their meaning '
    "(hybrid search): pass the distinctive words of what you look for, not a whole sentence. "
    "Results mix what om kept (observations, reflections) with the transcript turns themselves "
    '(redacted; kind "turn"), so the exact words of what was said (an error message, a '
    "command, a number) are found too. Each result cites its id or its transcript path and lines, "
    "its date and, for a turn, the observation that covers it (covered_by) if any; use `get` with "
    "the ids for full entries and the source excerpt. kind narrows the search to observation, "
    'reflection and/or turn (raw=true is kind ["turn"]); type and min_importance apply to '
    "entries only."
)
#: Longest turn text a raw search hit returns (an agent pays for every character it reads).
RAW_TEXT_CHARS = 2000
_GET = (
    "Fetch full memory entries by id (ids come from `search` or `timeline` results): text, "
    "date, type, importance, file:line, and provenance back to the source transcript. With "
    "include_source, also the redacted transcript lines the entry was observed from: call this "
    "to check exactly what was said before relying on a memory for something important."
)
_TIMELINE = (
    "List memory entries in time order for the days around a date (YYYY-MM-DD) or around the "
    'date of an entry id. Use it to answer "what happened around then", to see what led to a '
    "decision found by `search`, or to catch up on recent days of work."
)
_CONTEXT = (
    "The startup context om prepares for a new session in a working directory: who the user "
    "is, their preferences, the project's state, open loops and recent work, within a token "
    "budget. Call it once at the start of a task if it was not already injected by a hook, or "
    "when switching to another project directory."
)
_REMEMBER = (
    "Save one durable fact to the user's long-term memory so future sessions know it: a "
    "decision and its reason, a stated preference, a lesson from a fixed error, a commitment. "
    "One or two self-contained sentences naming the project or tool involved. Do not save "
    "secrets (they are redacted anyway), transient chatter, or what is already in memory "
    "(repeats are detected and not added)."
)

_FORGET = (
    "Forget memories the user wants gone, everywhere om keeps them: observations, archive, "
    "reflections, vault pages, startup context, search index and the transcript turns they "
    "came from. Call it only when the user asks to forget or delete something. Pass the ids "
    "from `search` results, or a query: with a query this only lists what would be forgotten, "
    "the entries and the kept transcript turns (`raw_turns`) holding every word (dry_run "
    "defaults to true), so show that list to the user, then call again with the same query and "
    "dry_run false to forget all of it, or with the ids they confirm (their entries only). A "
    "tombstone (id and time, a keyed hash per turn, never the text) keeps om from capturing it "
    "again, from a copy of the transcript too."
)


async def _call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking library call in a worker thread; a failure the user can fix (``OmError``,
    or an ``OSError`` / ``sqlite3`` error from deep in the store: a full disk, a folder that
    cannot be read) becomes a one-line tool error, as the CLI prints it."""

    def run() -> T:
        return function(*args, **kwargs)

    try:
        return await anyio.to_thread.run_sync(run)
    except Exception as exc:
        explained = explain(exc)
        if explained is None:
            raise
        raise ToolError(str(explained)) from None


def build_server(
    store: MemoryStore | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
    index: KeptIndex | None = None,
    forward: Callable[[dict[str, Any]], list[dict[str, Any]] | None] | None = None,
) -> FastMCP:
    """The MCP server over ``store`` (default: the memory ``environ`` or the process points at).

    ``host`` and ``port`` only matter to the HTTP transport (and its DNS-rebinding check).
    ``index`` is the kept connection searches run on (default: one of the server's own); ``om
    mcp`` shares it with the search socket it serves (``search.resident``). ``forward(request)``
    may answer a search first (``Resident.ask``: the process serving that socket, when it is
    another one); None from it means search here.
    """
    from obsmem.context.startup import DEFAULT_BUDGET, run_context
    from obsmem.forgetting import forget as do_forget
    from obsmem.observe.remember import remember as do_remember
    from obsmem.search.client import FILTER_OPTIONS
    from obsmem.search.mixed import search_everything
    from obsmem.search.recall import Filters, KeptIndex, get_entries, show, timeline

    memory = store if store is not None else MemoryStore(environ=environ)
    # One connection for every search: the vector cache stays warm between calls.
    kept = index if index is not None else KeptIndex(memory.index_path)
    # run_context finds its prepared file through the environment: point it at this store.
    context_env = environ
    if context_env is None and store is not None:
        context_env = {**os.environ, "OM_HOME": str(store.home)}
    server = FastMCP(
        "om", instructions=INSTRUCTIONS, host=host, port=port, transport_security=_security(host)
    )
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(name="search", description=_SEARCH, annotations=read_only)
    async def search(
        query: Annotated[str, Field(description="Words to look for.")],
        limit: Annotated[int, Field(ge=1, le=100, description="Most results.")] = 10,
        since: Annotated[str | None, Field(description="Only entries on/after YYYY-MM-DD.")] = None,
        until: Annotated[
            str | None, Field(description="Only entries on/before YYYY-MM-DD.")
        ] = None,
        type: Annotated[
            str | None, Field(description="decision, preference, fact, error, lesson, ...")
        ] = None,
        min_importance: Annotated[float | None, Field(ge=0, le=1)] = None,
        project: Annotated[str | None, Field(description="Project (folder) name.")] = None,
        agent: Annotated[str | None, Field(description="claude, codex, hermes, ...")] = None,
        kind: Annotated[
            list[Literal["observation", "reflection", "turn"]] | None,
            Field(description="What to search (default: all three)."),
        ] = None,
        raw: Annotated[
            bool, Field(description='Only the transcript turns: the same as kind ["turn"].')
        ] = False,
    ) -> dict[str, Any]:
        filters = Filters(since, until, type, min_importance, project, agent)
        kinds = ["turn"] if raw else kind

        def run() -> list[dict[str, Any]]:
            if forward is not None:
                asked = {
                    "query": query, "kinds": kinds, "limit": limit, "max_chars": RAW_TEXT_CHARS,
                    "filters": {name: getattr(filters, name) for name in FILTER_OPTIONS},
                }  # fmt: skip
                found = forward(asked)
                if found is not None:
                    return found
            return search_everything(
                memory, query, kinds=kinds, filters=filters, limit=limit, index=kept,
                max_chars=RAW_TEXT_CHARS,
            )  # fmt: skip

        hits = await _call(run)
        found: dict[str, Any] = {"query": query, "count": len(hits), "results": hits}
        if raw:
            found["raw"] = True
        return found

    @server.tool(name="get", description=_GET, annotations=read_only)
    async def get(
        ids: Annotated[list[str], Field(min_length=1, max_length=100)],
        include_source: Annotated[
            bool, Field(description="Add the redacted transcript lines of each entry.")
        ] = False,
    ) -> dict[str, Any]:
        if include_source:
            entries = [e for i in ids for e in await _call(_show_or_none, show, memory, i)]
        else:
            entries = await _call(get_entries, memory, ids)
        seen = {e["id"] for e in entries}
        return {"entries": entries, "not_found": [i for i in ids if i not in seen]}

    @server.tool(name="timeline", description=_TIMELINE, annotations=read_only)
    async def timeline_tool(
        date: Annotated[str | None, Field(description="Center date, YYYY-MM-DD.")] = None,
        id: Annotated[str | None, Field(description="Center on this entry's date.")] = None,
        days: Annotated[int, Field(ge=0, le=366, description="Days before and after.")] = 3,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
    ) -> dict[str, Any]:
        return await _call(timeline, memory, around_date=date, around_id=id, days=days, limit=limit)

    @server.tool(name="context", description=_CONTEXT, annotations=read_only)
    async def context(
        cwd: Annotated[str, Field(description="The session's working directory.")],
        budget: Annotated[int, Field(ge=200, le=200_000, description="Most tokens.")] = (
            DEFAULT_BUDGET
        ),
    ) -> dict[str, Any]:
        text = await _call(run_context, "plain", cwd=cwd, budget=budget, environ=context_env)
        return {"cwd": cwd, "budget": budget, "context": text}

    @server.tool(
        name="remember",
        description=_REMEMBER,
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True),
    )
    async def remember(
        text: Annotated[str, Field(min_length=1, max_length=2000)],
        type: Annotated[str, Field(description=_TYPES)],
        importance: Annotated[
            float, Field(ge=0, le=1, description="0.9+ critical, 0.6 useful, 0.3 minor.")
        ] = 0.6,
        project: Annotated[str | None, Field(description="Project (folder) name.")] = None,
    ) -> dict[str, Any]:
        done = await _call(
            do_remember,
            memory,
            text,
            type=type,
            importance=importance,
            agent="mcp",
            project=project,
        )
        return done.to_dict()

    @server.tool(
        name="forget",
        description=_FORGET,
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True),
    )
    async def forget(
        ids: Annotated[
            list[str] | None, Field(max_length=100, description="Entry ids from `search`.")
        ] = None,
        query: Annotated[
            str | None, Field(description="Forget the search hits holding every word of this.")
        ] = None,
        dry_run: Annotated[
            bool | None,
            Field(description="Only list what would go (default: true with a query, else false)."),
        ] = None,
    ) -> dict[str, Any]:
        rehearse = dry_run if dry_run is not None else query is not None
        done = await _call(do_forget, memory, ids or (), query=query, dry_run=rehearse)
        return done.to_dict()

    return server


def _security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection (``Host`` and ``Origin`` checked) on every loopback address.

    The SDK turns it on by itself only for ``127.0.0.1``, ``localhost`` and ``::1``; a page in a
    browser could reach ``127.0.0.2`` through a rebound name just as well. A remote host allowed
    with ``--allow-remote`` is reached under names we cannot know: the token guards it alone.
    """
    from obsmem.mcp import is_loopback

    if not is_loopback(host):
        return None
    name = host.lower()
    own = f"[{name}]" if ":" in name else name
    names = dict.fromkeys([own, "127.0.0.1", "localhost", "[::1]"])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names],
        allowed_origins=[f"http://{n}:*" for n in names],
    )


def _show_or_none(
    show: Callable[[MemoryStore, str], dict[str, Any]], store: MemoryStore, entry_id: str
) -> list[dict[str, Any]]:
    """``show`` for one id of a batch: an unknown id is reported in ``not_found``, not raised."""
    from obsmem.errors import NotFound

    try:
        return [show(store, entry_id)]
    except NotFound:
        return []


def serve_stdio(server: FastMCP) -> None:
    """Serve over stdin/stdout until the client closes them (what agents launch)."""
    server.run("stdio")


class BearerAuth:
    """ASGI wrapper answering 401 to any HTTP request without ``Authorization: Bearer <token>``.

    The scheme is matched in any case (``bearer``, ``BEARER``: RFC 9110 makes auth schemes
    case-insensitive); the token itself must match exactly.
    """

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("a bearer token is required")
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = b""
            for name, value in scope.get("headers", ()):
                if name.lower() == b"authorization":
                    given = value
                    break
            scheme, _, credential = given.strip().partition(b" ")
            # compare_digest: the time taken must not reveal how much of a guess was right.
            matches = hmac.compare_digest(credential.strip(), self._expected)
            if not (matches and scheme.lower() == b"bearer"):
                await _unauthorized(send)
                return
        await self.app(scope, receive, send)


#: The largest request head (request line and headers) accepted, in bytes.
MAX_HEAD_BYTES = 16 * 1024


def _deadline_protocol(seconds: float) -> type:
    """uvicorn's h11 protocol with a deadline for each request to arrive whole.

    uvicorn closes a connection that stays idle after a response (``timeout_keep_alive``), but
    not one that sends half a request and then nothing: 200 such sockets would be held for as
    long as their clients like (slow loris). Here a timer starts when a connection opens and
    when the next request begins on a kept-alive one, and the connection is closed unless the
    whole request (head and body) is in by then.
    """
    import asyncio

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state is h11.IDLE:
                self._arm()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    return DeadlineProtocol


async def _unauthorized(send: Any) -> None:
    body = b'{"error": "unauthorized: send Authorization: Bearer <token> (see OM_MCP_TOKEN)"}'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="om"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def serve_http(
    server: FastMCP,
    *,
    host: str,
    port: int,
    token: str,
    announce: Callable[[str], None] | None = None,
    timeout: float = 10.0,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` behind ``token`` until interrupted.

    The socket is bound here (not by uvicorn) so ``port=0`` works and the real port is
    announced. ``announce`` receives one line naming the URL (default: printed to stderr).
    ``timeout`` (``OM_MCP_HTTP_TIMEOUT_SECONDS``) bounds both the time a client has to send a
    request and how long an idle connection stays open; request heads over
    :data:`MAX_HEAD_BYTES` are refused.
    """
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRNOTAVAIL:
            hint = "--host must be an address of this machine, such as 127.0.0.1"
        elif exc.errno == errno.EACCES:
            hint = "ports below 1024 need privileges: choose another --port"
        else:
            hint = "choose another --port"
        raise OmError(f"cannot listen on {host}:{port}: {exc.strerror}", hint) from None
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    (announce or _stderr)(f"om mcp {__version__}: serving on http://{shown}:{bound}/mcp")
    app = BearerAuth(server.streamable_http_app(), token)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        http=_deadline_protocol(timeout),
        timeout_keep_alive=max(1, math.ceil(timeout)),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)

"""The MCP server (``om mcp``): the memory as tools for any MCP client.

Only ``obsmem.mcp.server`` imports the ``mcp`` SDK (the ``mcp`` extra); this package's own
functions decide the transport and the HTTP safety rules without it, so ``om mcp --http`` with a
public host is refused before anything heavy is imported, and a missing SDK is one clear error.

- ``run(http=False, ...)``: build the server and serve it (stdio, or HTTP on loopback); while
  it runs it also serves the search daemon's socket (``search.resident``), so a cold ``om
  search`` is answered with the server's loaded model.
- ``check_host(host, allow_remote)``: refuse a non-loopback address unless asked.
- ``resolve_token(configured)``: ``OM_MCP_TOKEN`` or a fresh random token.
"""

from __future__ import annotations

import importlib
import ipaddress
import secrets
import sys
from collections.abc import Callable, Mapping
from types import ModuleType

from obsmem.errors import UsageError

__all__ = ["DEFAULT_PORT", "check_host", "is_loopback", "resolve_token", "run"]

DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and any loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_host(host: str, allow_remote: bool) -> str:
    """``host`` if the HTTP server may listen there; raises ``UsageError`` otherwise."""
    if not host:
        raise UsageError("--host is empty")
    if not is_loopback(host) and not allow_remote:
        raise UsageError(
            f"refusing to serve memory on {host}, which is not a loopback address",
            "use 127.0.0.1, or pass --allow-remote if you really mean to expose it",
        )
    return host.strip("[]")


def resolve_token(configured: str) -> tuple[str, bool]:
    """The bearer token to require and whether it was generated now (to show it once)."""
    if configured:
        return configured, False
    return secrets.token_urlsafe(32), True


def _server_module() -> ModuleType:
    """``obsmem.mcp.server``, or a ``UsageError`` saying how to install the SDK it needs."""
    try:
        return importlib.import_module("obsmem.mcp.server")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in {"mcp", "pydantic", "anyio", "uvicorn"}:
            raise UsageError(
                "the MCP server needs the `mcp` package",
                "install it with `pip install 'obsmem[mcp]'`",
            ) from None
        raise


def run(
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    allow_remote: bool = False,
    token: str = "",
    environ: Mapping[str, str] | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve the memory over MCP until the client disconnects (stdio) or interrupted (HTTP).

    ``token`` is ``OM_MCP_TOKEN``; when empty, HTTP mode generates one and announces it once.
    """
    say = announce or (lambda line: print(line, file=sys.stderr, flush=True))
    if http:
        host = check_host(host, allow_remote)
        if not 0 <= port <= 65535:
            raise UsageError(f"--port {port} is not a TCP port")
    srv = _server_module()
    from obsmem.memory.store import MemoryStore
    from obsmem.search.recall import KeptIndex
    from obsmem.search.resident import Resident

    store = MemoryStore(environ=environ)
    index = KeptIndex(store.index_path)
    # While it runs, the server answers the cold `om search` too, on its warm model and index.
    resident = Resident(store, host="MCP server", environ=environ, index=index).start()
    try:
        if not http:
            srv.serve_stdio(
                srv.build_server(store=store, environ=environ, index=index, forward=resident.ask)
            )
            return
        secret, generated = resolve_token(token)
        if generated:
            say(f"om mcp: bearer token for this run (set OM_MCP_TOKEN to fix one): {secret}")
        app = srv.build_server(
            store=store,
            environ=environ,
            host=host,
            port=port,
            index=index,
            forward=resident.ask,
        )
        from obsmem.settings import load_settings

        timeout = load_settings(environ).mcp_http_timeout_seconds
        srv.serve_http(app, host=host, port=port, token=secret, announce=say, timeout=timeout)
    finally:
        resident.close()
        index.close()

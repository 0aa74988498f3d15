"""Serving the viewer: bind 127.0.0.1, print the URL with the run's token, stop on Ctrl-C.

The socket is bound before the application is built, so the Host check knows the real port
(``--port 0`` takes any free one), and a port in use is a one-line error, not a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
from collections.abc import Callable, Mapping

from obsmem.errors import UsageError
from obsmem.memory.store import MemoryStore
from obsmem.settings import Settings

__all__ = ["DEFAULT_PORT", "HOST", "bind", "serve"]

#: Loopback only: the viewer is never reachable from another machine.
HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(port: int) -> socket.socket:
    """A listening TCP socket on ``127.0.0.1:port``; ``UsageError`` when it cannot be had."""
    if not 0 <= port <= 65535:
        raise UsageError(f"port {port} is not a TCP port", "give 1 to 65535, or 0 for any free one")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: an answer's headers and body leave at once instead
        # of the body waiting for the browser's delayed acknowledgement (about 40 ms a page).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((HOST, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {HOST} is already in use", "pick another with --port (0: any)"
            ) from None
        raise UsageError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    return sock


def _can_open_browser() -> bool:
    # On a Linux machine without a display, ``webbrowser`` falls back to a text browser that
    # would take over this terminal: only open one where a graphical session exists.
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve(
    store: MemoryStore,
    settings: Settings,
    *,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    environ: Mapping[str, str] | None = None,
    echo: Callable[[str], None] = print,
) -> None:
    """Serve the viewer for ``store`` until interrupted (Ctrl-C: a clean stop, no traceback)."""
    from obsmem.ui import require

    require()
    import uvicorn

    from obsmem.ui.app import create_app
    from obsmem.ui.security import Guard

    sock = bind(port)
    guard = Guard(sock.getsockname()[1])
    app = create_app(store, settings, port=guard.port, environ=environ, guard=guard)
    url = guard.url()
    echo(f"om ui: serving {store.home} at {url}")
    echo("om ui: the link holds this run's token; press Ctrl-C to stop")
    if open_browser and _can_open_browser():
        import webbrowser

        with contextlib.suppress(Exception):
            webbrowser.open(url)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                            server_header=False)  # fmt: skip
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled: the stop is the user's wish
    finally:
        sock.close()
        app.state.viewer.index.close()
    echo("om ui: stopped")

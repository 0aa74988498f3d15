"""The search daemon's socket served by a process that runs anyway: the MCP server, the watcher.

A cold ``om search`` asks whatever listens on ``paths.search_socket`` (``client.py``). A process
that already lives for minutes or days (``om mcp``, ``om observe --watch``) can answer it as
well as a detached daemon, so ``Resident`` runs a ``daemon.SearchDaemon`` on a thread of that
process: the same lock, socket, handshake and background embedding, with two differences:

- it never leaves for being idle (its process lives for other reasons), and it searches on the
  process's own kept index connection when there is one (the MCP server's, so its vectors are
  read once for both);
- it takes the lock without waiting. Only one process serves the socket at a time: while a
  detached daemon (or another resident process) holds the lock, this one looks again every
  ``RETRY_SECONDS`` and takes over once the other has left, for example after its idle time.
  Meanwhile ``ask`` sends this process's own searches to the one serving (the MCP server does),
  so the model is loaded in one process, not two; a refusal (other settings) leaves that one
  running and the search to this process.

The settings are read again before each attempt, so a daemon that left because a client had
other settings comes back with the current ones. When this process's install changed (an
upgrade while it ran), it stops serving for good: its code is the old one, and a fresh daemon
started by the next search serves the new install.

Nothing is served when a cold search would not use a daemon (``OM_SEARCH_DAEMON=off``, BM25
settings, an endpoint embedder: ``bm25.needs_local_model``), nor while the model is remembered
as failing to load (``model_failures``).
"""

from __future__ import annotations

import threading

from obsmem import paths
from obsmem.search.client import install_stamp

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from obsmem.memory.store import MemoryStore
    from obsmem.search.daemon import SearchDaemon
    from obsmem.search.recall import KeptIndex
    from obsmem.settings import Settings

__all__ = ["RETRY_SECONDS", "Resident", "wanted"]

#: How often a process that does not hold the lock looks again.
RETRY_SECONDS = 30.0


def wanted(settings: Settings) -> bool:
    """True when a cold search with ``settings`` asks a daemon, so serving one is worth it."""
    from obsmem.search.bm25 import needs_local_model

    return settings.search_daemon == "on" and needs_local_model(settings)


class Resident:
    """Serve the search socket from this process while it runs (module doc).

    ``host`` names the process in ``om status`` (``"MCP server"``, ``"watcher"``); ``index`` is
    the process's kept connection (default: one of the resident's own, closed by ``close``);
    ``load`` reads the settings (default: ``load_settings(environ)``).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        host: str,
        environ: Mapping[str, str] | None = None,
        index: KeptIndex | None = None,
        load: Callable[[], Settings] | None = None,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        from obsmem.settings import load_settings

        self.store = store
        self.host = host
        self.environ = environ
        self.retry_seconds = retry_seconds
        self._load = load or (lambda: load_settings(environ))
        self._own_index = index is None
        self._index = index
        self._stop = threading.Event()
        self._guard = threading.Lock()
        self._daemon: SearchDaemon | None = None
        self._thread: threading.Thread | None = None
        self._settings: Settings | None = None

    @property
    def serving(self) -> SearchDaemon | None:
        """The daemon answering the socket from this process now, or None."""
        daemon = self._daemon
        return daemon if daemon is not None and daemon.ready.is_set() else None

    def ask(self, message: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The hits of the process serving the socket for a search of this process (``query``,
        ``kinds``, ``limit``, ``filters`` as ``client.FILTER_OPTIONS``, ``max_chars``), when
        that process is another one; None: search here (this process serves, none does, or
        it could not answer)."""
        from obsmem.search.client import PROTOCOL, DaemonUnavailable, handshake_key, request

        settings = self._settings
        if settings is None or self.serving is not None or not wanted(settings):
            return None
        path = paths.search_socket(str(self.store.index_path), self.environ)
        key = handshake_key(self.store, settings)
        full = {**message, "protocol": PROTOCOL, "op": "search", "key": key, "stay": True}
        try:
            reply = request(path, full, settings.search_daemon_timeout_seconds)
        except DaemonUnavailable:
            return None
        hits = reply.get("hits")
        return hits if reply.get("ok") and isinstance(hits, list) else None

    def start(self) -> Resident:
        """Start serving on a thread of its own (a daemon thread: it never holds up an exit)."""
        self._thread = threading.Thread(target=self._loop, name="om-resident", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop serving: the socket is removed and the lock released (the model stays loaded
        in this process, for its own searches). Waits at most ``timeout`` seconds: a model
        still loading is left to the process's exit."""
        self._stop.set()
        with self._guard:
            daemon = self._daemon
        if daemon is not None:
            daemon.stop(f"the {self.host} is leaving")
        if self._thread is not None:
            self._thread.join(timeout)
        if self._own_index and self._index is not None:
            self._index.close()
            self._index = None

    def _loop(self) -> None:
        from obsmem.errors import OmError
        from obsmem.search.daemon import SearchDaemon, log

        install = install_stamp()
        while not self._stop.is_set():
            if install_stamp() != install:
                log(f"{self.host}: om was reinstalled; no longer serving searches")
                return
            try:
                settings = self._load()
            except OmError as exc:
                log(f"{self.host}: settings unreadable ({exc}); trying again later")
                settings = None
            self._settings = settings
            from obsmem.search.model_failures import known_to_fail

            if settings is not None and wanted(settings) and not known_to_fail(settings):
                if self._index is None:
                    from obsmem.search.recall import KeptIndex

                    self._index = KeptIndex(self.store.index_path)
                daemon = SearchDaemon(
                    self.store,
                    settings,
                    environ=self.environ,
                    host=self.host,
                    index=self._index,
                    resident=True,
                )
                with self._guard:
                    if self._stop.is_set():
                        return
                    self._daemon = daemon
                try:
                    daemon.run(lock_wait=0)
                except Exception as exc:  # the process's own work goes on without serving
                    log(f"{self.host}: serving searches failed: {type(exc).__name__}: {exc}")
                finally:
                    with self._guard:
                        self._daemon = None
            self._stop.wait(self.retry_seconds)

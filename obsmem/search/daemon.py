"""The search daemon: a small local process that keeps the index and the model loaded.

A cold ``om search`` with hybrid settings asks it over a Unix socket (``client.py``) instead of
loading an embedding model for seconds; the first such search starts it. The daemon:

- holds a lock beside its socket for its whole life, so one runs per index; a second one
  started meanwhile finds the lock taken and leaves at once;
- loads the embedder (and the reranker, when one is set) and warms up with one query before it
  listens, then reads the vocabulary bridge's items and holders (``vocabulary.py``), so the
  first answer it gives, with a category word or not, is as fast as the next;
- listens on ``paths.search_socket`` in a directory only its user can enter (0700), the socket
  itself 0600; each connection is one JSON request line and one JSON reply line (``op``:
  ``search``, ``status``, ``stop``, and ``embed``, which ``om observe`` sends after it wrote);
- answers ``search`` with ``mixed.search_everything`` on one index connection kept for its life
  (``recall.KeptIndex``; a resident process passes its own), after checking the client's
  handshake key (``client.handshake_key``): a client of another install or other search
  settings gets ``mismatch``, and the daemon exits so that the next search starts one that fits;
- embeds the entries that have no vector in the background, in batches committed one by one
  (``vectors.embed_missing``), on a connection and thread of its own: queries keep being
  answered meanwhile, ranking what is embedded, BM25 finding the rest; ``status`` reports the
  progress (``om status`` shows it). After each query and each ``embed`` it looks again (at
  most every few seconds), so what ``om observe`` writes is embedded soon after; a pass that
  found the index changed ends with the warm-up again, so the kept connection's vectors and
  vocabulary are read before the next query needs them;
- exits after ``OM_SEARCH_DAEMON_IDLE_MINUTES`` without a query, when its install changes
  (``client.install_stamp``), when its socket is removed or replaced, on ``stop``, and on
  SIGTERM; it removes its socket on the way out.

The MCP server and ``om observe --watch`` run one on a thread while they live
(``resident.py``): it then never idles out and searches on their own index connection.

Run as ``python -m obsmem.search.daemon`` (``client.start_daemon`` starts it so, detached);
its output goes to the log ``client.start_daemon`` opened.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from obsmem import paths
from obsmem.search.client import (
    PROTOCOL,
    chosen_filters,
    handshake_key,
    install_stamp,
    lock_path,
    private_dir_problem,
)

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Mapping

    from obsmem.memory.store import MemoryStore
    from obsmem.search.embeddings import Embedder
    from obsmem.search.recall import KeptIndex
    from obsmem.settings import Settings

__all__ = ["SearchDaemon", "log", "main"]

#: How often the accept loop wakes to check idleness, its install and its socket.
TICK_SECONDS = 0.5
#: Least time between two background embedding passes.
EMBED_PAUSE_SECONDS = 2.0
#: Longest request line read.
MAX_REQUEST = 1 << 20
#: How long a client may take to send its request.
REQUEST_SECONDS = 5.0
#: How long a starting daemon waits for the lock (one that is leaving still holds it).
LOCK_WAIT_SECONDS = 5.0
#: A search still running after this long means the daemon is stuck: it leaves.
STUCK_SECONDS = 120.0


def log(message: str) -> None:
    """One line of the daemon's log (stderr): time, pid, ``message``."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} om search daemon [{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _take_lock(path: str, wait: float) -> int | None:
    """The lock at ``path`` held by a new descriptor, or None when another process keeps it."""
    from obsmem.memory.atomic import flock_until

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if flock_until(fd, time.monotonic() + wait):
        return fd
    os.close(fd)
    return None


class SearchDaemon:
    """One daemon for the index of ``store``, searching with ``settings`` (module doc).

    ``host`` names the process serving (``om status``); ``index`` is a kept connection to search
    on (default: one of its own, closed on leaving); ``resident``: run inside a process that
    lives anyway (``resident.py``), so no idle exit and no log line for a lock held by another.

    ``run`` blocks until the daemon leaves; ``stop`` (from another thread, or a ``stop``
    request) makes it leave. ``ready`` is set once the socket listens.
    """

    def __init__(
        self,
        store: MemoryStore,
        settings: Settings,
        *,
        environ: Mapping[str, str] | None = None,
        host: str = "search daemon",
        index: KeptIndex | None = None,
        resident: bool = False,
    ) -> None:
        self.store = store
        self.settings = settings
        self.socket_path = paths.search_socket(str(store.index_path), environ)
        self.lock_path = lock_path(self.socket_path)
        self.key = handshake_key(store, settings)
        self.host = host
        # A resident process (``resident.py``) lives for its own reasons: never idle out.
        self.resident = resident
        self.idle_seconds = math.inf if self.resident else settings.search_daemon_idle_minutes * 60
        self.ready = threading.Event()
        self.exit_reason = ""
        self._install = install_stamp()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._last = time.monotonic()
        self._busy_since: float | None = None
        self._started = time.time()
        self._embedder: Embedder | None = None
        self._kept: KeptIndex | None = index
        self._socket_id: tuple[int, int] | None = None
        self.progress: dict[str, Any] = {"embedded": 0, "total": 0, "running": False}

    def stop(self, reason: str = "asked to stop") -> None:
        """Make ``run`` return (the socket is removed on the way)."""
        if not self.exit_reason:
            self.exit_reason = reason
        self._stop.set()
        self._wake.set()

    def run(self, lock_wait: float | None = None) -> int:
        """Take the lock (waiting ``lock_wait`` seconds, by default ``LOCK_WAIT_SECONDS``),
        load the model, listen and serve until leaving; the exit status."""
        folder = os.path.dirname(self.socket_path)
        problem = private_dir_problem(folder, create=True)
        if problem is not None:
            log(f"cannot start: {problem}")
            return 1
        fd = _take_lock(self.lock_path, LOCK_WAIT_SECONDS if lock_wait is None else lock_wait)
        if fd is None:
            if not self.resident:  # a resident process tries again later, quietly
                log("another search daemon holds the lock; leaving")
            return 0
        try:
            return self._run_locked()
        finally:
            os.close(fd)

    def _run_locked(self) -> int:
        from obsmem.search.embeddings import resolve_backend
        from obsmem.search.recall import KeptIndex

        backend = resolve_backend(self.settings)
        if backend.embedder is None and not self.settings.rerank_model:
            log(f"no model to keep loaded ({backend.reason}); leaving")
            return 1
        self._embedder = backend.embedder
        if self._kept is None:
            self._kept = KeptIndex(self.store.index_path)
        embedding: threading.Thread | None = None
        listener: socket.socket | None = None
        try:
            self._warm_up()
            listener = self._listen()
            if self._embedder is not None:
                embedding = threading.Thread(target=self._embed_loop, name="om-embed", daemon=True)
                embedding.start()
            log(f"{self.host}: listening on {self.socket_path} ({backend.reason})")
            self.ready.set()
            self._serve(listener)
        finally:
            self.stop("leaving")
            if listener is not None:
                listener.close()
            self._remove_socket()
            if embedding is not None:
                embedding.join(timeout=60)
            if self._busy_since is None and not self.resident:
                self._kept.close()  # a resident process's index is its own: it stays open
            log(f"exiting: {self.exit_reason}")
        return 0

    def _warm_up(self) -> None:
        """One query, so the query session, the vectors and the reranker are loaded; then the
        vocabulary bridge's items and holders (``_preload``), which that query, having no
        category word, does not read."""
        try:
            self._search({"query": "warm up", "limit": 1})
        except Exception as exc:  # a broken index is repaired by the next query; log only
            log(f"warm-up query failed: {exc}")
        self._preload()

    def _preload(self) -> None:
        """Bring the vocabulary the bridge reads up to date on the kept connection, so that the
        first query with a category word ("what pets ...") costs what the next one does rather
        than seconds at 100,000 entries (``vocabulary.load_vocabulary``: every entry read and
        tokenized once, then only what changed). Nothing while the bridge is off or bounded to
        no item (no vocabulary is ever embedded then)."""
        embedder, kept, settings = self._embedder, self._kept, self.settings
        off = settings.search_vocab_bridge_weight <= 0 or settings.search_vocab_max_items <= 0
        if embedder is None or kept is None or off:
            return
        from obsmem.search.vocabulary import load_vocabulary

        try:
            kept.run(lambda conn: load_vocabulary(conn, embedder))
        except Exception as exc:  # the next query with a category word reads it instead
            log(f"loading the vocabulary failed: {type(exc).__name__}: {exc}")

    def _listen(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)  # the lock is ours: any socket left is stale
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Created 0600 at once (the umask applies to bind), not narrowed afterwards.
        old = os.umask(0o177)
        try:
            listener.bind(self.socket_path)
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        st = os.stat(self.socket_path)
        self._socket_id = (st.st_dev, st.st_ino)
        listener.listen(16)
        listener.settimeout(TICK_SECONDS)
        return listener

    def _remove_socket(self) -> None:
        """Remove the socket if it is still the one this daemon bound."""
        try:
            st = os.stat(self.socket_path)
        except OSError:
            return
        if (st.st_dev, st.st_ino) == self._socket_id:
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)

    def _serve(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                self._check()
                continue
            except OSError as exc:
                self.stop(f"the socket failed: {exc}")
                return
            self._last = time.monotonic()
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _check(self) -> None:
        """Between connections: leave when idle, stuck, reinstalled or without a socket."""
        now = time.monotonic()
        if self._busy_since is None and now - self._last > self.idle_seconds:
            self.stop(f"idle for {self.idle_seconds:g} s")
        elif self._busy_since is not None and now - self._busy_since > STUCK_SECONDS:
            self.stop(f"a search has run for over {STUCK_SECONDS:g} s")
        elif install_stamp() != self._install:
            self.stop("the om install changed")
        else:
            try:
                st = os.stat(self.socket_path)
            except OSError:
                self.stop("the socket was removed")
                return
            if (st.st_dev, st.st_ino) != self._socket_id:
                self.stop("the socket was replaced")

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(REQUEST_SECONDS)
            message = self._read(conn)
            reply = self._answer(message)
            conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        except (OSError, ValueError) as exc:
            log(f"a request failed: {exc}")
        finally:
            conn.close()
            self._last = time.monotonic()

    def _read(self, conn: socket.socket) -> dict[str, Any]:
        data = b""
        while not data.endswith(b"\n") and len(data) < MAX_REQUEST:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        message = json.loads(data)
        if not isinstance(message, dict):
            raise ValueError("the request is not a JSON object")
        return message

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if message.get("protocol") != PROTOCOL:
            self.stop("a client of another protocol version asked")
            return {"ok": False, "reason": "mismatch", "error": "another protocol version"}
        if op == "status":
            return self.status()
        if op == "stop":
            self.stop("asked to stop")
            return {"ok": True}
        if op not in ("search", "embed"):
            return {"ok": False, "reason": "usage", "error": f"unknown op {op!r}"}
        if message.get("key") != self.key:
            if not message.get("stay"):  # a resident process asking only searches by itself
                self.stop("a client of another install or other settings asked")
            return {"ok": False, "reason": "mismatch", "error": "another install or settings"}
        if op == "embed":
            self._wake.set()  # ``om observe`` wrote: embed it now, not after the next query
            return {"ok": True}
        from obsmem.errors import OmError, UsageError

        self._busy_since = time.monotonic()
        try:
            hits = self._search(message)
        except UsageError as exc:
            return {"ok": False, "reason": "usage", "error": str(exc)}
        except OmError as exc:
            return {"ok": False, "reason": "error", "error": str(exc)}
        except Exception as exc:  # the client searches by itself; the daemon keeps serving
            log(f"search failed: {type(exc).__name__}: {exc}")
            return {"ok": False, "reason": "error", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            self._busy_since = None
        self._wake.set()
        return {"ok": True, "hits": hits}

    def _search(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        from obsmem.search.mixed import search_everything

        filters = chosen_filters(message.get("filters") or {})
        limit = message.get("limit", 10)
        kinds = message.get("kinds")
        max_chars = message.get("max_chars")
        return search_everything(
            self.store,
            str(message.get("query", "")),
            kinds=kinds,
            filters=filters,
            limit=int(limit) if isinstance(limit, int) else 10,
            settings=self.settings,
            index=self._kept,
            max_chars=max_chars if isinstance(max_chars, int) else None,
        )

    def status(self) -> dict[str, Any]:
        """What the ``status`` request answers: pid, model, embedding progress, uptime."""
        embedder = self._embedder
        return {
            "ok": True,
            "pid": os.getpid(),
            "host": self.host,
            "model": embedder.name if embedder is not None else None,
            "rerank_model": self.settings.rerank_model or None,
            "socket": self.socket_path,
            "uptime_seconds": round(time.time() - self._started, 1),
            "idle_exit_seconds": None if self.resident else self.idle_seconds,
            "vectors": dict(self.progress),
        }

    def _progress(self, done: int, total: int) -> None:
        self.progress.update(embedded=done, total=total)

    def _words_progress(self, done: int, total: int) -> None:
        # The vocabulary bridge's items, embedded after the entries (indexing.py).
        self.progress.update(words_embedded=done, words_total=total)

    def _embed_loop(self) -> None:
        """Embed what has no vector, again whenever the index may have changed (module doc)."""
        conn: sqlite3.Connection | None = None
        seen: tuple[int, int, int] | None = None
        while not self._stop.is_set():
            try:
                conn, seen = self._embed_pass(conn, seen)
            except Exception as exc:  # a busy or replaced index: the next pass tries again
                log(f"background embedding stopped: {type(exc).__name__}: {exc}")
                if conn is not None:
                    conn.close()
                conn, seen = None, None
            finally:
                self.progress["running"] = False
            self._wake.wait(timeout=60)
            self._wake.clear()
            self._stop.wait(EMBED_PAUSE_SECONDS)
        if conn is not None:
            conn.close()

    def _embed_pass(
        self, conn: sqlite3.Connection | None, seen: tuple[int, int, int] | None
    ) -> tuple[sqlite3.Connection | None, tuple[int, int, int] | None]:
        """One pass: refresh the index if the memory changed, embed what is missing. Returns
        the connection to keep and the state it left (a pass with the same state is skipped)."""
        from obsmem.index.db import open_index
        from obsmem.index.stamp import unchanged
        from obsmem.search.indexing import embed_bridge_vocabulary
        from obsmem.search.vectors import embed_missing

        assert self._embedder is not None
        if not self.store.home.is_dir():
            return conn, seen
        try:
            inode = os.stat(self.store.index_path).st_ino
        except OSError:
            inode = -1
        if conn is not None and (seen is None or seen[0] != inode):
            conn.close()  # the index file was replaced (a rebuild, a repair)
            conn = None
        if conn is None:
            conn = open_index(self.store.index_path)
            inode = os.stat(self.store.index_path).st_ino
        if not unchanged(conn, self.store.home):
            from obsmem.index.sync import refresh

            refresh(self.store, conn)
        state = (inode, *self._state(conn))
        if state == seen:
            return conn, seen
        self.progress["running"] = True
        stop: Callable[[], bool] = self._stop.is_set
        count = embed_missing(conn, self._embedder, progress=self._progress, stop=stop)
        if count:
            log(f"embedded {count} entr{'y' if count == 1 else 'ies'}")
        words = embed_bridge_vocabulary(
            conn, self._embedder, self.settings, progress=self._words_progress, stop=stop
        )
        if words:
            log(f"embedded {words} vocabulary item{'' if words == 1 else 's'}")
        # The index changed (entries, vectors or items): the queries' connection reads what
        # changed now, in the background, not in the next query: the vectors' snapshot (seconds
        # at 100,000 entries) by the warm-up query, the vocabulary by its preload.
        self._warm_up()
        return conn, (inode, *self._state(conn))

    @staticmethod
    def _state(conn: sqlite3.Connection) -> tuple[int, int]:
        return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes


def main(argv: list[str] | None = None) -> int:
    """``python -m obsmem.search.daemon``: run the daemon of the memory the environment points
    at; the exit status."""
    del argv  # no options yet
    import signal

    from obsmem.memory.store import MemoryStore
    from obsmem.settings import load_settings

    try:
        settings = load_settings()
        daemon = SearchDaemon(MemoryStore(lock_timeout=settings.lock_timeout_seconds), settings)

        def terminate(*_: object) -> None:
            if not daemon.ready.is_set():
                os._exit(
                    143
                )  # still loading the model (maybe retrying a download): nothing to undo
            daemon.stop("terminated")

        signal.signal(signal.SIGTERM, terminate)
        return daemon.run()
    except Exception as exc:  # a detached process has no one to show a traceback to
        log(f"failed: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without waiting for threads still inside a model call.
    os._exit(status)

"""A cold ``om search`` answered by the search daemon (``daemon.py``), or by BM25 with a note.

Loading a local embedding model takes seconds, far longer than a query; a process that answers
one question and exits cannot afford it. So when the settings would load one (hybrid settings
with fastembed, or a reranker: ``bm25.needs_local_model``) and ``OM_SEARCH_DAEMON`` is ``on``,
``cold_search``:

1. connects to the daemon's Unix socket (``paths.search_socket``), sends the query as one JSON
   line and reads one JSON line back within ``OM_SEARCH_DAEMON_TIMEOUT_SECONDS``: the daemon's
   hybrid hits, which ``om search`` prints exactly as it prints its own;
2. finding no daemon, starts one (detached; one at a time: a running or starting daemon holds
   the lock beside its socket) and answers with BM25 and a note that hybrid is warming up;
3. finding that the model failed to load not long ago (``model_failures``), starts nothing and
   answers with BM25 and a note saying why and when it is tried again;
4. on anything else (a stale socket, a daemon of another install or other search settings, a
   late or broken reply, a socket directory another user could reach) answers with BM25 and a
   one-line note. Never an error, never a wait beyond the timeout.

The protocol is one request line and one reply line of JSON per connection. A search request
carries a handshake key (``handshake_key``: om's version, the install's files, the paths of
the memory, its index and its turns, and every search setting); a daemon whose key differs
refuses and exits, so a daemon never outlives a changed install or answers for other settings.

This module is on every cold path: it imports ``os``, ``json`` and ``sys``; ``socket`` only
when a daemon is asked, and ``subprocess`` when one is started.
"""

from __future__ import annotations

import json
import os
import sys

from obsmem import paths

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from obsmem.memory.store import MemoryStore
    from obsmem.search.entries import Filters
    from obsmem.settings import Settings

__all__ = [
    "FILTER_OPTIONS",
    "PROTOCOL",
    "DaemonUnavailable",
    "ask_to_embed",
    "chosen_filters",
    "cold_search",
    "daemon_status",
    "failure_note",
    "handshake_key",
    "install_stamp",
    "lock_path",
    "private_dir_problem",
    "request",
    "start_daemon",
    "stop_daemon",
]

#: The options that narrow a search (``entries.Filters``), in its field order.
FILTER_OPTIONS = ("since", "until", "type", "min_importance", "project", "agent")
#: The version of the request and reply lines.
PROTOCOL = 1
#: The longest reply read (a hundred hits of long turns stay far below it).
MAX_REPLY = 32 * 1024 * 1024
#: What a note ends with when BM25 answers instead.
_BM25 = "showing keyword (BM25) results"
WARMING_NOTE = f"hybrid search is warming up (the search daemon is starting); {_BM25}"


class DaemonUnavailable(Exception):
    """No answer from the daemon. ``running`` is False when no daemon listens at all (no
    socket, or a stale one), True when one does but could not be used (``reason``)."""

    def __init__(self, reason: str, *, running: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.running = running


def lock_path(socket_path: str) -> str:
    """The lock a daemon holds while it lives, beside its socket."""
    return socket_path[: -len(".sock")] + ".lock"


def install_stamp() -> str:
    """What identifies this install: om's version, the interpreter, and the size and mtime of
    the package's modules (top level, ``search`` and ``index``). A reinstall or an edit moves
    it; about fifty ``stat`` calls."""
    from obsmem import __version__

    here = os.path.dirname(os.path.abspath(__file__))
    top = os.path.dirname(here)
    parts = [__version__, sys.executable]
    for folder in (top, here, os.path.join(top, "index")):
        try:
            with os.scandir(folder) as entries:
                found = sorted(
                    (e.name, e.stat()) for e in entries if e.name.endswith(".py") and e.is_file()
                )
        except OSError:
            continue
        parts += [f"{name}:{st.st_size}:{st.st_mtime_ns}" for name, st in found]
    return "|".join(parts)


def handshake_key(store: MemoryStore, settings: Settings) -> str:
    """The key a daemon and its clients must share (module doc): a checksum, not a secret."""
    import zlib

    from obsmem.settings import SPECS

    wanted = ("search_", "embed_", "rerank_")
    values = [
        f"{spec.attr}={getattr(settings, spec.attr)!r}"
        for spec in SPECS
        if spec.attr.startswith(wanted) and not spec.attr.startswith("search_daemon")
    ]
    text = "\n".join(
        [
            f"protocol={PROTOCOL}",
            install_stamp(),
            os.path.abspath(store.home),
            os.path.abspath(store.index_path),
            os.path.abspath(paths.turns_path()),
            *values,
        ]
    )
    return f"{zlib.crc32(text.encode('utf-8', 'surrogateescape')):08x}:{len(text)}"


def private_dir_problem(folder: str, *, create: bool = False) -> str | None:
    """Why ``folder`` may not hold om's sockets (None when it may): it must be a directory of
    this user that nobody else can enter. ``create`` makes it (mode 0700) when missing, and
    narrows the mode of one this user owns."""
    if create:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError as exc:
            return f"cannot create {folder}: {exc.strerror}"
    try:
        st = os.lstat(folder)
    except OSError as exc:
        return f"cannot read {folder}: {exc.strerror}"
    import stat

    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return f"{folder} is not a directory of this user"
    if st.st_mode & 0o077:
        if not create:
            return f"{folder} can be entered by other users"
        try:
            os.chmod(folder, 0o700)
        except OSError as exc:
            return f"cannot make {folder} private: {exc.strerror}"
    return None


def request(socket_path: str, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """Send ``message`` to the daemon at ``socket_path``; its reply as a dict.

    Raises ``DaemonUnavailable``: not ``running`` when nothing listens (no socket, a stale one);
    ``running`` on a late, cut or unreadable reply, or a socket of another user.
    """
    try:
        st = os.lstat(socket_path)
    except OSError:
        raise DaemonUnavailable("no search daemon", running=False) from None
    if st.st_uid != os.getuid():
        raise DaemonUnavailable(f"{socket_path} belongs to another user", running=True)
    import socket
    import time

    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path)
        except (ConnectionRefusedError, FileNotFoundError):
            raise DaemonUnavailable("stale search daemon socket", running=False) from None
        sock.sendall(json.dumps(message).encode("utf-8") + b"\n")
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            data = sock.recv(1 << 16)
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if data.endswith(b"\n") or size > MAX_REPLY:
                break
    except TimeoutError:
        raise DaemonUnavailable(
            f"the search daemon did not answer within {timeout:g} s", running=True
        ) from None
    except OSError as exc:
        raise DaemonUnavailable(f"the search daemon failed ({exc})", running=True) from None
    finally:
        sock.close()
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        raise DaemonUnavailable("the search daemon sent a broken reply", running=True) from None
    if not isinstance(reply, dict):
        raise DaemonUnavailable("the search daemon sent a broken reply", running=True)
    return reply


def _lock_held(path: str) -> bool:
    """True when a daemon holds the lock at ``path`` (running, or loading its model)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock
    return False


def start_daemon(
    socket_path: str, environ: Mapping[str, str] | None = None, *, replacing: bool = False
) -> bool:
    """Start a detached search daemon for the memory ``environ`` points at (default: this
    process's), unless one holds the lock of ``socket_path``; True when one was started.
    ``replacing``: the one holding it is leaving (it refused a mismatch), so start anyway; the
    new daemon waits for the lock (``daemon.LOCK_WAIT_SECONDS``).

    As the background worker is started (``integrations.logs.start_detached``): the same
    interpreter, in a session of its own (it outlives this process and its terminal), output
    appended to ``search-daemon.log`` in ``paths.logs_dir`` (rotated). Nothing is waited for.
    """
    if not replacing and _lock_held(lock_path(socket_path)):
        return False
    from obsmem.integrations.logs import start_detached

    return start_detached("obsmem.search.daemon", "search-daemon.log", environ)


def daemon_status(store: MemoryStore, timeout: float = 1.0) -> dict[str, Any] | None:
    """What the daemon of ``store``'s index reports (pid, model, embedding progress), or None
    when none answers."""
    path = paths.search_socket(str(store.index_path))
    try:
        reply = request(path, {"protocol": PROTOCOL, "op": "status"}, timeout)
    except DaemonUnavailable:
        return None
    return reply if reply.get("ok") else None


def stop_daemon(store: MemoryStore, timeout: float = 2.0) -> bool:
    """Ask the daemon of ``store``'s index to exit; True when one answered."""
    path = paths.search_socket(str(store.index_path))
    try:
        request(path, {"protocol": PROTOCOL, "op": "stop"}, timeout)
    except DaemonUnavailable:
        return False
    return True


def _ask_daemon(
    store: MemoryStore, settings: Settings, message: dict[str, Any]
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The daemon's hits for ``message``, or None and the note to print instead (``""``: none;
    None: ``for_cold_process``'s own)."""
    path = paths.search_socket(str(store.index_path))
    problem = private_dir_problem(os.path.dirname(path), create=True)
    if problem is not None:
        return None, f"not using the search daemon: {problem}; {_BM25}"
    message["key"] = handshake_key(store, settings)
    try:
        reply = request(path, message, settings.search_daemon_timeout_seconds)
    except DaemonUnavailable as exc:
        if exc.running:
            return None, f"{exc.reason}; {_BM25}"
        return None, _start(path, settings)
    if reply.get("ok") and isinstance(reply.get("hits"), list):
        return reply["hits"], None
    if reply.get("reason") == "mismatch":
        # The daemon served another install or other settings; it is leaving now.
        _start(path, settings, replacing=True)
        return None, f"the search daemon is restarting for this install and settings; {_BM25}"
    if reply.get("reason") == "usage":
        return None, ""  # the local search reports the same error, as it always does
    return None, f"the search daemon failed ({reply.get('error', 'no reason given')}); {_BM25}"


def _start(path: str, settings: Settings, *, replacing: bool = False) -> str | None:
    """Start a daemon if the settings can load a model; the note for this search."""
    from obsmem.search.embeddings import backend_status

    if not settings.rerank_model and backend_status(settings)[0] != "hybrid":
        return None  # no model a daemon could load: the search says why itself
    from obsmem.search.model_failures import known_to_fail

    if known_to_fail(settings):
        return f"{failure_note(settings)}; {_BM25}"  # a daemon would fail the same way
    start_daemon(path, replacing=replacing)
    return WARMING_NOTE


def failure_note(settings: Settings) -> str | None:
    """Why hybrid search is off for a while (``model_failures``), or None when it is not."""
    from obsmem.search.model_failures import remembered, retry_time

    known = remembered(settings)
    if known is None:
        return None
    when = retry_time(known)
    return (
        f"hybrid search is off: {known['reason']} (tried again after {when} or once the model "
        "files change; see `om doctor`)"
    )


def ask_to_embed(store: MemoryStore, settings: Settings) -> bool:
    """Tell whatever serves the search socket that memory changed, so it embeds what is new
    soon; start a daemon when none runs. True when one answered or is starting: the caller
    leaves the embedding to it. False when none can (the caller embeds by itself)."""
    path = paths.search_socket(str(store.index_path))
    if private_dir_problem(os.path.dirname(path), create=True) is not None:
        return False
    from obsmem.search.model_failures import remembered

    if remembered(settings) is not None:
        return False  # nobody can load the model; the caller reports why
    message = {"protocol": PROTOCOL, "op": "embed", "key": handshake_key(store, settings)}
    try:
        reply = request(path, message, settings.search_daemon_timeout_seconds)
    except DaemonUnavailable as exc:
        if exc.running:
            return True  # busy or stuck: a daemon embeds on its own, or leaves and is replaced
        return start_daemon(path) or _lock_held(lock_path(path))
    if reply.get("reason") == "mismatch":
        # A daemon of another install or other settings, leaving now: one that fits embeds.
        return start_daemon(path, replacing=True)
    return True  # an older daemon refuses the op, and still embeds after its next query


def cold_search(
    store: MemoryStore,
    settings: Settings,
    text: str,
    *,
    kinds: list[str] | None,
    filters: Mapping[str, object],
    limit: int,
) -> list[dict[str, Any]]:
    """``search_everything``'s hits for a process that answers one query (module doc).

    ``filters`` holds the values of ``FILTER_OPTIONS`` that were given.
    """
    from obsmem.search.bm25 import for_cold_process, needs_local_model

    note: str | None = None
    if settings.search_daemon == "on" and needs_local_model(settings):
        message: dict[str, Any] = {
            "protocol": PROTOCOL,
            "op": "search",
            "query": text,
            "kinds": kinds,
            "limit": limit,
            "filters": {k: v for k, v in filters.items() if k in FILTER_OPTIONS},
        }
        hits, note = _ask_daemon(store, settings, message)
        if hits is not None:
            return hits
    from obsmem.search.mixed import search_everything

    cold = for_cold_process(settings, note)
    chosen = chosen_filters(filters)
    return search_everything(store, text, kinds=kinds, filters=chosen, limit=limit, settings=cold)


def chosen_filters(given: Mapping[str, object]) -> Filters:
    """The ``entries.Filters`` of the ``FILTER_OPTIONS`` values in ``given`` (other keys are
    left out): what a cold search and the daemon search with, from the same request."""
    from obsmem.search.entries import Filters  # here: a search the daemon answers never needs it

    return Filters(**{name: given.get(name) for name in FILTER_OPTIONS})  # type: ignore[arg-type]

"""What the tests of the search daemon and of the processes serving its socket share: the
memory they search, bounded waits, a daemon on a thread, a cold search."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from obsmem import paths
from obsmem.memory.store import MemoryStore
from obsmem.search import client
from obsmem.search.client import cold_search
from obsmem.search.daemon import SearchDaemon
from obsmem.settings import load_settings

#: Memories of the tests: the query "database engine" holds none of their words.
TEXTS = (
    "We chose PostgreSQL over SQLite for concurrent writes",
    "The deploy pipeline runs on GitHub Actions with a canary stage",
    "Maria prefers tabs over spaces in the Makefile",
)
SEMANTIC_QUERY = "database engine"


def until(check: Callable[[], object], what: str, seconds: float = 120.0) -> Any:
    """``check()``'s first true value, polled; fails the test when it never comes."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} never happened")


def socket_path() -> str:
    return paths.search_socket(str(paths.index_path()))


@contextlib.contextmanager
def daemon_thread(store: MemoryStore) -> Iterator[SearchDaemon]:
    """A daemon of this process's settings, run on a thread until the block ends."""
    daemon = SearchDaemon(store, load_settings())
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    try:
        until(lambda: daemon.ready.is_set() or not thread.is_alive(), "the daemon listening")
        assert daemon.ready.is_set(), "the daemon left before listening"
        yield daemon
    finally:
        daemon.stop("the test ended")
        thread.join(timeout=120)
        assert not thread.is_alive()


def search(query: str = SEMANTIC_QUERY) -> list[dict[str, Any]]:
    settings = load_settings()
    return cold_search(MemoryStore(), settings, query, kinds=None, filters={}, limit=5)


def no_start(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make starting a daemon only note its socket (in the list returned), as started."""
    started: list[str] = []

    def start(path: str, environ: object = None, **_: object) -> bool:
        started.append(path)
        return True

    monkeypatch.setattr(client, "start_daemon", start)
    return started

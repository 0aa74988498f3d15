"""The search socket served by the processes that run anyway (``search/resident.py``), and
``om observe`` leaving new entries to whoever serves it (``indexing.index_written``).

``om mcp`` and ``om observe --watch`` run as real processes with the packaged test model; a
cold search is answered by them, and one process serves the socket at a time. Waits are
bounded (``until``), never timed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from obsmem.derived import update_derived
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import daemon as daemon_module
from obsmem.search import resident as resident_module
from obsmem.search.client import daemon_status
from obsmem.search.daemon import SearchDaemon
from obsmem.search.indexing import vector_counts
from obsmem.search.mixed import search_everything
from obsmem.search.recall import KeptIndex
from obsmem.search.resident import Resident
from obsmem.settings import load_settings
from tests.search.daemon_setup import (
    TEXTS,
    daemon_thread,
    no_start,
    search,
    socket_path,
    until,
)

CAT = "The office cat sleeps on the windowsill"


def _served_by(store: MemoryStore, host: str, embedded: int = 3) -> dict[str, Any]:
    """The status of the process serving the socket, once it is ``host`` and has embedded."""
    return until(
        lambda: (
            (s := daemon_status(store))
            and s["host"] == host
            and s["vectors"]["embedded"] == embedded
            and s
        ),
        f"the {host} serving the socket with {embedded} entries embedded",
    )


@pytest.fixture
def child(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes started by a test, killed if the test left them running."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def _start(child: list[subprocess.Popen[bytes]], log: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "obsmem", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=env,
        )
    child.append(process)
    return process


def test_om_mcp_answers_cold_searches_while_it_runs(
    memory: MemoryStore, child: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    proc = _start(child, tmp_path / "mcp.err", "mcp")
    status = _served_by(memory, "MCP server")
    assert status["pid"] == proc.pid
    assert status["idle_exit_seconds"] is None  # it lives for its client, not for searches
    assert search()[0]["text"] == TEXTS[0]  # found by meaning: hybrid, from the MCP server
    assert proc.stdin is not None
    proc.stdin.close()  # the agent leaves: the server exits, and stops serving on the way
    assert proc.wait(60) == 0
    assert not os.path.exists(socket_path())
    assert "MCP server: listening on" in (tmp_path / "mcp.err").read_text()


def test_the_watcher_answers_searches_and_embeds_what_observe_writes(
    memory: MemoryStore,
    child: list[subprocess.Popen[bytes]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OM_LLM_PROVIDER", "none")
    proc = _start(child, tmp_path / "watch.err", "observe", "--watch")
    assert _served_by(memory, "watcher")["pid"] == proc.pid
    started = no_start(monkeypatch)
    memory.add_observations([new_observation(CAT, date="2026-12-01", type="fact")])
    assert not any("embeddings" in p for p in update_derived(memory))
    _served_by(memory, "watcher", embedded=4)  # told by the observe, embedded by the watcher
    assert started == []
    assert search("kitten napping")[0]["text"] == CAT
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    assert not os.path.exists(socket_path())


def test_one_process_serves_the_socket_and_another_takes_over_when_it_leaves(
    memory: MemoryStore,
) -> None:
    index = KeptIndex(memory.index_path)
    resident = Resident(memory, host="MCP server", index=index, retry_seconds=0.05)
    try:
        with daemon_thread(memory):
            resident.start()
            _served_by(memory, "search daemon")  # the lock is the daemon's: it keeps serving
            assert resident.serving is None
            assert search()[0]["text"] == TEXTS[0]
            assert daemon_status(memory)["host"] == "search daemon"  # type: ignore[index]
        _served_by(memory, "MCP server")  # the daemon left: the resident took the lock
        assert resident.serving is not None
        assert search()[0]["text"] == TEXTS[0]
    finally:
        resident.close()
    assert not os.path.exists(socket_path())
    # The index was the caller's: still open, as the MCP server goes on using it.
    assert index.run(lambda conn: conn.execute("SELECT 1").fetchone()) == (1,)
    index.close()


def test_a_resident_process_stops_serving_for_good_once_om_is_reinstalled(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    resident = Resident(memory, host="watcher", retry_seconds=0.05).start()
    try:
        _served_by(memory, "watcher")
        for module in (daemon_module, resident_module):
            monkeypatch.setattr(module, "install_stamp", lambda: "0.0.1|another install")
        assert resident._thread is not None
        resident._thread.join(timeout=60)
        assert not resident._thread.is_alive()
        assert resident.serving is None
        assert not os.path.exists(socket_path())
    finally:
        resident.close()


def test_nothing_is_served_when_a_cold_search_uses_no_daemon(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_SEARCH_DAEMON", "off")
    assert not resident_module.wanted(load_settings())
    resident = Resident(memory, host="watcher", retry_seconds=60).start()
    resident.close()
    assert not os.path.exists(os.path.dirname(socket_path()))


def test_observe_leaves_new_entries_to_the_daemon_and_bm25_finds_them_meanwhile(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = no_start(monkeypatch)
    memory.add_observations([new_observation(CAT, date="2026-12-01", type="fact")])
    assert not any("embeddings" in p for p in update_derived(memory))
    assert started == [socket_path()]  # no daemon ran: the observe started one
    settings = load_settings()
    _, missing, total = vector_counts(memory, settings)
    assert (missing, total) == (4, 4)  # nothing embedded in the foreground
    hits = search_everything(memory, "windowsill", settings=settings, limit=3)
    assert hits[0]["text"] == CAT  # a hybrid search finds it by keyword meanwhile


def test_a_running_daemon_is_told_to_embed_what_observe_wrote(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _record_ops(monkeypatch)
    with daemon_thread(memory) as daemon:
        until(lambda: daemon.progress["embedded"] == 3, "the first background embedding")
        memory.add_observations([new_observation(CAT, date="2026-12-01", type="fact")])
        update_derived(memory)
        assert seen[-1]["op"] == "embed"
        until(lambda: daemon.progress["embedded"] == 4, "the new entry embedded")
        assert search("kitten napping")[0]["text"] == CAT


def test_without_the_daemon_observe_embeds_in_the_foreground(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OM_SEARCH_DAEMON", "off")
    started = no_start(monkeypatch)
    memory.add_observations([new_observation(CAT, date="2026-12-01", type="fact")])
    assert update_derived(memory) == []
    assert vector_counts(memory, load_settings())[1] == 0
    assert started == []


def test_a_daemon_of_other_settings_told_to_embed_leaves_for_one_that_fits(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with daemon_thread(memory) as daemon:
        monkeypatch.setenv("OM_SEARCH_VECTOR_WEIGHT", "0.9")  # the observe's settings differ
        started = no_start(monkeypatch)
        memory.add_observations([new_observation(CAT, date="2026-12-01", type="fact")])
        assert not any("embeddings" in p for p in update_derived(memory))
        until(lambda: daemon.exit_reason, "the refused daemon leaving")
        assert daemon.exit_reason == "a client of another install or other settings asked"
        assert started == [socket_path()]  # its replacement, started at once


def _record_ops(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The requests every daemon of this process answers, in order."""
    seen: list[dict[str, Any]] = []
    answer = SearchDaemon._answer

    def recording(self: SearchDaemon, message: dict[str, Any]) -> dict[str, Any]:
        seen.append(message)
        return answer(self, message)

    monkeypatch.setattr(SearchDaemon, "_answer", recording)
    return seen


def test_the_mcp_server_sends_its_searches_to_the_daemon_that_serves_the_socket(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio
    from mcp.shared.memory import create_connected_server_and_client_session

    from obsmem.mcp.server import RAW_TEXT_CHARS, build_server

    seen = _record_ops(monkeypatch)
    current = [load_settings()]
    resident = Resident(memory, host="MCP server", load=lambda: current[0], retry_seconds=0.05)
    with daemon_thread(memory) as daemon:
        resident.start()
        try:
            asked = {"query": TEXTS[1], "limit": 1}
            until(lambda: resident.ask(asked), "the resident asking the daemon")

            async def steps() -> Any:
                server = build_server(memory, forward=resident.ask)
                async with create_connected_server_and_client_session(server) as session:
                    return await session.call_tool("search", {"query": "database engine"})

            result = anyio.run(steps)
            assert not result.isError
            assert result.structuredContent["results"][0]["text"] == TEXTS[0]
            last = seen[-1]
            assert (last["op"], last["stay"], last["max_chars"]) == ("search", True, RAW_TEXT_CHARS)
            # Other settings in this process: the daemon refuses but keeps serving the others.
            current[0] = current[0].replace(search_vector_weight=0.9)
            until(lambda: resident.ask(asked) is None, "the resident's settings changing")
            assert daemon.exit_reason == ""
            assert daemon_status(memory) is not None
        finally:
            resident.close()

"""The search daemon (``search/daemon.py``) and a cold search's use of it (``search/client.py``).

Real daemons on temporary sockets with the packaged test model: started by the first search
(which answers with BM25 and a note), answering hybrid afterwards, leaving when idle, refusing
a client of another install, replaced over a stale socket; a daemon that hangs or sends garbage
leaves the search to BM25. Waits are bounded (``until``), never timed. The memory and the
helpers are in ``daemon_setup.py`` and conftest.py.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from obsmem.cli.quick import search_main
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import client
from obsmem.search.client import WARMING_NOTE, cold_search, daemon_status, stop_daemon
from obsmem.search.daemon import SearchDaemon
from obsmem.settings import load_settings
from tests.search.daemon_setup import (
    SEMANTIC_QUERY,
    TEXTS,
    daemon_thread,
    no_start,
    search,
    socket_path,
    until,
)


def _pass_done(progress: dict[str, object], entries: int = 3) -> bool:
    """A daemon's embedding pass over: the ``entries`` and every vocabulary item embedded."""
    return (
        progress.get("running") is False
        and progress.get("embedded") == entries
        and progress.get("words_embedded") == progress.get("words_total") is not None
    )


def test_the_first_search_starts_the_daemon_and_the_next_gets_hybrid_results(
    memory: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert search_main(["--json", SEMANTIC_QUERY]) == 0
    out, err = capsys.readouterr()
    assert err == f"om: {WARMING_NOTE}\n"
    assert json.loads(out) == []  # BM25: no word of the query is in the memory
    try:
        status = until(
            lambda: (s := daemon_status(memory)) and _pass_done(s["vectors"]) and s,
            "the started daemon embedding the memory",
        )
        # The entries, then the vocabulary bridge's items (on by default), in one pass.
        words = status["vectors"]["words_total"]
        assert words > 0 and status["vectors"] == {
            "embedded": 3,
            "total": 3,
            "running": False,
            "words_embedded": words,
            "words_total": words,
        }
        assert status["pid"] != os.getpid()
        assert search_main(["--json", SEMANTIC_QUERY]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        hits = json.loads(out)
        assert hits[0]["text"] == TEXTS[0]  # found by meaning: hybrid, from the daemon
    finally:
        stop_daemon(memory)
    until(lambda: not os.path.exists(socket_path()), "the stopped daemon removing its socket")


def test_the_socket_is_private_to_the_user(memory: MemoryStore) -> None:
    with daemon_thread(memory):
        path = socket_path()
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_a_socket_directory_others_can_enter_is_not_used(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = os.path.dirname(socket_path())
    os.makedirs(folder, mode=0o755)
    os.chmod(folder, 0o755)
    assert client.private_dir_problem(folder) == f"{folder} can be entered by other users"
    # A cold search makes a directory of its own user private before using it.
    started = no_start(monkeypatch)
    assert search("postgresql")[0]["text"] == TEXTS[0]
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert started == [socket_path()]


def test_a_file_in_place_of_the_socket_directory_is_refused(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = os.path.dirname(socket_path())
    Path(folder).write_text("not a directory")
    started = no_start(monkeypatch)
    capsys.readouterr()
    assert search("postgresql")[0]["text"] == TEXTS[0]
    err = capsys.readouterr().err
    assert "not using the search daemon" in err and "BM25" in err
    assert started == []
    os.unlink(folder)


def test_the_daemon_answers_hybrid_and_reports_its_progress(memory: MemoryStore) -> None:
    with daemon_thread(memory) as daemon:
        until(lambda: daemon.progress["embedded"] == 3, "the background embedding")
        hits = search()
        assert hits[0]["text"] == TEXTS[0]
        status = daemon_status(memory)
        assert status is not None
        assert status["vectors"]["total"] == 3
        assert status["model"] == "sentence-transformers/all-MiniLM-L6-v2"
        # A new memory is embedded after the next query, without a restart.
        memory.add_observations(
            [new_observation("The office cat sleeps on the windowsill", date="2026-12-01")]
        )
        search("postgresql")
        until(lambda: daemon.progress["embedded"] == 4, "the new entry embedded")
        assert search("kitten napping")[0]["text"] == "The office cat sleeps on the windowsill"


def test_the_vocabulary_is_read_before_the_first_query_with_a_category_word(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obsmem.search import vocabulary as vocabulary_module

    tokenized: list[str] = []  # entries read into the vocabulary's holders, one by one
    held = vocabulary_module._held

    def counted(text: str) -> set[str]:
        tokenized.append(text)
        return held(text)

    monkeypatch.setattr(vocabulary_module, "_held", counted)
    with daemon_thread(memory) as daemon:
        until(lambda: _pass_done(daemon.progress), "the background embedding")
        assert sorted(tokenized) == sorted(TEXTS)
        tokenized.clear()
        # "database" and "engine" are category words: the bridge runs, on what is loaded.
        assert search("what database engine")[0]["text"] == TEXTS[0]
        assert tokenized == []
        # After a write, the pass that embeds it brings the vocabulary up to date too.
        cat = "The office cat sleeps on the windowsill"
        memory.add_observations([new_observation(cat, date="2026-12-01")])
        assert client.ask_to_embed(memory, load_settings())
        until(lambda: _pass_done(daemon.progress, 4), "the new entry embedded")
        assert tokenized == [cat]
        tokenized.clear()
        assert search("which pets sleep")[0]["text"] == cat
        assert tokenized == []


@pytest.mark.parametrize("setting", ["OM_SEARCH_VOCAB_BRIDGE_WEIGHT", "OM_SEARCH_VOCAB_MAX_ITEMS"])
def test_with_the_bridge_off_the_daemon_reads_no_vocabulary(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    from obsmem.search import vocabulary as vocabulary_module

    tokenized: list[str] = []

    def counted(text: str) -> set[str]:
        tokenized.append(text)
        return set()

    monkeypatch.setattr(vocabulary_module, "_held", counted)
    monkeypatch.setenv(setting, "0")
    with daemon_thread(memory) as daemon:
        until(
            lambda: daemon.progress["embedded"] == 3 and daemon.progress["running"] is False,
            "the background embedding",
        )
        assert search()[0]["text"] == TEXTS[0]
        assert tokenized == []


def test_after_a_write_the_vectors_are_read_before_the_next_query(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obsmem.search.vectors import VectorStore

    reads: list[int] = []  # every full read of the vectors' snapshot
    matrix = VectorStore._matrix

    def counted(self: VectorStore) -> Any:
        reads.append(1)
        return matrix(self)

    monkeypatch.setattr(VectorStore, "_matrix", counted)
    with daemon_thread(memory) as daemon:
        until(lambda: _pass_done(daemon.progress), "the background embedding")
        cat = "The office cat sleeps on the windowsill"
        memory.add_observations([new_observation(cat, date="2026-12-01")])
        assert client.ask_to_embed(memory, load_settings())
        until(lambda: _pass_done(daemon.progress, 4), "the new entry embedded")
        reads.clear()
        assert search("kitten napping")[0]["text"] == cat
        assert reads == []  # the pass read them in the background, not this query


def test_the_daemon_leaves_when_idle(memory: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_SEARCH_DAEMON_IDLE_MINUTES", "0.05")
    daemon = SearchDaemon(memory, load_settings())
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert daemon.exit_reason == "idle for 3 s"
    assert not os.path.exists(socket_path())


def test_a_stale_socket_is_no_daemon_and_is_replaced(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = socket_path()
    assert client.private_dir_problem(os.path.dirname(path), create=True) is None
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()  # the file stays, nobody listens: a daemon killed without cleaning up
    started = no_start(monkeypatch)
    capsys.readouterr()
    assert search("postgresql")[0]["text"] == TEXTS[0]
    assert capsys.readouterr().err == f"om: {WARMING_NOTE}\n"
    assert started == [path]
    with daemon_thread(memory) as daemon:
        until(lambda: daemon.progress["embedded"] == 3, "the background embedding")
        assert search()[0]["text"] == TEXTS[0]


def test_a_daemon_of_another_install_refuses_and_leaves(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with daemon_thread(memory) as daemon:
        # The client now runs another install (an upgrade since the daemon started).
        monkeypatch.setattr(client, "install_stamp", lambda: "0.0.1|another install")
        started = no_start(monkeypatch)
        capsys.readouterr()
        assert search("postgresql")[0]["text"] == TEXTS[0]
        err = capsys.readouterr().err
        assert "restarting for this install" in err and "BM25" in err
        until(lambda: daemon.exit_reason, "the refused daemon leaving")
        assert daemon.exit_reason == "a client of another install or other settings asked"
        assert started == [socket_path()]


def test_a_daemon_of_other_search_settings_refuses(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with daemon_thread(memory) as daemon:
        monkeypatch.setenv("OM_SEARCH_VECTOR_WEIGHT", "0.9")
        no_start(monkeypatch)
        search("postgresql")
        until(lambda: daemon.exit_reason, "the refused daemon leaving")


class _FakeDaemon:
    """Something listening on the daemon's socket that answers with ``reply`` (None: never)."""

    def __init__(self, path: str, reply: bytes | None) -> None:
        assert client.private_dir_problem(os.path.dirname(path), create=True) is None
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.reply = reply
        self.path = path
        self.held: list[socket.socket] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        conn.recv(1 << 16)
        if self.reply is not None:
            conn.sendall(self.reply)
            conn.close()
        else:
            self.held.append(conn)  # hung: keeps the connection, never answers
        self.done.set()

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.server.close()
        os.unlink(self.path)


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        (None, "the search daemon did not answer within 0.2 s"),
        (b"garbage\n", "the search daemon sent a broken reply"),
        (b'{"ok": false, "reason": "error", "error": "disk full"}\n', "failed (disk full)"),
        (b"", "the search daemon sent a broken reply"),
    ],
)
def test_a_hung_or_broken_daemon_leaves_the_search_to_bm25(
    memory: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reply: bytes | None,
    note: str,
) -> None:
    monkeypatch.setenv("OM_SEARCH_DAEMON_TIMEOUT_SECONDS", "0.2")
    fake = _FakeDaemon(socket_path(), reply)
    started = no_start(monkeypatch)
    try:
        capsys.readouterr()
        hits = search("postgresql")
        err = capsys.readouterr().err
    finally:
        fake.close()
    assert hits[0]["text"] == TEXTS[0]
    assert note in err and err.endswith("showing keyword (BM25) results\n")
    assert err.count("\n") == 1
    assert started == []  # something is listening: no second daemon


def test_a_usage_error_is_reported_as_without_the_daemon(
    memory: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    with daemon_thread(memory):
        capsys.readouterr()
        assert search_main(["--since", "2026-02-30", "postgresql"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("om: error: since '2026-02-30' is not a real date")
        assert err.count("\n") == 1


def test_the_daemon_applies_the_filters_of_the_request(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_observations([new_observation("PostgreSQL 17 is out", date="2026-11-20",
                                             type="event")])  # fmt: skip
    answered: list[bool] = []
    ask = client._ask_daemon

    def spy(*args: Any, **kwargs: Any) -> Any:
        hits, note = ask(*args, **kwargs)
        answered.append(hits is not None)
        return hits, note

    monkeypatch.setattr(client, "_ask_daemon", spy)
    store, settings = MemoryStore(), load_settings()

    def texts(**filters: object) -> list[str]:
        found = cold_search(store, settings, "postgresql", kinds=None, filters=filters, limit=5)
        return [hit["text"] for hit in found]

    with daemon_thread(memory):
        assert sorted(texts()) == sorted([*TEXTS, "PostgreSQL 17 is out"])
        assert texts(until="2026-11-25") == ["PostgreSQL 17 is out"]
        assert sorted(texts(type="fact", min_importance=0.1)) == sorted(TEXTS)
        assert texts(since="2026-12-01") == []
        assert texts(project="elsewhere", sort="ignored") == []
    assert answered == [True] * 5


@pytest.mark.parametrize(
    ("name", "value", "note"),
    [("OM_SEARCH_DAEMON", "off", "OM_SEARCH_DAEMON=off"), ("OM_SEARCH_BACKEND", "bm25", "")],
)
def test_without_the_daemon_or_a_model_nothing_is_asked_or_started(
    memory: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    value: str,
    note: str,
) -> None:
    monkeypatch.setenv(name, value)
    started = no_start(monkeypatch)
    capsys.readouterr()
    assert search("postgresql")[0]["text"] == TEXTS[0]
    err = capsys.readouterr().err
    assert (note in err) if note else err == ""
    assert started == []
    assert not os.path.exists(os.path.dirname(socket_path()))


def test_a_second_daemon_leaves_while_the_first_holds_the_lock(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("obsmem.search.daemon.LOCK_WAIT_SECONDS", 0.0)
    with daemon_thread(memory):
        second = SearchDaemon(memory, load_settings())
        assert second.run() == 0
        assert not second.ready.is_set()
        assert client.start_daemon(socket_path()) is False  # the lock says one runs


def test_status_reports_a_running_daemon_and_its_progress(memory: MemoryStore) -> None:
    from obsmem.cli.render import status as render_status
    from obsmem.status import collect_status

    with daemon_thread(memory) as daemon:
        until(lambda: _pass_done(daemon.progress), "the background embedding")
        report = collect_status(memory, load_settings())
        assert report.search["embedded"] == 3 and report.search["total"] == 3
        daemon_part = report.search["daemon"]
        assert daemon_part["running"] is True and daemon_part["pid"] == os.getpid()
        vectors = daemon_part["vectors"]
        assert {k: vectors[k] for k in ("embedded", "total", "running")} == {
            "embedded": 3,
            "total": 3,
            "running": False,
        }
        daemon.progress.update(running=True, embedded=1)  # as seen in the middle of a pass
        shown = render_status(collect_status(memory, load_settings()))
        assert f"search daemon     running (pid {os.getpid()}), embedding (1 of 3)" in shown


def test_a_detached_process_never_imports_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout of om (or any file named like a module) in the folder a search runs from must
    # not shadow the installed daemon: it would be another install, refused at every handshake.
    from obsmem.integrations.logs import start_detached

    (tmp_path / "om_cwd_only.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OM_LOG_DIR", str(tmp_path / "logs"))
    assert start_detached("om_cwd_only", "probe.log") is True
    log = tmp_path / "logs" / "probe.log"
    until(lambda: log.exists() and "No module named om_cwd_only" in log.read_text(), "the log")
    assert not (tmp_path / "ran").exists()


def test_a_cold_search_runs_no_integrity_check_on_a_healthy_index(
    memory: MemoryStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # PRAGMA quick_check reads the whole file: it runs when something looks wrong, or for
    # `om doctor`, never on the open of every cold search.
    no_start(monkeypatch)
    assert search_main(["postgresql"]) == 0  # builds the index
    statements: list[str] = []
    real = sqlite3.connect

    class Traced(sqlite3.Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.set_trace_callback(statements.append)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real(*a, **k, factory=Traced))
    capsys.readouterr()
    assert search_main(["postgresql"]) == 0
    assert "PostgreSQL" in capsys.readouterr().out
    assert any("MATCH" in s for s in statements)  # the trace saw the search itself
    assert not any(("quick_check" in s or "integrity_check" in s) for s in statements)

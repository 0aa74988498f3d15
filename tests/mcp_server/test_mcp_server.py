"""The MCP server: tools in-process through the SDK's client, then ``om mcp`` as a real process
over stdio and over HTTP with its bearer token."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from obsmem.cli import cli
from obsmem.demo import prepare
from obsmem.errors import UsageError
from obsmem.mcp import check_host, is_loopback, resolve_token
from obsmem.mcp.server import build_server
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import vectors
from obsmem.search.indexing import embed_index
from obsmem.search.vectors import VectorStore
from obsmem.settings import load_settings

TOOLS = {"search", "get", "timeline", "context", "remember", "forget"}


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    """The demo memory, with OM_HOME pointing at it (for tools that read the environment)."""
    run = prepare(tmp_path / "memory", agents_dir=tmp_path / "agents", transcripts=False)
    monkeypatch.setenv("OM_HOME", str(run.store.home))
    return run.store


def call(store: MemoryStore, steps: Any) -> Any:
    """Run ``steps(session)`` against an in-process server over ``store``; return its result."""

    async def main() -> Any:
        async with create_connected_server_and_client_session(build_server(store)) as session:
            return await steps(session)

    return anyio.run(main)


def payload(result: Any) -> dict[str, Any]:
    assert not result.isError, result.content
    data = result.structuredContent
    assert data == json.loads(result.content[0].text)  # the text form says the same
    return dict(data)


def test_tools_are_listed_with_descriptions_that_say_when_to_call_them(demo: MemoryStore) -> None:
    async def steps(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in call(demo, steps)}
    assert set(tools) == TOOLS
    assert "before asking the user" in (tools["search"].description or "")
    assert tools["search"].annotations.readOnlyHint is True
    assert tools["remember"].annotations.readOnlyHint is False
    assert tools["forget"].annotations.destructiveHint is True
    assert "dry_run defaults to true" in (tools["forget"].description or "")
    assert "query" in tools["search"].inputSchema["required"]
    assert set(tools["remember"].inputSchema["required"]) == {"text", "type"}


def test_search_get_and_timeline_return_citations(demo: MemoryStore) -> None:
    async def steps(session: ClientSession) -> Any:
        found = payload(await session.call_tool("search", {"query": "redis workers", "limit": 3}))
        first = found["results"][0]
        got = payload(
            await session.call_tool("get", {"ids": [first["id"], "nope"], "include_source": True})
        )
        line = payload(await session.call_tool("timeline", {"id": first["id"], "days": 0}))
        lessons = payload(await session.call_tool("search", {"query": "redis", "type": "lesson"}))
        return found, got, line, lessons

    found, got, line, lessons = call(demo, steps)
    assert found["count"] == len(found["results"]) >= 1
    first = found["results"][0]
    assert "Redis" in first["text"]
    assert re.fullmatch(r"[\w./-]+\.md:\d+", first["citation"])
    assert first["date"] and first["rank"] == 1
    assert [e["id"] for e in got["entries"]] == [first["id"]]
    assert got["not_found"] == ["nope"]
    assert "excerpt" in got["entries"][0]
    assert line["anchor_date"] == first["date"]
    assert first["id"] in [e["id"] for e in line["entries"]]
    assert lessons["results"] and all(e["type"] == "lesson" for e in lessons["results"])


def test_raw_search_returns_transcript_turns_with_their_lines(tmp_path: Path) -> None:
    from obsmem.observe.run import run_observe
    from obsmem.settings import load_settings

    run = prepare(tmp_path / "memory", agents_dir=tmp_path / "agents")
    settings = load_settings({**run.environ, "OM_LLM_PROVIDER": "none"})
    run_observe(run.store, settings, environ=run.environ, flush=True, provider=None)

    async def steps(session: ClientSession) -> Any:
        args = {"query": "migration guide", "raw": True, "agent": "codex"}
        turns = payload(await session.call_tool("search", args))
        refused = await session.call_tool("search", {**args, "type": "decision"})
        return turns, refused

    turns, refused = call(run.store, steps)
    assert turns["raw"] is True and turns["count"] == 1
    (hit,) = turns["results"]
    assert hit["text"].startswith("I'll write the migration guide myself this week.")
    assert hit["provenance"]["agent"] == "codex" and hit["provenance"]["line_start"] == 11
    assert re.fullmatch(r"/.+\.jsonl:11", hit["citation"])
    assert refused.isError and "no type or importance" in refused.content[0].text


def test_search_mixes_entries_and_turns_and_kind_narrows_it(tmp_path: Path) -> None:
    from obsmem.observe.run import run_observe
    from obsmem.settings import load_settings

    run = prepare(tmp_path / "memory", agents_dir=tmp_path / "agents")
    settings = load_settings({**run.environ, "OM_LLM_PROVIDER": "none"})
    run_observe(run.store, settings, environ=run.environ, flush=True, provider=None)

    async def steps(session: ClientSession) -> Any:
        query = {"query": "migration guide", "limit": 20}
        mixed = payload(await session.call_tool("search", query))
        kept = payload(await session.call_tool("search", {**query, "kind": ["observation"]}))
        said = payload(await session.call_tool("search", {**query, "kind": ["turn"]}))
        bad = await session.call_tool("search", {**query, "kind": ["turns"]})
        return mixed, kept, said, bad

    mixed, kept, said, bad = call(run.store, steps)
    kinds = [hit["kind"] for hit in mixed["results"]]
    assert "turn" in kinds and "observation" in kinds
    assert {hit["kind"] for hit in kept["results"]} == {"observation"}
    assert {hit["kind"] for hit in said["results"]} == {"turn"}
    assert all("covered_by" in hit for hit in said["results"])
    assert [hit["rank"] for hit in mixed["results"]] == list(range(1, len(kinds) + 1))
    assert bad.isError


def test_remember_then_search_finds_it_and_repeats_are_refused(demo: MemoryStore) -> None:
    async def steps(session: ClientSession) -> Any:
        args = {"text": "Staging deploys need the VPN named zebranet", "type": "fact"}
        added = payload(await session.call_tool("remember", args))
        again = payload(await session.call_tool("remember", args))
        found = payload(await session.call_tool("search", {"query": "zebranet"}))
        return added, again, found

    added, again, found = call(demo, steps)
    assert added["status"] == "added"
    assert again["status"] == "duplicate" and again["duplicate_of"] == added["id"]
    assert found["results"][0]["id"] == added["id"]
    assert found["results"][0]["provenance"]["agent"] == "mcp"


def test_forget_lists_a_query_first_then_forgets_the_ids_given(demo: MemoryStore) -> None:
    workers = "l8s3nq0x4d"  # "Each xdist worker needs its own Redis database number; ..."
    before = demo.observations_path.read_bytes()

    async def steps(session: ClientSession) -> Any:
        listed = payload(await session.call_tool("forget", {"query": "redis worker database"}))
        unchanged = demo.observations_path.read_bytes()
        unknown = await session.call_tool("forget", {"ids": ["zzzzzzzzzz"]})
        done = payload(await session.call_tool("forget", {"ids": listed["ids"]}))
        found = payload(await session.call_tool("search", {"query": "redis worker database"}))
        return listed, unchanged, unknown, done, found

    listed, unchanged, unknown, done, found = call(demo, steps)
    assert listed["dry_run"] is True and workers in listed["ids"]
    assert unchanged == before  # a query only lists, unless dry_run is false
    assert unknown.isError and "zzzzzzzzzz" in unknown.content[0].text
    assert done["dry_run"] is False and done["ids"] == listed["ids"]
    assert workers not in demo.read_observations().ids()
    assert workers not in {hit["id"] for hit in found["results"]}


def test_context_tool_returns_the_startup_context(demo: MemoryStore) -> None:
    async def steps(session: ClientSession) -> Any:
        return payload(
            await session.call_tool("context", {"cwd": "/home/dev/atlas", "budget": 800})
        )

    result = call(demo, steps)
    assert result["cwd"] == "/home/dev/atlas"
    assert "Atlas" in result["context"]


def test_bad_arguments_are_tool_errors_with_one_line_messages(demo: MemoryStore) -> None:
    async def steps(session: ClientSession) -> Any:
        bad_date = await session.call_tool("search", {"query": "x", "since": "last week"})
        bad_id = await session.call_tool("timeline", {"id": "nothing"})
        return bad_date, bad_id

    bad_date, bad_id = call(demo, steps)
    assert bad_date.isError and "YYYY-MM-DD" in bad_date.content[0].text
    assert bad_id.isError and "nothing" in bad_id.content[0].text


def test_system_errors_from_the_store_are_one_line_tool_errors(
    demo: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import sqlite3

    def disk_full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device", str(demo.observations_path))

    def index_broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("obsmem.observe.remember.remember", disk_full)
    monkeypatch.setattr("obsmem.search.mixed.search_entries", index_broken)

    async def steps(session: ClientSession) -> Any:
        added = await session.call_tool("remember", {"text": "a fact", "type": "fact"})
        found = await session.call_tool("search", {"query": "anything"})
        return added, found

    added, found = call(demo, steps)
    assert added.isError
    text = added.content[0].text
    # The SDK names the tool first; what follows is the message the CLI prints.
    assert text.endswith(
        f"cannot write {demo.observations_path}: No space left on device "
        "(free some disk space and run the command again)"
    )
    assert found.isError
    assert "\n" not in found.content[0].text and "Errno" not in found.content[0].text
    assert "disk is full" in found.content[0].text


def child_env(store: MemoryStore, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OM_MCP")}
    env.update(OM_HOME=str(store.home), PYTHONUNBUFFERED="1", **extra)
    return env


def test_om_mcp_over_stdio_as_a_subprocess(demo: MemoryStore) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "obsmem", "mcp"], env=child_env(demo)
    )

    async def main() -> Any:
        with anyio.fail_after(20):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                result = await session.call_tool("search", {"query": "PostgreSQL"})
                return tools, result

    tools, result = anyio.run(main)
    assert tools == TOOLS
    assert any("PostgreSQL" in hit["text"] for hit in payload(result)["results"])


@contextmanager
def serving_http(store: MemoryStore, **extra: str) -> Iterator[tuple[str, str]]:
    """``om mcp --http --port 0`` with OM_MCP_TOKEN set (and ``extra`` settings): (url, token)."""
    token = "test-token-123"
    proc = subprocess.Popen(
        [sys.executable, "-m", "obsmem", "mcp", "--http", "--port", "0"],
        env=child_env(store, OM_MCP_TOKEN=token, **extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"serving on (http://\S+/mcp)", line)
        assert match, line
        yield match.group(1), token
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def http_server(demo: MemoryStore) -> Iterator[tuple[str, str]]:
    """``om mcp --http --port 0`` with OM_MCP_TOKEN set: (url, token)."""
    with serving_http(demo) as served:
        yield served


def wait_until_up(url: str) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_http_requires_the_bearer_token(http_server: tuple[str, str]) -> None:
    url, token = http_server
    wait_until_up(url)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    accept = {"accept": "application/json, text/event-stream"}
    none = httpx.post(url, json=init, headers=accept)
    wrong = httpx.post(url, json=init, headers={**accept, "authorization": "Bearer nope"})
    assert none.status_code == 401 and wrong.status_code == 401
    assert none.headers["www-authenticate"].startswith("Bearer")

    async def main() -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        with anyio.fail_after(20):
            async with (
                httpx.AsyncClient(headers=headers) as client,
                streamable_http_client(url, http_client=client) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool("search", {"query": "redis", "limit": 2})

    result = payload(anyio.run(main))
    assert 1 <= result["count"] <= 2


def test_http_without_a_configured_token_generates_and_prints_one(demo: MemoryStore) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "obsmem", "mcp", "--http", "--port", "0"],
        env=child_env(demo), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        token = proc.stderr.readline().rsplit(" ", 1)[-1].strip()
        url = re.search(r"(http://\S+/mcp)", proc.stderr.readline()).group(1)  # type: ignore[union-attr]
        assert len(token) >= 32
        wait_until_up(url)
        headers = {"accept": "application/json, text/event-stream"}
        wrong = {**headers, "authorization": f"Bearer {token[:-1]}"}
        assert httpx.post(url, json={}, headers=wrong).status_code == 401
        right = {**headers, "authorization": f"Bearer {token}"}
        # Past the token check the SDK answers (400: an empty body is no JSON-RPC message).
        assert httpx.post(url, json={}, headers=right).status_code == 400
    finally:
        proc.terminate()
        proc.wait(10)


def test_non_loopback_hosts_are_refused_unless_allowed() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert check_host("0.0.0.0", allow_remote=True) == "0.0.0.0"
    with pytest.raises(UsageError, match="not a loopback"):
        check_host("0.0.0.0", allow_remote=False)
    result = CliRunner().invoke(cli, ["mcp", "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--allow-remote" in result.stderr
    assert resolve_token("fixed") == ("fixed", False)
    first, generated = resolve_token("")
    assert generated and first != resolve_token("")[0]


def test_search_is_hybrid_and_keeps_its_vectors_between_calls(
    demo: MemoryStore, hybrid_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query sharing no word with the entry it means finds it, within the filters, and the
    server reads the entries' vectors once for all its calls."""
    for name, value in hybrid_env.items():
        monkeypatch.setenv(name, value)
    dog = "The user's dog is called Biscuit and loves the beach"
    demo.add_observations([new_observation(dog, date="2026-11-27", type="fact")])
    # Files written within the last two seconds are hashed again by every refresh (a write to
    # the index, which drops the vector cache): age them, as a running server's memory is.
    old = time.time() - 60
    for path in demo.home.rglob("*"):
        os.utime(path, (old, old))
    embed_index(demo, load_settings())
    loads: list[int] = []
    read_vectors = VectorStore._matrix

    def counted(self: VectorStore) -> Any:
        loads.append(1)
        return read_vectors(self)

    monkeypatch.setattr(VectorStore, "_matrix", counted)
    vectors.clear_cache()
    query = "which puppy likes the seaside"

    async def steps(session: ClientSession) -> Any:
        plain = payload(await session.call_tool("search", {"query": query, "limit": 3}))
        facts = payload(await session.call_tool("search", {"query": query, "type": "fact"}))
        lessons = payload(await session.call_tool("search", {"query": query, "type": "lesson"}))
        return plain, facts, lessons

    plain, facts, lessons = call(demo, steps)
    assert plain["results"][0]["text"] == dog
    assert re.fullmatch(r"observations\.md:\d+", plain["results"][0]["citation"])
    assert facts["results"][0]["text"] == dog
    assert all(e["type"] == "fact" for e in facts["results"])
    assert lessons["results"] and all(e["type"] == "lesson" for e in lessons["results"])
    assert len(loads) == 1


def _closed_by_server(sock: socket.socket) -> bool:
    """True once the server closes the connection; the socket's own timeout is only a bound,
    far above the server's, so that a server that never closes fails the test instead of
    hanging it."""
    sock.settimeout(30)
    try:
        while sock.recv(4096):
            continue
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_http_closes_half_sent_silent_and_idle_connections(demo: MemoryStore) -> None:
    with serving_http(demo, OM_MCP_HTTP_TIMEOUT_SECONDS="1") as (url, token):
        wait_until_up(url)
        address = urlsplit(url)
        where = (address.hostname or "127.0.0.1", address.port or 80)
        with socket.create_connection(where) as half:
            half.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriz")
            assert _closed_by_server(half)
        with socket.create_connection(where) as silent:
            assert _closed_by_server(silent)
        with socket.create_connection(where) as idle:
            idle.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            idle.settimeout(30)
            assert idle.recv(4096).startswith(b"HTTP/1.1 401")
            assert _closed_by_server(idle)  # kept alive, then closed once idle
        headers = {"accept": "application/json, text/event-stream"}
        auth = {**headers, "authorization": f"Bearer {token}"}
        assert httpx.post(url, json={}, headers=auth).status_code == 400  # still serves


def test_http_accepts_the_bearer_scheme_in_any_case(http_server: tuple[str, str]) -> None:
    url, token = http_server
    wait_until_up(url)
    headers = {"accept": "application/json, text/event-stream"}
    for scheme in ("bearer", "BEARER", "Bearer"):
        answer = httpx.post(url, json={}, headers={**headers, "authorization": f"{scheme} {token}"})
        assert answer.status_code == 400, scheme  # past the token check: the SDK answers
    for wrong in (f"Basic {token}", token, f"bearer {token.upper()}", f"bearer{token}"):
        answer = httpx.post(url, json={}, headers={**headers, "authorization": wrong})
        assert answer.status_code == 401, wrong


def test_forget_by_query_lists_and_removes_the_kept_turns_holding_the_words(
    demo: MemoryStore,
) -> None:
    from obsmem.index.turns import TurnStore
    from obsmem.sources.model import Turn

    said = "OK, noted zebrafish-cobalt."
    with TurnStore(demo.turns_path) as turns:
        turns.add([Turn("assistant", said, "2026-11-20T09:00:00Z", "s1", "claude", "atlas",
                        "/t/s.jsonl", 2, 2, 100, 200)])  # fmt: skip

    async def steps(session: ClientSession) -> Any:
        listed = payload(await session.call_tool("forget", {"query": "zebrafish"}))
        kept = payload(await session.call_tool("search", {"query": "zebrafish"}))
        done = payload(await session.call_tool("forget", {"query": "zebrafish", "dry_run": False}))
        gone = payload(await session.call_tool("search", {"query": "zebrafish"}))
        return listed, kept, done, gone

    listed, kept, done, gone = call(demo, steps)
    assert listed["ids"] == [] and [t["excerpt"] for t in listed["raw_turns"]] == [said]
    assert listed["raw_turns"][0]["session"] == "s1" and listed["turns"] == 1
    assert any(said in json.dumps(hit) for hit in kept["results"])  # listed, not removed
    assert done["dry_run"] is False and done["turns"] == 1
    assert not any("zebrafish" in json.dumps(hit) for hit in gone["results"])
    assert b"zebrafish" not in demo.turns_path.read_bytes()

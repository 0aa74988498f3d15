"""Servers: ``om mcp --http`` stays on loopback unless told, wants its token, and takes a burst.

- A host that is not a loopback address is refused (exit 2, one line naming ``--allow-remote``);
  with ``--allow-remote`` the guard lets it through (checked on an address this machine does not
  have, so nothing ever listens beyond loopback).
- Every way of not quite sending the token gets 401 (none, empty, wrong, cut, extended, another
  scheme, in the query, in a cookie, on every method), and so does a request with the right token
  but a foreign ``Host`` or ``Origin`` (DNS rebinding), on any loopback address.
- A burst of searches from many threads at once (JSON-RPC over streamable HTTP, each thread its
  own MCP session) all come back, each with the right answer, every request within its timeout.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hostile_figures import record

from obsmem.cli import cli
from obsmem.memory.store import MemoryStore, new_observation

TOKEN = "reliability-token-" + "x7Q2" * 6
PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
WORDS = [f"zircon{n:03d}" for n in range(40)]


# --- the host guard ------------------------------------------------------------------------------

REFUSED = (
    "0.0.0.0",
    "::",
    "192.168.1.5",
    "10.0.0.1",
    "example.com",
    "127.0.0.1.nip.io",
    "::ffff:127.0.0.1",
    " 127.0.0.1",
    "",
)


@pytest.mark.parametrize("host", REFUSED)
def test_a_host_that_is_not_loopback_is_refused(host: str) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--http", "--host", host, "--port", "0"])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("om: error: "), result.stderr
    assert "Traceback" not in result.output


def test_allow_remote_lets_the_host_through_the_guard() -> None:
    # TEST-NET-3: no machine has it, so the bind fails after the guard and nothing listens.
    result = CliRunner().invoke(
        cli,
        ["mcp", "--http", "--host", "203.0.113.7", "--port", "0", "--allow-remote"],
        env={"OM_MCP_TOKEN": TOKEN},
    )
    assert result.exit_code == 2, result.output
    assert "cannot listen on 203.0.113.7" in result.stderr
    assert "--host" in result.stderr  # the hint names what to change


# --- a running server ----------------------------------------------------------------------------


def _seed(store: MemoryStore) -> None:
    store.add_observations(
        [
            new_observation(
                f"Chose {word} as the codename of service {n}",
                date="2026-11-20",
                time="10:00",
                type="decision",
                importance=0.8,
            )
            for n, word in enumerate(WORDS)
        ]
    )


def start_server(home: Path, host: str = "127.0.0.1") -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OM_MCP")}
    env.update(OM_HOME=str(home), OM_MCP_TOKEN=TOKEN, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "obsmem", "mcp", "--http", "--host", host, "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"serving on (http://\S+/mcp)", line)
    assert match, line
    url = match.group(1)
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.05)
    return proc, url


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    store = MemoryStore(tmp_path / "memory").ensure()
    _seed(store)
    proc, url = start_server(store.home)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "burst", "version": "1"},
        },
    }


def _bad_requests(url: str) -> dict[str, httpx.Response]:
    init = _initialize()
    base = {"accept": ACCEPT}
    with httpx.Client(timeout=10) as client:
        return {
            "no header": client.post(url, json=init, headers=base),
            "empty": client.post(url, json=init, headers={**base, "authorization": ""}),
            "scheme only": client.post(url, json=init, headers={**base, "authorization": "Bearer"}),
            "wrong": client.post(url, json=init, headers={**base, "authorization": "Bearer nope"}),
            "cut": client.post(
                url, json=init, headers={**base, "authorization": f"Bearer {TOKEN[:-1]}"}
            ),
            "extended": client.post(
                url, json=init, headers={**base, "authorization": f"Bearer {TOKEN}x"}
            ),
            "other scheme": client.post(
                url, json=init, headers={**base, "authorization": f"Basic {TOKEN}"}
            ),
            "in the query": client.post(f"{url}?token={TOKEN}", json=init, headers=base),
            "in a cookie": client.post(url, json=init, headers={**base, "cookie": f"t={TOKEN}"}),
            "huge": client.post(
                url, json=init, headers={**base, "authorization": "Bearer " + "y" * 60_000}
            ),
            "GET": client.get(url, headers=base),
            "DELETE": client.delete(url, headers=base),
        }


def test_every_request_without_the_right_token_gets_401(server: str) -> None:
    answers = _bad_requests(server)
    assert {name: r.status_code for name, r in answers.items()} == dict.fromkeys(answers, 401)
    assert all(TOKEN not in r.text for r in answers.values())
    right = {"accept": ACCEPT, "authorization": f"Bearer {TOKEN}"}
    assert httpx.post(server, json=_initialize(), headers=right, timeout=10).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost"])
def test_dns_rebinding_is_refused_on_every_loopback_host(tmp_path: Path, host: str) -> None:
    store = MemoryStore(tmp_path / "memory").ensure()
    proc, url = start_server(store.home, host)
    try:
        right = {"accept": ACCEPT, "authorization": f"Bearer {TOKEN}"}
        port = url.rsplit(":", 1)[1].split("/")[0]
        foreign_host = httpx.post(
            url,
            json=_initialize(),
            timeout=10,
            headers={**right, "host": f"attacker.example:{port}"},
        )
        foreign_origin = httpx.post(
            url,
            json=_initialize(),
            timeout=10,
            headers={**right, "origin": "http://attacker.example"},
        )
        own = httpx.post(url, json=_initialize(), headers=right, timeout=10)
    finally:
        proc.terminate()
        proc.wait(10)
    assert foreign_host.status_code in (403, 421), foreign_host.status_code
    assert foreign_origin.status_code in (403, 421), foreign_origin.status_code
    assert own.status_code == 200


# --- the burst -----------------------------------------------------------------------------------


def _messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a reply: a JSON body, or the data lines of an event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    return [response.json()] if response.content else []


class Client:
    """One MCP session over plain HTTP: initialize, then tool calls."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)
        self.headers = {"accept": ACCEPT, "authorization": f"Bearer {TOKEN}"}
        reply = self.http.post(url, json=_initialize(), headers=self.headers)
        assert reply.status_code == 200, reply.text
        self.headers["mcp-session-id"] = reply.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = PROTOCOL
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.http.post(url, json=note, headers=self.headers).status_code == 202
        self.next_id = 2

    def search(self, query: str) -> tuple[dict[str, Any], float]:
        call = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": query, "limit": 3}},
        }
        self.next_id += 1
        started = time.perf_counter()
        reply = self.http.post(self.url, json=call, headers=self.headers)
        took = time.perf_counter() - started
        assert reply.status_code == 200, reply.text
        (message,) = [m for m in _messages(reply) if m.get("id") == call["id"]]
        assert "error" not in message and not message["result"].get("isError"), message
        return message["result"]["structuredContent"], took

    def close(self) -> None:
        self.http.delete(self.url, headers=self.headers)
        self.http.close()


def burst(url: str, threads: int, per_thread: int) -> dict[str, Any]:
    """``threads`` clients started together, each ``per_thread`` searches for its own words."""
    gate = threading.Barrier(threads)
    latencies: list[float] = []
    wrong: list[str] = []
    lock = threading.Lock()

    def work(number: int) -> int:
        client = Client(url)
        try:
            gate.wait(timeout=60)
            done = 0
            for k in range(per_thread):
                word = WORDS[(number * per_thread + k) % len(WORDS)]
                found, took = client.search(word)
                texts = [hit["text"] for hit in found["results"]]
                with lock:
                    latencies.append(took)
                    if not texts or word not in texts[0]:
                        wrong.append(f"{word}: {texts}")
                done += 1
            return done
        finally:
            client.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        answered = sum(pool.map(work, range(threads)))
    wall = time.perf_counter() - started
    latencies.sort()
    return {
        "answered": answered,
        "wrong": wrong,
        "wall": wall,
        "p50": statistics.median(latencies),
        "p95": latencies[int(0.95 * (len(latencies) - 1))],
        "max": latencies[-1],
    }


def test_a_burst_of_searches_is_answered_correctly(server: str) -> None:
    result = burst(server, threads=8, per_thread=5)
    assert result["answered"] == 40 and result["wrong"] == []


@pytest.mark.slow
def test_two_hundred_searches_from_twenty_threads(server: str) -> None:
    result = burst(server, threads=20, per_thread=10)
    assert result["answered"] == 200 and result["wrong"] == []
    record(
        "Servers",
        f"burst: 200 searches from 20 threads (20 MCP sessions) on loopback: 200 answered, "
        f"{len(result['wrong'])} wrong, wall {result['wall']:.2f} s, latency p50 "
        f"{result['p50'] * 1000:.0f} ms, p95 {result['p95'] * 1000:.0f} ms, "
        f"max {result['max'] * 1000:.0f} ms",
    )
    answers = _bad_requests(server)
    record(
        "Servers",
        f"token: {len(answers)} kinds of request without the right token, "
        f"{sum(r.status_code == 401 for r in answers.values())} answered 401",
    )
    record(
        "Servers",
        f"hosts: {len(REFUSED)} non-loopback hosts refused without --allow-remote "
        "(exit 2, one line)",
    )

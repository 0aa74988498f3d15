"""A fake LLM server on loopback speaking the OpenAI and Anthropic HTTP APIs.

The real ``openai`` and ``anthropic`` SDKs talk to it exactly as they would to the real services,
so tests exercise the whole path: request building, HTTP, status handling, response parsing.

Endpoints:

- ``POST /v1/chat/completions``: OpenAI chat completions (also what Ollama, llama.cpp, vLLM,
  LM Studio and OpenRouter serve);
- ``POST /v1/messages``: Anthropic messages;
- ``GET /v1/models``: an OpenAI-style model list (never consumes a script step);
- ``POST /v1/embeddings``: OpenAI embeddings. A ``Reply`` step answers with deterministic
  vectors (``fake_embedding``: words hashed into ``dimensions`` buckets, 32 by default, so texts
  sharing words are similar), as floats or base64 as asked; the other steps work as for
  completions.

Every request is recorded (``server.requests``). Each completion request takes the next step of
the script (``server.push(...)``); when the script is empty the server answers with
``server.default`` (a normal reply echoing nothing in particular). A step is one of:

- ``Reply(text=...)``: a normal reply; ``text`` may be a callable computing it from the request;
- ``ErrorReply(status, message, headers=...)``: an HTTP error in the API's own error format;
- ``Delay(seconds, then=...)``: wait, then do ``then`` (to trigger client timeouts);
- ``Drop()``: close the connection without replying;
- ``InvalidBody(body=...)``: a 200 reply whose body is not the JSON the client expects;
- ``SlowBody(reply, chunks, interval)``: a correct reply whose body trickles out in pieces.

Usage::

    with FakeLLMServer() as server:
        server.push(ErrorReply(429, headers={"Retry-After": "1"}), Reply("hello"))
        client = openai.OpenAI(base_url=server.base_url_openai, api_key="x")
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import math
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Delay",
    "Drop",
    "ErrorReply",
    "FakeLLMServer",
    "InvalidBody",
    "RecordedRequest",
    "Reply",
    "SlowBody",
    "Step",
    "fake_embedding",
    "running",
]

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
MODELS_PATH = "/v1/models"
EMBEDDINGS_PATH = "/v1/embeddings"
#: Dimensions of ``fake_embedding`` when the request names none.
EMBEDDING_DIM = 32


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: Any  # the parsed JSON body, or None when absent or not JSON
    raw: bytes

    @property
    def api(self) -> str:
        """``openai``, ``anthropic`` or ``other``, from the path."""
        if self.path == OPENAI_PATH:
            return "openai"
        if self.path == ANTHROPIC_PATH:
            return "anthropic"
        return "other"

    @property
    def system(self) -> str:
        """The system prompt, whichever API carried it."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.api == "anthropic":
            system = body.get("system", "")
            if isinstance(system, list):
                return "".join(block.get("text", "") for block in system)
            return str(system)
        return "".join(
            _content_text(m.get("content"))
            for m in body.get("messages", [])
            if m.get("role") in ("system", "developer")
        )

    @property
    def user(self) -> str:
        """The text of the user messages, joined."""
        body = self.body if isinstance(self.body, dict) else {}
        return "".join(
            _content_text(m.get("content"))
            for m in body.get("messages", [])
            if m.get("role") == "user"
        )


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@dataclass
class Reply:
    """A normal reply. Token counts default to rough word counts of the prompt and the text."""

    text: str | Callable[[RecordedRequest], str] = "ok"
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0  # of input_tokens, read from the prompt cache
    model: str | None = None  # default: the model the request named
    stop_reason: str | None = None  # default: "end_turn" (Anthropic) / "stop" (OpenAI)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ErrorReply:
    """An HTTP error with a body in the API's error format (or ``body`` verbatim when given)."""

    status: int
    message: str = "fake error"
    error_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


@dataclass
class Delay:
    """Wait ``seconds`` (interrupted when the server stops), then perform ``then``."""

    seconds: float
    then: Step = field(default_factory=Reply)


@dataclass
class Drop:
    """Close the connection without sending anything."""


@dataclass
class InvalidBody:
    """A reply whose body is not the JSON the client expects."""

    body: bytes = b'{"id": "broken", "choices": [{"message": '
    status: int = 200
    content_type: str = "application/json"


@dataclass
class SlowBody:
    """A correct reply sent in ``chunks`` pieces, ``interval`` seconds apart."""

    reply: Reply = field(default_factory=Reply)
    chunks: int = 4
    interval: float = 0.05


Step = Reply | ErrorReply | Delay | Drop | InvalidBody | SlowBody

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FakeLLMServer:
    """A scripted OpenAI + Anthropic API server on ``127.0.0.1`` and a random port."""

    def __init__(self, default: Step | None = None) -> None:
        self.default: Step = default if default is not None else Reply("ok")
        self.requests: list[RecordedRequest] = []
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeLLMServer:
        """Serve in a background thread; returns ``self``."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; pending delays are cut short."""
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.close_connections()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._httpd.server_address[1])

    @property
    def base_url_openai(self) -> str:
        """Base URL for OpenAI-style clients (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def base_url_anthropic(self) -> str:
        """Base URL for the Anthropic client (it appends ``/v1/messages`` itself)."""
        return f"http://127.0.0.1:{self.port}"

    # -- script ------------------------------------------------------------------------------
    def push(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self._steps.extend(steps)

    def script(self, *steps: Step) -> None:
        """Replace the script with ``steps`` (and forget recorded requests)."""
        with self._lock:
            self._steps.clear()
            self._steps.extend(steps)
            self.requests.clear()

    @property
    def pending(self) -> int:
        """How many scripted steps have not been used yet."""
        with self._lock:
            return len(self._steps)

    def completion_requests(self) -> list[RecordedRequest]:
        """The recorded requests to a completion endpoint (either API)."""
        with self._lock:
            return [r for r in self.requests if r.api != "other"]

    # -- internals used by the handler -------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_step(self) -> Step:
        with self._lock:
            return self._steps.popleft() if self._steps else self.default

    def _next_id(self) -> int:
        return next(self._ids)

    def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds``; False when the server is stopping (the caller should give up)."""
        return not self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler stuck in a Delay must not hold up stop()
    fake: FakeLLMServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.open_connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def close_connections(self) -> None:
        """Shut the kept-alive client connections, so no handler thread outlives ``stop()``."""
        with self.connections_lock:
            for connection in self.open_connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self.open_connections.clear()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    timeout = 10  # idle keep-alive connections close on their own
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def handle(self) -> None:
        with self.server.connections_lock:
            self.server.open_connections.add(self.connection)
        try:
            # A client that gave up (timeout) closes its socket while we still write: no error.
            with contextlib.suppress(ConnectionError, TimeoutError, OSError):
                super().handle()
        finally:
            with self.server.connections_lock:
                self.server.open_connections.discard(self.connection)

    # -- HTTP verbs --------------------------------------------------------------------------
    def do_GET(self) -> None:
        request = self._read_request()
        self.server.fake._record(request)
        if request.path == MODELS_PATH:
            data = {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}],
            }
            self._send_json(200, data)
        else:
            self._send_json(404, _openai_error(404, f"no route GET {request.path}", None))

    def do_POST(self) -> None:
        request = self._read_request()
        fake = self.server.fake
        fake._record(request)
        if request.api == "other" and request.path != EMBEDDINGS_PATH:
            self._send_json(404, _openai_error(404, f"no route POST {request.path}", None))
            return
        self._perform(fake._next_step(), request)

    # -- steps -------------------------------------------------------------------------------
    def _perform(self, step: Step, request: RecordedRequest) -> None:
        fake = self.server.fake
        if isinstance(step, Delay):
            if fake._wait(step.seconds):
                self._perform(step.then, request)
            else:
                self._drop()
        elif isinstance(step, Drop):
            self._drop()
        elif isinstance(step, ErrorReply):
            shape = _anthropic_error if request.api == "anthropic" else _openai_error
            body = step.body
            if body is None:
                body = json.dumps(shape(step.status, step.message, step.error_type)).encode()
            self._send(step.status, body, "application/json", step.headers)
        elif isinstance(step, InvalidBody):
            self._send(step.status, step.body, step.content_type, {})
        elif isinstance(step, SlowBody):
            body = json.dumps(self._reply_body(step.reply, request)).encode()
            self._send_slowly(body, step.chunks, step.interval)
        else:
            self._send(
                200, json.dumps(self._reply_body(step, request)).encode(), None, step.headers
            )

    def _reply_body(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        body = request.body if isinstance(request.body, dict) else {}
        if request.path == EMBEDDINGS_PATH:
            return _embeddings_body(reply, body)
        text = reply.text(request) if callable(reply.text) else reply.text
        model = reply.model or str(body.get("model", "fake-model"))
        prompt_words = len((request.system + " " + request.user).split())
        input_tokens = reply.input_tokens if reply.input_tokens is not None else prompt_words
        output_tokens = (
            reply.output_tokens if reply.output_tokens is not None else len(text.split())
        )
        number = self.server.fake._next_id()
        if request.api == "anthropic":
            return {
                "id": f"msg_fake_{number:06d}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "model": model,
                "stop_reason": reply.stop_reason or "end_turn",
                "stop_sequence": None,
                # Anthropic's input_tokens leaves the cache reads out; prompt_tokens has them.
                "usage": {
                    "input_tokens": input_tokens - reply.cached_tokens,
                    "cache_read_input_tokens": reply.cached_tokens,
                    "output_tokens": output_tokens,
                },
            }
        return {
            "id": f"chatcmpl-fake-{number:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "finish_reason": reply.stop_reason or "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
                "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
            },
            "system_fingerprint": None,
        }

    # -- wire helpers ------------------------------------------------------------------------
    def _read_request(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        headers = {name.lower(): value for name, value in self.headers.items()}
        return RecordedRequest(self.command, path, headers, body, raw)

    def _send(
        self, status: int, body: bytes, content_type: str | None, headers: Mapping[str, str]
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type or "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", f"req_fake_{self.server.fake._next_id()}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _send_json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json", {})

    def _send_slowly(self, body: bytes, chunks: int, interval: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        size = max(1, -(-len(body) // max(1, chunks)))
        for start in range(0, len(body), size):
            if not self.server.fake._wait(interval):
                self._drop()
                return
            self.wfile.write(body[start : start + size])
            self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def fake_embedding(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A deterministic unit vector for ``text``: its lower-cased words hashed into ``dim`` buckets.

    Texts that share words point the same way, so similarity behaves like a (crude) real model.
    """
    vector = [0.0] * dim
    for word in "".join(c if c.isalnum() else " " for c in text.lower()).split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:
        return [1.0] + [0.0] * (dim - 1)
    return [v / norm for v in vector]


def _embeddings_body(reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
    raw = body.get("input", [])
    texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
    dim = int(body.get("dimensions") or EMBEDDING_DIM)
    data = []
    for index, text in enumerate(texts):
        vector = fake_embedding(text, dim)
        embedding: Any = vector
        if body.get("encoding_format") == "base64":
            embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(t.split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": reply.model or str(body.get("model", "fake-embedding-model")),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _openai_error(status: int, message: str, error_type: str | None) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": error_type or _ERROR_TYPES.get(status, "api_error"),
            "param": None,
            "code": None,
        }
    }


def _anthropic_error(status: int, message: str, error_type: str | None) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type or _ERROR_TYPES.get(status, "api_error"), "message": message},
    }


@contextlib.contextmanager
def running(default: Step | None = None) -> Iterator[FakeLLMServer]:
    """A started server, stopped on exit (for use outside pytest fixtures)."""
    server = FakeLLMServer(default).start()
    try:
        yield server
    finally:
        server.stop()

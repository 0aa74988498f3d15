"""What keeps the viewer to its user: the run's token, the Host check, CSRF, and strict headers.

The viewer listens on 127.0.0.1 only, but every page of the browser's user can reach loopback,
and memory holds what a user told their agents. So, on every request, in this order:

1. **Host** must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (400 otherwise). A DNS-rebinding
   page reaches the port under its own name and is refused before anything is read.
2. **Token**: ``om ui`` prints a URL with a fresh random token (``secrets.token_urlsafe``). The
   first request carrying ``?token=`` gets an HttpOnly, SameSite=Strict cookie and is redirected
   to the same URL without it (so the token leaves the address bar and the history); every later
   request must carry the cookie. Both are compared in constant time (``hmac.compare_digest``).
   Missing or wrong: 403. The cookie's name holds the port, so two viewers do not mix.
3. **Writes** are POST only, with the run's CSRF token in the form, and the browser's own word
   that the request comes from this origin: ``Sec-Fetch-Site`` (``same-origin``) when sent,
   else ``Origin``, else ``Referer``. A request with none of them (a script, not a browser)
   still needs the cookie and the form token.
4. **Headers** on every answer: a Content-Security-Policy that allows nothing but this origin's
   own script, style and images (no inline script, no framing, forms posting here only),
   ``nosniff``, ``no-referrer``, and ``no-store`` so memory text is not kept in a disk cache.

Every piece of memory text is escaped by the templates (Jinja2 with autoescape on); the few
places that add markup to it (search highlights, links) escape first and add tags after.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = ["CSP", "HEADERS", "Guard", "SecurityMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

#: Sent with every answer, errors included.
HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cache-control", "no-store"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)

_SAFE_METHODS = frozenset({"GET", "HEAD"})


@dataclass
class Guard:
    """One run's secrets and the origin it answers as."""

    port: int
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie(self) -> str:
        """The session cookie's name (one per port: cookies do not tell ports apart)."""
        return f"om_ui_{self.port}"

    @property
    def hosts(self) -> frozenset[str]:
        """The Host values accepted."""
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    def url(self, host: str = "127.0.0.1") -> str:
        """The URL ``om ui`` prints: the first visit with it logs the browser in."""
        return f"http://{host}:{self.port}/?{urlencode({'token': self.token})}"

    def host_ok(self, host: str | None) -> bool:
        """True for a Host header naming this server on loopback."""
        return host is not None and host.lower() in self.hosts

    def token_ok(self, value: str | None) -> bool:
        """Constant-time comparison with the run's token."""
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def csrf_ok(self, value: str | None) -> bool:
        """Constant-time comparison with the run's CSRF token."""
        return value is not None and hmac.compare_digest(value.encode(), self.csrf.encode())

    def same_origin(self, headers: dict[str, str]) -> bool:
        """The browser's own statement that a write comes from one of this server's pages."""
        site = headers.get("sec-fetch-site")
        if site is not None:
            return site == "same-origin"
        origin = headers.get("origin")
        if origin is not None:
            return self._ours(origin)
        referer = headers.get("referer")
        if referer is not None:
            return self._ours(referer)
        return True  # not a browser: the cookie and the form token decide

    def _ours(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == "http" and parts.netloc.lower() in self.hosts


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        out[key.decode("latin-1").lower()] = value.decode("latin-1")
    return out


class SecurityMiddleware:
    """The checks of this module's docstring, around the whole application (ASGI)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        guard = self.guard
        if not guard.host_ok(headers.get("host")):
            await _plain(send, 400, "om ui answers only as 127.0.0.1 or localhost on its port")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for key, value in query if key == "token"]
        if given:
            if not guard.token_ok(given[-1]):
                await _plain(send, 403, "wrong token: open the URL `om ui` printed")
                return
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            path = scope.get("raw_path") or scope.get("path", "/").encode("utf-8")
            # Never "//host/...": a browser reads that as another site.
            path = b"/" + path.decode("latin-1").lstrip("/").encode("latin-1")
            location = path.decode("latin-1") + (f"?{rest}" if rest else "")
            await _redirect(send, location, guard)
            return
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is the same as none
            cookie = SimpleCookie()
        morsel = cookie.get(guard.cookie)
        if not guard.token_ok(morsel.value if morsel is not None else None):
            await _plain(send, 403, "no valid token: open the URL `om ui` printed")
            return
        method = scope.get("method", "GET")
        if method not in _SAFE_METHODS:
            if method != "POST":
                await _plain(send, 405, "only GET and POST are answered")
                return
            if not guard.same_origin(headers):
                await _plain(send, 403, "a write from another site was refused")
                return
        await self.app(scope, receive, _with_headers(send))


def _with_headers(send: Send) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {key.lower() for key, _ in message.get("headers", [])}
            extra = [(k.encode(), v.encode()) for k, v in HEADERS if k.encode() not in names]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return sender


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]  # fmt: skip
    await _with_headers(send)({"type": "http.response.start", "status": status,
                               "headers": headers})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, guard: Guard) -> None:
    cookie = f"{guard.cookie}={guard.token}; Path=/; HttpOnly; SameSite=Strict"
    headers = [(b"location", location.encode("latin-1", "replace")),
               (b"set-cookie", cookie.encode()), (b"content-length", b"0")]  # fmt: skip
    await _with_headers(send)({"type": "http.response.start", "status": 303,
                               "headers": headers})  # fmt: skip
    await send({"type": "http.response.body", "body": b""})

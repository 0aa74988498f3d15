"""The viewer's safety: token, Host check, CSRF and origin, headers, and escaped memory text."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from obsmem.memory.store import MemoryStore
from obsmem.ui.security import CSP, Guard

from .conftest import XSS, observation


@pytest.mark.parametrize("path", ["/", "/search?q=redis", "/status", "/entry/abc", "/static/om.js"])
def test_every_route_needs_the_token(anonymous: TestClient, path: str) -> None:
    answer = anonymous.get(path)
    assert answer.status_code == 403
    assert "open the URL `om ui` printed" in answer.text


def test_a_wrong_cookie_is_refused(anonymous: TestClient, guard: Guard) -> None:
    anonymous.cookies.set(guard.cookie, guard.token[:-1] + ("A" if guard.token[-1] != "A" else "B"))
    assert anonymous.get("/").status_code == 403


def test_the_token_in_the_url_sets_a_strict_cookie_and_leaves_the_url(
    anonymous: TestClient, guard: Guard
) -> None:
    answer = anonymous.get(f"/search?q=redis&token={guard.token}", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/search?q=redis"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{guard.cookie}={guard.token};")
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert flag in cookie
    assert anonymous.get("/search?q=redis").status_code == 200  # the cookie now lets it in


def test_a_wrong_token_in_the_url_is_refused(anonymous: TestClient) -> None:
    answer = anonymous.get("/?token=guessed", follow_redirects=False)
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_the_login_redirect_never_leaves_the_site(anonymous: TestClient, guard: Guard) -> None:
    answer = anonymous.get(f"http://127.0.0.1:8765//evil.example/?token={guard.token}",
                           follow_redirects=False)  # fmt: skip
    assert answer.headers["location"] == "/evil.example/"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1:9999",
                                  "localhost", "127.0.0.1.evil.example:8765"])  # fmt: skip
def test_a_foreign_host_is_refused_before_the_token(client: TestClient, host: str) -> None:
    answer = client.get("/", headers={"host": host})
    assert answer.status_code == 400


def test_localhost_is_accepted(client: TestClient) -> None:
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_headers_on_every_answer(client: TestClient, anonymous: TestClient) -> None:
    for answer in (client.get("/"), anonymous.get("/"), client.get("/nope")):
        assert answer.headers["content-security-policy"] == CSP
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["x-frame-options"] == "DENY"
    assert "script-src 'self'" in CSP and "frame-ancestors 'none'" in CSP
    assert "unsafe-inline" not in CSP


def _first_id(client: TestClient) -> str:
    return re.findall(r'id="e-([0-9a-z]{10})"', client.get("/").text)[0]


def test_a_post_without_the_form_token_is_refused(client: TestClient, memory: MemoryStore) -> None:
    before = memory.observations_path.read_bytes()
    entry_id = _first_id(client)
    for form in ({}, {"csrf": "wrong"}):
        answer = client.post(f"/entry/{entry_id}/forget", data=form, follow_redirects=False)
        assert answer.status_code == 403
    assert memory.observations_path.read_bytes() == before


@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"referer": "http://evil.example/page"},
    ],
)
def test_a_post_from_another_site_is_refused(
    client: TestClient, memory: MemoryStore, guard: Guard, headers: dict[str, str]
) -> None:
    before = memory.observations_path.read_bytes()
    answer = client.post(f"/entry/{_first_id(client)}/forget", data={"csrf": guard.csrf},
                         headers=headers, follow_redirects=False)  # fmt: skip
    assert answer.status_code == 403
    assert memory.observations_path.read_bytes() == before


def test_a_post_without_the_cookie_is_refused(anonymous: TestClient, guard: Guard) -> None:
    answer = anonymous.post("/remember", data={"csrf": guard.csrf, "text": "x"})
    assert answer.status_code == 403


def test_other_methods_are_refused(client: TestClient) -> None:
    assert client.delete("/entry/abc").status_code == 405


@pytest.fixture
def hostile(memory: MemoryStore) -> MemoryStore:
    memory.add_observations(
        observation(f"payload {n} {text}", "2026-11-29", f"12:0{n}", project=text[:40],
                    agent="claude")
        for n, text in enumerate(XSS)
    )  # fmt: skip
    (memory.home / "reflections.md").write_text(
        "# Reflections\n\n## <script>alert(5)</script>\n\n"
        + "".join(f"- {text}\n" for text in XSS),
        encoding="utf-8",
    )
    return memory


def _assert_inert(html: str) -> None:
    assert "<script>alert" not in html
    assert "<img" not in html
    assert "<svg" not in html
    assert 'href="javascript:' not in html
    assert 'onerror="' not in html
    # The only scripts are the viewer's own file.
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/om.js" defer>']


@pytest.mark.parametrize("path", ["/", "/search?q=payload", "/reflections",
                                  "/search?q=payload&kind=reflection"])  # fmt: skip
def test_memory_text_renders_as_text(client: TestClient, hostile: MemoryStore, path: str) -> None:
    html = client.get(path).text
    assert "payload" in html or "alert" in html
    _assert_inert(html)
    assert "&lt;script&gt;" in html


def test_entry_page_escapes_its_text(client: TestClient, hostile: MemoryStore) -> None:
    ids = re.findall(r'id="e-([0-9a-z]{10})"', client.get("/?since=2026-11-29").text)
    assert len(ids) == len(XSS)
    for entry_id in ids:
        _assert_inert(client.get(f"/entry/{entry_id}").text)


def test_a_hostile_query_is_escaped(client: TestClient) -> None:
    html = client.get('/search?q="><script>alert(1)</script>').text
    _assert_inert(html)

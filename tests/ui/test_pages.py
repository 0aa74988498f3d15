"""Each page of the viewer over a known memory: what it shows, its filters, its pagination."""

from __future__ import annotations

import re
from html import unescape

import pytest
from starlette.testclient import TestClient

from obsmem.memory.store import MemoryStore
from obsmem.settings import Settings
from obsmem.ui import views_memory

from .conftest import observation

_ENTRY = re.compile(r'<li class="entry" id="e-([0-9a-z]{10})">')


def texts(html: str) -> list[str]:
    """The entry texts of a timeline page, in order."""
    return [unescape(t) for t in re.findall(r'<span class="text">(.*?)</span>', html)]


def test_timeline_shows_days_newest_first_with_every_field(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    days = re.findall(r'<h2><time datetime="([\d-]+)">', page.text)
    assert days == ["2026-11-28", "2026-11-26", "2026-11-24"]
    assert texts(page.text)[:2] == ["Ran the test suite", "Release Atlas 1.0 on 2026-12-05"]
    first = page.text[page.text.index('<li class="entry"') :].split("</li>")[0]
    for shown in ("11:40", ">event<", "i=0.20", ">atlas<", ">claude<", "observations.md:"):
        assert shown in first
    assert "prio-minor" in first


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("project=billing", ["Release Atlas 1.0 on 2026-12-05"]),
        ("agent=codex", ["User prefers small commits"]),
        ("type=decision", ["Release Atlas 1.0 on 2026-12-05",
                           "Chose PostgreSQL over SQLite for concurrent writes"]),
        ("priority=important", ["Release Atlas 1.0 on 2026-12-05",
                                "Chose PostgreSQL over SQLite for concurrent writes"]),
        ("since=2026-11-25&until=2026-11-27", ["User prefers small commits",
                                               "Redis workers need their own database number"]),
    ],
)  # fmt: skip
def test_timeline_filters(client: TestClient, query: str, expected: list[str]) -> None:
    page = client.get(f"/?{query}")
    assert page.status_code == 200
    assert texts(page.text) == expected


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/?since=yesterday", "since &#39;yesterday&#39; is not a date"),
        ("/search?q=redis&since=yesterday", "since &#39;yesterday&#39; is not a date"),
        ("/?until=2026-02-30", "until &#39;2026-02-30&#39; is not a real date"),
        ("/search?q=redis&type=mood", "unknown type &#39;mood&#39;"),
        ("/?min_importance=2", "min_importance &#39;2&#39; is outside 0..1"),
    ],
)
def test_a_bad_filter_is_a_one_line_error_page(client: TestClient, path: str, message: str) -> None:
    page = client.get(path)
    assert page.status_code == 400
    assert message in page.text
    assert "Traceback" not in page.text


def test_timeline_pages_follow_each_other_without_gap_or_repeat(
    client: TestClient, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_observations(
        observation(f"note number {n}", "2026-11-20", f"09:{n:02d}") for n in range(7)
    )
    monkeypatch.setattr(views_memory, "PAGE_SIZE", 3)
    seen: list[str] = []
    url = "/"
    for _ in range(10):
        page = client.get(url)
        ids = _ENTRY.findall(page.text)
        assert len(ids) <= 3
        seen += ids
        link = re.search(r'<a rel="next" href="([^"]+)"', page.text)
        if link is None:
            break
        url = unescape(link.group(1))
    assert len(seen) == 12
    assert len(set(seen)) == 12


def test_timeline_pages_keep_their_filters(client: TestClient, memory: MemoryStore,
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    memory.add_observations(
        observation(f"billing item {n}", "2026-11-20", f"09:{n:02d}", project="billing")
        for n in range(4)
    )
    monkeypatch.setattr(views_memory, "PAGE_SIZE", 3)
    first = client.get("/?project=billing")
    link = unescape(re.search(r'<a rel="next" href="([^"]+)"', first.text).group(1))
    assert "project=billing" in link
    second = client.get(link)
    assert texts(second.text) == ["billing item 1", "billing item 0"]


def test_search_finds_and_highlights(client: TestClient) -> None:
    page = client.get("/search?q=redis+database")
    assert page.status_code == 200
    assert "<mark>Redis</mark>" in page.text
    assert "<mark>database</mark>" in page.text
    assert "observations.md:" in page.text


def test_search_filters_narrow_hits(client: TestClient) -> None:
    everything = client.get("/search?q=atlas+postgresql+commits")
    only = client.get("/search?q=atlas+postgresql+commits&kind=observation&agent=codex")
    assert "Small <mark>commits</mark>" in everything.text  # the reflection
    assert "User prefers small" in only.text
    assert "Small <mark>commits</mark>" not in only.text
    assert "PostgreSQL over" not in only.text


def test_search_without_query_shows_the_form_only(client: TestClient) -> None:
    page = client.get("/search")
    assert page.status_code == 200
    assert 'name="q"' in page.text
    assert "hits for" not in page.text


def test_entry_page_shows_citation_and_provenance(client: TestClient) -> None:
    entry_id = _ENTRY.findall(client.get("/?agent=codex").text)[0]
    page = client.get(f"/entry/{entry_id}")
    assert page.status_code == 200
    assert "User prefers small commits" in page.text
    assert "observations.md:" in page.text
    assert "added explicitly" in page.text  # remembered, not observed: no transcript
    assert ">codex<" in page.text


def test_unknown_entry_is_404_with_the_reason(client: TestClient) -> None:
    page = client.get("/entry/zzzzzzzzzz")
    assert page.status_code == 404
    assert "no memory entry has the id" in page.text


def test_reflections_by_section_with_vault_links(client: TestClient) -> None:
    page = client.get("/reflections")
    assert page.status_code == 200
    assert "<h2>Key Facts</h2>" in page.text
    assert "<h2>Preferences</h2>" in page.text
    assert '<a href="/vault/projects/atlas">projects/atlas</a>' in page.text


def test_vault_lists_pages_and_shows_one(client: TestClient, memory: MemoryStore) -> None:
    (memory.vault_dir / "projects").mkdir(parents=True)
    (memory.vault_dir / "projects" / "atlas.md").write_text(
        "# Atlas\n\n- 2026-11-24 Chose PostgreSQL [[decisions]] (^abcdefghjk)\n", encoding="utf-8"
    )
    (memory.vault_dir / "decisions.md").write_text("# Decisions\n", encoding="utf-8")
    index = client.get("/vault")
    assert '<a href="/vault/projects/atlas">atlas</a>' in index.text
    assert '<a href="/vault/decisions">decisions</a>' in index.text
    page = client.get("/vault/projects/atlas")
    assert page.status_code == 200
    assert '<a href="/vault/decisions">decisions</a>' in page.text
    assert '<a href="/entry/abcdefghjk">' in page.text


@pytest.mark.parametrize("name", ["../observations", "projects/../../observations", "nope"])
def test_vault_page_outside_the_listing_is_404(client: TestClient, name: str) -> None:
    assert client.get(f"/vault/{name}").status_code == 404


def test_next_session_shows_the_context_and_its_tokens(client: TestClient) -> None:
    page = client.get("/next?project=atlas&budget=800")
    assert page.status_code == 200
    assert "What om remembers" in page.text
    assert "Chose PostgreSQL" in page.text
    tokens = int(re.search(r"about <strong>(\d+)</strong> tokens", page.text).group(1))
    assert 0 < tokens <= 800
    assert "<option selected>atlas</option>" in page.text


def test_next_session_bad_budget_is_an_error_page(client: TestClient) -> None:
    assert client.get("/next?budget=lots").status_code == 400


def test_status_shows_sources_usage_index_and_doctor(client: TestClient) -> None:
    page = client.get("/status")
    assert page.status_code == 200
    for shown in ("Sources", "LLM usage per day", "Doctor", "memory directory", "claude"):
        assert shown in page.text
    assert page.text.count('<tr class="v-') >= 5


def test_status_shows_each_days_cost_where_it_is_known(
    memory: MemoryStore, client: TestClient
) -> None:
    from datetime import datetime, timedelta

    from obsmem.llm.base import Completion
    from obsmem.llm.usage import record_usage

    now = datetime.now().astimezone()
    reported = Completion("t", "claude-code", "haiku", 4000, 120, cost_usd=0.0125)
    record_usage(memory.usage_path, reported, purpose="observer", when=now)
    unpriced = Completion("t", "anthropic", "m", 900, 80)
    record_usage(memory.usage_path, unpriced, purpose="observer", when=now - timedelta(days=1))
    cached = Completion("t", "codex", "m", 20000, 500, cached_input_tokens=18000)
    full = Settings(llm_price_input=1.25, llm_price_output=10.0)
    record_usage(memory.usage_path, cached, purpose="observer", when=now - timedelta(days=2),
                 settings=full)  # fmt: skip
    page = client.get("/status")
    assert page.status_code == 200
    assert "<th>cost</th>" in page.text
    rows = re.findall(r"<tr[^>]*><td>(\d{4}-\d\d-\d\d)</td>(.*?)</tr>", page.text, re.S)
    cost = {day: re.findall(r"<td>([^<]*)</td>", rest)[3] for day, rest in rows}
    assert cost[now.date().isoformat()] == "$0.0125"
    assert cost[(now - timedelta(days=1)).date().isoformat()] == "unknown"
    assert cost[(now - timedelta(days=2)).date().isoformat()] == "at most $0.0300"
    assert cost[(now - timedelta(days=3)).date().isoformat()] == "–"  # no calls that day
    tokens_in = {day: re.findall(r"<td>([^<]*)</td>", rest)[1] for day, rest in rows}
    assert tokens_in[(now - timedelta(days=2)).date().isoformat()] == "20,000 (18,000)"
    assert "unknown until OM_LLM_PRICE_INPUT and OM_LLM_PRICE_OUTPUT" in page.text
    assert "without it they are charged the input price" in page.text


def test_static_files_are_served(client: TestClient) -> None:
    assert "confirm" in client.get("/static/om.js").text
    assert client.get("/static/om.css").headers["content-type"].startswith("text/css")


def test_a_bug_is_one_line_not_a_traceback(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from obsmem.ui import views_overview

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.delenv("OM_DEBUG", raising=False)
    monkeypatch.setattr(views_overview, "collect_status", broken)
    page = client.get("/status")
    assert page.status_code == 500
    assert "om: internal error: RuntimeError: boom" in page.text
    err = capsys.readouterr().err
    assert "om: internal error: RuntimeError: boom" in err
    assert "Traceback" not in err


def test_a_system_error_gets_its_explanation(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obsmem.ui import views_overview

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/somewhere/reflections.md")

    monkeypatch.setattr(views_overview, "run_in_threadpool", _raising(denied))
    page = client.get("/reflections")
    assert page.status_code == 400
    assert "/somewhere/reflections.md" in page.text


def _raising(function):  # type: ignore[no-untyped-def]
    async def run(*args: object, **kwargs: object) -> None:
        function()

    return run

"""A memory with known observations, and the viewer over it behind a logged-in test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the viewer needs the ui extra: pip install 'obsmem[ui]'")
pytest.importorskip("jinja2", reason="the viewer needs the ui extra: pip install 'obsmem[ui]'")

from starlette.testclient import TestClient

from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.ui.app import create_app
from obsmem.ui.security import Guard

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"

#: Memory text meant to break out of HTML if it were not escaped.
XSS = (
    "<script>alert('xss')</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1)) javascript:alert(2)",
    "\"><svg onload=alert(3)> ' onmouseover='alert(4)",
)


def observation(text: str, date: str, time: str, *, type_: str = "fact", importance: float = 0.6,
                project: str | None = "atlas", agent: str | None = "claude"):  # fmt: skip
    """A new observation with a provenance naming its project and agent."""
    return new_observation(
        text, date=date, time=time, type=type_, importance=importance, confidence=0.9,
        provenance=Provenance(path="", project=project, agent=agent),
    )  # fmt: skip


@pytest.fixture
def memory(tmp_path: Path) -> MemoryStore:
    """Five observations over three days, two projects, two agents, and a reflections file."""
    store = MemoryStore(tmp_path / "memory").ensure()
    store.add_observations([
        observation("Chose PostgreSQL over SQLite for concurrent writes", "2026-11-24", "10:05",
                    type_="decision", importance=0.9),
        observation("Redis workers need their own database number", "2026-11-26", "14:30",
                    type_="lesson", importance=0.7),
        observation("User prefers small commits", "2026-11-26", "16:45", type_="preference",
                    importance=0.75, agent="codex"),
        observation("Release Atlas 1.0 on 2026-12-05", "2026-11-28", "10:15", type_="decision",
                    importance=0.85, project="billing"),
        observation("Ran the test suite", "2026-11-28", "11:40", type_="event", importance=0.2),
    ])  # fmt: skip
    (store.home / "reflections.md").write_text(
        "# Reflections\n\n## Key Facts\n\n- Atlas uses PostgreSQL [[projects/atlas]]\n\n"
        "## Preferences\n\n- Small commits\n",
        encoding="utf-8",
    )
    return store


@pytest.fixture
def guard() -> Guard:
    """This run's secrets."""
    return Guard(PORT)


@pytest.fixture
def client(memory: MemoryStore, guard: Guard) -> Iterator[TestClient]:
    """A client of the viewer over ``memory``, already holding the run's cookie."""
    app = create_app(memory, port=PORT, guard=guard)
    with TestClient(app, base_url=BASE) as test_client:
        test_client.cookies.set(guard.cookie, guard.token)
        yield test_client
    app.state.viewer.index.close()


@pytest.fixture
def anonymous(memory: MemoryStore, guard: Guard) -> Iterator[TestClient]:
    """A client of the same viewer without the cookie."""
    app = create_app(memory, port=PORT, guard=guard)
    with TestClient(app, base_url=BASE) as test_client:
        yield test_client
    app.state.viewer.index.close()

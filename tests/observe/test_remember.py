"""``remember``: explicit observations, redacted, floored and de-duplicated like observed ones."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.errors import UsageError
from obsmem.memory.store import MemoryStore
from obsmem.observe.remember import remember
from obsmem.search.recall import show

KEY = "ghp_" + "A1b2C3d4" * 5


def test_remember_adds_an_observation_with_explicit_provenance(store: MemoryStore) -> None:
    done = remember(
        store, "The staging database lives on db2.internal", type="fact", importance=0.6,
        agent="mcp", project="atlas", date="2026-04-01", time="10:30",
    )  # fmt: skip
    assert done.added and done.duplicate_of is None
    text = store.observations_path.read_text(encoding="utf-8")
    assert "## 2026-04-01" in text
    assert (
        f"10:30 [fact|c=0.90|i=0.60] The staging database lives on db2.internal ^{done.id}" in text
    )
    entry = show(store, done.id)
    assert entry["provenance"]["agent"] == "mcp"
    assert entry["provenance"]["project"] == "atlas"
    assert entry["provenance"]["source_path"] is None
    assert entry["excerpt"]["note"] == "added explicitly, not from a transcript"


def test_remember_twice_or_nearly_the_same_adds_once(store: MemoryStore) -> None:
    first = remember(store, "Prefers tabs over spaces in Go code", type="preference",
                     importance=0.7)  # fmt: skip
    again = remember(store, "Prefers tabs over spaces in Go code", type="preference",
                     importance=0.7)  # fmt: skip
    similar = remember(store, "prefers tabs over spaces in  Go code.", type="preference",
                       importance=0.5)  # fmt: skip
    assert first.added
    assert not again.added and again.duplicate_of == first.id
    assert not similar.added and similar.duplicate_of == first.id
    assert len(store.read_observations().observations) == 1


def test_remember_redacts_secrets_before_writing(store: MemoryStore) -> None:
    done = remember(store, f"The CI uses the token {KEY} for releases", type="fact",
                    importance=0.5)  # fmt: skip
    assert done.added and KEY not in done.text and "[REDACTED:github]" in done.text
    assert KEY not in store.observations_path.read_text(encoding="utf-8")


def test_remember_applies_importance_floors(store: MemoryStore) -> None:
    done = remember(store, "Deployed version 3.1 to production", type="event", importance=0.2)
    assert done.importance >= 0.8 and done.priority == "🔴"


@pytest.mark.parametrize(
    ("text", "kind", "importance", "message"),
    [
        ("   ", "fact", 0.5, "empty"),
        ("x" * 2001, "fact", 0.5, "at most"),
        ("fine", "mood", 0.5, "unknown type"),
        ("fine", "fact", 1.5, "between 0 and 1"),
    ],
)
def test_remember_rejects_bad_input(
    store: MemoryStore, text: str, kind: str, importance: float, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        remember(store, text, type=kind, importance=importance)
    assert not store.observations_path.exists()


def test_om_remember_command(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_HOME", str(store.home))
    args = ["remember", "Uses", "uv", "for", "Python", "envs", "--type", "preference", "--json"]
    first = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["status"] == "added" and data["text"] == "Uses uv for Python envs"
    again = CliRunner().invoke(cli, args[:-1], catch_exceptions=False)
    assert f"already remembered as {data['id']}" in again.stdout

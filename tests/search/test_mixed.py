"""One search over entries and transcript turns: fusion, covered turns, kinds and filters.

Transcripts are Claude Code lines in the test environment's agent home, read by the offline
observer (``run_observe``), so the turns store and the ledger's provenance are the real ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from obsmem.errors import UsageError
from obsmem.memory.store import MemoryStore
from obsmem.observe.remember import remember
from obsmem.observe.run import run_observe
from obsmem.search.mixed import search_everything
from obsmem.search.recall import Filters
from obsmem.settings import load_settings


def _line(text: str, ts: str, role: str = "user") -> str:
    content: object = text if role == "user" else [{"type": "text", "text": text}]
    record = {
        "type": role,
        "sessionId": "s1",
        "cwd": "/home/dev/atlas",
        "timestamp": ts,
        "message": {"role": role, "content": content},
    }
    return json.dumps(record) + "\n"


def _observe(store: MemoryStore, lines: list[str]) -> Path:
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-dev-atlas"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s1.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    settings = load_settings({**os.environ, "OM_LLM_PROVIDER": "none"})
    run_observe(store, settings, flush=True, provider=None)
    return path


def _delete_by_hand(store: MemoryStore, words: str) -> None:
    """A line the observer wrote and the user then deleted: only the turn says it now."""
    memory = store.home / "observations.md"
    lines = memory.read_text(encoding="utf-8").splitlines(keepends=True)
    memory.write_text("".join(x for x in lines if words not in x), encoding="utf-8")


@pytest.fixture
def observed(store: MemoryStore) -> Path:
    return _observe(
        store,
        [
            # A request: the offline observer keeps it, so its turn is covered.
            _line("Please migrate the billing service to PostgreSQL", "2026-03-01T10:00:00Z"),
            _line(
                "Looking around first: the staging box runs an old kernel for the pelican script",
                "2026-03-01T10:01:00Z",
                role="assistant",
            ),
            _line("ok, go on", "2026-03-01T10:02:00Z"),
            _line(
                "Done: the billing service now uses PostgreSQL.",
                "2026-03-01T10:03:00Z",
                role="assistant",
            ),
        ],
    )


def test_a_turn_no_observation_kept_is_found_and_names_its_source(
    store: MemoryStore, observed: Path
) -> None:
    _delete_by_hand(store, "old kernel")
    hits = search_everything(store, "staging kernel pelican")
    turns = [hit for hit in hits if hit["kind"] == "turn"]
    assert len(turns) == 1
    turn = turns[0]
    assert "old kernel" in turn["text"]
    assert turn["provenance"]["source_path"] == str(observed)
    assert turn["provenance"]["session"] == "s1"
    assert turn["date"] == "2026-03-01"
    assert turn["covered_by"] is None


def test_an_observation_outranks_the_turn_it_was_made_from(
    store: MemoryStore, observed: Path
) -> None:
    hits = search_everything(store, "billing PostgreSQL")
    assert hits, "the request was observed and kept as a turn"
    assert hits[0]["kind"] == "observation"
    # The bare turn the observation stands for is not listed a second time.
    assert all(hit["kind"] != "turn" for hit in hits)


def test_a_covered_turn_names_its_observation_when_that_is_not_listed(
    store: MemoryStore, observed: Path
) -> None:
    entries = search_everything(store, "migrate billing PostgreSQL", kinds=["observation"])
    request = next(hit for hit in entries if "Please migrate" in hit["text"])
    turns = search_everything(store, "migrate billing PostgreSQL", kinds=["turn"])
    assert {hit["kind"] for hit in turns} == {"turn"}
    asked = next(hit for hit in turns if hit["text"].startswith("Please migrate"))
    assert asked["provenance"]["line_start"] == 1
    assert asked["covered_by"] == request["id"]


def test_kinds_pick_what_is_searched(store: MemoryStore, observed: Path) -> None:
    _delete_by_hand(store, "old kernel")
    remember(store, "The pelican mascot is drawn by Ana", type="fact", importance=0.6)
    found = {hit["kind"] for hit in search_everything(store, "pelican")}
    assert {"observation", "turn"} <= found
    entries = search_everything(store, "pelican", kinds=["observation", "reflection"])
    assert "observation" in {hit["kind"] for hit in entries}
    assert "turn" not in {hit["kind"] for hit in entries}
    only = {hit["kind"] for hit in search_everything(store, "pelican", kinds=["observation"])}
    assert only == {"observation"}
    assert {hit["kind"] for hit in search_everything(store, "pelican", kinds=["turn"])} == {"turn"}
    derived = search_everything(store, "pelican", kinds=["reflection"])
    assert {hit["kind"] for hit in derived} <= {"reflection", "profile", "active", "vault"}


def test_entry_only_filters_leave_turns_out_instead_of_failing(
    store: MemoryStore, observed: Path
) -> None:
    _delete_by_hand(store, "old kernel")
    assert any(hit["kind"] == "turn" for hit in search_everything(store, "staging kernel"))
    hits = search_everything(store, "staging kernel pelican", filters=Filters(type="decision"))
    assert all(hit["kind"] != "turn" for hit in hits)
    dated = search_everything(store, "staging kernel pelican", filters=Filters(since="2026-03-02"))
    assert dated == []


def test_ranks_and_scores_are_of_the_fused_list(store: MemoryStore, observed: Path) -> None:
    _delete_by_hand(store, "old kernel")
    remember(store, "The pelican script lives in ops/deploy.sh", type="fact", importance=0.6)
    hits = search_everything(store, "pelican script", limit=20)
    assert [hit["rank"] for hit in hits] == list(range(1, len(hits) + 1))
    scores = [hit["score"] for hit in hits]
    assert all(score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)
    assert "turn" in {hit["kind"] for hit in hits}
    assert len(search_everything(store, "pelican script", limit=1)) == 1


@pytest.mark.parametrize("kinds", [["turns"], []])
def test_unknown_or_no_kind_is_a_usage_error(store: MemoryStore, kinds: list[str]) -> None:
    with pytest.raises(UsageError):
        search_everything(store, "anything", kinds=kinds)


def test_turns_that_state_the_asked_form_rise_among_turns(store: MemoryStore) -> None:
    _observe(
        store,
        [
            _line(
                "The canary deploy of the gateway is flaky, the canary gateway deploy",
                "2026-03-02T09:00:00Z",
            ),
            _line(
                "I reran the canary deploy of the gateway yesterday and it passed",
                "2026-03-02T09:01:00Z",
                role="assistant",
            ),
        ],
    )
    question = "When did the canary deploy of the gateway pass?"
    off = load_settings({"OM_SEARCH_ANSWER_FORM_BOOST": "0"})
    plain = search_everything(store, question, kinds=["turn"], settings=off)
    # Without the boost the turn repeating the words ranks first.
    assert plain[0]["text"].startswith("The canary deploy of the gateway is flaky")
    hits = search_everything(store, question, kinds=["turn"], settings=load_settings({}))
    assert hits[0]["text"] == "I reran the canary deploy of the gateway yesterday and it passed"

"""Citations: full entries by id, source excerpts (bounded, redacted), timelines, filters."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.errors import NotFound, UsageError
from obsmem.index.db import remove_index_files
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search.excerpt import MAX_LINE_CHARS, MAX_LINES
from obsmem.search.recall import (
    Filters,
    KeptIndex,
    get_entries,
    search_entries,
    show,
    timeline,
)

SECRET = "sk-ant-api03-" + "Q" * 40 + "xyz"
PASSWORD = "hunter2-very-secret"


def write_transcript(path: Path, lines: list[str]) -> list[int]:
    """Write ``lines`` and return the byte offset where each one starts."""
    offsets, data = [], b""
    for line in lines:
        offsets.append(len(data))
        data += line.encode("utf-8") + b"\n"
    path.write_bytes(data)
    return offsets


def transcript_lines() -> list[str]:
    return [
        json.dumps({"type": "user", "message": {"content": "set up the database"}}),
        json.dumps({"type": "user", "message": {"content": f"my key is {SECRET} keep it"}}),
        # A password whose quotes are JSON-escaped inside the encoded line.
        json.dumps({"type": "tool", "output": f'export DB_PASSWORD="{PASSWORD}"'}),
        json.dumps({"type": "assistant", "message": {"content": "Chose PostgreSQL"}}),
    ]


@pytest.fixture
def cited(store: MemoryStore, tmp_path: Path) -> tuple[MemoryStore, str, Path]:
    """A store with one observation whose provenance is lines 2-3 of a transcript."""
    transcript = tmp_path / "session.jsonl"
    lines = transcript_lines()
    offsets = write_transcript(transcript, lines)
    prov = Provenance(
        path=str(transcript), line_start=2, line_end=3, session="s1", agent="claude",
        project="atlas", byte_start=offsets[1], byte_end=offsets[3],
    )  # fmt: skip
    obs = new_observation(
        "Chose PostgreSQL over SQLite for concurrent writes", date="2026-02-10", time="14:00",
        type="decision", importance=0.9, provenance=prov,
    )  # fmt: skip
    store.add_observations([obs])
    return store, obs.id, transcript


def test_show_quotes_the_source_lines_with_secrets_redacted(cited: tuple) -> None:
    store, obs_id, transcript = cited
    entry = show(store, obs_id)
    assert entry["id"] == obs_id
    assert entry["citation"].startswith("observations.md:")
    assert entry["provenance"]["source_path"] == str(transcript)
    assert (entry["provenance"]["line_start"], entry["provenance"]["line_end"]) == (2, 3)
    assert entry["provenance"]["agent"] == "claude"
    excerpt = entry["excerpt"]
    assert excerpt["note"] is None
    assert [item["line"] for item in excerpt["lines"]] == [2, 3]
    assert "my key is" in excerpt["lines"][0]["text"]
    dumped = json.dumps(entry)
    assert SECRET not in dumped and SECRET[:20] not in dumped
    assert PASSWORD not in dumped
    assert "REDACTED" in excerpt["lines"][0]["text"]


def test_missing_transcript_gives_a_note(cited: tuple) -> None:
    store, obs_id, transcript = cited
    transcript.unlink()
    excerpt = show(store, obs_id)["excerpt"]
    assert excerpt["lines"] == []
    assert "no longer exists" in excerpt["note"]


def test_changed_transcript_gives_a_note(cited: tuple) -> None:
    store, obs_id, transcript = cited
    # Rewritten with a line in front: the recorded byte offset no longer starts a line.
    write_transcript(transcript, ["x" * 7, *transcript_lines()])
    excerpt = show(store, obs_id)["excerpt"]
    assert excerpt["lines"] == []
    assert "changed" in excerpt["note"]


def test_excerpt_is_bounded(store: MemoryStore, tmp_path: Path) -> None:
    transcript = tmp_path / "long.txt"
    write_transcript(transcript, [f"line {n} " + "y" * 5000 for n in range(1, 101)])
    obs = new_observation(
        "A long session", date="2026-02-10", provenance=Provenance(str(transcript), 1, 100)
    )
    store.add_observations([obs])
    excerpt = show(store, obs.id)["excerpt"]
    assert excerpt["truncated"] is True
    assert 0 < len(excerpt["lines"]) <= MAX_LINES
    assert all(len(item["text"]) <= MAX_LINE_CHARS for item in excerpt["lines"])
    assert sum(len(item["text"]) for item in excerpt["lines"]) <= 8 * 1024


def test_show_unknown_id_raises_not_found(cited: tuple) -> None:
    store, _, _ = cited
    with pytest.raises(NotFound, match="nope"):
        show(store, "nope")


def test_get_entries_keeps_order_and_skips_unknown(cited: tuple) -> None:
    store, obs_id, _ = cited
    other = new_observation("Prefers pytest fixtures", date="2026-02-11", type="preference")
    store.add_observations([other])
    got = get_entries(store, [other.id, "unknown", obs_id])
    assert [e["id"] for e in got] == [other.id, obs_id]
    assert got[0]["provenance"] is None
    assert got[1]["type"] == "decision" and got[1]["importance"] == 0.9
    with pytest.raises(UsageError):
        get_entries(store, [f"id{n}" for n in range(101)])


def add_days(store: MemoryStore) -> dict[str, str]:
    ids = {}
    for day, time, text in [
        ("2026-03-05", "09:00", "Started the billing service"),
        ("2026-03-01", "10:00", "Set up the repository"),
        ("2026-03-03", "16:00", "Fixed the flaky login test"),
        ("2026-03-03", "08:00", "Reviewed the schema migration"),
        ("2026-03-20", "12:00", "Released version 2.0"),
    ]:
        obs = new_observation(text, date=day, time=time, type="event", importance=0.5)
        store.add_observations([obs])
        ids[text] = obs.id
    return ids


def test_timeline_is_in_time_order_within_the_window(store: MemoryStore) -> None:
    ids = add_days(store)
    result = timeline(store, around_date="2026-03-03", days=2)
    assert (result["since"], result["until"]) == ("2026-03-01", "2026-03-05")
    assert [e["text"] for e in result["entries"]] == [
        "Set up the repository",
        "Reviewed the schema migration",
        "Fixed the flaky login test",
        "Started the billing service",
    ]
    around = timeline(store, around_id=ids["Released version 2.0"], days=1)
    assert [e["text"] for e in around["entries"]] == ["Released version 2.0"]


def test_timeline_limit_keeps_entries_near_the_anchor(store: MemoryStore) -> None:
    ids = add_days(store)
    result = timeline(store, around_id=ids["Fixed the flaky login test"], days=5, limit=2)
    assert result["truncated"] is True
    texts = [e["text"] for e in result["entries"]]
    assert "Fixed the flaky login test" in texts and len(texts) == 2
    with pytest.raises(UsageError):
        timeline(store, around_date="2026-03-03", around_id="x")
    with pytest.raises(UsageError):
        timeline(store, around_date="March 3")
    with pytest.raises(NotFound):
        timeline(store, around_id="nothing")


def test_search_filters_apply_inside_the_query(cited: tuple) -> None:
    store, obs_id, _ = cited
    store.add_observations(
        [
            new_observation("PostgreSQL backups run nightly", date="2026-01-05", type="fact",
                            importance=0.3),
            new_observation("PostgreSQL pool size is 20", date="2026-02-20", type="fact",
                            importance=0.6),
        ]
    )  # fmt: skip
    everything = search_entries(store, "postgresql")
    assert len(everything) == 3 and everything[0]["rank"] == 1
    assert [e["id"] for e in search_entries(store, "postgresql", filters=Filters(agent="claude"))
            ] == [obs_id]  # fmt: skip
    assert [e["id"] for e in search_entries(store, "postgresql", filters=Filters(project="atlas"))
            ] == [obs_id]  # fmt: skip
    dated = search_entries(store, "postgresql", filters=Filters(since="2026-02-01",
                                                                until="2026-02-15"))  # fmt: skip
    assert [e["id"] for e in dated] == [obs_id]
    facts = search_entries(store, "postgresql", filters=Filters(type="fact", min_importance=0.5))
    assert [e["text"] for e in facts] == ["PostgreSQL pool size is 20"]
    with pytest.raises(UsageError, match="since"):
        search_entries(store, "x", filters=Filters(since="yesterday"))
    with pytest.raises(UsageError, match="type"):
        search_entries(store, "x", filters=Filters(type="mood"))


def test_om_show_prints_entry_and_excerpt(cited: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    store, obs_id, transcript = cited
    monkeypatch.setenv("OM_HOME", str(store.home))
    result = CliRunner().invoke(cli, ["show", obs_id], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Chose PostgreSQL over SQLite" in result.stdout
    assert f"source: {transcript}:2-3" in result.stdout
    assert SECRET not in result.stdout and PASSWORD not in result.stdout
    as_json = CliRunner().invoke(cli, ["show", obs_id, "--json"], catch_exceptions=False)
    assert json.loads(as_json.stdout)["excerpt"]["lines"][0]["line"] == 2
    missing = CliRunner().invoke(cli, ["show", "nope"])
    assert missing.exit_code == 2 and "no memory entry" in missing.stderr


def test_kept_index_keeps_one_connection_across_calls_and_threads(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obsmem.search import recall

    opened: list[Path] = []
    real_open = recall.open_index

    def counting_open(path: Path) -> Any:
        opened.append(path)
        return real_open(path)

    monkeypatch.setattr(recall, "open_index", counting_open)
    store.add_observations([new_observation("Chose PostgreSQL for billing", date="2026-02-10")])
    kept = KeptIndex(store.index_path)
    try:
        assert search_entries(store, "postgresql", index=kept)
        # A call from another thread runs on the same connection (on the kept one's thread).
        with ThreadPoolExecutor(max_workers=1) as other:
            assert other.submit(search_entries, store, "billing", index=kept).result()
        assert len(opened) == 1
        # A line written meanwhile is found: each call still refreshes the index first.
        store.add_observations([new_observation("Redis holds the job queue", date="2026-02-11")])
        assert search_entries(store, "redis", index=kept)[0]["text"] == "Redis holds the job queue"
        assert len(opened) == 1
        # The index file deleted (or replaced by a repair): a new connection to the new file.
        remove_index_files(store.index_path)
        assert search_entries(store, "redis", index=kept)
        assert search_entries(store, "redis", index=kept)
        assert len(opened) == 2
    finally:
        kept.close()

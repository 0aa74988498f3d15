"""Preparing profile.md, active.md and context.json: generated blocks only, nothing else moves."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from obsmem.context.prepare import BEGIN, END, prepare_context, replace_block
from obsmem.demo import prepare
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation


def test_replace_block_keeps_every_other_line() -> None:
    original = b"# Profile\r\n\r\nHand-written line\r\nno newline at end"
    once = replace_block(original, ["- generated"], "Profile")
    assert once.startswith(b"# Profile\r\n\r\nHand-written line\r\nno newline at end\r\n")
    assert BEGIN.encode() in once and b"- generated\r\n" in once and END.encode() in once
    twice = replace_block(once + b"after the block\r\n", ["- new"], "Profile")
    assert b"- generated" not in twice and b"- new\r\n" in twice
    assert twice.endswith(END.encode() + b"\r\nafter the block\r\n")
    assert replace_block(b"", ["- x"], "Active").startswith(b"# Active\n\n" + BEGIN.encode())


def test_prepare_from_sample_memory_is_idempotent(tmp_path: Path) -> None:
    store = prepare(tmp_path / "mem").store
    hand = (store.home / "profile.md").read_bytes()
    first = prepare_context(store, today=date(2026, 11, 29))
    assert set(first.written) == {"profile.md", "active.md", "context.json"}
    profile = (store.home / "profile.md").read_bytes()
    assert profile.startswith(hand)  # the hand-written profile is kept as it was
    data = json.loads(store.context_path.read_bytes())
    sections = {e["section"] for e in data["entries"]}
    assert {"About the user", "Active projects", "Open loops", "Recent"} <= sections
    second = prepare_context(store, today=date(2026, 11, 29))
    assert second.written == []
    assert (store.home / "profile.md").read_bytes() == profile


def test_open_loops_and_projects_from_observations(store: MemoryStore) -> None:
    prov = Provenance("/t/s.jsonl", 1, 2, "s", "claude", "atlas")
    store.add_observations([
        new_observation("Will write the migration guide", date="2026-11-28", time="10:00",
                        type="commitment", importance=0.7, provenance=prov),
        new_observation("Shipped the importer", date="2026-11-28", time="11:00", type="milestone",
                        importance=0.9, completed=True, provenance=prov),
        new_observation("Old commitment", date="2026-10-01", type="commitment", importance=0.7),
    ])  # fmt: skip
    prepare_context(store, today=date(2026, 11, 29))
    active = (store.home / "active.md").read_text()
    assert "- **atlas** (last active 2026-11-28)" in active
    assert "Will write the migration guide" in active.split("## Open Loops")[1]
    assert "Old commitment" not in active
    entries = json.loads(store.context_path.read_bytes())["entries"]
    loops = [e for e in entries if e["section"] == "Open loops"]
    assert [e["project"] for e in loops] == ["atlas"] and loops[0]["observed"] is True

"""``obsmem.forget``: a memory removed from every place om keeps it, and kept from coming back.

The demo's Claude Code transcript is observed with the offline rules and reflected, so the
plan "User plans: write the migration guide before the 1.0 release on December 5th." lives
in observations.md, in a reflection line that cites it, on two vault pages, in active.md's open
loops, in context.json, in the index and in the transcript turns of its line.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

import obsmem
from obsmem.demo import prepare
from obsmem.errors import NotFound, UsageError
from obsmem.forgetting import ForgetReport, forget
from obsmem.index.turns import search_turns
from obsmem.memory.atomic import atomic_write
from obsmem.memory.ledger import append_forgotten, forgotten_ids, read_ledger
from obsmem.memory.store import MemoryStore
from obsmem.observe.remember import remember
from obsmem.observe.run import run_observe
from obsmem.reflect.archive import archive_observations
from obsmem.reflect.offline import reflect
from obsmem.search import search
from obsmem.search.indexing import embed_index, reindex
from obsmem.search.recall import get_entries
from obsmem.settings import Settings, load_settings

TARGET = "vv6t2p207j"
TEXT = b"before the 1.0 release on December 5th"  # in the observation and in its transcript turn
REFLECTION = "43csykc63n"  # the reflection line that cites the target
OTHER = "167bnqsyx2"  # another observation, which must stay


@pytest.fixture
def observed(tmp_path: Path) -> tuple[MemoryStore, dict[str, str]]:
    run = prepare(tmp_path / "mem")
    run.store.observations_path.unlink()  # only what the transcripts give, with provenance
    # The sample's hand-written loop says what the target says: the startup context would show
    # that line instead of the target's.
    (run.store.home / "active.md").unlink()
    environ = {**run.environ, "OM_LLM_PROVIDER": "none"}
    settings = load_settings(environ)
    run_observe(run.store, settings, environ=run.environ, flush=True, provider=None)
    reflect(run.store, settings, provider=None)
    search(run.store, "release", settings=settings)  # the index is up to date
    return run.store, environ


def settings_of(environ: dict[str, str]) -> Settings:
    return load_settings(environ)


def holding(store: MemoryStore, needle: bytes) -> list[str]:
    """Every file under the memory directory (state, index and turns included) holding it."""
    return sorted(
        store.relative(p) for p in store.home.rglob("*") if p.is_file() and needle in p.read_bytes()
    )


def snapshot(store: MemoryStore) -> dict[str, bytes]:
    """Every file's bytes but the index's: a search brings the index up to date (derived data)
    whoever runs it, and the dry run of a query searches."""
    return {
        store.relative(p): p.read_bytes()
        for p in sorted(store.home.rglob("*"))
        if p.is_file() and not p.name.startswith(store.index_path.name)
    }


def turns_saying(store: MemoryStore, text: bytes) -> list[str]:
    """The kept transcript turns whose text holds ``text``."""
    hits = search_turns(store, text.decode(), limit=100)
    return [hit["citation"] for hit in hits if text.decode() in hit["text"]]


def test_forget_removes_the_memory_from_every_place(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    before = holding(store, TEXT)
    # It really is everywhere: memory files, derived files, index and turns.
    for place in ("observations.md", "reflections.md", "active.md", "vault/commitments.md",
                  "vault/projects/atlas.md", ".om/context.json", ".om/index.sqlite3",
                  ".om/turns.sqlite3"):  # fmt: skip
        assert place in before
    assert turns_saying(store, TEXT)

    report = forget(store, [TARGET])

    assert holding(store, TEXT) == []
    assert report.ids == [TARGET]
    assert {line.file for line in report.lines} >= {
        "observations.md",
        "reflections.md",
        "active.md",
        "vault/commitments.md",
        "vault/projects/atlas.md",
    }
    assert REFLECTION in {line.id for line in report.lines}
    assert report.turns == 1 and report.index_entries >= 4 and report.tombstones == 1
    assert get_entries(store, [TARGET, REFLECTION]) == []
    assert TARGET not in {h.id for h in search(store, "migration guide release December")}
    assert turns_saying(store, TEXT) == []
    assert "observations.md" in {e["file"] for e in get_entries(store, [OTHER])}  # the rest stays
    context = json.loads((store.state_dir / "context.json").read_bytes())
    assert TARGET not in {entry["id"] for entry in context["entries"]}


def test_the_tombstone_keeps_the_id_and_time_but_never_the_text(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    forget(store, [TARGET])
    records = [json.loads(line) for line in store.ledger_path.read_bytes().splitlines()]
    assert {"id": TARGET, "forgotten": records[-2]["forgotten"]} == records[-2]
    # The turn it came from: a keyed hash of its text, never the text.
    assert set(records[-1]) == {"forgotten", "turn"} and len(records[-1]["turn"]) == 32
    assert TEXT not in store.ledger_path.read_bytes()
    assert TARGET in forgotten_ids(store.ledger_path)
    assert TARGET not in read_ledger(store.ledger_path)[0]


def test_reading_the_transcript_again_does_not_bring_it_back(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, environ = observed
    forget(store, [TARGET])
    store.state_db_path.unlink()  # every transcript is read again from its first byte
    again = run_observe(store, settings_of(environ), environ=environ, flush=True, provider=None)
    assert again.files_read >= 1
    assert TARGET not in store.read_observations().ids()
    assert OTHER in store.read_observations().ids()
    assert holding(store, TEXT) == []
    assert turns_saying(store, TEXT) == []


def test_a_rebuilt_index_does_not_bring_it_back(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, environ = observed
    forget(store, [TARGET])
    reindex(store, settings_of(environ))
    assert get_entries(store, [TARGET]) == []
    assert TARGET not in {h.id for h in search(store, "migration guide December")}
    assert TEXT not in (store.index_path.read_bytes())


def test_dry_run_changes_nothing(observed: tuple[MemoryStore, dict[str, str]]) -> None:
    store, _ = observed
    before = snapshot(store)
    report = forget(store, [TARGET], dry_run=True)
    assert snapshot(store) == before
    assert get_entries(store, [TARGET])
    assert report.dry_run and report.ids == [TARGET] and report.turns == 1
    assert "observations.md" in {line.file for line in report.lines}
    assert report.files == [] and report.tombstones == 0
    query = forget(store, query="migration guide December", dry_run=True)
    assert TARGET in query.ids
    assert snapshot(store) == before


def test_an_unknown_id_is_named_and_nothing_changes(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    before = snapshot(store)
    with pytest.raises(NotFound, match="zzzzzzzzzz"):
        forget(store, [TARGET, "zzzzzzzzzz"])
    assert snapshot(store) == before
    with pytest.raises(UsageError, match="not a memory id"):
        forget(store, ["not an id!"])
    with pytest.raises(UsageError):
        forget(store, [TARGET], query="release")
    assert snapshot(store) == before


def test_ids_are_accepted_as_search_and_show_print_them(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    shown = search(store, "migration guide December")
    assert TARGET in {h.id for h in shown}
    report = forget(store, [f" ^{TARGET.upper()} "])
    assert report.ids == [TARGET]


def test_lines_without_the_id_are_kept_byte_for_byte(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    hand = "- Hand note: the migration guide matters before the 1.0 release on December 5th\n"
    citing = f"- My own summary of the guide plan (see ^{TARGET})\n"
    profile = store.home / "profile.md"
    with store.lock():
        atomic_write(profile, profile.read_bytes() + ("\n## Notes\n\n" + hand + citing).encode())
        obs = store.observations_path
        atomic_write(obs, obs.read_bytes() + hand.encode())
    report = forget(store, [TARGET])
    text = profile.read_text(encoding="utf-8")
    assert hand in text and citing not in text  # a line citing the id goes, one without stays
    assert store.observations_path.read_text(encoding="utf-8").endswith(hand)
    assert "profile.md" in {line.file for line in report.lines}


def test_forgetting_a_reflection_line_forgets_the_observations_it_cites(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    report = forget(store, [REFLECTION])
    assert report.ids == [REFLECTION, TARGET]
    assert holding(store, TEXT) == []
    assert TARGET in forgotten_ids(store.ledger_path)


def test_an_archived_observation_is_forgotten_in_its_archive_month(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, environ = observed
    # Every day before the memory's last day of activity goes to the archive.
    settings = settings_of({**environ, "OM_ARCHIVE_AFTER_DAYS": "0"})
    archive_observations(store, settings, today=date(2027, 6, 1))
    month = store.archive_dir / "observations" / "2026-11.md"
    assert TEXT in month.read_bytes()
    others = store.read_observations(month).ids() - {TARGET}
    assert others
    report = forget(store, [TARGET])
    assert "archive/observations/2026-11.md" in report.files
    assert TEXT not in month.read_bytes()
    assert store.read_observations(month).ids() == others


def test_query_forgets_only_the_hits_holding_every_word(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    report = forget(store, query="migration guide December")
    assert TARGET in report.ids
    assert "rrqhv37vpv" not in report.ids  # "I'll write the migration guide myself": no December
    assert "rrqhv37vpv" in store.read_observations().ids()
    assert holding(store, TEXT) == []
    nothing = forget(store, query="zebra unicorn")
    assert nothing.empty and nothing.ids == []


def test_running_it_again_finishes_an_interrupted_forget(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    append_forgotten(store.ledger_path, [TARGET])  # killed right after the tombstone
    report = forget(store, [TARGET])
    assert report.ids == [TARGET] and report.tombstones == 0
    assert holding(store, TEXT) == []
    again = forget(store, [TARGET])
    assert again.already_forgotten == [TARGET] and again.ids == [] and not again.empty


def test_remembering_it_on_purpose_brings_it_back(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    (obs,) = [o for o in store.read_observations().observations if o.id == TARGET]
    forget(store, [TARGET])
    done = remember(store, obs.text, type="commitment", importance=0.8, date=obs.date,
                    time=obs.time)  # fmt: skip
    assert done.added and done.id == TARGET
    assert TARGET not in forgotten_ids(store.ledger_path)


def test_vectors_of_the_forgotten_text_are_removed(
    observed: tuple[MemoryStore, dict[str, str]], hybrid_env: dict[str, str]
) -> None:
    import sqlite3

    store, environ = observed
    settings = load_settings({**environ, **hybrid_env})
    embed_index(store, settings)

    def vectors() -> int:
        with sqlite3.connect(store.index_path) as conn:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    count = vectors()
    report = forget(store, [TARGET], settings=settings)
    # The observation and its reflection line had one vector each (vault copies have none).
    assert report.vectors == 2
    assert vectors() == count - 2


def test_the_library_exports_forget() -> None:
    assert obsmem.forget is forget
    assert obsmem.ForgetReport is ForgetReport
    assert "forget" in obsmem.__all__


def test_the_words_leave_the_index_file_not_only_its_results(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    word = b"quokkamarmalade"
    done = remember(store, "The staging passphrase hint is quokkamarmalade", type="fact",
                    importance=0.6)  # fmt: skip
    assert [h.id for h in search(store, word.decode())] == [done.id]
    assert word in store.index_path.read_bytes()
    forget(store, [done.id])
    # A full-text delete only marks the word's postings dead until the segments are merged.
    assert holding(store, word) == []


def test_claude_code_auto_memory_is_refused_and_left_alone(
    observed: tuple[MemoryStore, dict[str, str]], tmp_path: Path
) -> None:
    from obsmem.sources.claude_memory import KIND

    store, _ = observed
    notes = tmp_path / "claude-memory" / "notes.md"
    notes.parent.mkdir()
    notes.write_text("# Notes\n\n- The walrus cluster hosts staging\n", encoding="utf-8")
    store.set_external_files({str(notes): {"kind": KIND, "sha256": ""}})
    (hit,) = [h for h in search(store, "walrus cluster staging") if h.kind == KIND]
    before = notes.read_bytes()
    with pytest.raises(UsageError, match="does not write"):
        forget(store, [hit.id])
    listed = forget(store, query="walrus cluster", dry_run=True)
    assert listed.ids == [] and [s["id"] for s in listed.skipped] == [hit.id]
    assert notes.read_bytes() == before


def _parsed_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import obsmem.forgetting as module

    parsed: list[str] = []
    real = module._parse_file

    def spy(path: Path, rel: str, kind: str, data: bytes):  # type: ignore[no-untyped-def]
        parsed.append(rel)
        return real(path, rel, kind, data)

    monkeypatch.setattr(module, "_parse_file", spy)
    return parsed


def test_only_the_files_that_can_hold_the_ids_are_parsed(
    observed: tuple[MemoryStore, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = observed
    files = {store.relative(p): p.read_bytes() for p in store.memory_files()}
    holders = {rel for rel, data in files.items() if TARGET.encode() in data}
    top = {rel for rel in files if "/" not in rel and rel != "observations.md"}
    assert set(files) - holders - top  # pages without the id exist, and are not read
    parsed = _parsed_files(monkeypatch)
    report = forget(store, [REFLECTION])  # the reflection line, then the observation it cites
    assert set(parsed) == holders | top
    assert len(parsed) == len(set(parsed))  # each file parsed once
    assert report.ids == [REFLECTION, TARGET] and holding(store, TEXT) == []


def test_without_the_index_every_file_is_read_and_the_plan_is_the_same(
    observed: tuple[MemoryStore, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import obsmem.forgetting as module

    store, _ = observed
    with_index = forget(store, [REFLECTION], dry_run=True)
    parsed = _parsed_files(monkeypatch)
    monkeypatch.setattr(module, "_index_places", lambda store, ids: None)
    without = forget(store, [REFLECTION], dry_run=True)
    assert set(parsed) == {store.relative(p) for p in store.memory_files()}
    assert without.to_dict() == with_index.to_dict()


def test_a_line_without_a_block_id_is_found_through_the_index(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, _ = observed
    line = "- 🟡 10:00 A line the original tool wrote, pinned without any block id\n"
    month = store.archive_dir / "observations" / "2026-10.md"
    with store.lock():
        atomic_write(month, f"# Observations\n\n## 2026-10-02\n\n{line}".encode())
    entry_id = next(o.id for o in store.read_observations(month).observations)
    assert entry_id.encode() not in month.read_bytes()  # known only by its text
    report = forget(store, [entry_id])
    assert report.files == ["archive/observations/2026-10.md"]
    assert line.encode() not in month.read_bytes()


def _session_saying(claude: Path, text: str) -> None:
    """A Claude Code session of today whose one request is ``text``: the offline rules observe it
    and put it in the day's Current Context too (the session's active task)."""
    folder = claude / "projects" / "-home-dev-proj"
    folder.mkdir(parents=True)
    moment = date.today().isoformat() + "T09:00:00Z"
    records = [
        {"type": "user", "message": {"role": "user", "content": text}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Noted."}]}},
    ]  # fmt: skip
    with (folder / "s.jsonl").open("w", encoding="utf-8") as out:
        for n, record in enumerate(records):
            record |= {"uuid": f"u{n}", "sessionId": "s1", "cwd": "/home/dev/proj",
                       "timestamp": moment}  # fmt: skip
            out.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("by", ["id", "query"])
def test_the_current_context_quoting_a_forgotten_memory_loses_that_bullet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by: str
) -> None:
    secret = "we will use zebrafish-cobalt as the queue broker for billing"
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    _session_saying(claude, f"I decided: {secret}.")
    store = MemoryStore(tmp_path / "mem").ensure()
    settings = load_settings({"OM_LLM_PROVIDER": "none"})
    run_observe(store, settings, flush=True, provider=None)
    (target,) = [o.id for o in store.read_observations().observations if secret in o.text]
    assert secret in store.observations_path.read_text(encoding="utf-8").split("### Obs")[0]

    report = forget(store, [target]) if by == "id" else forget(store, query="zebrafish cobalt")

    assert target in report.ids
    # Not in memory, nor in the prepared startup context (context.json, context.rendered).
    assert holding(store, b"zebrafish") == []
    assert "### Current Context" in store.observations_path.read_text(encoding="utf-8")


def test_a_plan_forgets_exactly_the_turns_it_listed(
    observed: tuple[MemoryStore, dict[str, str]],
) -> None:
    from obsmem.index.turns import TurnStore
    from obsmem.sources.model import Turn

    store, _ = observed

    def said(text: str, line: int) -> None:
        with TurnStore(store.turns_path) as turns:
            turns.add([Turn("assistant", text, "2026-11-20T09:00:00Z", "s9", "claude", None,
                            "/t/other.jsonl", line, line, 0, 1)])  # fmt: skip

    said("The okapi-saffron key rotates on Fridays.", 1)
    plan = forget(store, query="okapi saffron", dry_run=True)
    assert plan.ids == [] and [t.line_start for t in plan.raw_turns] == [1] and not plan.empty
    said("Again: okapi-saffron.", 2)  # after the plan: not what the user agreed to
    with pytest.raises(UsageError):
        forget(store, ["vv6t2p207j"], plan=plan)
    done = forget(store, plan=plan)
    assert done.turns == 1 and [t.line_start for t in done.raw_turns] == [1]
    assert turns_saying(store, b"okapi-saffron") == ["/t/other.jsonl:2"]

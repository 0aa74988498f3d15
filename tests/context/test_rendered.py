"""The startup context rendered ahead: printed only when it is exactly what the full path prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem import paths
from obsmem.context import rendered
from obsmem.context.prepare import prepare_context
from obsmem.context.rendered import AGENTS, Request, prepared, request, stdin_cwd
from obsmem.context.startup import run_context
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation

DAY = date(2026, 12, 1)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[date]:
    """The local date both paths see (``time.localtime``), settable: ``clock[0] = ...``."""
    now = [DAY]

    def localtime(*_: object) -> time.struct_time:
        d = now[0]
        return time.struct_time((d.year, d.month, d.day, 12, 0, 0, d.weekday(), 1, -1))

    monkeypatch.setattr(time, "localtime", localtime)
    return now


def observe(store: MemoryStore, project: str, *lines: tuple[str, str, str, float]) -> None:
    prov = Provenance(f"/t/{project}.jsonl", 1, 2, "s", "claude", project)
    store.add_observations(
        [new_observation(text, date=day, time="10:00", type=kind, importance=imp, provenance=prov)
         for text, day, kind, imp in lines],
        context={lines[-1][1]: {"Active task": f"Working on {project}",
                                "Suggested next": f"Release {project}"}},
    )  # fmt: skip


def memory(store: MemoryStore) -> MemoryStore:
    """Three projects, over several days, in every section; one line names Redis."""
    observe(
        store,
        "atlas",
        ("Chose PostgreSQL over SQLite for the task API", "2026-11-20", "decision", 0.9),
        ("Will write the migration guide by 2026-12-05", "2026-11-28", "commitment", 0.8),
        ("CI green again after isolating Redis", "2026-11-30", "milestone", 0.7),
    )
    observe(
        store,
        "hermes-bot",
        ("Bot commands now answer in under a second", "2026-11-25", "milestone", 0.6),
        ("User prefers small commits whose messages explain why", "2026-11-26", "preference", 0.9),
    )
    observe(store, "ledger",
            ("Ledger exports invoices as CSV", "2026-10-02", "fact", 0.5),
            ("Decided to keep amounts in cents", "2026-10-03", "decision", 0.8))  # fmt: skip
    return store


def env(store: MemoryStore) -> dict[str, str]:
    return {"OM_HOME": str(store.home)}


def both(store: MemoryStore, agent: str, cwd: str, budget: int = 6000) -> tuple[str | None, str]:
    """What was rendered ahead (None: not held), and what the full path prints."""
    asked = Request(agent, cwd, budget)
    return prepared(asked, env(store)), run_context(agent, cwd=cwd, budget=budget,
                                                    environ=env(store))  # fmt: skip


def directory(tmp_path: Path, name: str) -> str:
    path = tmp_path / "work" / name
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


@pytest.mark.parametrize("agent", AGENTS)
def test_each_request_held_is_what_the_full_path_prints(
    store: MemoryStore, tmp_path: Path, clock: list[date], agent: str
) -> None:
    prepare_context(memory(store), today=DAY)
    held = {name: both(store, agent, directory(tmp_path, name))
            for name in ("atlas", "hermes-bot", "ledger", "scratch")}  # fmt: skip
    held["no project"] = both(store, agent, "/")
    for name, (ahead, full) in held.items():
        assert ahead == full, name
    assert "Chose PostgreSQL" in str(held["atlas"][0]) and "[atlas]" not in str(held["atlas"][0])
    assert "[atlas]" in str(held["scratch"][0]) and "[atlas]" in str(held["hermes-bot"][0])
    # A name memory knows in another case, or one its lines name (the ranking favours those
    # lines): the full path's, never a near miss.
    for name in ("Atlas", "redis"):
        ahead, full = both(store, agent, directory(tmp_path, name))
        assert ahead is None and "What om remembers" in full, name


def test_another_day_or_budget_is_not_held(
    store: MemoryStore, tmp_path: Path, clock: list[date]
) -> None:
    prepare_context(memory(store), today=DAY)
    cwd = directory(tmp_path, "atlas")
    ahead, full = both(store, "plain", cwd)
    assert ahead == full and "- yesterday: CI green again" in full
    assert both(store, "plain", cwd, budget=1200)[0] is None
    clock[0] = date(2026, 12, 2)  # relative dates moved at midnight: tomorrow's is there too
    ahead, full = both(store, "plain", cwd)
    assert ahead == full and "- 2 days ago: CI green again" in full
    clock[0] = date(2026, 12, 3)
    ahead, full = both(store, "plain", cwd)
    assert ahead is None and "- 3 days ago: CI green again" in full
    prepare_context(store, today=clock[0])
    assert both(store, "plain", cwd) == (full, full)


def test_hand_edits_reach_both_paths_alike(
    store: MemoryStore, tmp_path: Path, clock: list[date]
) -> None:
    prepare_context(memory(store), today=DAY)
    cwd = directory(tmp_path, "atlas")
    for name, line in (("profile.md", "- Works in Lisbon"), ("active.md", "- Atlas freeze")):
        path = store.home / name
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
        # Not prepared yet: context.json is what both paths read, and it did not change.
        ahead, full = both(store, "claude", cwd)
        assert ahead == full and line[2:] not in full
        prepare_context(store, today=DAY)
        ahead, full = both(store, "claude", cwd)
        assert ahead == full and line[2:] in full


def test_an_empty_memory_is_held_too(store: MemoryStore, tmp_path: Path, clock: list[date]) -> None:
    prepare_context(store, today=DAY)
    for agent in AGENTS:
        ahead, full = both(store, agent, directory(tmp_path, "atlas"))
        assert ahead == full and "Nothing remembered yet." in full


def test_a_changed_or_damaged_file_is_not_used(
    store: MemoryStore, tmp_path: Path, clock: list[date]
) -> None:
    prepare_context(memory(store), today=DAY)
    cwd = directory(tmp_path, "atlas")
    ahead_path = Path(paths.rendered_context_file(env(store)))
    good = ahead_path.read_bytes()
    # context.json changed behind om's back (another om, a restore): its identity moved.
    data = json.loads(store.context_path.read_bytes())
    data["entries"] = [e for e in data["entries"] if "Redis" not in e["text"]]
    store.context_path.write_text(json.dumps(data), encoding="utf-8")
    ahead, full = both(store, "plain", cwd)
    assert ahead is None and "Redis" not in full
    prepare_context(store, today=DAY)
    good = ahead_path.read_bytes()
    assert both(store, "plain", cwd)[0] is not None
    for damaged in (good[:-10], good + b"more", good.replace(b"plain:", b"plain "), b"", b"\xff"):
        ahead_path.write_bytes(damaged)
        assert both(store, "plain", cwd)[0] is None
    ahead_path.unlink()
    assert both(store, "plain", cwd)[0] is None
    ahead_path.write_bytes(good)
    store.context_path.unlink()
    assert both(store, "plain", cwd)[0] is None


def test_a_rewritten_context_json_first_removes_what_was_rendered_from_the_old(
    store: MemoryStore, clock: list[date], monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare_context(memory(store), today=DAY)
    ahead_path = Path(paths.rendered_context_file(env(store)))
    assert ahead_path.is_file()

    def crash(source: Path) -> None:
        raise KeyboardInterrupt  # killed between writing context.json and rendering it

    monkeypatch.setattr("obsmem.context.prepare.render_ahead", crash)
    observe(store, "atlas", ("Moved CI to the new runners", "2026-12-01", "milestone", 0.9))
    with pytest.raises(KeyboardInterrupt):
        prepare_context(store, today=DAY)
    assert "Moved CI" in store.context_path.read_text(encoding="utf-8")
    assert not ahead_path.exists()


def test_request_parses_as_the_command_line_does() -> None:
    asked = request(["--for=codex", "--budget", "6000", "--cwd", "/w/atlas"])
    assert asked is not None
    assert (asked.agent, asked.budget, asked.cwd) == ("codex", 6000, "/w/atlas")
    for argv in (["--help"], ["--for", "vim"], ["--budget", "5"], ["--cwd"], ["-x"]):
        assert request(argv) is None


def _reference_cwd(data: bytes) -> str | None:
    """``stdin_cwd``'s answer for a whole payload, by ``json`` alone (what it did before)."""
    try:
        payload = json.loads(data) if data.strip() else None
    except ValueError:
        return None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    usable = isinstance(cwd, str) and cwd.strip() and "\x00" not in cwd
    return os.path.expanduser(cwd) if usable else None


def _stdin(data: bytes) -> str | None:
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    with os.fdopen(read) as stream:
        return stdin_cwd(stream)


@pytest.mark.parametrize(
    "data",
    [
        b'{"session_id": "s", "cwd": "/home/dev/atlas", "hook_event_name": "SessionStart"}',
        b'{"cwd":"~/atlas"}\n',
        b'{"cwd": "/a", "cwd": "/b"}',
        b'{"cwd": "/a\\"b"}',
        b'{"cwd": "/caf\xc3\xa9"}',
        b'\xef\xbb\xbf{"cwd": "/bom"}',
        b'{"cwd": "/x", "n": 3, "deep": {"cwd": "/y"}}',
        b'{"cwd": "/x"} trailing',
        b'{"cwd": "/x",}',
        b'{"cwd": "/x"',
        b'{"cwd": true}',
        b'{"cwd": "/t\tab"}',
        b"{}",
        b"  ",
    ],
)
def test_stdin_cwd_reads_what_json_reads(data: bytes) -> None:
    assert _stdin(data) == _reference_cwd(data)


_VALUES = st.one_of(st.text(max_size=12), st.booleans(), st.none(), st.integers(),
                    st.lists(st.integers(), max_size=2))  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    payload=st.dictionaries(st.sampled_from(["cwd", "session_id", "source", "c\\wd"]), _VALUES),
    spaced=st.booleans(),
    cut=st.integers(0, 200),
    junk=st.sampled_from(["", " ", "\n", "x", ",", "}", "\\"]),
)
def test_the_hand_reader_agrees_with_json(
    payload: dict[str, object], spaced: bool, cut: int, junk: str
) -> None:
    """Whole, cut short or with a stray character: "done" only where ``json`` accepts the data
    and finds the same ``cwd``, "more" only where ``json`` rejects it."""
    text = json.dumps(
        payload, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":")
    )
    for data in (text, text[:cut], text[:cut] + junk + text[cut:], text + junk):
        raw = data.encode("utf-8")
        state, found = rendered._flat_cwd(raw)
        if state == "done":
            assert json.loads(raw).get("cwd") == found
        elif state == "more":
            with pytest.raises(ValueError):
                json.loads(raw)
        assert _stdin(raw) == _reference_cwd(raw)


def test_a_cwd_holding_a_nul_byte_is_no_directory() -> None:
    # Found by the property test above: expanduser("~\x00") raises ValueError.
    assert _stdin(b'{"cwd": "~\\u0000"}') is None
    assert _stdin(b'{"cwd": "/w/at\\u0000las"}') is None


def test_a_session_start_loads_neither_json_nor_the_full_path(tmp_path: Path) -> None:
    from obsmem.demo import prepare

    home = tmp_path / "mem"
    prepare(home)
    prepare_context(MemoryStore(home, environ={"OM_HOME": str(home)}))
    (tmp_path / "Atlas").mkdir()  # the demo's project, as its directory is named
    code = (
        "import sys; sys.argv = ['om', 'context', '--for', 'claude']; before = set(sys.modules)\n"
        "from obsmem.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in ('json', 're', 'math', 'obsmem.context.startup') "
        "if m in sys.modules and m not in before]\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path / "Atlas")}).encode()
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OM_HOME": str(home)},
                          input=payload, capture_output=True, timeout=60, check=True)  # fmt: skip
    assert "LOADED []" in done.stderr.decode(), done.stderr
    full = run_context("claude", cwd=str(tmp_path / "Atlas"), environ={"OM_HOME": str(home)})
    assert done.stdout.decode() == full + "\n"
    assert "This project (Atlas)" in full

"""Crash safety: SIGKILL ``om observe``, ``om reflect``, ``om reindex`` and the store's writes at
random moments, run them again, and check that nothing acknowledged is lost or duplicated.

The campaign itself is ``crash_harness.Campaign`` (a handful of kills here, 200 and more in the
slow run behind ``make reliability``). The first two tests pin the defects found while building
it, by stopping ``run_observe`` in one process exactly where a kill did harm.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pytest
from crash_corpus import Transcripts, cursor_problems, echo_observer, om_env, snapshot, vocabulary
from crash_harness import Campaign
from fakes.llm_server import FakeLLMServer
from hostile_figures import record

import obsmem.reflect.offline as offline_module
from obsmem.doctor import run_checks
from obsmem.memory.model import Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.run import run_observe
from obsmem.reflect.offline import reflect
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.settings import Settings, load_settings
from obsmem.sources.capture import CaptureRun


class Killed(BaseException):
    """Stands for SIGKILL inside one process: nothing after it runs, no handler catches it."""


def _observe(store: MemoryStore, env: dict[str, str]) -> None:
    run_observe(store, load_settings(env), environ=env, min_new=0)


def test_kill_between_memory_write_and_cursor_move_observes_nothing_twice(
    tmp_path: Path, fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An LLM words the same lines differently each time, so observing them again after such a
    # kill used to write each observation twice, under two ids.
    fake_llm.default = echo_observer(vocabulary(random.Random(1)))
    env = om_env(
        tmp_path,
        OM_LLM_PROVIDER="openai-compatible",
        OM_LLM_BASE_URL=fake_llm.base_url_openai,
        OM_LLM_MODEL="fake",
        OM_OBSERVER_MAX_INPUT_TOKENS="1000",
    )
    store = MemoryStore(tmp_path / "mem", environ=env).ensure()
    transcripts = Transcripts(tmp_path, random.Random(3))
    transcripts.create(1, 1, messages=12)

    def killed(*args: object, **kwargs: object) -> None:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(CaptureRun, "advance", killed)
        with pytest.raises(Killed):
            _observe(store, env)
    assert snapshot(store).tokens, "the first chunk was written before the kill"
    _observe(store, env)
    snap = snapshot(store)
    assert cursor_problems(store, transcripts, snap, final=True) == []
    assert max(snap.tokens.values()) == 1


def test_kill_between_chunks_leaves_the_rest_of_the_file_to_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cursor moved after the first chunk recorded the whole file's size and mtime, so the
    # next run saw the file as unchanged and never read the rest until the file grew.
    env = om_env(tmp_path, OM_OBSERVER_MAX_INPUT_TOKENS="1000")
    store = MemoryStore(tmp_path / "mem", environ=env).ensure()
    transcripts = Transcripts(tmp_path, random.Random(4))
    transcripts.create(1, 1, messages=12)
    real = MemoryStore.add_observations
    calls = {"n": 0}

    def second_write_killed(self: MemoryStore, *args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise Killed
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(MemoryStore, "add_observations", second_write_killed)
        with pytest.raises(Killed):
            _observe(store, env)
    _observe(store, env)
    snap = snapshot(store)
    assert cursor_problems(store, transcripts, snap, final=True) == []
    assert len(snap.tokens) == len(transcripts.messages)


def test_doctor_removes_the_temporary_files_killed_writes_leave(tmp_path: Path) -> None:
    # A write killed between creating its temporary file and renaming it leaves the file in the
    # memory directory; nothing removed them, and a campaign of kills left a few each time.
    env = om_env(tmp_path)
    store = MemoryStore(tmp_path / "mem", environ=env).ensure()
    store.write_file(store.observations_path, b"# Observations\n")
    stray = store.home / ".observations.md.k2x_9qzt.tmp"
    stray.write_bytes(b"# Observ")
    fresh = store.home / "archive" / ".2026-11.md.a1b2c3d4.tmp"
    fresh.parent.mkdir()
    fresh.write_bytes(b"")  # too recent: it may belong to a write in progress
    other = store.home / "notes.tmp"
    other.write_bytes(b"")  # not ours
    old = time.time() - 3600
    os.utime(stray, (old, old))
    os.utime(other, (old, old))
    checks = {c.name: c for c in run_checks(store, env)}
    assert checks["temporary files"].verdict == "repaired"
    assert not stray.exists() and fresh.exists() and other.exists()
    assert {c.name: c for c in run_checks(store, env)}["temporary files"].verdict == "ok"


def test_reflect_killed_after_moving_out_a_line_it_had_just_merged_keeps_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The killed run merged a new citation into a reflection line, moved the line out to
    # archive/reflections/ and died before rewriting reflections.md. The next run recognised
    # moved lines by their exact text, which the merge had changed: the line stayed in both.
    store = MemoryStore(tmp_path / "mem").ensure()
    today = date(2026, 3, 1)
    deploys = "Deploys go out every Tuesday morning"

    def observe(*items: tuple[int, str, float]) -> None:
        store.add_observations(
            new_observation(
                text,
                date=(today - timedelta(days=back)).isoformat(),
                type="preference" if "Aerich" in text else None,
                importance=importance,
                provenance=Provenance(path="/t/s.jsonl"),
            )
            for back, text, importance in items
        )

    def run_reflect(days: int, cap: int, *, killed: bool = False) -> None:
        nonlocal today
        today += timedelta(days=days)
        options = Settings(llm_provider="none", reflections_max_lines=cap)
        if not killed:
            reflect(store, options, today=today)
            return
        real = offline_module.atomic_write

        def write(path: Path, data: bytes) -> None:
            if path.name == "reflections.md":
                raise Killed
            real(path, data)

        with monkeypatch.context() as patch:
            patch.setattr(offline_module, "atomic_write", write)
            with pytest.raises(Killed):
                reflect(store, options, today=today)

    observe(
        (0, "Uses Alembic for database migrations", 0.2),
        (0, "User is a backend developer based in Berlin", 0.2),
    )
    run_reflect(1, 20, killed=True)
    observe((8, f"{deploys} again", 0.2))
    observe(
        (0, "Uses Alembic for database migrations", 0.2),
        (0, "Uses Aerich for database migrations", 0.85),
        (0, "Prefers tabs for indentation", 0.85),
        (0, "User is a backend developer based in Berlin", 0.2),
        (9, deploys, 0.2),
    )
    run_reflect(0, 20)
    observe((8, deploys, 0.2))
    run_reflect(6, 20, killed=True)
    run_reflect(0, 30)
    doc = ReflectionsDoc(store.read_bytes(store.home / "reflections.md"))
    rids = Counter(place.line.rid for place in doc.places())
    for month in (store.home / "archive" / "reflections").glob("*.md"):
        rids.update(store.read_observations(month).ids())
    assert rids and max(rids.values()) == 1, rids


def _campaign(
    root: Path, llm: FakeLLMServer, kills: int, *, observations: int, claude: int, codex: int
) -> None:
    campaign = Campaign(root, observations=observations, claude=claude, codex=codex, llm=llm)
    campaign.setup()
    report = campaign.run(kills, deadline=time.monotonic() + 3 * 3600)
    print(report.summary())
    record("Crash safety", report.summary().replace("\n  ", "; ").split("\n    ")[0])
    assert report.total_kills >= kills
    assert report.violations == [], report.summary()


def test_a_handful_of_kills_lose_and_duplicate_nothing(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    _campaign(tmp_path, fake_llm, 10, observations=600, claude=4, codex=2)


@pytest.mark.slow
def test_two_hundred_kills_lose_and_duplicate_nothing(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    _campaign(tmp_path, fake_llm, 200, observations=3000, claude=30, codex=6)

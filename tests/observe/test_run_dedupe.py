"""``om observe`` writes each observation once, even when the same content comes back after its
day was archived, or as a copy of the transcript, or as the same bytes under a new inode."""

from __future__ import annotations

import os
import shutil
from datetime import date
from pathlib import Path

import pytest

from obsmem.demo import prepare
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.run import run_observe
from obsmem.reflect.archive import archive_observations, archived_ids
from obsmem.settings import Settings, load_settings
from obsmem.sources.select import open_state
from tests.fakes.llm_server import FakeLLMServer


@pytest.fixture
def demo(tmp_path: Path) -> tuple[MemoryStore, dict[str, str]]:
    run = prepare(tmp_path / "mem")
    run.store.observations_path.unlink()
    return run.store, run.environ


def _settings(environ: dict[str, str], **extra: str) -> Settings:
    return load_settings({**environ, "OM_LLM_PROVIDER": "none", **extra})


def _claude_transcript(environ: dict[str, str]) -> Path:
    return next(Path(environ["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl"))


def _all_ids(store: MemoryStore) -> list[str]:
    ids = [o.id for o in store.read_observations().observations]
    folder = store.archive_dir / "observations"
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        ids += [o.id for o in store.read_observations(path).observations]
    return ids


def test_a_copy_of_a_session_after_its_days_were_archived_writes_nothing(
    demo: tuple[MemoryStore, dict[str, str]],
) -> None:
    store, env = demo
    first = run_observe(store, _settings(env), source="claude", environ=env, flush=True)
    assert first.written > 0
    # Days are archived by the memory's own clock: work on a later day moves it on.
    store.add_observations([new_observation("Work on a later day", date="2099-12-31")])
    archive_observations(store, _settings(env), today=date(2100, 1, 1))
    assert archived_ids(store) and len(store.read_observations().observations) == 1
    original = _claude_transcript(env)
    shutil.copy(original, original.with_name("copy-" + original.name))
    again = run_observe(store, _settings(env), source="claude", environ=env, flush=True)
    assert again.files_read == 1 and again.written == 0
    ids = _all_ids(store)
    assert len(ids) == len(set(ids)) == first.written + 1


def test_the_same_bytes_under_a_new_inode_are_not_read_again(
    demo: tuple[MemoryStore, dict[str, str]], fake_llm: FakeLLMServer
) -> None:
    store, env = demo
    llm_env = {
        **env,
        "OM_LLM_PROVIDER": "openai-compatible",
        "OM_LLM_BASE_URL": fake_llm.base_url_openai,
        "OM_LLM_MODEL": "test-model",
    }
    settings = load_settings(llm_env)
    run_observe(store, settings, source="claude", environ=env, flush=True)
    sent = len(fake_llm.completion_requests())
    assert sent > 0
    path = _claude_transcript(env)
    copy = path.with_name(path.name + ".new")
    shutil.copy2(path, copy)
    os.replace(copy, path)  # an atomic save / sync client: same bytes, new inode
    again = run_observe(store, settings, source="claude", environ=env, flush=True)
    assert again.files_read == 0 and len(fake_llm.completion_requests()) == sent  # paid once
    with open_state(store) as state:
        (cursor,) = state.cursors().values()
        assert cursor.ino == path.stat().st_ino

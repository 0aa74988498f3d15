"""Guarded rewrites: a memory file changed by an editor while om merges into it loses nothing."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from obsmem.errors import FileChanged
from obsmem.memory import guard
from obsmem.memory.atomic import atomic_write
from obsmem.memory.observations import ObservationsDoc, parse_observations
from obsmem.memory.store import MemoryStore, new_observation

OLD = "".join(f"- 🟡 09:{n:02d} older memory line {n} ^old{n:04d}x\n" for n in range(28))
BASE = f"# Observations\n\n## 2026-02-10\n\n### Observations\n\n{OLD}"
HAND = "- 🔴 10:00 note written by hand: café déjà vu ✓\n"


def _aged(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` look untouched for a while (no settling wait)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def _new(n: int = 5) -> list:  # type: ignore[type-arg]
    return [new_observation(f"new fact {i}", date="2026-02-11", time="11:00") for i in range(n)]


def _texts(store: MemoryStore) -> list[str]:
    return [o.text for o in store.read_observations().observations]


def test_a_save_landing_between_read_and_rename_is_merged_into_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tmp_path).ensure()
    store.observations_path.write_text(BASE, encoding="utf-8")
    _aged(store.observations_path)
    real = ObservationsDoc.merged
    calls = []

    def merged_while_editor_saves(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:  # the editor's save lands while om merges
            store.observations_path.write_text(BASE + HAND, encoding="utf-8")
            _aged(store.observations_path, 30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ObservationsDoc, "merged", merged_while_editor_saves)
    added = store.add_observations(_new())
    assert len(added) == 5 and len(calls) == 2
    text = store.observations_path.read_text(encoding="utf-8")
    assert HAND in text and OLD in text
    assert sum(1 for t in _texts(store) if t.startswith("new fact")) == 5


def test_a_file_saved_half_way_is_waited_for_never_merged_into(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path).ensure()
    full = (BASE + HAND).encode("utf-8")
    cut = full.index("é".encode()) + 1  # in the middle of a two-byte character
    path = store.observations_path
    with path.open("wb") as editor:  # an in-place save: truncate, write half, write the rest
        editor.write(full[:cut])
        editor.flush()

        def finish() -> None:
            time.sleep(0.25)
            editor.write(full[cut:])
            editor.flush()

        thread = threading.Thread(target=finish)
        thread.start()
        store.add_observations(_new())
        thread.join()
    data = path.read_bytes()
    assert data.decode("utf-8")  # no split character
    assert full.decode("utf-8").splitlines()[-1] in data.decode("utf-8")
    assert len(_texts(store)) == 28 + 1 + 5


def test_a_partial_last_line_that_stays_is_kept_whole(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path).ensure()
    partial = BASE + "- 🟡 10:30 a line saved without its newline, ending in caf\xc3"
    store.observations_path.write_bytes(partial.encode("utf-8", "surrogateescape")[:-2] + b"\xc3")
    _aged(store.observations_path)
    before = store.observations_path.read_bytes()
    store.add_observations(_new(2))
    after = store.observations_path.read_bytes()
    assert after.startswith(before)  # every byte kept, the broken one included
    assert after[len(before) : len(before) + 1] == b"\n"
    assert len(_texts(store)) == 28 + 1 + 2


def test_an_in_place_save_that_goes_on_after_the_rename_is_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tmp_path).ensure()
    full = (BASE + HAND).encode("utf-8")
    half = full[: full.index(b"older memory line 14")]  # ends at a line end: looks complete
    path = store.observations_path
    editor = path.open("wb")
    editor.write(half)
    editor.flush()
    _aged(path)
    real = guard.wrote

    def rest_arrives(p: Path, stamp: guard.FileStamp) -> None:
        real(p, stamp)
        if not editor.closed:  # the editor writes the rest into the file it has open
            editor.write(full[len(half) :])
            editor.close()

    monkeypatch.setattr(guard, "wrote", rest_arrives)
    store.add_observations(_new())
    text = path.read_text(encoding="utf-8")
    assert OLD in text and HAND in text
    assert len(_texts(store)) == 28 + 1 + 5


def test_a_file_that_keeps_changing_gives_a_clear_error_and_stays_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tmp_path).ensure()
    store.observations_path.write_text(BASE, encoding="utf-8")
    _aged(store.observations_path)
    real = ObservationsDoc.merged
    saves = []

    def always_saving(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        saves.append(BASE + f"- 🟢 10:{len(saves):02d} save {len(saves)}\n")
        store.observations_path.write_text(saves[-1], encoding="utf-8")
        _aged(store.observations_path, 30 - len(saves))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ObservationsDoc, "merged", always_saving)
    with pytest.raises(FileChanged) as err:
        store.add_observations(_new())
    assert "kept changing" in str(err.value) and "run the command again" in str(err.value)
    assert store.observations_path.read_text(encoding="utf-8") == saves[-1]
    assert len(saves) == guard.ATTEMPTS


@pytest.mark.parametrize("name", ["reflections.md", "profile.md", "vault/projects/om.md"])
def test_every_memory_file_written_under_the_lock_is_checked(tmp_path: Path, name: str) -> None:
    store = MemoryStore(tmp_path).ensure()
    path = store.home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# mine\n", encoding="utf-8")
    _aged(path)
    with store.lock():
        old = store.read_bytes(path)
        path.write_text("# mine\n\nadded by hand meanwhile\n", encoding="utf-8")
        with pytest.raises(FileChanged):
            atomic_write(path, old + b"om's line\n")
    assert path.read_text(encoding="utf-8") == "# mine\n\nadded by hand meanwhile\n"


def test_a_second_read_of_a_changed_file_under_one_lock_is_refused(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path).ensure()
    path = store.home / "active.md"
    path.write_text("one\n", encoding="utf-8")
    _aged(path)
    with store.lock():
        store.read_bytes(path)
        path.write_text("two\n", encoding="utf-8")
        _aged(path)
        with pytest.raises(FileChanged):
            store.read_bytes(path)


def test_om_s_own_writes_are_not_mistaken_for_an_editor(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path).ensure()
    store.add_observations(_new(1))
    store.add_observations([new_observation("second", date="2026-02-11")])
    # The lock file names the version om wrote, so the next process does not wait on it.
    written = json.loads(store.lock_path.read_bytes())
    st = store.observations_path.stat()
    stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    assert written[str(store.observations_path)] == stamp
    assert len(parse_observations(store.observations_path.read_bytes()).observations) == 2

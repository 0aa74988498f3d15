"""Disk and permissions: a full disk or a read-only memory directory in the middle of a write,
and the modes of everything om creates.

Each failure is staged inside a real ``om`` process (``run_om`` below): the temporary file
cannot be created, its data cannot be flushed to disk, the rename over the old file fails, the
ledger append fails. Every time the command exits 2 with one line saying what failed and how
to fix it (no traceback), the memory files are byte for byte what they were (the ledger only
grew), no temporary file is left behind, and the same command run once the disk has room again
ends exactly where a run that never failed ends: nothing lost, nothing written twice.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from hostile_figures import record
from hostile_transcripts import Event, write_transcript

from obsmem.integrations.setup import configure_llm, update_env_file
from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore
from obsmem.observe.run import run_observe
from obsmem.paths import env_file
from obsmem.reflect.offline import reflect
from obsmem.search.recall import search_entries
from obsmem.settings import load_settings

#: (command, file, call, errno): what fails where.
CASES = (
    ("observe", "observations.md", "open", "ENOSPC"),
    ("observe", "observations.md", "fsync", "ENOSPC"),
    ("observe", "observations.md", "replace", "ENOSPC"),
    ("observe", "provenance.jsonl", "write", "ENOSPC"),
    ("observe", "observations.md", "open", "EROFS"),
    ("observe", "provenance.jsonl", "open", "EACCES"),
    ("remember", "observations.md", "fsync", "ENOSPC"),
    ("remember", "observations.md", "replace", "EACCES"),
    ("remember", "provenance.jsonl", "write", "ENOSPC"),
    ("reflect", "reflections.md", "fsync", "ENOSPC"),
    ("reflect", "reflections.md", "open", "EROFS"),
    ("reflect", "2026-11.md", "replace", "ENOSPC"),
)
QUICK = (CASES[1], CASES[7], CASES[10])

_COMMANDS = {
    "observe": ["observe", "--flush"],
    "remember": ["remember", "--type", "decision", "Chose Caddy over nginx for the proxy"],
    "reflect": ["reflect"],
}


# --- a failure staged inside a real om process --------------------------------------------------
# Tests run as root here, and root writes into a directory whose mode says read-only; there is
# no small filesystem to fill either. So the failure is staged: ``run_om`` starts ``om`` in a new
# Python process whose ``os.open``, ``os.write``, ``os.fsync`` or ``os.replace`` raise the chosen
# ``OSError`` for files of the memory directory whose name holds a given piece, as the kernel
# would. Everything else in that process is the real thing: the command line, the library, the
# atomic writes and their clean-up.

_SHIM = r"""
import errno, json, os
spec = json.loads(os.environ.pop("HOSTILE_DISK_FAULT"))
code = getattr(errno, spec["errno"])
root, piece, call = spec["under"], spec["match"], spec["call"]
real = {name: getattr(os, name) for name in ("open", "write", "fsync", "replace")}

def _path_of(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""

def _hit(path):
    path = os.fsdecode(path)
    return path.startswith(root) and piece in os.path.basename(path)

def _fail(path):
    raise OSError(code, os.strerror(code), os.fsdecode(path))

def fake_open(path, flags, mode=0o777, *, dir_fd=None):
    if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and _hit(path):
        _fail(path)
    return real["open"](path, flags, mode, dir_fd=dir_fd)

def fake_write(fd, data):
    if _hit(_path_of(fd)):
        _fail(_path_of(fd))
    return real["write"](fd, data)

def fake_fsync(fd):
    if _hit(_path_of(fd)):
        _fail(_path_of(fd))
    return real["fsync"](fd)

def fake_replace(src, dst, **kwargs):
    if _hit(dst):
        _fail(dst)
    return real["replace"](src, dst, **kwargs)

setattr(os, call, {"open": fake_open, "write": fake_write, "fsync": fake_fsync,
                   "replace": fake_replace}[call])
"""
_MAIN = r"""
import json, os, sys
sys.argv = ["om", *json.loads(os.environ.pop("HOSTILE_ARGV"))]
from obsmem.cli.entry import main
main()
"""


@dataclass(frozen=True)
class DiskFault:
    """Which call fails (``open``, ``write``, ``fsync``, ``replace``), with which error, for files
    under ``under`` whose name contains ``match``."""

    call: str
    errno: str
    match: str
    under: Path


def run_om(
    args: list[str], environ: Mapping[str, str], fault: DiskFault | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``om args`` in a new process with ``environ`` (and ``fault`` staged, if given)."""
    env = dict(environ)
    env["HOSTILE_ARGV"] = json.dumps(args)
    if fault is not None:
        env["HOSTILE_DISK_FAULT"] = json.dumps(
            {
                "call": fault.call,
                "errno": fault.errno,
                "match": fault.match,
                "under": str(fault.under),
            }
        )
    code = (_SHIM if fault is not None else "") + _MAIN
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --- the cases ------------------------------------------------------------------------------------


def _session(home: Path, name: str, words: str, day: str = "2026-11-20") -> None:
    events = [
        Event("user", f"Let's go with {words} for the build."),
        Event("user", f"I prefer {words} over the old setup."),
        Event("shell", "make test", output="FAILED tests/test_build.py: error", exit_code=1),
        Event("shell", "make test", output="42 passed in 1.2s"),
    ]
    path = write_transcript("claude", home, events, session=name)
    if day != "2026-11-20":  # the writers stamp every event on 2026-11-20
        path.write_text(path.read_text().replace("2026-11-20T", f"{day}T"), encoding="utf-8")


def _memory_files(home: Path) -> dict[str, bytes]:
    """The files people keep (``.om`` holds the state, the index and the ledger: apart)."""
    return {
        str(path.relative_to(home)): path.read_bytes()
        for path in sorted(home.rglob("*"))
        if path.is_file() and ".om" not in path.relative_to(home).parts
    }


def _ids(home: Path) -> list[str]:
    docs = [home / "observations.md", *sorted((home / "archive").rglob("*.md"))]
    return [
        o.id
        for path in docs
        if path.exists()
        for o in parse_observations(path.read_bytes()).observations
    ]


def _prepare(root: Path, environ: dict[str, str], command: str) -> None:
    """Memory as a user has it: one session observed and reflected; then what the failing
    command works on (a new session to observe; for reflect, its observations, unreflected)."""
    claude = Path(environ["CLAUDE_CONFIG_DIR"])
    _session(claude, "first-session", "PostgreSQL")
    assert run_om(["observe", "--flush"], environ).returncode == 0
    if command == "observe":
        _session(claude, "second-session", "Caddy")
    if command == "reflect":
        # Ageing runs on the memory's own clock: a session eleven days later is what makes the
        # first one's day old enough to move to the archive.
        _session(claude, "second-session", "Caddy", day="2026-12-01")
    if command == "reflect":
        # Observed without the daily reflection, which is what `om reflect` is asked to do.
        store = MemoryStore(environ["OM_HOME"])
        settings = load_settings(environ)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("obsmem.observe.run._catch_up", lambda *args, **kwargs: None)
            run_observe(store, settings, source="all", flush=True, environ=environ)


def run_case(root: Path, case: tuple[str, str, str, str]) -> str:
    """Stage one failure; check the error, the files, the retry. Returns the message shown."""
    command, name, call, code = case
    environ = {
        **os.environ,
        "OM_HOME": str(root / "memory"),
        "CLAUDE_CONFIG_DIR": str(root / "claude"),
        "OM_LLM_PROVIDER": "none",
    }
    _prepare(root, environ, command)
    home = Path(environ["OM_HOME"])
    control = root / "control"
    shutil.copytree(home, control)
    before = _memory_files(home)
    ledger = (home / ".om" / "provenance.jsonl").read_bytes()
    fault = DiskFault(call, code, name, home)

    failed = run_om(_COMMANDS[command], environ, fault)
    lines = failed.stderr.strip().splitlines()
    assert failed.returncode == 2, (failed.returncode, failed.stderr)
    assert len(lines) == 1 and lines[0].startswith("om: error: "), failed.stderr
    assert "Traceback" not in failed.stderr + failed.stdout
    assert name in lines[0] or "provenance" in lines[0], lines[0]
    hint = {"ENOSPC": "free some disk space", "EROFS": "writable", "EACCES": "writable"}[code]
    assert hint in lines[0], lines[0]
    # The file being written is intact, and so is every other one (a reflection that failed
    # while archiving has written reflections.md already: then nothing may be lost); the
    # ledger may only have grown; no temporary file is left.
    after = _memory_files(home)
    if command == "reflect":
        assert {k: v for k, v in after.items() if name in k} == {
            k: v for k, v in before.items() if name in k
        }
        assert set(_ids(control)) <= set(_ids(home))
    else:
        assert after == before
    assert (home / ".om" / "provenance.jsonl").read_bytes().startswith(ledger)
    assert not [p for p in home.rglob("*.tmp")], list(home.rglob("*.tmp"))

    # Room again: the same command ends where a run that never failed ends.
    assert run_om(_COMMANDS[command], environ).returncode == 0
    clean = run_om(_COMMANDS[command], {**environ, "OM_HOME": str(control)})
    assert clean.returncode == 0, clean.stderr
    # The same observations, each as many times as there (an old day observed again has its
    # copy in observations.md until the next archive pass drops it: by design, in both).
    assert sorted(_ids(home)) == sorted(_ids(control))
    for path in ("reflections.md",):
        assert (home / path).exists() == (control / path).exists()
    return lines[0].replace(str(home), "$OM_HOME")


@pytest.mark.parametrize("case", QUICK, ids=lambda c: "-".join(c))
def test_a_failed_write_leaves_memory_intact(tmp_path: Path, case: tuple[str, ...]) -> None:
    run_case(tmp_path, case)  # type: ignore[arg-type]


@pytest.mark.slow
def test_every_staged_disk_failure(tmp_path: Path) -> None:
    for number, case in enumerate(CASES):
        message = run_case(tmp_path / str(number), case)
        record(
            "Disk and permissions",
            f"{case[0]}, {case[3]} at {case[2]}() of {case[1]}: "
            f"exit 2, files intact, retry complete: {message}",
        )
    paths = check_modes(tmp_path / "modes")
    record(
        "Disk and permissions",
        f"modes after observe, reflect, search and an index rebuild (umask 002): {paths} "
        "paths, all files 0600, folders 0700",
    )
    record(
        "Disk and permissions",
        f"{len(CASES)} staged failures: {len(CASES)} exits 2 with one line, the file written "
        "unchanged each time, 0 observations lost or duplicated after the retry",
    )


# --- modes ---------------------------------------------------------------------------------------


def _modes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root)): stat.S_IMODE(path.stat().st_mode)
        for path in [root, *sorted(root.rglob("*"))]
    }


def check_modes(tmp_path: Path) -> int:
    """Files 0600 and folders 0700, under a permissive umask too, after every kind of write;
    returns how many paths were checked."""
    old = os.umask(0o002)
    try:
        home = tmp_path / "memory"
        _session(Path(os.environ["CLAUDE_CONFIG_DIR"]), "s1", "Redis")
        store = MemoryStore(home).ensure()
        settings = load_settings({**os.environ, "OM_LLM_PROVIDER": "none"})
        run_observe(store, settings, source="all", flush=True)
        reflect(store, settings)
        search_entries(store, "Redis")
        (store.index_path).write_bytes(b"not a database")  # force a rebuild
        search_entries(store, "Redis")
    finally:
        os.umask(old)
    modes = _modes(home)
    wrong = {
        path: oct(mode)
        for path, mode in modes.items()
        if mode != (0o700 if (home / path).is_dir() else 0o600)
    }
    assert wrong == {}, wrong
    assert len(modes) > 10
    return len(modes)


def test_everything_om_creates_is_private(tmp_path: Path) -> None:
    check_modes(tmp_path)


@pytest.mark.parametrize("before", [None, 0o644, 0o600])
def test_the_settings_file_stays_private(
    before: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = env_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    if before is not None:
        path.write_text("# mine\nOM_LLM_MODEL=old\n", encoding="utf-8")
        path.chmod(before)
    seen: list[int] = []
    real_replace = os.replace

    def watch(src: str, dst: str) -> None:
        if Path(dst) == path:
            seen.append(stat.S_IMODE(os.stat(src).st_mode))  # the file the key lands in
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", watch)
    configure_llm("openai", model="gpt-5", api_key="sk-" + "k" * 48)
    update_env_file({"OM_LLM_MODEL": "gpt-5-mini"}, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert seen and all(mode == 0o600 for mode in seen), [oct(m) for m in seen]
    if before is not None:
        assert path.read_text(encoding="utf-8").startswith("# mine\n")

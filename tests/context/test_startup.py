"""``om context``: budgets, relevance, output shapes, and the hot path's imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.context.rendered import fast_main
from obsmem.context.startup import (
    ABOUT,
    CHARS_PER_TOKEN,
    DECISIONS,
    LAST,
    LOOPS,
    PROJECT,
    RECENT,
    ContextEntry,
    build_context,
    hook_output,
    load_entries,
    project_for,
    stdin_cwd,
)

TODAY = date(2026, 11, 29)


def entries(n: int = 60) -> list[ContextEntry]:
    out = [ContextEntry("About the user", "Prefers small commits with clear messages", 0.8)]
    for i in range(n):
        project = "atlas" if i % 3 == 0 else "hermes-bot"
        out.append(ContextEntry("Recent", f"Observation number {i} about {project} work " * 3,
                                0.3 + (i % 7) / 10, f"2026-11-{(i % 28) + 1:02d}", project,
                                f"id{i}", observed=True))  # fmt: skip
    return out


@settings(max_examples=150, deadline=None)
@given(budget=st.integers(200, 12000), n=st.integers(0, 120))
def test_output_fits_every_budget(budget: int, n: int) -> None:
    text = build_context(entries(n), budget=budget, project="atlas", today=TODAY)
    assert len(text) // CHARS_PER_TOKEN <= budget
    assert text.rstrip().endswith("when it is available.")  # always says how to search for more


def test_entries_of_other_projects_are_labelled_with_their_project() -> None:
    text = build_context(entries(), budget=600, project="atlas", today=TODAY)
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert any("about atlas" in line for line in lines)
    for line in lines:
        if "about hermes-bot" in line:
            assert line.startswith("- [hermes-bot] ")
        if "about atlas" in line:
            assert "[atlas]" not in line
    # No project known for the directory: every project's entry says whose it is.
    anywhere = build_context(entries(), budget=600, project=None, today=TODAY)
    assert all(
        line.startswith(("- [atlas] ", "- [hermes-bot] "))
        for line in anywhere.splitlines()
        if "Observation number" in line
    )


def test_user_profile_survives_a_tiny_budget() -> None:
    text = build_context(entries(), budget=200, project=None, today=TODAY)
    assert "Prefers small commits" in text


def test_empty_memory_says_so() -> None:
    assert "Nothing remembered yet." in build_context([], today=TODAY)


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_hook_output_shape(agent: str) -> None:
    data = json.loads(hook_output(agent, "hello"))
    assert data == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hello"}
    }


def test_plain_output_is_markdown() -> None:
    assert hook_output("plain", "# x\n") == "# x\n"


def test_project_for_finds_the_git_root(tmp_path: Path) -> None:
    (tmp_path / "atlas" / ".git").mkdir(parents=True)
    (tmp_path / "atlas" / "src" / "deep").mkdir(parents=True)
    assert project_for(str(tmp_path / "atlas" / "src" / "deep")) == "atlas"
    assert project_for(str(tmp_path / "nowhere" / "thing")) == "thing"
    assert project_for(None) is None


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--for", "vim"], ["--budget", "ten"], ["--budget", "5"], ["--cwd"], ["-x"]],
)
def test_fast_path_hands_odd_arguments_to_click(argv: list[str]) -> None:
    assert fast_main(argv) is None


def test_fast_path_never_fails_a_session_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*args: object, **kwargs: object) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("obsmem.context.startup.run_context", boom)
    assert fast_main(["--for", "claude"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == ""
    assert "disk on fire" in err


def test_hot_path_imports_nothing_heavy(tmp_path: Path) -> None:
    from obsmem.demo import prepare

    home = tmp_path / "mem"
    prepare(home)
    code = (
        # What the interpreter loaded before om (an editable install's finder loads pathlib) is
        # not om's doing.
        "import sys; sys.argv = ['om', 'context', '--for', 'claude']; before = set(sys.modules)\n"
        "from obsmem.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('click', 'rich', 'anthropic', 'openai', 'numpy', 'fastembed', "
        "'sqlite3', 'obsmem.memory.store', 'pathlib', 'datetime', 'dataclasses', 'typing') "
        "if m in sys.modules and m not in before]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OM_HOME": str(home)},
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    # The first run prepares context.json (heavier, once); the second is the hot path.
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OM_HOME": str(home)},
                          capture_output=True, text=True, timeout=60, check=True,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert "HEAVY []" in done.stderr, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Tortoise ORM" in context


def briefing() -> list[ContextEntry]:
    """A memory of two projects, in every prepared section."""
    return [
        ContextEntry(ABOUT, "Prefers small commits whose messages explain why", 0.8),
        ContextEntry(PROJECT, "Task API built with FastAPI and PostgreSQL", 0.7, None, "atlas"),
        ContextEntry(DECISIONS, "Chose PostgreSQL over SQLite", 0.9, "2026-11-26", "atlas",
                     "d1", observed=True),
        ContextEntry(DECISIONS, "Release Atlas 1.0 on 2026-12-05 (meaning 2026-12-05)", 0.9,
                     "2026-11-28", "atlas", "d2", observed=True, planned="2026-12-05"),
        ContextEntry(LAST, "Active task: Fixing flaky CI", 0.9, "2026-11-28", "atlas"),
        ContextEntry(LAST, "Suggested next: Pin the Redis image", 0.85, "2026-11-28", "atlas"),
        ContextEntry(LAST, "Active task: Telegram bot commands", 0.9, "2026-11-29", "hermes-bot"),
        ContextEntry(LOOPS, "Write the migration guide", 0.7, "2026-11-27", "atlas", "l1",
                     observed=True, planned="2026-11-20"),
        ContextEntry(LOOPS, "Answer the bot's webhook question", 0.6, "2026-11-25", "hermes-bot",
                     "l2", observed=True),
        ContextEntry(RECENT, "CI green again after isolating Redis", 0.8, "2026-11-28", "atlas",
                     "r1", observed=True),
        ContextEntry(PROJECT, "Bot written with python-telegram-bot", 0.7, None, "hermes-bot"),
    ]  # fmt: skip


TODAY_BRIEF = date(2026, 12, 1)


def sections_of(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def test_a_project_is_briefed_first_then_the_user_then_recent_work() -> None:
    text = build_context(briefing(), project="atlas", today=TODAY_BRIEF)
    assert sections_of(text) == [
        "This project (atlas)",
        "Decisions",
        "Last time here (2026-11-28, 3 days ago)",
        "Open loops",
        "About the user",
        "Recent work",
        "Other projects",
    ]
    last = text.split("## Last time here")[1].split("##")[0]
    assert "Active task: Fixing flaky CI" in last and "Pin the Redis image" in last
    assert "Telegram" not in last  # another project's last session is not this one's
    assert "- [hermes-bot] Bot written with python-telegram-bot" in text


def test_dates_are_relative_to_today() -> None:
    text = build_context(briefing(), project="atlas", today=TODAY_BRIEF)
    assert "- 5 days ago: Chose PostgreSQL over SQLite" in text
    assert "- 3 days ago: Release Atlas 1.0 on 2026-12-05 (in 4 days)" in text
    assert "meaning" not in text
    assert "- 4 days ago: Write the migration guide (planned for 2026-11-20: likely done)" in text
    assert "- [hermes-bot] 6 days ago: Answer the bot's webhook question" in text
    assert "- 3 days ago: CI green again after isolating Redis" in text


def test_a_directory_memory_does_not_know_gets_the_last_session_anywhere() -> None:
    text = build_context(briefing(), project="scratch", today=TODAY_BRIEF)
    assert "## Last session (hermes-bot, 2026-11-29, 2 days ago)" in text
    assert "Active task: Telegram bot commands" in text
    assert "Fixing flaky CI" not in text
    assert "## Projects" not in text and "## Other projects" in text


def test_prepared_entries_round_trip_through_context_json(tmp_path: Path) -> None:
    path = tmp_path / "context.json"
    path.write_text(json.dumps({"version": 2, "entries": [e.as_dict() for e in briefing()]}))
    loaded, _ = load_entries(path)
    assert loaded == briefing()
    path.write_text('{"entries": [{"text": "x", "importance": "high"}, 3, {"text": 4}]}')
    assert [e.text for e in load_entries(path)[0]] == ["x"]  # odd values: defaults, no crash


def test_stdin_cwd_reads_the_hook_payload() -> None:
    read, write = os.pipe()
    os.write(write, json.dumps({"session_id": "s", "cwd": "/home/dev/atlas"}).encode())
    with os.fdopen(read) as stream:
        # The writer is still open: a whole JSON object is enough, no waiting for the end.
        assert stdin_cwd(stream, wait=5) == "/home/dev/atlas"
    os.close(write)


@pytest.mark.parametrize("payload", [b"", b"not json", b'{"cwd": 3}', b'["/x"]', b'{"cwd": " "}'])
def test_stdin_cwd_without_a_usable_cwd_is_none(payload: bytes) -> None:
    read, write = os.pipe()
    os.write(write, payload)
    os.close(write)
    with os.fdopen(read) as stream:
        assert stdin_cwd(stream) is None


def test_stdin_cwd_gives_up_on_a_silent_pipe() -> None:
    read, write = os.pipe()
    with os.fdopen(read) as stream:
        assert stdin_cwd(stream, wait=0.05) is None
    os.close(write)


def _om_context(home: Path, cwd: Path, *args: str, stdin: bytes | None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "obsmem", "context", "--for", "claude", *args],
        env={**os.environ, "OM_HOME": str(home)}, cwd=cwd, input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def test_the_hook_payload_cwd_wins_over_the_process_directory(tmp_path: Path) -> None:
    from obsmem.demo import prepare

    home = tmp_path / "mem"
    prepare(home)
    (tmp_path / "atlas").mkdir()
    (tmp_path / "elsewhere").mkdir()
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(tmp_path / "atlas")})
    from_hook = _om_context(home, tmp_path / "elsewhere", stdin=payload.encode())
    assert "## This project (atlas)" in from_hook
    # The flag wins over the payload; without either, the process's directory counts.
    flagged = _om_context(home, tmp_path / "atlas", "--cwd", str(tmp_path / "elsewhere"),
                          stdin=payload.encode())  # fmt: skip
    assert "This project (atlas)" not in flagged
    assert "This project (atlas)" in _om_context(home, tmp_path / "atlas", stdin=None)
    assert "This project (atlas)" not in _om_context(home, tmp_path / "elsewhere", stdin=None)


def test_an_open_loop_outranks_recent_work_in_a_small_budget() -> None:
    entries = [
        ContextEntry(LOOPS, "Write the migration guide before the release", 0.6, "2026-11-27",
                     "atlas", "l1", observed=True),
        *(ContextEntry(RECENT, f"Work item {n} finished with its tests green", 0.6, "2026-11-30",
                       "atlas", f"r{n}", observed=True) for n in range(40)),
    ]  # fmt: skip
    text = build_context(entries, budget=250, project="atlas", today=TODAY_BRIEF)
    assert "- 4 days ago: Write the migration guide before the release" in text

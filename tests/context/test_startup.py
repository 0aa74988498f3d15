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

from obsmem.context.startup import (
    CHARS_PER_TOKEN,
    ContextEntry,
    build_context,
    fast_main,
    hook_output,
    project_for,
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


def test_project_entries_come_first_for_their_project() -> None:
    text = build_context(entries(), budget=400, project="atlas", today=TODAY)
    assert "## This project (atlas)" in text
    section = text.split("## This project (atlas)")[1].split("##")[0]
    assert "about atlas" in section and "hermes-bot" not in section
    other = build_context(entries(), budget=400, project="hermes-bot", today=TODAY)
    assert "## This project (hermes-bot)" in other


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
        "import sys; sys.argv = ['om', 'context', '--for', 'claude']\n"
        "from obsmem.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('click', 'rich', 'anthropic', 'openai', 'numpy', 'fastembed', "
        "'sqlite3', 'obsmem.memory.store') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OM_HOME": str(home)},
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    # The first run prepares context.json (heavier, once); the second is the hot path.
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OM_HOME": str(home)},
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert "HEAVY []" in done.stderr, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Tortoise ORM" in context

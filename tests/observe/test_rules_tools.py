"""Tool calls and outcomes in the offline rules: pairing, error lines, routine exploration."""

from __future__ import annotations

import pytest

from obsmem.observe.draft import to_observation
from obsmem.observe.rules_tools import BLOCKING, activity, error_line, open_tasks, read_tools
from tests.observe.test_rules import turn


def test_failure_is_paired_with_its_own_call_not_the_last_one() -> None:
    found = read_tools(
        [
            turn("action", "Bash: npm run build (Build)", 1),
            turn("action", "TodoWrite: [>] Build the app", 2),
            turn("outcome", "Bash exit 1: Error: Cannot find module 'vite'", 3),
        ]
    )
    (failed,) = [d for d in found.drafts if d.type == "error"]
    assert failed.text == "Failed: `npm run build`: Error: Cannot find module 'vite'"
    assert [t.line_start for t in failed.turns] == [1, 3]


def test_codex_outcome_is_paired_by_the_command_it_quotes() -> None:
    found = read_tools(
        [
            turn("action", "Shell: npm test -- --run a.test.ts", 1),
            turn("action", "Shell: npm run lint", 2),
            turn(
                "outcome",
                "`npm test -- --run a.test.ts` exited 1: 1 failed\nFAIL a.test.ts\n"
                "AssertionError: expected undefined to equal 0.9",
                3,
            ),
            turn("outcome", "`npm test -- --run a.test.ts`: 16 passed", 4),
        ]
    )
    (lesson,) = found.drafts
    assert lesson.type == "lesson" and lesson.completed
    assert "`npm test -- --run a.test.ts` passes now (16 passed)" in lesson.text
    assert "AssertionError: expected undefined to equal 0.9" in lesson.text


def test_repeats_are_collapsed_into_one_line() -> None:
    steps = []
    for n in range(3):
        steps += [
            turn("action", "Bash: cargo build", 2 * n + 1),
            turn("outcome", "Bash exit 101: error[E0425]: cannot find value `x`", 2 * n + 2),
        ]
    (failed,) = read_tools(steps).drafts
    assert failed.text == "Failed (3 times): `cargo build`: error[E0425]: cannot find value `x`"


def test_routine_exploration_errors_are_dropped() -> None:
    found = read_tools(
        [
            turn("action", "Read: types/index.ts", 1),
            turn("outcome", "Read error: File has not been read yet. Read it first.", 2),
            turn("action", "Bash: ls -la /nope (List)", 3),
            turn("outcome", "Bash exit 2: ls: cannot access '/nope': No such file or directory", 4),
            turn("action", "Bash: tree . -L 3", 5),
            turn("outcome", "Bash error: lsd: 3: No such file or directory (os error 2).", 6),
            turn("action", "Task: Check config (general-purpose)", 7),
            turn(
                "outcome",
                "Task error: InputValidationError: The required parameter `prompt` is missing",
                8,
            ),
            turn("action", "Grep: TODO in src", 9),
            turn("outcome", "Grep error: no matches found", 10),
        ]
    )
    assert found.drafts == []


def test_the_real_error_line_is_chosen_over_boilerplate() -> None:
    assert (
        error_line(
            'Bash exit 1: Traceback (most recent call last):\n  File "a.py", line 3\n'
            "KeyError: 'port'"
        )
        == "KeyError: 'port'"
    )
    assert error_line("`make` exited 2\nmake: *** No rule to make target 'x'.") == (
        "make: *** No rule to make target 'x'."
    )


def test_a_passing_test_run_is_a_milestone_with_its_counts() -> None:
    (done,) = read_tools(
        [turn("action", "Bash: pytest -q", 1), turn("outcome", "Bash: 42 passed, 1 skipped", 2)]
    ).drafts
    assert (done.type, done.completed) == ("milestone", True)
    assert done.text == "Tests pass: `pytest -q`: 42 passed, 1 skipped"


def test_files_written_and_refused() -> None:
    found = read_tools(
        [
            turn("action", "Edit: CLAUDE.md", 1),
            turn("outcome", "Edit error: File has not been read yet. Read it first.", 2),
            turn("action", "MultiEdit: CLAUDE.md", 3),
            turn("action", "Write: notes.md", 4),
            turn("outcome", "Write rejected by user", 5),
        ]
    )
    assert found.changed == ["CLAUDE.md"] and found.refused == ["notes.md"]


def test_the_task_list_left_open_is_kept_unless_a_recap_follows() -> None:
    listed = [
        turn("action", "TodoWrite: [x] Design; [>] Add tests; [ ] Write docs", 1),
    ]
    task = open_tasks(listed)
    assert task is not None and task.text == "Open tasks, in progress: Add tests; to do: Write docs"
    recap = turn("assistant", "## Summary\n\n" + "I've added the tests and the docs. " * 8, 2)
    assert open_tasks([*listed, recap]) is None
    assert open_tasks([turn("action", "TodoWrite: [x] Design; [x] Docs", 1)]) is None


def test_a_failure_the_agent_kept_retrying_blocks_and_one_it_left_is_context() -> None:
    found = read_tools(
        [
            turn("action", "Bash: npm run build (Build)", 1),
            turn("outcome", "Bash exit 1: Error: Cannot find module 'vite'", 2),
            turn("action", "Bash: npm run build (Build again)", 3),
            turn("outcome", "Bash exit 1: Error: Cannot find module 'vite'", 4),
            turn("action", "Bash: make lint", 5),
            turn("outcome", "Bash exit 2: error: unused import os", 6),
        ]
    )
    importance = {d.text.split(":", 1)[0]: d.importance for d in found.drafts}
    assert importance == {"Failed (2 times)": BLOCKING, "Failed": 0.6}
    assert to_observation(found.drafts[0]).priority == "🔴"


@pytest.mark.parametrize(
    ("action", "doing"),
    [
        ("read: README.md", "reading README.md"),
        ("Read: src/app.py", "reading src/app.py"),
        ("Bash: cargo test -p net (Run the tests)", "running `cargo test -p net`"),
        ("Shell: pytest -q", "running `pytest -q`"),
        ("Edit: src/app.py", "editing src/app.py"),
        ("Grep: TODO", "searching (TODO)"),
        ("Task: Review the API (code-reviewer)", "waiting on a sub-agent (Review the API)"),
        ("WebSearch: fastapi lifespan", "searching (fastapi lifespan)"),
        ("mcp__db__query: select 1", "calling mcp__db__query (select 1)"),
    ],
)
def test_activity_says_what_a_call_was_doing(action: str, doing: str) -> None:
    assert activity(action) == doing

"""Tool results reduced to outcome lines: test counts, error excerpts, failures.

``find_test_counts`` and the error excerpt pass most lines over with cheap tests before any
pattern runs; the plain readings below (a pattern on every line) say what they must find, and
random outputs made of the pieces that matter (counts, case, line breaks of every kind, error
markers, rulers, colour codes) check that they always agree.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.redact import redact
from obsmem.sources.normalise import clip
from obsmem.sources.openclaw_text import _EXIT_TEXT, _without_exit_notes
from obsmem.sources.outcomes import (  # the markers and rulers are what the outcomes define
    _ERROR_MARKERS,
    _MEANINGFUL_LINE,
    _NOISE_FIRSTS,
    _OC_COUNT_LINE,
    _OC_ERROR_LINE,
    _OC_NOISE_LINE,
    _RULES,
    RESULT_EXCERPT_CHARS,
    _error_line,
    command_outcome,
    failure_outcome,
    find_test_counts,
    result_excerpt,
    short,
    shows_content,
    strip_ansi,
)

# --- the plain readings ----------------------------------------------------------------------

_COUNT = re.compile(
    r"\b(\d+)\s+(passed|failed|passing|failing|errors?|skipped|xfailed|xpassed|pending|"
    r"todo|deselected|ignored|warnings?|total)\b",
    re.IGNORECASE,
)
_MAIN = {"passed", "failed", "passing", "failing"}


def plain_test_counts(output: str) -> str | None:
    """The count pattern on every line: the last line with a count of passed or failed tests,
    joined by the first non-blank line above it when that one has such a count too and no word
    in common (mocha prints "41 passing" and "1 failing" on two lines)."""
    tail = strip_ansi(output[-4000:])
    if not any(word in tail for word in ("pass", "fail", "PASS", "FAIL")):
        return None
    lines = tail.splitlines()
    counted = [[(number, word.lower()) for number, word in _COUNT.findall(line)] for line in lines]
    mains = [i for i, counts in enumerate(counted) if {word for _, word in counts} & _MAIN]
    if not mains:
        return None
    last = mains[-1]
    above = next((i for i in reversed(range(last)) if lines[i].strip()), None)
    counts = counted[last]
    if above in mains and not {w for _, w in counts} & {w for _, w in counted[above]}:
        counts = counted[above] + counts
    return ", ".join(f"{number} {word}" for number, word in counts)


def plain_excerpt(text: str, *, errors_first: bool) -> str:
    """Every non-blank line tested for every marker; the first three that have one."""
    lines = [line.rstrip() for line in strip_ansi(text).splitlines() if line.strip()]
    if errors_first:
        marked = [
            line
            for line in lines
            if any(marker in line for marker in _ERROR_MARKERS)
            and not line.lstrip().startswith(_RULES)
        ]
        if marked:
            lines = marked
        elif len(lines) > 3:
            lines = lines[-3:]
    return clip("\n".join(short(line.strip(), 300) for line in lines[:3]), 500)


def plain_result_lines(output: str) -> list[str]:
    """What a successful result's excerpt is made of: its first and its last line worth keeping,
    found among all its lines, redacted (each on one line, with a word character, not a ruler).
    For an output shorter than the excerpt's window (2 KB), which is redacted whole."""
    lines = [
        line
        for line in (" ".join(raw.split()) for raw in redact(strip_ansi(output)).splitlines())
        if _MEANINGFUL_LINE.search(line) and not line.startswith(_RULES)
    ]
    if not lines:
        return []
    return [lines[0]] if lines[-1] == lines[0] else [lines[0], lines[-1]]


# --- random outputs --------------------------------------------------------------------------

_PIECES = [
    "1", "2", "12", "0", "\u0661", " ", "  ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c",
    "\x85", "\u2028", "\u2029", "passed", "failed", "passing", "failing", "PASSED", "Failed",
    "FAIL", "pass", "fail", "pa\u017f\u017fed", "FA\u0130LED", "fa\u0131led", "error", "Errors",
    "skipped", "total", "warning", "xfailed", "todo", "pending", ":", "|", "(8)", "x", "E   ",
    "===", "---", "___", "⎯⎯⎯", "Traceback", "Exception", "not found", "No such file", "denied",
    "panic", "fatal", "\x1b[31m", "\x1b[0m", "Tests  1 failed | 7 passed (8)",
    "\n  41 passing (2s)\n", "\n  1 failing\n", "\n3 passed\n", "\n2 failed, 1 error\n",
    "\n\n", "\n \t\n", "\n1 skipped\n",
]  # fmt: skip
outputs = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=1500, deadline=None)
@given(outputs)
def test_test_counts_agree_with_the_plain_reading(output: str) -> None:
    assert find_test_counts(output) == plain_test_counts(output)


@settings(max_examples=1000, deadline=None)
@given(outputs)
def test_error_excerpts_agree_with_the_plain_reading(output: str) -> None:
    counts = plain_test_counts(output)
    head = "`make` exited 2" + (f": {counts}" if counts else "")
    expected = plain_excerpt(output, errors_first=True)
    assert command_outcome("make", 2, output) == (f"{head}\n{expected}" if expected else head)
    detail = plain_excerpt(output, errors_first=False)
    first, _, rest = detail.partition("\n")
    wanted = f"x failed: {first}" + (f"\n{rest}" if rest else "") if detail else "x failed"
    assert failure_outcome("x", output) == wanted


@settings(max_examples=1000, deadline=None)
@given(outputs)
def test_result_excerpts_agree_with_the_plain_reading(output: str) -> None:
    if len(output) > 2048:
        return  # a longer one is read in a head and a tail window
    lines = [short(line, 120) for line in plain_result_lines(output)]
    expected = None if not lines else lines[0] if len(lines) == 1 else f"{lines[0]}\n… {lines[1]}"
    if expected is not None and len(expected) > RESULT_EXCERPT_CHARS:
        expected = short(expected, RESULT_EXCERPT_CHARS)
    assert result_excerpt(output, "make") == expected


# --- what the readings find ------------------------------------------------------------------


def test_the_last_summary_wins_and_mocha_lines_join() -> None:
    vitest = " Test Files  1 failed (1)\n      Tests  1 failed | 7 passed (8)\n   Duration  4ms\n"
    assert find_test_counts(vitest) == "1 failed, 7 passed"
    assert find_test_counts("  41 passing (2s)\n  1 failing\n\n  1) x: Error\n") == (
        "41 passing, 1 failing"
    )
    assert find_test_counts("  8 passing\n \t\n  2 failing\n") == "8 passing, 2 failing"
    assert find_test_counts("  8 passing\nsee above\n  2 failing\n") == "2 failing"
    assert find_test_counts("ran 12passed, 3 failed\n") == "3 failed"  # "12passed" is no count
    assert find_test_counts("x9 passed\n") is None
    assert find_test_counts("all tests pass\n") is None


def test_letters_that_only_fold_to_pass_or_fail_are_no_count() -> None:
    # re.IGNORECASE matches them, but lowered they are not "passed": never a main count.
    assert find_test_counts("pass\n3 pa\u017f\u017fed\n") is None
    assert find_test_counts("fail\n2 FA\u0130LED\n") is None
    assert find_test_counts("fail\n2 FAILED\n") == "2 failed"


def test_error_lines_come_first_and_rulers_are_left_out() -> None:
    output = "collecting\n===== FAILURES =====\nE   assert 1 == 2\nok\nValueError: bad\n"
    assert command_outcome("pytest", 1, output) == (
        "`pytest` exited 1\nE assert 1 == 2\nValueError: bad"
    )
    assert command_outcome("make", 2, "a\nb\nc\nd\n") == "`make` exited 2\nb\nc\nd"


# --- excerpts of successful results ------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "output", "excerpt"),
    [
        (
            "git commit -m 'Add dark mode'",
            "[main 1a2b3c4] Add dark mode\n 3 files changed, 40 insertions(+)\n",
            "[main 1a2b3c4] Add dark mode\n… 3 files changed, 40 insertions(+)",
        ),
        ("npm install", "\n\nadded 120 packages in 3s\n", "added 120 packages in 3s"),
        (
            "npm run build 2>&1 | tail -3",
            "> app build\n> vite build\n✓ built in 2.1s",
            "> app build\n… ✓ built in 2.1s",
        ),
        (
            "FOO=1 sudo make install",
            "cc -o app\ninstall -m 755 app /usr/bin",
            "cc -o app\n… install -m 755 app /usr/bin",
        ),
        ("python hello.py", "Hello, Alice!\nHello, Alice!\n", "Hello, Alice!"),
    ],
)
def test_a_successful_command_keeps_its_first_and_last_lines(
    command: str, output: str, excerpt: str
) -> None:
    assert result_excerpt(output, command) == excerpt


@pytest.mark.parametrize(
    "command",
    [
        "cat src/app.py",
        "sed -n '1,80p' src/app.py",
        "ls -la | grep -E 'docs|spec'",  # the | inside quotes splits nothing
        "rg -n 'def main' src | head -20",
        "git diff HEAD~1",
        "git log --oneline -5",
        "cat <<'EOF' | jq -r '.[]'\n[{\"a\": 1}]\nEOF",  # a here-document's body is not a command
        "find . -name '*.md'",
    ],
)
def test_commands_that_only_show_content_keep_nothing(command: str) -> None:
    assert shows_content(command)
    assert result_excerpt("def main():\n    password = 'x'\n", command) is None


def test_commands_that_do_something_are_not_taken_for_lookers() -> None:
    for command in ("pytest -q | tail -5", "git add . && git commit -m x", "python run.py"):
        assert not shows_content(command), command


def test_an_excerpt_is_short_redacted_before_cut_and_never_the_whole_output() -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4
    output = "\n".join([f"export GITHUB_TOKEN={token}", *[f"row {n}" for n in range(5000)]])
    got = result_excerpt(output, "./deploy.sh")
    assert got is not None and len(got) <= RESULT_EXCERPT_CHARS
    assert token[:12] not in got and "[REDACTED" in got
    assert got.endswith("row 4999") and "row 2500" not in got
    long_line = "x" * 5000 + token
    cut = result_excerpt(long_line, "./deploy.sh")
    assert cut is not None and len(cut) <= RESULT_EXCERPT_CHARS and "ghp_" not in cut
    assert result_excerpt("\n\n=====\n", "make") is None  # nothing to say
    assert result_excerpt("\x1b[32mok\x1b[0m", "make") == "ok"


# --- OpenClaw's wording ----------------------------------------------------------------------

_OC_PIECES = [
    *_PIECES, "refused", "cannot", "can't", "unable to", "timed out", "panicked", "ValueError",
    "KeyError", "failure", "e ", "E\t", "e\u2003", "\u212aeyError", "refu\u017fed", "n\u0130",
    "FATAL", "Denied", "NO SUCH", "Can'T", "exception", "exit", "errorless", "my_error",
]  # fmt: skip
oc_outputs = st.lists(st.sampled_from(_OC_PIECES), max_size=40).map("".join)


@settings(max_examples=1500, deadline=None)
@given(oc_outputs)
def test_openclaw_line_shortcuts_agree_with_their_patterns(text: str) -> None:
    for line in [text, *text.splitlines()]:
        assert _error_line(line) == (_OC_ERROR_LINE.search(line) is not None), line
        assert _error_line(line.strip()) == (_OC_ERROR_LINE.search(line.strip()) is not None)
        # summarise_tests and error_lines pass over a line without "pass" or "fail" before the
        # count pattern, and error_lines a line that starts otherwise before the noise pattern.
        found = _OC_COUNT_LINE.search(line) is not None
        assert not found or "pass" in line or "fail" in line
        noise = _OC_NOISE_LINE.match(line.strip()) is not None
        assert not noise or line.strip()[0] in _NOISE_FIRSTS


_EXIT_PIECES = [
    "Command", "Process", "ommand", " exited with code ", "exited with code ", "1", "-", "-2",
    "12", "\u0663", "x", " ", "\n", "(", ")", "Command exited with code 1", "Proc",
]  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_EXIT_PIECES), max_size=14).map("".join))
def test_exit_notes_are_taken_out_as_their_pattern_takes_them(text: str) -> None:
    assert _without_exit_notes(text) == _EXIT_TEXT.sub("", text)

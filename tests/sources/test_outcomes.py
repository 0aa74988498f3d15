"""Tool results reduced to outcome lines: test counts, error excerpts, failures.

``find_test_counts`` and the error excerpt pass most lines over with cheap tests before any
pattern runs; the plain readings below (a pattern on every line) say what they must find, and
random outputs made of the pieces that matter (counts, case, line breaks of every kind, error
markers, rulers, colour codes) check that they always agree.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.sources.normalise import clip
from obsmem.sources.outcomes import (  # the markers and rulers are what the outcomes define
    _ERROR_MARKERS,
    _RULES,
    command_outcome,
    failure_outcome,
    find_test_counts,
    short,
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

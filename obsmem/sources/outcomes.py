"""Tool results reduced to outcome lines: the pieces every reader's outcomes are made of.

A result becomes an ``outcome`` only when it says something worth remembering (a non-zero exit
with the first error lines, a tool's error, test counts). OpenClaw's outcomes word things their
own way (``summarise_tests`` says ``passed`` for ``passing``, ``error_lines`` keeps five lines):
kept beside the others rather than merged, which would change what observed sessions said.
"""

from __future__ import annotations

import re

from obsmem.redact import redact, safe_cut
from obsmem.sources.normalise import clip

__all__ = [
    "ERROR_LINES",
    "EXCERPT_CHARS",
    "LABEL_CHARS",
    "LINE_CHARS",
    "TEST_WORDS",
    "command_outcome",
    "error_lines",
    "failure_outcome",
    "find_test_counts",
    "first_lines",
    "short",
    "strip_ansi",
    "summarise_tests",
]

#: Longest one-line summary (an action line), and longest command or label quoted in an outcome.
LINE_CHARS = 240
LABEL_CHARS = 120
#: How many error lines an outcome keeps, and how long that excerpt may be.
ERROR_LINES = 3
EXCERPT_CHARS = 500
#: Words without which no output holds a test summary: the cheap test before any parsing.
TEST_WORDS = ("pass", "fail", "PASS", "FAIL")
#: Only the tail of a command's output is searched for a test summary: runners print it last.
_COUNTS_TAIL = 4000
#: Error lines are looked for in this much of an output's head (runners print errors early,
#: and a multi-megabyte log is not worth scanning for three lines).
_SCAN_CHARS = 64 * 1024

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# "\b(\d+)" written as a digit, then "no word character before it": a pattern that starts with
# a character class lets ``re`` skip straight to the digits instead of trying every position.
_COUNT = re.compile(
    r"(\d(?<!\w\d)\d*)\s+(passed|failed|passing|failing|errors?|skipped|xfailed|xpassed|pending|"
    r"todo|deselected|ignored|warnings?|total)\b",
    re.IGNORECASE,
)
_MAIN_COUNTS = frozenset({"passed", "failed", "passing", "failing"})
# Searching tools exit 1 when nothing matched: that is an answer, not a failure.
_SEARCHERS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack"})
_ERROR_MARKERS = (
    "error",
    "Error",
    "ERROR",
    "FAIL",
    "Traceback",
    "Exception",
    "fatal",
    "panic",
    "denied",
    "No such file",
    "not found",
    "E   ",
)
_RULES = ("===", "___", "---", "⎯⎯⎯")
# Any of _ERROR_MARKERS as a substring, in one scan: any() over the markers per output line was
# a good part of reading a failing command's result.
_ERROR_MARKER = re.compile("|".join(map(re.escape, _ERROR_MARKERS)))


def short(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with an ellipsis.

    Text of several lines is redacted before its lines are joined: ``db-password: X`` on a line
    of its own is a setting, and read as prose once joined to the next line it would pass."""
    if "\n" in text:
        text = redact(text)
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    return line[: safe_cut(line, limit - 1)].rstrip() + "…"


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (local command output and test runners add them)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def find_test_counts(output: str) -> str | None:
    """The test summary a runner printed (``12 passed, 1 failed``), from the end of ``output``."""
    tail = strip_ansi(output[-_COUNTS_TAIL:])
    if "pass" not in tail and "fail" not in tail and "PASS" not in tail and "FAIL" not in tail:
        return None  # TEST_WORDS spelt out; most command output has no test summary
    found: list[list[tuple[str, str]]] = []
    for line in reversed(tail.splitlines()):
        if not found:
            # A main count's word, lowered, is in the lowered line: without "pass" or "fail"
            # there the line is passed over, for far less than the count pattern costs.
            low = line.lower()
            if "pass" not in low and "fail" not in low:
                continue
        counts = [(number, word.lower()) for number, word in _COUNT.findall(line)]
        if counts and any(word in _MAIN_COUNTS for _, word in counts):
            found.append(counts)
            if len(found) == 2:
                break
        elif found and line.strip():
            break
    if not found:
        return None
    counts = found[0]
    if len(found) == 2:  # mocha prints "12 passing" and "1 failing" on two lines
        words = {word for _, word in counts}
        if not words & {word for _, word in found[1]}:
            counts = found[1] + counts
    return ", ".join(f"{number} {word}" for number, word in counts)


def first_lines(text: str, count: int = ERROR_LINES) -> str:
    """The first ``count`` non-blank lines of ``text`` as they are (indentation kept), clipped."""
    lines: list[str] = []
    for line in strip_ansi(text).splitlines():
        if line.strip():
            lines.append(line.rstrip())
            if len(lines) == count:
                break
    return clip("\n".join(lines), EXCERPT_CHARS)


def _excerpt(text: str, *, errors_first: bool) -> str:
    """The first few lines worth quoting from a failure's output (error lines first if asked)."""
    head = text[: safe_cut(text, _SCAN_CHARS)]
    # Stripped and filtered by map and filter: no Python-level step per line of a long output.
    lines = list(filter(None, map(str.rstrip, strip_ansi(head).splitlines())))
    if errors_first:
        marked = [
            line
            for line in filter(_ERROR_MARKER.search, lines)
            if not line.lstrip().startswith(_RULES)  # "===== FAILURES =====" says nothing
        ]
        if marked:
            lines = marked
        elif len(lines) > ERROR_LINES:
            lines = lines[-ERROR_LINES:]  # no error line: the end says most about how it ended
    picked = [short(line.strip(), 300) for line in lines[:ERROR_LINES]]
    return clip("\n".join(picked), EXCERPT_CHARS)


def _no_match(command: str | None, code: int, output: str) -> bool:
    if code != 1 or output.strip() or not command:
        return False
    words = command.split(maxsplit=2)
    first = words[0].rsplit("/", 1)[-1] if words else ""
    return first in _SEARCHERS or (first == "git" and len(words) > 1 and words[1] == "grep")


def command_outcome(
    command: str | None, code: int | None, output: str, stderr: str = ""
) -> str | None:
    """A shell command's result in one to four lines, or None when it is routine.

    Kept: a non-zero exit (``\\`npm test\\` exited 1: 3 failed, 10 passed`` and the first error
    lines, from stderr when there is any) and test counts. Dropped: exit 0 without test counts,
    and a search tool's exit 1 with no output (nothing matched).
    """
    counts = find_test_counts(output) if output else None
    if counts is None and stderr:
        counts = find_test_counts(stderr)  # some runners (jest) report on stderr
    label = f"`{short(command, LABEL_CHARS)}`" if command else "Command"
    if code is None or code == 0:
        return f"{label}: {counts}" if counts else None
    if _no_match(command, code, output + stderr):
        return None
    head = f"{label} exited {code}"
    if counts:
        head += f": {counts}"
    detail = _excerpt(stderr, errors_first=False) if stderr.strip() else ""
    if not detail:
        detail = _excerpt(output, errors_first=True)
    return f"{head}\n{detail}" if detail else head


def failure_outcome(label: str, text: str) -> str:
    """A failed tool call: ``write_file src/a.py failed: Permission denied`` (and a line or two)."""
    detail = _excerpt(text, errors_first=False)
    if not detail:
        return f"{label} failed"
    first, _, rest = detail.partition("\n")
    return f"{label} failed: {first}" + (f"\n{rest}" if rest else "")


# --- OpenClaw's wording -------------------------------------------------------------------------
_OC_COUNT_LINE = re.compile(r"\b\d+ (?:passed|failed|passing|failing)\b")
_OC_COUNT = re.compile(
    r"(\d+) (passed|failed|passing|failing|errors?|skipped|xfailed|xpassed|pending|todo)\b"
)
_OC_COUNT_WORD = {"passing": "passed", "failing": "failed"}
_OC_COUNT_ONLY = re.compile(
    r"^\s*\d+ (?:passed|failed|passing|failing|pending|skipped)(?:\s*\([^)\n]*\))?\s*$"
)
_OC_ERROR_LINE = re.compile(
    r"\b(?:\w*error|\w*exception|fatal|denied|refused|failed|failure|not found|no such"
    r"|cannot|can't|unable to|timed out|panic(?:ked)?)\b|^E\s",
    re.IGNORECASE,
)
# Lines that carry no information of their own: rulers, the traceback banner.
_OC_NOISE_LINE = re.compile(r"^(?:[=_\-*#~]{3,}.*|Traceback \(most recent call last\):)$")
_OC_ERROR_LINES = 5
_OC_EXCERPT_CHARS = 1000


def summarise_tests(text: str) -> str:
    """``"41 passed, 1 failed"`` from the last test summary in ``text``, else ``""``.

    The summary is the last line with a pass/fail count (pytest, jest, cargo: one line), joined
    with the count-only lines right above it (mocha prints "41 passing" and "1 failing" apart).
    """
    if "pass" not in text and "fail" not in text:
        return ""
    lines = text.splitlines()[-200:]  # summaries come last
    for i in range(len(lines) - 1, -1, -1):
        if not _OC_COUNT_LINE.search(lines[i]):
            continue
        start = i
        if _OC_COUNT_ONLY.match(lines[i]):
            while start > max(0, i - 4) and _OC_COUNT_ONLY.match(lines[start - 1]):
                start -= 1
        seen: dict[str, str] = {}
        for number, word in _OC_COUNT.findall("\n".join(lines[start : i + 1])):
            seen.setdefault(_OC_COUNT_WORD.get(word, word), number)
        return ", ".join(f"{number} {word}" for word, number in seen.items())
    return ""


def error_lines(text: str, counts: str) -> str:
    """The lines of ``text`` that say what went wrong (else its first lines), clipped.

    ``counts`` is the test summary already in the outcome's head: its lines are left out.
    """
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not _OC_NOISE_LINE.match(line)]
    if counts:
        lines = [line for line in lines if not _OC_COUNT_LINE.search(line)]
    chosen = [line for line in lines if _OC_ERROR_LINE.search(line)][:_OC_ERROR_LINES]
    if not chosen:
        chosen = lines[:_OC_ERROR_LINES]
    return clip("\n".join(clip(line, 300) for line in chosen), _OC_EXCERPT_CHARS)

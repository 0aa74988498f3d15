"""Tool results reduced to outcome lines: the pieces every reader's outcomes are made of.

A result becomes an ``outcome`` only when it says something worth remembering (a non-zero exit
with the first error lines, a tool's error, test counts). A routine success gives no outcome, but
may leave a short excerpt on its call (``result_excerpt``): the line a build, a commit or a
created file ends with, which tells what the call achieved. OpenClaw's outcomes word things their
own way (``summarise_tests`` says ``passed`` for ``passing``, ``error_lines`` keeps five lines):
kept beside the others rather than merged, which would change what observed sessions said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from operator import itemgetter

from obsmem.redact import redact, safe_cut
from obsmem.sources.jsonl import Needles
from obsmem.sources.normalise import clip

__all__ = [
    "ERROR_LINES",
    "EXCERPT_CHARS",
    "LABEL_CHARS",
    "LINE_CHARS",
    "RESULT_EXCERPT_CHARS",
    "TEST_WORDS",
    "command_outcome",
    "created_excerpt",
    "error_lines",
    "failure_outcome",
    "find_test_counts",
    "first_lines",
    "result_excerpt",
    "short",
    "shows_content",
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
#: The word of a (number, word) count.
_second = itemgetter(1)
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
_MEANINGFUL_LINE = re.compile(r"\w")


@lru_cache(maxsize=1)
def _marker_needles() -> Needles:
    """The error markers as one automaton over UTF-8 (built on first use: most reads need none)."""
    return Needles([marker.encode() for marker in _ERROR_MARKERS])


def _error_lines(lines: list[str], limit: int) -> list[str]:
    """The first ``limit`` of ``lines`` that hold one of ``_ERROR_MARKERS`` and do not open with
    a ruler (``===== FAILURES =====`` says nothing), in order.

    The lines (none holds a line break, as ``splitlines`` made them) are searched as one UTF-8
    text, where an ASCII marker occurs exactly where it does in a line, in one pass for all
    markers (``Needles``); each occurrence's line is found by counting line breaks. The
    alternation of the twelve markers run on every line cost far more: a search call per line,
    and ``re`` trying its branches at every common letter (e, f, n, p).
    """
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    found: list[str] = []
    index = at = 0  # line ``index`` starts at byte ``at``
    for end in sorted({end for _, end in _marker_needles().found(data)}):
        last = end - 1  # the occurrence's last byte, in the line it lies in
        if last < at:
            continue  # another occurrence in a line already looked at
        index += data.count(b"\n", at, last)
        line = lines[index]
        if not line.lstrip().startswith(_RULES):
            found.append(line)
            if len(found) == limit:
                break
        at = data.find(b"\n", last) + 1
        if not at:
            break
        index += 1
    return found


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
        if counts and not _MAIN_COUNTS.isdisjoint(map(_second, counts)):
            found.append(counts)
            if len(found) == 2:
                break
        elif found and line.strip():
            break
    if not found:
        return None
    counts = found[0]
    # mocha prints "12 passing" and "1 failing" on two lines, with no word in common
    if len(found) == 2 and set(map(_second, counts)).isdisjoint(map(_second, found[1])):
        counts = found[1] + counts
    return ", ".join(map(" ".join, counts))  # "12 passed": number and word, both text


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
    # safe_cut leaves a text within the limit whole: not called for it (most outputs).
    head = text if len(text) <= _SCAN_CHARS else text[: safe_cut(text, _SCAN_CHARS)]
    # Stripped and filtered by map and filter: no Python-level step per line of a long output.
    lines = list(filter(None, map(str.rstrip, strip_ansi(head).splitlines())))
    if errors_first:
        marked = _error_lines(lines, ERROR_LINES)
        if marked:
            lines = marked
        elif len(lines) > ERROR_LINES:
            lines = lines[-ERROR_LINES:]  # no error line: the end says most about how it ended
    picked: list[str] = []
    for line in lines[:ERROR_LINES]:
        one = " ".join(line.split())  # what short() makes of a line without a line break ...
        picked.append(one if len(one) <= 300 else short(one, 300))  # ... and cuts it to
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


# --- Excerpts of successful results ------------------------------------------------------------
#: Longest excerpt of a successful result kept on its call, and the most lines it shows.
RESULT_EXCERPT_CHARS = 200
_EXCERPT_LINE_CHARS = 120
#: How much of an output's head and tail is read (and redacted) for its first and last lines.
_EXCERPT_WINDOW = 2048
# Commands that only show what exists (a file, a listing, a diff, a search): their output is the
# content itself, never a summary of what the call achieved, and never kept.
_LOOKERS = frozenset({
    "cat", "head", "tail", "less", "more", "bat", "nl", "sed", "awk", "ls", "ll", "tree", "find",
    "fd", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "stat", "file", "du", "df", "pwd",
    "echo", "printf", "env", "printenv", "which", "whereis", "type", "diff", "cmp", "jq", "yq",
    "xxd", "hexdump", "od", "strings", "readlink", "realpath", "basename", "dirname", "date",
    "whoami", "id", "uname", "ps", "top", "cd", "true", "sleep", "history", "man", "sort", "uniq",
    "cut", "tr", "column",
})  # fmt: skip
_GIT_LOOKERS = frozenset({
    "status", "diff", "log", "show", "branch", "blame", "grep", "ls-files", "rev-parse", "remote",
    "config", "describe", "reflog", "shortlog", "stash", "tag",
})  # fmt: skip
# Wrappers that come before the program that matters (``sudo``, ``env X=1``, ``timeout 5``).
_WRAPPERS = frozenset({"sudo", "env", "time", "timeout", "nice", "nohup", "command", "exec"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


# A word that names a program (``pytest``, ``./run.sh``, ``node_modules/.bin/jest``); a stage
# starting with anything else is the rest of a quoted argument that held a ``|`` or ``;``.
_PROGRAM = re.compile(r"^[\w./+-]+$")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_COMMAND_CHARS = 4000
_STAGE_SPLIT = re.compile(r"\|\||&&|[|;&\n]").split


def _programs(command: str) -> list[tuple[str, str]]:
    """The program each stage of a shell command runs, with its first argument."""
    if "<<" in command:
        command = command.split("\n", 1)[0]  # a here-document's body is data, not commands
    # Quoted arguments become one word, so a ``|`` in a pattern (``grep "a|b"``) splits nothing.
    command = _QUOTED.sub("Q", command[:_COMMAND_CHARS])
    found: list[tuple[str, str]] = []
    for stage in _STAGE_SPLIT(command):
        words = [w for w in stage.split() if not _ASSIGNMENT.match(w)]
        while words and (words[0] in _WRAPPERS or words[0].isdigit() or words[0].startswith("-")):
            words = words[1:]
        if words and _PROGRAM.match(words[0]):
            found.append((words[0].rsplit("/", 1)[-1], words[1] if len(words) > 1 else ""))
    return found


# Cached: a session runs the same commands again and again (``git status``, ``npm test``), and a
# shell call's result asks again about the command its call was asked about.
@lru_cache(maxsize=1024)
def shows_content(command: str) -> bool:
    """True for a command whose every stage only shows what exists (a file, a listing, a diff,
    a log): ``cat a | grep b`` does, ``pytest | tail -5`` does not."""
    return all(
        (first in _GIT_LOOKERS or not first) if program == "git" else program in _LOOKERS
        for program, first in _programs(command)
    )


def result_excerpt(output: str, command: str | None = None) -> str | None:
    """A successful result's first and last lines, redacted and at most ``RESULT_EXCERPT_CHARS``;
    None when the result would only repeat content.

    ``command`` is the shell command that produced ``output`` (None for another tool's result):
    a command that only shows what exists (``cat``, ``ls``, ``grep``, ``git diff``, ``git log``)
    gives nothing, since its output is a file or a listing, not what the call achieved. What is
    kept is the first line and, when there are more, the last (``[main 1a2b3c4] Add dark mode``,
    ``3 files changed``; ``added 120 packages in 3s``); the text is redacted before it is cut,
    so no secret is cut past recognition.
    """
    if command is not None and shows_content(command):
        return None
    head = output if len(output) <= _EXCERPT_WINDOW else output[: safe_cut(output, _EXCERPT_WINDOW)]
    tail = output[len(output) - _EXCERPT_WINDOW :] if len(output) > _EXCERPT_WINDOW else ""
    if tail:
        tail = tail[tail.find("\n") + 1 :]  # whole lines only: the window starts mid-line
    text = redact(strip_ansi(head if not tail else f"{head}\n{tail}"))
    # Only the first and the last line worth keeping are kept: looked for from either end, not
    # over every line of the window.
    raws = text.splitlines()
    first = _kept_line(raws)
    if first is None:
        return None
    last = _kept_line(reversed(raws)) or first  # never None: the first line is one to keep
    picked = [first] if last == first else [first, last]
    picked = [short(line, _EXCERPT_LINE_CHARS) for line in picked]
    excerpt = picked[0] if len(picked) == 1 else f"{picked[0]}\n… {picked[1]}"
    return short(excerpt, RESULT_EXCERPT_CHARS) if len(excerpt) > RESULT_EXCERPT_CHARS else excerpt


def _kept_line(raws: Iterable[str]) -> str | None:
    """The first of ``raws`` that says something (a word character, not a ruler), on one line."""
    for raw in raws:
        line = " ".join(raw.split())
        if _MEANINGFUL_LINE.search(line) and not line.startswith(_RULES):
            return line
    return None


_PATCH_DONE = "Success. Updated the following files:"


def created_excerpt(output: str) -> str | None:
    """``Created a.md, b.py`` for the files a successful patch added (Codex's ``apply_patch``
    lists them as ``A path``), or None when it added none: the call's action already names the
    files it touched, and only which are new is worth an excerpt."""
    if not output.startswith(_PATCH_DONE):
        return None
    added = [line[2:].strip() for line in output.splitlines() if line.startswith("A ")]
    return short("Created " + ", ".join(added), RESULT_EXCERPT_CHARS) if added else None


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
# What every match of _OC_ERROR_LINE but "^E\s" holds, lowered: on an ASCII line (where lowering
# is what IGNORECASE does) without one of these the pattern, slow with its "\w*" heads at every
# word, cannot match.
_OC_ERROR_HINT = re.compile(
    r"error|exception|fatal|denied|refused|fail|not found|no such|cannot|can't|unable to"
    r"|timed out|panic"
)
# Lines that carry no information of their own: rulers, the traceback banner.
_OC_NOISE_LINE = re.compile(r"^(?:[=_\-*#~]{3,}.*|Traceback \(most recent call last\):)$")
#: The characters a line _OC_NOISE_LINE matches can start with.
_NOISE_FIRSTS = frozenset("=_-*#~T")
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
        line = lines[i]
        # A count line says "pass" or "fail": most lines are passed over without the pattern.
        if ("pass" not in line and "fail" not in line) or not _OC_COUNT_LINE.search(line):
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


def _error_line(line: str) -> bool:
    """``_OC_ERROR_LINE.search(line)``, the pattern run only where it may match."""
    if line.isascii() and line[:1] not in ("E", "e") and not _OC_ERROR_HINT.search(line.lower()):
        return False
    return _OC_ERROR_LINE.search(line) is not None


def error_lines(text: str, counts: str) -> str:
    """The lines of ``text`` that say what went wrong (else its first lines), clipped.

    ``counts`` is the test summary already in the outcome's head: its lines are left out.
    """
    lines = [line.strip() for line in text.splitlines()]
    # Each pattern is run only where it can match: a noise line starts with one of its first
    # characters, a count line holds "pass" or "fail" (the count pattern, from "\b", is tried
    # at every character of a line it is run on).
    lines = [
        line
        for line in lines
        if line and (line[0] not in _NOISE_FIRSTS or not _OC_NOISE_LINE.match(line))
    ]
    if counts:
        lines = [
            line
            for line in lines
            if ("pass" not in line and "fail" not in line) or not _OC_COUNT_LINE.search(line)
        ]
    chosen = [line for line in lines if _error_line(line)][:_OC_ERROR_LINES]
    if not chosen:
        chosen = lines[:_OC_ERROR_LINES]
    return clip("\n".join(clip(line, 300) for line in chosen), _OC_EXCERPT_CHARS)

"""The startup context rendered ahead: what ``om context`` prints, ready when a session starts.

Every session start runs ``om context``, and most of its time used to go to importing ``json``
(and with it ``re``) to read ``context.json`` and the hook's payload. So when the context is
prepared (``obsmem.context.prepare``), it is also rendered for what a session start asks for:
each agent format, the default budget, the projects worked on lately, a directory memory knows
nothing of, and no project at all. This module reads that file (``paths.rendered_context_file``)
with nothing beyond ``os``: each text is filed under the day it was rendered for (relative dates
change at midnight: today and tomorrow are rendered, so the first session of a day is served
too), and the header names the budget and the identity of the ``context.json`` they were
rendered from. Any mismatch, or a request the file does not hold (another budget or day, a
project not rendered), gives None and the caller takes the full path
(``obsmem.context.startup``), so what is printed is always what that path would print.

``fast_main`` is ``om context`` itself, run by the console script before click is loaded. It
also reads the hook's payload on stdin (a flat JSON object of strings is read by hand; anything
else by ``json``) and finds a directory's project, both needed before the choice is made.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import IO, Any

__all__ = [
    "AGENTS",
    "DEFAULT_BUDGET",
    "UNKNOWN",
    "Request",
    "encode",
    "fast_main",
    "local_day",
    "prepared",
    "project_for",
    "request",
    "source_identity",
    "stdin_cwd",
]

DEFAULT_BUDGET = 6000
AGENTS = ("claude", "codex", "plain")
#: The project name the context of a directory memory knows nothing of is rendered for: no
#: directory can be named with a NUL, and the text of such a context never shows its name.
UNKNOWN = "\x00"
#: How long ``om context`` waits for a hook's JSON on a standard input that is not a terminal.
STDIN_WAIT = 0.3
_MAX_PAYLOAD = 1 << 20
_MAGIC = b"om-rendered-context 1"
_ERRORS = "surrogatepass"  # a directory's name may hold any code point; keep it as it is
_SPACE = " \t\n\r"  # JSON's whitespace, no more


class Request:
    """What an ``om context`` command line asks for, its hook payload's ``cwd`` already read.

    ``error``: what reading the payload raised, reported by the full path.
    """

    __slots__ = ("agent", "budget", "cwd", "error")

    def __init__(
        self, agent: str, cwd: str | None, budget: int, error: Exception | None = None
    ) -> None:
        self.agent = agent
        self.cwd = cwd
        self.budget = budget
        self.error = error


def request(argv: list[str], stdin: IO[Any] | None = None) -> Request | None:
    """Parse ``om context``'s few options by hand and read the hook payload's ``cwd``.

    None when the arguments need the full command line (help, an unknown option, a bad value):
    click then explains the problem properly. The session's directory is ``--cwd`` when given,
    else the hook payload's ``cwd``, else (None) the process's own.
    """
    options: dict[str, str | None] = {"--for": "plain", "--cwd": None, "--budget": None}
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, sep, value = arg.partition("=")
        if name not in options:
            return None
        if not sep:
            if not args:
                return None
            value = args.pop(0)
        options[name] = value
    agent, budget = options["--for"] or "plain", options["--budget"] or str(DEFAULT_BUDGET)
    if agent not in AGENTS or not budget.isdigit() or not 200 <= int(budget) <= 200_000:
        return None
    try:
        cwd = options["--cwd"] or stdin_cwd(stdin)
    except Exception as exc:  # reported by the full path, which never fails a session start
        return Request(agent, None, int(budget), exc)
    return Request(agent, cwd, int(budget))


def project_for(cwd: str | None) -> str | None:
    """The project name of a working directory: its git repository's folder, else its own name.

    (``os.path`` rather than ``pathlib``: its import alone would cost every session start.)"""
    if not cwd:
        return None
    start = os.path.normpath(cwd)
    home = os.path.expanduser("~")
    current = start
    try:
        while True:
            if os.path.exists(os.path.join(current, ".git")):
                return os.path.basename(current) or None
            parent = os.path.dirname(current)
            if current == home or parent == current:
                break
            current = parent
    except (OSError, ValueError):
        pass
    return os.path.basename(start) or None


def stdin_cwd(stream: IO[Any] | None = None, wait: float = STDIN_WAIT) -> str | None:
    """The ``cwd`` of the hook's JSON payload on standard input, or None.

    Agents start SessionStart hooks with a JSON object on stdin (``session_id``, ``cwd``, ...);
    its ``cwd`` is the session's directory, which can differ from the hook process's own. A
    terminal is never read, and a silent pipe is given up on after ``wait`` seconds, so
    ``om context`` typed by hand or run from a script never hangs. The payloads agents send
    (one flat object of strings) are read without ``json``; anything else is left to ``json``,
    which gives the same answer for those.
    """
    import sys

    stream = stream if stream is not None else sys.stdin
    try:
        if stream is None or stream.closed or stream.isatty():
            return None
        fd = stream.fileno()
    except (OSError, ValueError):
        return None
    import select
    import time

    data = b""
    deadline = time.monotonic() + wait
    payload: object = None
    whole = False
    simple = True  # while the data read so far is a prefix of a flat object of strings
    while len(data) < _MAX_PAYLOAD:
        try:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            chunk = os.read(fd, 65536) if ready else b""
        except (OSError, ValueError):
            break
        if not chunk:
            break
        data += chunk
        if simple:
            state, found = _flat_cwd(data)
            if state is _DONE:
                payload, whole = {"cwd": found}, True
                break  # a whole object arrived: no need to wait for the end of the stream
            simple = state is _MORE
            if simple:
                continue
        import json

        try:
            payload, whole = json.loads(data), True
            break
        except ValueError:
            continue
    if not whole:
        if not data.strip():
            return None
        import json

        try:
            payload = json.loads(data)
        except ValueError:
            return None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    # A NUL byte names no directory (and expanduser raises on "~\x00"): the process's own then.
    if not isinstance(cwd, str) or not cwd.strip() or "\x00" in cwd:
        return None
    return os.path.expanduser(cwd)


_DONE, _MORE, _OTHER = "done", "more", "other"


def _flat_cwd(data: bytes) -> tuple[str, object]:
    """Read ``data`` as a JSON object whose values are strings without escapes, ``true``,
    ``false`` or ``null``: (``_DONE``, its ``cwd`` or None) when it is one, whole; ``_MORE``
    while it may still become one; ``_OTHER`` for anything else (``json`` decides then).

    Whenever this says ``_DONE``, ``json.loads`` accepts the data and finds the same ``cwd``;
    whenever it says ``_MORE``, ``json.loads`` rejects it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _OTHER, None
    end = len(text)
    i = _skip(text, 0)
    if i == end:
        return _MORE, None
    if text[i] != "{":
        return _OTHER, None
    i = _skip(text, i + 1)
    if i == end:
        return _MORE, None
    cwd: object = None
    if text[i] == "}":
        return (_DONE, None) if _skip(text, i + 1) == end else (_OTHER, None)
    while True:
        key, i = _string(text, i)
        if i < 0:
            return (_MORE if i == -1 else _OTHER), None
        i = _skip(text, i)
        if i == end:
            return _MORE, None
        if text[i] != ":":
            return _OTHER, None
        i = _skip(text, i + 1)
        if i == end:
            return _MORE, None
        value: object = None
        if text[i] == '"':
            value, i = _string(text, i)
            if i < 0:
                return (_MORE if i == -1 else _OTHER), None
        else:
            for word, meaning in (("true", True), ("false", False), ("null", None)):
                if text.startswith(word, i):
                    value, i = meaning, i + len(word)
                    break
                if word.startswith(text[i:]):
                    return _MORE, None
            else:
                return _OTHER, None
        if key == "cwd":
            cwd = value  # a repeated key: the last one counts, as in ``json``
        i = _skip(text, i)
        if i == end:
            return _MORE, None
        if text[i] == "}":
            return (_DONE, cwd) if _skip(text, i + 1) == end else (_OTHER, None)
        if text[i] != ",":
            return _OTHER, None
        i = _skip(text, i + 1)
        if i == end:
            return _MORE, None


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _string(text: str, i: int) -> tuple[str, int]:
    """The string starting at ``text[i]`` and the index after it; index -1 when it is not
    finished yet, -2 when it is not a string without escapes and control characters."""
    if text[i] != '"':
        return "", -2
    close = text.find('"', i + 1)
    value = text[i + 1 : close] if close >= 0 else text[i + 1 :]
    if "\\" in value or (value and min(value) < " "):
        return "", -2
    return (value, close + 1) if close >= 0 else ("", -1)


def local_day() -> str:
    """Today's local date as ``YYYY-MM-DD``: the day ``om context`` renders dates for."""
    import time

    now = time.localtime()
    return f"{now.tm_year:04d}-{now.tm_mon:02d}-{now.tm_mday:02d}"


def source_identity(path: str) -> str:
    """What tells one ``context.json`` from another without reading it: device, inode, size and
    modification time (it is replaced, never edited in place, so any change moves one)."""
    stat = os.stat(path)
    return f"{stat.st_dev} {stat.st_ino} {stat.st_size} {stat.st_mtime_ns}"


def _stamp(budget: int, source: str) -> bytes:
    from obsmem import __version__

    return f"{__version__} {budget} {source}".encode()


def _name(day: str, agent: str, project: str | None) -> bytes:
    if project is None:
        return f"{day}/{agent}:-".encode()
    if project == UNKNOWN:
        return f"{day}/{agent}:*".encode()
    return f"{day}/{agent}:=".encode() + project.encode("utf-8", _ERRORS).hex().encode()


def encode(
    budget: int,
    source: str,
    outputs: Mapping[tuple[str, str, str | None], str],
    texts: Iterable[str],
    projects: Iterable[str],
) -> bytes:
    """The rendered-context file: ``outputs`` (what ``om context`` prints, by day (ISO), agent
    and project, ``UNKNOWN`` for a directory memory knows nothing of) at ``budget``, rendered
    from the ``context.json`` whose ``source_identity`` is ``source``; ``texts`` and
    ``projects`` are its entries' texts and projects, which tell whether a directory's name is
    one the rendering for ``UNKNOWN`` does not depend on."""
    parts = [
        b"\x00".join(dict.fromkeys(p.casefold().encode("utf-8", _ERRORS) for p in projects)),
        "\n".join(t.casefold() for t in texts).encode("utf-8", _ERRORS),
    ]
    index = [b"projects 0 %d" % len(parts[0]), b"texts %d %d" % (len(parts[0]), len(parts[1]))]
    offset = len(parts[0]) + len(parts[1])
    stored: dict[bytes, int] = {}  # the same bytes (two agents, two days) are kept once
    for (day, agent, project), text in outputs.items():
        data = text.encode("utf-8", _ERRORS)
        if data not in stored:
            stored[data] = offset
            parts.append(data)
            offset += len(data)
        index.append(b"%s %d %d" % (_name(day, agent, project), stored[data], len(data)))
    head = b"\n".join([_MAGIC, _stamp(budget, source), *index])
    return head + b"\n\n" + b"".join(parts)


def prepared(asked: Request, environ: Mapping[str, str] | None = None) -> str | None:
    """What ``om context`` prints for ``asked``, from the rendered file; None when that file
    does not hold it exactly as the full path would print it now."""
    if asked.error is not None or asked.budget != DEFAULT_BUDGET:
        return None
    from obsmem import paths

    try:
        with open(paths.rendered_context_file(environ), "rb") as file:
            data = file.read()
        source = source_identity(paths.context_file(environ))
        project = project_for(asked.cwd if asked.cwd is not None else os.getcwd())
    except (OSError, ValueError):
        return None
    head, sep, body = data.partition(b"\n\n")
    lines = head.split(b"\n")
    if not sep or len(lines) < 2 or lines[0] != _MAGIC:
        return None
    if lines[1] != _stamp(asked.budget, source):
        return None
    index: dict[bytes, tuple[int, int]] = {}
    try:
        for line in lines[2:]:
            name, offset, length = line.split(b" ")
            index[name] = (int(offset), int(offset) + int(length))
    except ValueError:
        return None
    if max((end for _, end in index.values()), default=-1) != len(body):
        return None  # cut short or added to: not a file this module wrote

    def part(name: bytes) -> str | None:
        where = index.get(name)
        return None if where is None else body[where[0] : where[1]].decode("utf-8", _ERRORS)

    try:
        day = local_day()
        found = part(_name(day, asked.agent, project))
        if found is not None or project is None:
            return found
        key = project.casefold()
        known, texts = part(b"projects"), part(b"texts")
        if known is None or texts is None or key in known.split("\x00") or key in texts:
            return None  # a project memory knows, or one named in its lines: not rendered ahead
        return part(_name(day, asked.agent, UNKNOWN))
    except ValueError:  # not UTF-8: not a file this module wrote
        return None


def fast_main(argv: list[str]) -> int | None:
    """``om context`` without click: parse the few options by hand and print.

    Returns the exit status, or None when the arguments need the full command line (help, an
    unknown option, a bad value): click then explains the problem properly. The session's
    directory is ``--cwd`` when given, else the hook payload's ``cwd``, else the process's own.
    What was rendered ahead is printed when it is what ``startup.run_context`` would print;
    ``startup.answer`` gives the rest (imported only then: it costs a session start ``json``).
    """
    asked = request(argv)
    if asked is None:
        return None
    text = prepared(asked)
    if text is None:
        from obsmem.context.startup import answer

        return answer(asked)
    print(text)
    return 0

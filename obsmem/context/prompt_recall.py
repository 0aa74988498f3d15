"""Per-prompt recall: the few memories most relevant to what the user just asked.

A startup context is one shot; when a conversation turns to another topic, nothing brings back
what om knows about it unless the agent thinks of searching. The agents' prompt hook
(``om hook prompt``) runs ``recall_for_prompt`` on every prompt and adds what it returns to the
prompt the model reads:

- nothing for a prompt that asks nothing new: empty, a slash command or shell escape, a
  message the agent itself sends (``<task-notification>``, ``<command-name>``), routine words
  ("ok", "go on", "yes", "thanks"), or mostly pasted output (a log, a traceback, a diff);
- otherwise a keyword (BM25) search of observations, archived days and reflections: a hook
  runs in a cold process on the user's critical path, so it never loads a model;
- only memories above a relevance threshold (``OM_PROMPT_RECALL_MIN_SCORE``). BM25 scores grow
  with the rarity of the words matched, and rarity with the size of the memory, so the score is
  divided by the weight of a word found in a single entry (``relevance``): what is left is about
  the number of rare words the memory shares with the prompt, comparable across memory sizes;
- never a memory the startup context already gave this session (``startup_given``: the ids the
  prepared context holds for the session's project), nor one an earlier prompt of the session
  was given, nor one taken from the session itself (the agent has those words already);
- at most ``MAX_LINES`` lines within ``OM_PROMPT_RECALL_TOKENS`` tokens, under a header saying
  they come from om's memory, each with its date and id (``om show ID`` tells the rest).

What a session was given is kept in ``paths.recalled_dir()``: one small JSON file per session,
removed after ``RECORD_DAYS`` days without a prompt. Nothing here writes memory.

Imports stay light (no click, no memory parsers, no numpy): the hook's budget is 150 ms.
"""

from __future__ import annotations

import json
import os
import re
import time

from obsmem import paths
from obsmem.context.startup import CHARS_PER_TOKEN, build_context, load_entries, project_for
from obsmem.index.query import STOPWORDS

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any, TypeVar

    from obsmem.memory.store import MemoryStore
    from obsmem.settings import Settings

    T = TypeVar("T")

__all__ = [
    "HEADER",
    "KINDS",
    "MAX_LINES",
    "RECORD_DAYS",
    "Recall",
    "prompt_query",
    "recall_for_prompt",
    "startup_given",
]

#: At most this many memories are added to one prompt: a few lines, not a second context.
MAX_LINES = 3
#: Hits looked at before those already given or below the threshold are dropped.
CANDIDATES = 12
#: The index kinds searched: what om kept (observations, archived days, reflections, vault
#: pages). The profile and the active context are the startup context's own material.
KINDS = ("observation", "archive", "reflection", "vault")
#: A session's record is dropped after this many days without a prompt.
RECORD_DAYS = 7
HEADER = "From om's memory of earlier sessions (`om show ID` for the source):"
#: A memory's text is cut at this many characters (its id still leads to the whole of it).
MAX_TEXT_CHARS = 320
#: Prompts with fewer words than this (stopwords and routine words left out) ask nothing new.
MIN_WORDS = 2
#: A long prompt is searched by this many of its words, the longest (rare words tend to be
#: long; "the", "run", "fix" are short): an OR of every word of a paragraph would match most of
#: the memory, and BM25 would score each of those entries, on the prompt's critical path.
MAX_QUERY_WORDS = 12

#: Words that carry no topic in a prompt: acknowledgements and nudges.
# fmt: off
ROUTINE_WORDS = frozenset((
    "ok", "okay", "k", "kk", "yes", "yeah", "yep", "yup", "y", "sure", "no", "nope", "n",
    "thanks", "thank", "thx", "ty", "cheers", "please", "pls", "go", "ahead", "continue",
    "proceed", "carry", "keep", "going", "next", "lgtm", "great", "good", "nice", "cool",
    "perfect", "awesome", "fine", "sounds", "looks", "right", "correct", "exactly", "agreed",
    "done", "retry", "try", "again", "wait", "stop", "hi", "hello", "hey", "hmm", "alright",
    "let", "lets", "let's", "s", "that's", "thats", "works", "work", "it's", "now", "one",
    "more", "also", "well", "got", "understood", "makes", "sense", "much", "so", "ship",
))
# fmt: on

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
# Lines that read as pasted material: indented, a traceback or log line, a shell prompt, a diff.
# A pattern string, compiled by ``re`` on first use: only prompts of several lines need it.
_PASTED_START = (
    r"(?:\s|\$ |> |>>> |at |File \"|Traceback|[+\-@]{2}|[{}\[\]()<|#=]|\d{1,4}[:\-/.]\d)"
)


def _agent_message(text: str) -> bool:
    """True for a message the agent itself puts in a prompt (``<task-notification>``...)."""
    end = text.find(">", 1, 80) if text.startswith("<") else -1
    name = text[1:end].split(None, 1)[0] if end > 1 and not text[1].isspace() else ""
    return bool(name) and name[0].isalpha() and all(c.isalnum() or c in "-_:" for c in name)


class Recall:
    """What recall decided for one prompt: the reply ``text`` (empty for none) and why."""

    __slots__ = ("ids", "reason", "text")

    def __init__(self, text: str = "", ids: Iterable[str] = (), reason: str = "") -> None:
        self.text = text
        self.ids = list(ids)
        self.reason = reason

    def __repr__(self) -> str:
        return f"Recall(ids={self.ids!r}, reason={self.reason!r})"


def _is_prose(line: str) -> bool:
    stripped = line.strip()
    if not stripped or re.match(_PASTED_START, line):
        return False
    letters = sum(ch.isalpha() or ch == " " for ch in stripped)
    return letters >= 0.75 * len(stripped) and len(stripped.split()) >= 2


def prompt_query(prompt: str) -> tuple[str | None, str]:
    """The words of ``prompt`` worth searching, or None and why it asks nothing new.

    A prompt with pasted material in it is searched by its prose lines alone (a log's words
    would match anything); one that is mostly pasted material is not searched at all. A long
    prompt is searched by its ``MAX_QUERY_WORDS`` longest words.
    """
    text = prompt.strip()
    if not text:
        return None, "empty prompt"
    if text[0] in "/!":
        return None, "a command, not a question"
    if _agent_message(text):
        return None, "a message from the agent itself"
    lines = text.splitlines()
    if len(lines) > 1:
        prose = [line for line in lines if _is_prose(line)]
        if sum(len(line) for line in prose) < 0.3 * len(text):
            return None, "mostly pasted output"
        text = "\n".join(prose)
    words = [w.casefold() for w in _WORD.findall(text)]
    topical = list(dict.fromkeys(w for w in words if w not in STOPWORDS and w not in ROUTINE_WORDS))
    if len(topical) < MIN_WORDS:
        return None, "a routine prompt"
    if len(topical) > MAX_QUERY_WORDS:
        longest = set(sorted(topical, key=len, reverse=True)[:MAX_QUERY_WORDS])
        return " ".join(w for w in topical if w in longest), ""
    return text, ""


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def startup_given(
    cwd: str | None, environ: Mapping[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """The ids and the (normalised) texts of the lines ``om context`` gives a session
    started in ``cwd``: the prepared context chosen as ``om context --for claude`` chooses it.

    Reads ``context.json`` only (never prepares it, never writes); ([], []) without one.
    """
    entries, _ = load_entries(paths.context_file(environ))
    if not entries:
        return [], []
    shown = _normal(build_context(entries, project=project_for(cwd)))
    ids: list[str] = []
    texts: list[str] = []
    for entry in entries:
        text = _normal(entry.text)
        if text and text in shown:
            texts.append(text)  # a reflection's line may be indexed under another id
            if entry.id:
                ids.append(entry.id)
    return ids, texts


def _record_path(session: str, environ: Mapping[str, str] | None) -> str:
    data = session.encode("utf-8", "replace")
    digest = f"{paths.checksum_name(data)}{len(data):x}"
    return os.path.join(str(paths.recalled_dir(environ)), f"{digest}.json")


def _read_record(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as file:
            data = json.loads(file.read(1 << 20))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_record(path: str, record: Mapping[str, Any]) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(record, file, ensure_ascii=False)
    os.replace(temporary, path)


def _prune(folder: str, now: float) -> None:
    """Remove the records (and leftovers of interrupted writes) of sessions long gone."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not (name.endswith(".json") or name.endswith(".tmp")):
            continue
        path = os.path.join(folder, name)
        try:
            if now - os.stat(path).st_mtime > RECORD_DAYS * 86_400:
                os.unlink(path)
        except OSError:
            continue


class _Counted:
    """One index connection for the search (``bm25.Connections``) that also counts the
    entries, so that scores can be put on one scale."""

    def __init__(self, path: object) -> None:
        self.path = path
        self.entries = 0

    def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        from obsmem.index.db import using_index

        def both(conn: sqlite3.Connection) -> T:
            found = work(conn)
            self.entries = int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
            return found

        return using_index(self.path, both)  # type: ignore[arg-type]


def relevance(score: float, entries: int) -> float:
    """A BM25 score on the scale of ``OM_PROMPT_RECALL_MIN_SCORE``: divided by the weight BM25
    gives a word found in one entry of a memory of ``entries`` entries, so 1.0 is about one such
    word in an entry of average length (a tiny memory, where no word is rare, scores low)."""
    import math

    return score / max(math.log((max(entries, 1) - 0.5) / 1.5), 0.5)


def _line(entry: Mapping[str, Any], room: int) -> str | None:
    text = " ".join(str(entry.get("text") or "").split())
    if len(text) > MAX_TEXT_CHARS:
        text = text[: MAX_TEXT_CHARS - 1].rstrip() + "…"
    date = str(entry.get("date") or "")[:10]
    head = f"- {date}: " if date else "- "
    tail = f" (id {entry['id']})"
    if len(head) + len(text) + len(tail) > room:
        keep = room - len(head) - len(tail) - 1
        if keep < 40:
            return None
        text = text[:keep].rstrip() + "…"
    return head + text + tail


def recall_for_prompt(
    prompt: str,
    *,
    session: str = "",
    cwd: str | None = None,
    store: MemoryStore | None = None,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> Recall:
    """The memories to add to ``prompt`` in session ``session`` (empty ``text`` for none).

    ``cwd`` is the session's directory (which project's startup context it was given);
    ``store`` defaults to the memory of ``environ``, opened without loading its parsers.
    Records what it gives under the session, so the next prompt is not given it again.
    """
    if settings is None:
        from obsmem.settings import load_settings

        settings = load_settings(environ)
    if settings.prompt_recall == "off":
        return Recall(reason="OM_PROMPT_RECALL=off")
    query, why = prompt_query(prompt)
    if query is None:
        return Recall(reason=why)
    if store is None:
        if not (paths.memory_dir(environ).is_dir() and paths.state_dir(environ).is_dir()):
            return Recall(reason="no memory yet")  # and none is created for the asking
        from obsmem.search.entries import LazyStore

        store = LazyStore(settings.lock_timeout_seconds, environ)  # type: ignore[assignment]
    assert store is not None
    now = time.time() if now is None else now
    record_path = _record_path(session, environ) if session else ""
    record = _read_record(record_path) if record_path else None
    if record is None:
        ids, texts = startup_given(cwd, environ)
        record = {"startup": ids, "startup_texts": texts, "given": []}
        if record_path:
            _prune(os.path.dirname(record_path), now)
    given = {str(i) for key in ("startup", "given") for i in record.get(key) or ()}
    given_texts = {str(t) for t in record.get("startup_texts") or ()}

    from obsmem.search.bm25 import for_cold_process
    from obsmem.search.entries import search_entries

    counted = _Counted(store.index_path)
    # Who said it (``Name:`` at a line's start) doubles a score without adding a shared word,
    # and the lift from nearby matches adds to it: both left out, so the threshold reads an
    # entry's own match whatever the prompt names and whatever lies around the entry.
    searching = for_cold_process(settings).replace(
        search_speaker_boost=0.0, search_nearby_weight=0.0
    )
    hits = search_entries(
        store,
        query,
        limit=CANDIDATES,
        settings=searching,
        index=counted,  # type: ignore[arg-type]
        kinds=KINDS,
    )
    room = settings.prompt_recall_tokens * CHARS_PER_TOKEN - len(HEADER) - 1
    lines: list[str] = []
    chosen: list[str] = []
    repeats = 0
    for hit in hits:
        if len(lines) >= MAX_LINES or relevance(hit["score"], counted.entries) < (
            settings.prompt_recall_min_score
        ):
            break  # best first: the rest score lower still
        provenance = hit.get("provenance") or {}
        if hit["id"] in given or _normal(hit["text"]) in given_texts:
            repeats += 1
            continue
        if session and provenance.get("session") == session:
            repeats += 1
            continue  # from this very session: the agent has it already
        line = _line(hit, room)
        if line is None:
            continue
        lines.append(line)
        chosen.append(hit["id"])
        room -= len(line) + 1
    if not chosen:
        if record_path and "at" not in record:
            record["at"] = now
            _write_record(record_path, record)
        if repeats:
            return Recall(reason="what is relevant was given to this session already")
        return Recall(reason="nothing relevant enough" if hits else "no match")
    if record_path:
        record["given"] = [*(record.get("given") or ()), *chosen]
        record["at"] = now
        _write_record(record_path, record)
    return Recall("\n".join([HEADER, *lines]), chosen)


def hook_reply(text: str) -> str:
    """The prompt hook's stdout: Claude Code's and Codex's ``UserPromptSubmit`` JSON."""
    payload = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}
    }
    return json.dumps(payload, ensure_ascii=False)

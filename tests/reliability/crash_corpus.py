"""What the crash and concurrency suites share: a memory of realistic size built with the library,
transcripts in which every user message carries a unique token, ``om`` run as a real subprocess,
and the invariants checked on the memory directory afterwards.

Tokens make "observed exactly once" checkable: a token such as ``f07m00012`` appears in one user
message only (a Claude Code line, or a Codex twin pair), so counting the observations whose text
holds it says whether that message was lost (0) or observed twice (2 or more).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from fakes.llm_server import RecordedRequest, Reply

from obsmem.memory.ledger import read_ledger
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import SECTION_FILES, MemoryStore, new_observation
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.sources.state import CaptureState

ROOT = Path(__file__).resolve().parents[2]
TOKEN = re.compile(r"\bf\d{2}m\d{5}\b")
#: A turn as the observer's request shows it: ``[3] 2026-02-10 14:30 user: text``.
TURN = re.compile(r"^\[(\d+)\] \S+ \S+ (\w+): (.*)$")
_SYLLABLES = ("ka", "lo", "mi", "ru", "te", "zan", "po", "vel", "dri", "sup", "nor", "qua", "bex")
#: Openings of the built memory's lines and of the user messages (each message reads as a
#: decision to the offline observer); random words follow, so texts share few word pairs.
_MEMORY_FRAMES = ("Chose", "Prefers", "Deployed", "Fixed", "Learned that", "Works on", "Uses")
_DECISIONS = ("We decided to use", "Let's go with", "I chose", "Going with", "We will use")
TYPES = ("decision", "preference", "fact", "task", "milestone", "lesson", "project", "event")


def vocabulary(rng: random.Random, size: int = 400) -> list[str]:
    """Pronounceable made-up words: varied enough that no two generated texts look alike to the
    observer's de-duplication, and nothing a secret scanner would redact."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def om_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of an ``om`` subprocess confined to ``root`` (no real home, no network)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OM_")}
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        env.pop(name, None)
    env.update(
        {
            "HOME": str(root / "home"),
            "XDG_DATA_HOME": str(root / "xdg-data"),
            "XDG_CONFIG_HOME": str(root / "xdg-config"),
            "XDG_STATE_HOME": str(root / "xdg-state"),
            "XDG_CACHE_HOME": str(root / "xdg-cache"),
            "OM_HOME": str(root / "mem"),
            "OM_CONFIG_DIR": str(root / "om-config"),
            "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "CODEX_HOME": str(root / "codex"),
            "HERMES_HOME": str(root / "hermes"),
            "OPENCLAW_HOME": str(root / "openclaw"),
            "OM_LLM_PROVIDER": "none",
            "OM_SEARCH_BACKEND": "bm25",
            "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
                os.pathsep
            ),
        }
    )
    env.update(extra)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return env


def om_command(*args: str) -> list[str]:
    """The argv of ``om ARGS`` through this interpreter."""
    return [sys.executable, "-m", "obsmem", *args]


def run_om(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``om ARGS`` to completion."""
    return subprocess.run(
        om_command(*args), env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


# -- memory -----------------------------------------------------------------------------------
def build_memory(store: MemoryStore, count: int, days: int, rng: random.Random) -> list[str]:
    """Write ``count`` observations spread over the last ``days`` days (with ledger provenance),
    in one library call; return their ids."""
    words = vocabulary(rng)
    today = date.today()
    batch: list[Observation] = []
    for n in range(count):
        day = (today - timedelta(days=rng.randrange(1, days + 1))).isoformat()
        text = f"{rng.choice(_MEMORY_FRAMES)} {' '.join(rng.sample(words, 7))} (n{n})"
        batch.append(
            new_observation(
                text,
                date=day,
                time=f"{rng.randrange(8, 20):02d}:{rng.randrange(60):02d}",
                type=rng.choice(TYPES),
                importance=round(rng.uniform(0.2, 0.95), 2),
                confidence=0.8,
                provenance=Provenance(
                    path=f"/history/session-{n % 40:02d}.jsonl",
                    line_start=n + 1,
                    line_end=n + 1,
                    session=f"history-{n % 40:02d}",
                    agent="claude",
                    project="history",
                ),
            )
        )
    store.ensure()
    store.add_observations(batch)
    return [o.id for o in batch]


# -- transcripts ------------------------------------------------------------------------------
@dataclass
class Message:
    """One user message of a generated transcript: its token and the lines it occupies."""

    token: str
    path: Path
    line_start: int
    line_end: int


@dataclass
class Transcript:
    """A generated transcript file and what has been written to it so far."""

    path: Path
    agent: str
    number: int
    session: str
    lines: int = 0  # complete lines
    messages: int = 0
    partial: bytes = b""  # the rest of a line whose first part is on disk
    moment: datetime = field(default_factory=lambda: datetime.now(UTC) - timedelta(hours=3))


class Transcripts:
    """Claude Code and Codex transcripts under ``root``, grown a message at a time."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.words = vocabulary(rng)
        self.files: list[Transcript] = []
        self.messages: dict[str, Message] = {}

    def create(self, claude: int, codex: int, messages: int = 0) -> None:
        """New transcript files, each starting with ``messages`` user messages (and replies)."""
        for index in range(claude + codex):
            number = len(self.files)
            agent = "claude" if index < claude else "codex"
            session = f"{number:04d}aaaa-5b8a-4e6f-9a2d-1c4b7e8f{number:04d}"
            if agent == "claude":
                folder = self.root / "claude" / "projects" / f"-home-dev-p{number % 5}"
                path = folder / f"{session}.jsonl"
            else:
                folder = self.root / "codex" / "sessions" / "2026" / "11" / "28"
                path = folder / f"rollout-2026-11-28T10-00-00-{session}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            item = Transcript(path, agent, number, session)
            self.files.append(item)
            if agent == "codex":
                meta = {
                    "timestamp": _stamp(item.moment),
                    "type": "session_meta",
                    "payload": {
                        "id": session,
                        "timestamp": _stamp(item.moment),
                        "cwd": f"/home/dev/p{number % 5}",
                        "originator": "codex_cli_rs",
                        "cli_version": "0.129.0",
                    },
                }
                self._write(item, [json.dumps(meta)])
            else:
                path.touch()
            self.append(item, messages)

    def append(self, item: Transcript, messages: int, *, partial: bool = False) -> None:
        """Add ``messages`` user messages with their replies; with ``partial``, the last line
        written stops halfway (``complete`` finishes it)."""
        self.complete(item)  # first: the messages' line numbers count the finished line
        lines: list[str] = []
        for _ in range(messages):
            lines.extend(self._message(item, len(lines)))
        self._write(item, lines, partial=partial)

    def complete(self, item: Transcript) -> None:
        """Finish a line left halfway."""
        if item.partial:
            with item.path.open("ab") as handle:
                handle.write(item.partial)
            item.partial = b""
            item.lines += 1

    def complete_all(self) -> None:
        """Finish every line left halfway."""
        for item in self.files:
            self.complete(item)

    def _message(self, item: Transcript, offset: int) -> list[str]:
        token = f"f{item.number:02d}m{item.messages:05d}"
        item.messages += 1
        pick = " ".join(self.rng.sample(self.words, 5))
        user = f"{self.rng.choice(_DECISIONS)} {pick} {token}."
        reply = f"Noted {token}."
        item.moment += timedelta(seconds=2)
        first = item.lines + offset + 1
        if item.agent == "claude":
            out = [
                _claude(item, token, "user", {"role": "user", "content": user}),
                _claude(
                    item,
                    token,
                    "assistant",
                    {"role": "assistant", "content": [{"type": "text", "text": reply}]},
                ),
            ]
            self.messages[token] = Message(token, item.path, first, first)
            return out
        stamp = _stamp(item.moment)
        out = [
            json.dumps(
                {
                    "timestamp": stamp,
                    "type": "event_msg",
                    "payload": {"type": "user_message", "message": user, "images": []},
                }
            ),
            json.dumps(
                {
                    "timestamp": stamp,
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": user}],
                    },
                }
            ),
            json.dumps(
                {
                    "timestamp": stamp,
                    "type": "event_msg",
                    "payload": {"type": "agent_message", "message": reply},
                }
            ),
            json.dumps(
                {
                    "timestamp": stamp,
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": reply}],
                    },
                }
            ),
        ]
        self.messages[token] = Message(token, item.path, first, first + 1)
        return out

    def _write(self, item: Transcript, lines: list[str], *, partial: bool = False) -> None:
        self.complete(item)
        if not lines:
            return
        data = ("\n".join(lines) + "\n").encode()
        if partial:
            cut = len(data) - 1 - self.rng.randrange(1, max(2, len(lines[-1]) // 2))
            data, item.partial = data[:cut], data[cut:]
        with item.path.open("ab") as handle:
            handle.write(data)
        item.lines += len(lines) - (1 if partial else 0)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _claude(item: Transcript, token: str, kind: str, message: dict[str, object]) -> str:
    item.moment += timedelta(seconds=1)
    return json.dumps(
        {
            "type": kind,
            "sessionId": item.session,
            "cwd": f"/home/dev/p{item.number % 5}",
            "uuid": f"{item.session}-{token}-{kind}",
            "timestamp": _stamp(item.moment),
            "message": message,
        }
    )


def echo_observer(words: list[str]) -> Reply:
    """A fake-LLM reply: one observation per user message of the chunk, worded per request."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def reply(request: RecordedRequest) -> str:
        with lock:
            number = next(counter)
        user = request.user
        part = user[user.find("<transcript>") :]
        observations = []
        for line in part.splitlines():
            match = TURN.match(line)
            if not match or match.group(2) != "user":
                continue
            for token in TOKEN.findall(match.group(3)):
                digest = hashlib.sha256(f"{number}:{token}".encode()).digest()
                nonce = " ".join(words[b % len(words)] for b in digest[:5])
                observations.append(
                    {
                        "text": f"Observed {token} {nonce}",
                        "type": "decision",
                        "importance": 0.8,
                        "confidence": 0.9,
                        "turns": [int(match.group(1))],
                    }
                )
        return json.dumps({"observations": observations, "current_context": {}})

    return Reply(reply)


# -- invariants -------------------------------------------------------------------------------
@dataclass
class Snapshot:
    """Observation ids on disk (``observations.md`` and the archive months) and reflection ids
    (``reflections.md`` and ``archive/reflections/``), with counts."""

    ids: Counter[str]
    tokens: Counter[str]
    by_token: dict[str, list[Observation]]
    problems: list[str]
    reflections: Counter[str] = field(default_factory=Counter)


def snapshot(store: MemoryStore) -> Snapshot:
    """Read every observation file; parse issues become problems."""
    ids: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    by_token: dict[str, list[Observation]] = {}
    problems: list[str] = []
    files = [store.observations_path]
    folder = store.archive_dir / "observations"
    if folder.is_dir():
        files += sorted(folder.glob("*.md"))
    for path in files:
        doc = store.read_observations(path)
        problems += [f"{store.relative(path)}: {issue}" for issue in doc.issues]
        for obs in doc.observations:
            ids[obs.id] += 1
            for token in set(TOKEN.findall(obs.text)):
                tokens[token] += 1
                by_token.setdefault(token, []).append(obs)
    for name in SECTION_FILES:
        data = store.read_bytes(store.home / name)
        problems += [f"{name}: {issue}" for issue in parse_sections(data).issues]
    data = store.read_bytes(store.home / "reflections.md")
    reflections = Counter(place.line.rid for place in ReflectionsDoc(data).places())
    folder = store.archive_dir / "reflections"
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            doc = store.read_observations(path)
            problems += [f"{store.relative(path)}: {issue}" for issue in doc.issues]
            reflections.update(doc.ids())
    return Snapshot(ids, tokens, by_token, problems, reflections)


def cursor_problems(
    store: MemoryStore, transcripts: Transcripts, snap: Snapshot, *, final: bool
) -> list[str]:
    """Cursors against memory: what a cursor has passed is in memory, and (``final``) every
    complete line was read and observed exactly once, with ledger provenance on its lines."""
    out: list[str] = []
    with CaptureState(store.state_db_path) as state:
        cursors = state.cursors()
    by_path: dict[Path, list[Message]] = {}
    for message in transcripts.messages.values():
        by_path.setdefault(message.path, []).append(message)
    for item in transcripts.files:
        cursor = cursors.get(str(item.path))
        passed = cursor.line if cursor is not None else 0
        if final:
            size = item.path.stat().st_size - len(_unwritten_partial(item))
            if cursor is None or cursor.offset != size or cursor.line != item.lines:
                got = (cursor.offset, cursor.line) if cursor else None
                out.append(f"{item.path.name}: cursor {got}, expected ({size}, {item.lines})")
        for message in by_path.get(item.path, []):
            seen = snap.tokens.get(message.token, 0)
            if message.line_end <= passed and seen == 0:
                out.append(f"{message.token}: the cursor passed line {message.line_end} unseen")
            if final and message.line_end <= item.lines and seen != 1:
                out.append(f"{message.token}: observed {seen} times")
            if seen > 1:
                out.append(f"{message.token}: in {seen} observations")
    if final:
        out += ledger_problems(store, transcripts, snap)
    return sorted(set(out))


def _unwritten_partial(item: Transcript) -> bytes:
    # The bytes of a half-written line that are on disk (not part of any complete line).
    if not item.partial:
        return b""
    data = item.path.read_bytes()
    return data[data.rfind(b"\n") + 1 :]


def ledger_problems(store: MemoryStore, transcripts: Transcripts, snap: Snapshot) -> list[str]:
    """Each token's observation has ledger provenance on that message's lines, and no two
    observations of one transcript claim the same line."""
    ledger, _ = read_ledger(store.ledger_path)
    out: list[str] = []
    claimed: dict[tuple[str, int], str] = {}
    for token, observations in snap.by_token.items():
        message = transcripts.messages.get(token)
        if message is None:
            continue
        for obs in observations:
            prov = ledger.get(obs.id)
            if prov is None or prov.path != str(message.path):
                out.append(f"{token}: no ledger provenance for ^{obs.id}")
                continue
            if (prov.line_start, prov.line_end) != (message.line_start, message.line_end):
                out.append(
                    f"{token}: ledger lines {prov.line_start}-{prov.line_end}, "
                    f"message on {message.line_start}-{message.line_end}"
                )
            for line in range(prov.line_start or 0, (prov.line_end or 0) + 1):
                other = claimed.setdefault((prov.path, line), obs.id)
                if other != obs.id:
                    out.append(f"{message.path.name}:{line} observed by ^{other} and ^{obs.id}")
    return out


def doctor_failures(env: dict[str, str]) -> list[str]:
    """``om doctor --json``: the checks that failed (a repaired index is fine)."""
    done = run_om(env, "doctor", "--json")
    try:
        checks = json.loads(done.stdout)
    except ValueError:
        return [f"om doctor printed no JSON (exit {done.returncode}): {done.stderr[-300:]}"]
    return [f"doctor: {c['name']}: {c['detail']}" for c in checks if c["verdict"] == "fail"]


def wait_for_file(path: Path, timeout: float = 30.0) -> None:
    """Wait until ``path`` exists."""
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)

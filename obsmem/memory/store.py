"""The memory directory as a whole: where each file is, reading them, and merging new observations.

``MemoryStore`` is the only writer of memory files. Every write happens under the directory's
inter-process lock and is atomic, so concurrent ``om`` processes never lose each other's lines
and a killed writer leaves the old file or the new one.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from obsmem import paths
from obsmem.errors import MemoryFileError, UsageError
from obsmem.memory import guard
from obsmem.memory.atomic import atomic_write, ensure_dir, memory_lock
from obsmem.memory.clean import clean_text
from obsmem.memory.ledger import (
    ForgottenTurns,
    append_observations,
    append_written,
    forgotten_ids,
    read_ledger,
    settled_ids,
)
from obsmem.memory.markdown import encode
from obsmem.memory.model import (
    DEFAULT_IMPORTANCE,
    Observation,
    Provenance,
    make_id,
    normalise_text,
    priority_for,
)
from obsmem.memory.observations import ObservationsDoc, parse_observations, parse_shared
from obsmem.memory.sections import SectionsDoc, parse_sections

__all__ = ["RECENT", "SECTION_FILES", "MemoryStore", "NearDuplicates", "new_observation"]

#: ``near(batch, known)``: the batch without the observations that repeat a known one.
NearDuplicates = Callable[[list[Observation], list[Observation]], list[Observation]]
#: How many of the file's last observations a new batch is compared with (beside its days').
RECENT = 200

_DATE = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")
_TIME = re.compile(r"([01]?\d|2[0-3]):[0-5]\d")

#: Sectioned files at the top of the memory directory, with the kind that seeds their entry ids.
SECTION_FILES: dict[str, str] = {
    paths.REFLECTIONS_FILE: "reflections",
    paths.PROFILE_FILE: "profile",
    paths.ACTIVE_FILE: "active",
}


def new_observation(
    text: str,
    *,
    date: str,
    time: str | None = None,
    type: str | None = None,  # the field's name in the data model
    importance: float = DEFAULT_IMPORTANCE,
    confidence: float | None = None,
    referenced_date: str | None = None,
    completed: bool = False,
    depth: int = 0,
    provenance: Provenance | None = None,
) -> Observation:
    """Build an observation to add, with its priority and stable id derived from its content.

    The id depends on the day and the normalised text only, so the same fact observed twice on
    one day gets the same id and is written once.
    """
    clean = " ".join(clean_text(text).split())
    if not clean:
        raise UsageError("an observation needs some text")
    if not _DATE.fullmatch(date):
        # A malformed date would make a heading the parser does not see as a day, and the
        # observation would then be added again on every run.
        raise UsageError(f"observation date {date!r} is not YYYY-MM-DD")
    if time is not None:
        if not _TIME.fullmatch(time):
            raise UsageError(f"observation time {time!r} is not HH:MM")
        if len(time) == 4:
            # "9:05" -> "09:05", as the parser reads it back: times are compared as strings
            # when placing lines, and "9:05" sorted after "14:00".
            time = "0" + time
    if not 0.0 <= importance <= 1.0 or (confidence is not None and not 0.0 <= confidence <= 1.0):
        raise UsageError("importance and confidence must be between 0 and 1")
    return Observation(
        text=clean,
        date=date,
        time=time,
        priority=priority_for(importance, completed=completed),
        type=type,
        confidence=confidence,
        importance=importance,
        referenced_date=referenced_date,
        id=make_id("obs", date, normalise_text(clean)),
        depth=depth,
        tagged=type is not None,
        block_id=True,
        provenance=provenance,
    )


class MemoryStore:
    """One memory directory (``OM_HOME``) and the files in it."""

    def __init__(
        self,
        home: Path | str | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        lock_timeout: float = 30.0,
    ) -> None:
        env = dict(environ) if environ is not None else None
        self.home = Path(home).expanduser() if home is not None else paths.memory_dir(env)
        if home is not None:
            # Derived places follow an explicit home unless overridden on their own.
            env = dict(env if env is not None else _os_environ())
            env["OM_HOME"] = str(self.home)
        self.state_dir = paths.state_dir(env)
        self.index_path = paths.index_path(env)
        self.ledger_path = paths.ledger_path(env)
        self.forget_key_path = paths.forget_key_path(env)
        self.lock_path = paths.lock_path(env)
        self.state_db_path = paths.state_db_path(env)
        self.turns_path = paths.turns_path(env)
        self.usage_path = paths.usage_path(env)
        self.context_path = paths.context_path(env)
        self.rendered_context_path = Path(paths.rendered_context_file(env))
        self.lock_timeout = lock_timeout

    # -- places -------------------------------------------------------------------------------
    @property
    def observations_path(self) -> Path:
        """``observations.md``."""
        return self.home / paths.OBSERVATIONS_FILE

    @property
    def archive_dir(self) -> Path:
        """``archive/``: observations trimmed from ``observations.md``, by month."""
        return self.home / paths.ARCHIVE_DIR

    @property
    def vault_dir(self) -> Path:
        """``vault/``: observations filed by category and entity."""
        return self.home / paths.VAULT_DIR

    def ensure(self) -> MemoryStore:
        """Create the memory and state directories if missing (mode 0700)."""
        ensure_dir(self.home)
        ensure_dir(self.state_dir)
        return self

    def memory_files(self) -> list[Path]:
        """Every markdown file the index covers, in a stable order (missing ones left out).

        Raises ``MemoryFileError`` when ``archive/`` or ``vault/`` (or a folder in them) cannot
        be listed: a search or a status over part of the memory would say nothing of the rest."""
        out = [self.observations_path, *(self.home / name for name in SECTION_FILES)]
        out = [p for p in out if p.is_file()]
        for folder in (self.archive_dir, self.vault_dir):
            if folder.is_dir():
                out.extend(sorted(p for p in _markdown_under(folder) if p.is_file()))
        return out

    def relative(self, path: Path) -> str:
        """``path`` relative to the memory directory, with forward slashes (the index's names)."""
        try:
            return path.relative_to(self.home).as_posix()
        except ValueError:
            return str(path)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the memory directory's write lock."""
        self.ensure()
        with memory_lock(self.lock_path, self.lock_timeout):
            yield

    # -- reading ------------------------------------------------------------------------------
    def read_bytes(self, path: Path) -> bytes:
        """A memory file's bytes (empty when it does not exist).

        Under the lock, the read is one a write may be based on: it waits for a file being
        saved to settle, and the write checks the file did not change since (``guard``)."""
        try:
            return guard.read_for_write(path)
        except FileNotFoundError:
            return b""
        except IsADirectoryError:
            raise MemoryFileError(f"{path} is a directory", "move it away") from None
        except OSError as exc:
            raise MemoryFileError(
                f"cannot read {path}: {exc.strerror}", "check its permissions"
            ) from None

    def read_observations(
        self, path: Path | None = None, *, shared: bool = False
    ) -> ObservationsDoc:
        """Parse ``observations.md`` (or an archive month given as ``path``).

        With ``shared``, the same bytes give the same document within the process
        (``parse_shared``): for callers that only read it.
        """
        data = self.read_bytes(path or self.observations_path)
        return parse_shared(data) if shared else parse_observations(data)

    def read_sections(self, name: str) -> SectionsDoc:
        """Parse ``reflections.md``, ``profile.md`` or ``active.md`` (by file name)."""
        return parse_sections(self.read_bytes(self.home / name), kind=SECTION_FILES.get(name, name))

    def forgotten_turns(self) -> ForgottenTurns:
        """What capture asks of each turn it reads: was its text forgotten (``om forget``)?"""
        return ForgottenTurns(self.ledger_path, self.forget_key_path)

    @property
    def external_list_path(self) -> Path:
        """The list of files outside the memory directory that the index also covers."""
        return self.state_dir / "external-files.json"

    def external_files(self) -> dict[str, dict[str, str]]:
        """Files outside the memory directory the index covers (Claude Code's auto-memory):
        ``{absolute path: {"kind": ..., "sha256": ...}}``, by real path (to read them; the index
        and every output name them with secrets redacted). Unreadable lists count as empty."""
        if not self.external_list_path.exists():
            return {}  # the usual case: one stat, no read
        try:
            data = json.loads(self.external_list_path.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): v for k, v in data.items() if isinstance(v, dict)}

    def set_external_files(self, files: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the list of external files (atomically, under the lock)."""
        payload = json.dumps(dict(sorted(files.items())), indent=1, sort_keys=True)
        self.write_file(self.external_list_path, payload.encode("utf-8"))

    def provenance(self) -> dict[str, Provenance]:
        """Every observation id's provenance, from the ledger."""
        return read_ledger(self.ledger_path)[0]

    # -- writing ------------------------------------------------------------------------------
    def write_file(self, path: Path, data: bytes) -> None:
        """Atomically replace one memory file, under the lock."""
        with self.lock():
            atomic_write(path, data)

    def add_observations(
        self,
        observations: Iterable[Observation],
        *,
        context: Mapping[str, Mapping[str, str]] | None = None,
        near: NearDuplicates | None = None,
        again: bool = False,
    ) -> list[Observation]:
        """Merge observations into ``observations.md``; return those really added.

        Ids already present are skipped, so adding the same batch twice writes it once. Under
        the lock, whatever the timing: ids in ``observations.md``, in the archive months of the
        batch's days, and (unless ``again``: putting back lost lines, or a user saying it once
        more) ids the ledger saw written or forgotten. ``near(batch, known)`` then drops what
        repeats in other words what is already known: the last observations of the file and
        every observation of the batch's days, archived ones included.
        ``context`` maps a day to its new Current Context pairs (``{"Active task": ...}``).
        Provenance and the lines go to the ledger first (fsynced), then the markdown is replaced
        atomically, observations and context in one write, and the ledger notes it was written.
        However many days a batch touches, the file is parsed once and written once.
        """
        batch = list(observations)
        if not batch and not context:
            return []

        def merge() -> list[Observation]:
            doc = self.read_observations()
            fresh = self._not_known(doc, batch, near, ledger=not again)
            lines, added = doc.merged(fresh, context)
            if lines is doc.lines:
                return []
            # Each line goes to the ledger too, so a line lost to a stale editor buffer can be
            # put back (om doctor --restore).
            append_observations(self.ledger_path, added)
            atomic_write(self.observations_path, encode("".join(lines)))
            append_written(self.ledger_path, (o.id for o in added))
            return added

        with self.lock():
            return guard.retry_changed(merge)

    @property
    def observations_archive_dir(self) -> Path:
        """``archive/observations/``: observation days moved out of ``observations.md``."""
        return self.archive_dir / "observations"

    def observation_files(self) -> list[Path]:
        """``observations.md`` (even when missing), then the archive months, newest first: every
        file an observation can be in."""
        months = self.observations_archive_dir
        archived = sorted(months.glob("*.md"), reverse=True) if months.is_dir() else []
        return [self.observations_path, *archived]

    def archive_month(self, month: str) -> Path:
        """``archive/observations/YYYY-MM.md``: the observations of that month's archived days."""
        return self.observations_archive_dir / f"{month}.md"

    def _not_known(
        self,
        doc: ObservationsDoc,
        batch: list[Observation],
        near: NearDuplicates | None,
        *,
        ledger: bool,
    ) -> list[Observation]:
        """``batch`` without what memory already holds (see ``add_observations``)."""
        if not batch:
            return batch
        days = {o.date for o in batch}
        archived: list[Observation] = []
        for month in sorted({d[:7] for d in days}):
            path = self.archive_month(month)
            if path.is_file():
                archived += self.read_observations(path).observations
        known = doc.ids() | {o.id for o in archived}
        if ledger:
            known |= settled_ids(self.ledger_path) | set(forgotten_ids(self.ledger_path))
        fresh = [o for o in batch if o.id not in known]
        if near is None or not fresh:
            return fresh
        same_days = [o for o in (*archived, *doc.observations) if o.date in days]
        seen = {id(o) for o in same_days}
        tail = [o for o in doc.observations[-RECENT:] if id(o) not in seen]
        return near(fresh, [*same_days, *tail])

    def recent_observations(self, limit: int = 200) -> list[Observation]:
        """The last ``limit`` observations of ``observations.md``, oldest first."""
        return self.read_observations().observations[-limit:]


def _os_environ() -> dict[str, str]:
    return dict(os.environ)


def _markdown_under(folder: Path) -> Iterator[Path]:
    """The ``.md`` files under ``folder``, its subfolders' too; an unreadable folder is an
    error (``Path.rglob`` would skip it without a word)."""

    def refuse(exc: OSError) -> None:
        where = exc.filename or folder
        raise MemoryFileError(
            f"cannot read {where}: {exc.strerror or exc}", "check its permissions"
        ) from None

    for top, _, names in os.walk(folder, onerror=refuse):
        for name in names:
            if name.endswith(".md"):
                yield Path(top) / name

"""``om uninstall --purge``: delete what om wrote, and nothing else.

The memory directory is often a folder the user chose (``OM_HOME=~/Documents/notes``) and may
hold their own files; om's folders (``archive/``, ``vault/``, ``.om/``, ``logs/``) may hold a
note someone dropped there. So purging never removes a folder wholesale: it walks om's places,
picks out the files om writes by their names (the list below follows :mod:`obsmem.paths`), and
removes a folder only once it is empty. Everything else is kept and reported, so the user sees
what is left and why.

What counts as om's:

- in the memory directory: ``observations.md``, ``reflections.md``, ``profile.md``, ``active.md``;
- ``archive/<kind>/YYYY-MM.md``;
- ``vault/``: the category pages and ``projects/`` / ``people/`` pages, but only while they hold
  nothing besides the title and the block om generates (a page with hand-written text is kept);
- the state directory (``.om/``): the databases with SQLite's side files, the ledger, lock,
  context, usage and file lists, and the whole hook queue;
- the index and turns databases wherever ``OM_INDEX_PATH`` / ``OM_TURNS_PATH`` put them;
- the logs folder's ``*.log`` files and their rotations;
- the config directory's ``integrations.json``, and its settings file when it holds only the
  ``OM_*`` settings and API keys ``om install`` writes there (a comment or any other line means
  it was edited by hand: it is kept). ``backups/``, the copies of the agents' files om changed,
  is kept: it is the user's way back;
- anywhere in those folders, the temporary files of an interrupted atomic write.

Symbolic links are removed as links and never followed, so a link to elsewhere costs nothing
there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from obsmem import paths
from obsmem.errors import IntegrationError
from obsmem.integrations.setup import KEY_VARIABLES

__all__ = ["PurgePlan", "apply_purge", "plan_purge"]

_SQLITE_SIDES = ("", "-wal", "-shm", "-journal", ".lock")
_STATE_FILES = (
    "provenance.jsonl",
    "forget.key",
    "memory.lock",
    "worker.lock",
    "context.json",
    "context.rendered",
    "usage.jsonl",
    "external-files.json",
    "reflector.json",
)
_STATE_DATABASES = ("state.sqlite3", "turns.sqlite3", "index.sqlite3")
_MONTH = re.compile(r"^\d{4}-\d{2}\.md$")
_LOG = re.compile(r"^[A-Za-z0-9_.-]+\.log(\.\d+)?$")
_TEMP = re.compile(r"^\..+\.tmp$")
_VAULT_FOLDERS = ("projects", "people")


@dataclass
class PurgePlan:
    """What a purge deletes (files first, then the folders left empty) and what it keeps."""

    files: list[Path] = field(default_factory=list)
    #: om's folders, deepest first; each is removed only if empty once the files are gone.
    folders: list[Path] = field(default_factory=list)
    #: Files and folders found in om's places that om did not write: never touched.
    kept: list[Path] = field(default_factory=list)
    #: Filled by :func:`apply_purge`: what was really removed.
    deleted: list[Path] = field(default_factory=list)
    #: The folder of backups of the agents' files, which a purge keeps (None: there is none).
    backups: Path | None = None

    @property
    def empty(self) -> bool:
        """True when there is nothing to delete."""
        return not self.files and not self.folders_to_remove()

    def folders_to_remove(self) -> list[Path]:
        """The folders that will be empty once the files are deleted (deepest first)."""
        going = {str(p) for p in self.files}
        out: list[Path] = []
        for folder in self.folders:
            if self.backups is not None and self.backups.is_relative_to(folder):
                continue  # it holds the backups, which stay (or will, once uninstall made them)
            try:
                entries = [folder / name for name in os.listdir(folder)]
            except OSError:
                continue
            if all(str(entry) in going for entry in entries):
                out.append(folder)
                going.add(str(folder))
        return out

    def would_delete(self) -> list[Path]:
        """Every path the purge would remove, in order."""
        return [*self.files, *self.folders_to_remove()]

    def to_dict(self) -> dict[str, list[str] | str]:
        """A JSON-ready summary."""
        return {
            "would_delete": [str(p) for p in self.would_delete()],
            "deleted": [str(p) for p in self.deleted],
            "kept": [str(p) for p in self.kept],
            "backups_kept": str(self.backups) if self.backups else "",
        }


class _Walker:
    """Collects om's files and folders into a plan, keeping everything it does not recognise."""

    def __init__(self) -> None:
        self.plan = PurgePlan()
        self.seen: set[str] = set()
        self.folders: list[Path] = []

    def file(self, path: Path) -> None:
        if str(path) not in self.seen and (path.is_symlink() or path.is_file()):
            self.seen.add(str(path))
            self.plan.files.append(path)

    def keep(self, path: Path) -> None:
        if str(path) not in self.seen:
            self.seen.add(str(path))
            self.plan.kept.append(path)

    def folder(self, path: Path) -> bool:
        """Register an om folder; False when it is missing or a link (never walked)."""
        if path.is_symlink():
            self.keep(path)
            return False
        if not path.is_dir():
            return False
        if str(path) not in {str(p) for p in self.folders}:
            self.folders.append(path)
        return True

    def entries(self, folder: Path) -> list[Path]:
        try:
            return sorted(folder / name for name in os.listdir(folder))
        except OSError as exc:
            raise IntegrationError(
                f"cannot list {folder}: {exc.strerror}",
                "fix its permissions and run om uninstall --purge again; nothing was deleted",
            ) from None

    def finish(self) -> PurgePlan:
        # Deepest first, so a folder is looked at only after everything inside it.
        self.plan.folders = sorted(self.folders, key=lambda p: len(p.parts), reverse=True)
        self.plan.kept = [p for p in self.plan.kept if str(p) not in {str(f) for f in self.folders}]
        return self.plan


def _is_temp(name: str) -> bool:
    return bool(_TEMP.match(name))


def _sqlite(walker: _Walker, path: Path) -> None:
    for side in _SQLITE_SIDES:
        walker.file(path.with_name(path.name + side))


def _walk_flat(walker: _Walker, folder: Path, owned: Iterable[str]) -> None:
    """A folder whose om files are known by name; everything else in it is kept."""
    names = set(owned)
    for entry in walker.entries(folder):
        if entry.name in names or _is_temp(entry.name):
            walker.file(entry)


def _memory(walker: _Walker, home: Path) -> None:
    if not walker.folder(home):
        return
    for name in (
        paths.OBSERVATIONS_FILE,
        paths.REFLECTIONS_FILE,
        paths.PROFILE_FILE,
        paths.ACTIVE_FILE,
    ):
        walker.file(home / name)
    for entry in walker.entries(home):
        if _is_temp(entry.name) and entry.is_file():
            walker.file(entry)
    _archive(walker, home / paths.ARCHIVE_DIR)
    _vault(walker, home / paths.VAULT_DIR)


def _archive(walker: _Walker, archive: Path) -> None:
    if not walker.folder(archive):
        return
    for kind in walker.entries(archive):
        if kind.is_dir() and not kind.is_symlink():
            walker.folder(kind)
            for entry in walker.entries(kind):
                if (_MONTH.match(entry.name) or _is_temp(entry.name)) and entry.is_file():
                    walker.file(entry)
                else:
                    walker.keep(entry)
        elif _is_temp(kind.name) and kind.is_file():
            walker.file(kind)
        else:
            walker.keep(kind)


def _generated_page(path: Path) -> bool:
    """True when a vault page holds only a title and om's block (nothing written by hand)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    inside, seen_block = False, False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("<!-- om:begin"):
            inside, seen_block = True, True
        elif stripped.startswith("<!-- om:end"):
            inside = False
        elif not inside and stripped and not stripped.startswith("# "):
            return False
    return seen_block


def _vault(walker: _Walker, vault: Path) -> None:
    if not walker.folder(vault):
        return
    from obsmem.reflect.router import CATEGORY_TITLES

    pages = {f"{name}.md" for name in CATEGORY_TITLES}
    for entry in walker.entries(vault):
        if entry.name in _VAULT_FOLDERS and walker.folder(entry):
            for page in walker.entries(entry):
                if _is_temp(page.name) or (page.suffix == ".md" and _generated_page(page)):
                    walker.file(page)
                else:
                    walker.keep(page)
        elif _is_temp(entry.name) or (entry.name in pages and _generated_page(entry)):
            walker.file(entry)
        else:
            walker.keep(entry)


def _state(walker: _Walker, state: Path) -> None:
    if not walker.folder(state):
        return
    for name in _STATE_DATABASES:
        _sqlite(walker, state / name)
    _walk_flat(walker, state, _STATE_FILES)
    queue = state / "queue"
    if walker.folder(queue):
        # The hook queue is om's own hand-over folder: everything in it is om's.
        for entry in walker.entries(queue):
            if entry.is_dir() and not entry.is_symlink():
                walker.folder(entry)
                for marker in walker.entries(entry):
                    walker.file(marker)
            else:
                walker.file(entry)
    for entry in walker.entries(state):
        if str(entry) not in walker.seen and entry != queue:
            walker.keep(entry)


def _logs(walker: _Walker, logs: Path) -> None:
    if not walker.folder(logs):
        return
    for entry in walker.entries(logs):
        if (_LOG.match(entry.name) or _is_temp(entry.name)) and entry.is_file():
            walker.file(entry)
        else:
            walker.keep(entry)


def _written_by_om(settings: Path) -> bool:
    """True when the settings file holds nothing but the assignments ``om install`` writes.

    The file is as much the user's as om's: a comment or a variable of anything else means
    someone wrote in it by hand, and the whole file is kept (listed) rather than edited.
    """
    if settings.is_symlink() or not settings.is_file():
        return False
    try:
        lines = settings.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    ours = set(KEY_VARIABLES.values())
    for line in lines:
        key, sep, _ = line.partition("=")
        if line.strip() and not (sep and (key.startswith("OM_") or key in ours)):
            return False
    return True


def _config(
    walker: _Walker, config: Path, environ: Mapping[str, str], backups_pending: bool
) -> None:
    settings = paths.env_file(environ)
    if _written_by_om(settings):
        walker.file(settings)
    elif settings.exists() or settings.is_symlink():
        walker.keep(settings)
    walker.file(paths.integrations_path(environ))
    backups = paths.backups_dir(environ)
    if backups.exists() or backups_pending:
        # The copies of the agents' files om changed are the user's way back: never purged.
        walker.plan.backups = backups
    if walker.folder(config):
        for entry in walker.entries(config):
            if _is_temp(entry.name) and entry.is_file():
                walker.file(entry)
            elif entry != backups and str(entry) not in walker.seen:
                walker.keep(entry)


def _leftovers(walker: _Walker, home: Path) -> None:
    """Anything at the top of the memory directory that the purge does not take is the user's."""
    if not home.is_dir() or home.is_symlink():
        return
    taken = {str(p) for p in walker.plan.files} | {str(f) for f in walker.folders}
    for entry in walker.entries(home):
        if str(entry) not in taken:
            walker.keep(entry)


def plan_purge(environ: Mapping[str, str], *, backups_pending: bool = False) -> PurgePlan:
    """What ``om uninstall --purge`` would delete and keep; reads, never writes.

    ``backups_pending``: the uninstall before the purge will back files up (a dry run has not
    made the backups folder yet, but the real run will, and keeps it).
    """
    walker = _Walker()
    home = paths.memory_dir(environ)
    _memory(walker, home)
    _state(walker, paths.state_dir(environ))
    _sqlite(walker, paths.index_path(environ))
    _sqlite(walker, paths.turns_path(environ))
    _logs(walker, paths.logs_dir(environ))
    _config(walker, paths.config_dir(environ), environ, backups_pending)
    _leftovers(walker, home)
    return walker.finish()


def apply_purge(plan: PurgePlan) -> PurgePlan:
    """Delete the plan's files, then its folders that are empty; fill ``plan.deleted``."""
    for path in plan.files:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise IntegrationError(
                f"cannot delete {path}: {exc.strerror}",
                "fix its permissions and run om uninstall --purge again",
            ) from None
        plan.deleted.append(path)
    for folder in plan.folders:
        try:
            folder.rmdir()
        except OSError:
            continue  # not empty (the user's files are in it) or gone: it stays
        plan.deleted.append(folder)
    return plan

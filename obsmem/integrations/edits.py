"""Planned changes to other programs' files, shown as diffs and applied safely.

``om install`` never writes as it goes: each integration first *plans* a list of :class:`Edit`
(the text a target holds now, and the text it should hold), so ``--dry-run`` can print every
change as a unified diff and write nothing. Applying an edit then:

1. re-reads the target and refuses if it changed since the plan (another program wrote it);
2. copies the current content to a timestamped backup folder;
3. writes the new content atomically, keeping the file's mode (new files: 0600).

A target is usually a file, but the user's crontab is one too (read with ``crontab -l``, written
with ``crontab -``), so edits go through the small :class:`Target` interface.

Marker blocks (:func:`set_block`, :func:`drop_block`) are how om adds a section to text that
belongs to the user (``AGENTS.md``, a crontab): the block is replaced in place on a second
install and removed whole on uninstall, leaving every other byte as it was.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from obsmem.errors import IntegrationError
from obsmem.memory.atomic import atomic_write, ensure_dir
from obsmem.paths import backups_dir

__all__ = [
    "CrontabTarget",
    "Edit",
    "FileTarget",
    "Target",
    "apply_all",
    "apply_edits",
    "check_edits",
    "drop_block",
    "has_block",
    "new_backup_folder",
    "planning",
    "render_diff",
    "run_commands",
    "set_block",
    "undo",
]

#: While ``om install`` plans all its steps before writing anything, what each target will hold
#: once the earlier steps are applied (by label), so a later step plans against that.
_PLANNED: contextvars.ContextVar[dict[str, str | None] | None] = contextvars.ContextVar(
    "planned", default=None
)


@contextlib.contextmanager
def planning() -> Iterator[dict[str, str | None]]:
    """Within this block, targets read as the edits recorded in the yielded mapping leave them."""
    planned: dict[str, str | None] = {}
    token = _PLANNED.set(planned)
    try:
        yield planned
    finally:
        _PLANNED.reset(token)


def _planned(label: str) -> tuple[bool, str | None]:
    planned = _PLANNED.get()
    if planned is not None and label in planned:
        return True, planned[label]
    return False, None


class Target(Protocol):
    """Something whose whole text om can read and replace."""

    @property
    def label(self) -> str:
        """How the target is named in diffs, backups and messages."""
        ...

    def read(self) -> str | None:
        """The current text, or None when the target does not exist."""
        ...

    def write(self, text: str | None, mode: int) -> None:
        """Replace the text (None removes the target); ``mode`` applies to a new file."""
        ...


@dataclass(frozen=True)
class FileTarget:
    """A file on disk."""

    path: Path

    @property
    def label(self) -> str:
        """The file's path."""
        return str(self.path)

    def read(self) -> str | None:
        """The file's text, or None when it does not exist."""
        known, text = _planned(self.label)
        if known:
            return text
        try:
            # Bytes, not read_text: universal newlines would turn a CRLF file into LF on write.
            return self.path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise IntegrationError(
                f"cannot read {self.path}: {getattr(exc, 'strerror', None) or exc}",
                "check that the file is readable UTF-8 text",
            ) from None

    def write(self, text: str | None, mode: int) -> None:
        """Write atomically (keeping an existing file's mode), or remove the file."""
        if text is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        existed = self.path.exists()
        ensure_dir(self.path.parent)
        atomic_write(self.path, text.encode("utf-8"))
        if not existed:
            os.chmod(self.path, mode)


@dataclass(frozen=True)
class CrontabTarget:
    """The user's crontab, through the ``crontab`` program found on PATH."""

    environ: Mapping[str, str] | None = None

    @property
    def label(self) -> str:
        """Diffs and backups call it ``crontab``."""
        return "crontab"

    def _program(self) -> str:
        path = (self.environ or os.environ).get("PATH")
        found = shutil.which("crontab", path=path)
        if not found:
            raise IntegrationError(
                "the crontab program was not found on PATH",
                "install cron, or choose another scheduler with --scheduler systemd|launchd|none",
            )
        return found

    def _run(
        self, args: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.environ) if self.environ is not None else None
        try:
            return subprocess.run(
                [self._program(), *args],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=30,
                env=env,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise IntegrationError(f"crontab failed: {exc}", "check that cron works") from None

    def read(self) -> str | None:
        """The crontab's text; None when the user has none (``crontab -l`` says so)."""
        known, text = _planned(self.label)
        if known:
            return text
        done = self._run(["-l"])
        if done.returncode != 0:
            if "no crontab" in (done.stderr + done.stdout).lower():
                return None
            raise IntegrationError(
                f"crontab -l failed: {done.stderr.strip() or done.returncode}",
                "check that cron works for this user",
            )
        return done.stdout

    def write(self, text: str | None, mode: int) -> None:
        """Install ``text`` as the crontab (an empty one when None: never ``crontab -r``)."""
        done = self._run(["-"], stdin=text or "")
        if done.returncode != 0:
            raise IntegrationError(
                f"crontab - failed: {done.stderr.strip() or done.returncode}",
                "check that cron works for this user",
            )


@dataclass(frozen=True)
class Edit:
    """One planned change: what ``target`` holds now and what it should hold."""

    target: Target
    before: str | None
    after: str | None
    why: str = ""
    mode: int = 0o600
    #: Commands to run after the write (``launchctl load ...``); never run on ``--dry-run``.
    then: tuple[tuple[str, ...], ...] = field(default_factory=tuple)

    @property
    def changed(self) -> bool:
        """False when applying it would change nothing."""
        return self.before != self.after


def render_diff(edits: Iterable[Edit]) -> str:
    """Every change as one unified diff (``/dev/null`` for created or removed files)."""
    parts: list[str] = []
    for edit in edits:
        if not edit.changed:
            continue
        old = (edit.before or "").splitlines(keepends=True)
        new = (edit.after or "").splitlines(keepends=True)
        for lines in (old, new):
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n\\ No newline at end of file\n"
        a = edit.target.label if edit.before is not None else "/dev/null"
        b = edit.target.label if edit.after is not None else "/dev/null"
        header = f"# {edit.why}\n" if edit.why else ""
        parts.append(header + "".join(difflib.unified_diff(old, new, a, b)))
        parts.extend(f"$ {' '.join(cmd)}\n" for cmd in edit.then)
    return "".join(parts)


def _backup_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label.strip("/")) or "file"


def new_backup_folder(environ: Mapping[str, str] | None = None) -> Path:
    """A fresh, timestamped folder name under the backups folder (created on first use)."""
    base = backups_dir(environ) / time.strftime("%Y%m%d-%H%M%S")
    folder, suffix = base, 1
    while folder.exists():
        suffix += 1
        folder = base.with_name(f"{base.name}.{suffix}")
    return folder


def _reread(target: Target) -> str | None:
    """The target's real text, outside any planning overlay."""
    token = _PLANNED.set(None)
    try:
        return target.read()
    finally:
        _PLANNED.reset(token)


def _check_writable(edit: Edit) -> None:
    """Refuse before anything is written when a file's folder cannot be written."""
    if not isinstance(edit.target, FileTarget):
        return
    folder = edit.target.path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # it will be created under the nearest folder that exists
    if not os.access(folder, os.W_OK | os.X_OK):
        raise IntegrationError(
            f"cannot write {edit.target.path}: {folder} is not writable",
            "fix that folder's permissions and run the command again; nothing was changed",
        )


def check_edits(steps: Sequence[Sequence[Edit]]) -> None:
    """Check, before any write, that every step can be applied: each target still holds what the
    first step touching it planned against, and each file's folder is writable."""
    first: dict[str, Edit] = {}
    for edit in (e for step in steps for e in step if e.changed):
        first.setdefault(edit.target.label, edit)
        _check_writable(edit)
    for edit in first.values():
        if _reread(edit.target) != edit.before:
            raise IntegrationError(
                f"{edit.target.label} changed while om was preparing its edit",
                "run the command again",
            )


def apply_all(
    steps: Sequence[Sequence[Edit]],
    environ: Mapping[str, str] | None = None,
    *,
    folder: Path | None = None,
    run: bool = True,
    written: list[Edit] | None = None,
) -> Path | None:
    """Apply several steps' edits, planned one after the other; all of them or none.

    Every step is checked first (:func:`check_edits`); each file's content before the first
    step is copied to the backup folder; then the edits are written in order. When a write fails,
    the edits already written are undone (:func:`undo`) before the error goes up. Commands
    (``launchctl load ...``) run only once every write succeeded. ``written`` (when given)
    collects the edits applied, so a caller with more to do can undo them too.
    """
    todo = [edit for step in steps for edit in step if edit.changed]
    check_edits(steps)
    backed: dict[str, str] = {}
    for edit in todo:
        if edit.before is not None:
            backed.setdefault(edit.target.label, edit.before)
    if backed:
        folder = folder or new_backup_folder(environ)
        ensure_dir(folder)
        for label, text in backed.items():
            backup = folder / _backup_name(label)
            if not backup.exists():  # two runs into one folder: keep the state before both
                atomic_write(backup, text.encode("utf-8"))
    done: list[Edit] = written if written is not None else []
    try:
        for edit in todo:
            edit.target.write(edit.after, edit.mode)
            done.append(edit)
    except (IntegrationError, OSError) as exc:
        undo(done)
        message = getattr(exc, "message", None) or str(exc)
        raise IntegrationError(
            f"{message}; om put back the files it had already changed",
            getattr(exc, "hint", None) or "fix the cause and run the command again",
        ) from None
    if run:
        run_commands(steps, environ)
    return folder if backed else None


def run_commands(steps: Sequence[Sequence[Edit]], environ: Mapping[str, str] | None) -> None:
    """Run the commands of the changed edits (``launchctl load ...``), after every write."""
    for edit in (e for step in steps for e in step if e.changed):
        for command in edit.then:
            _run_quietly(command, environ)


def undo(edits: Sequence[Edit]) -> None:
    """Put back what ``edits`` replaced, last first (best effort: each target is tried)."""
    for edit in reversed(edits):
        with contextlib.suppress(IntegrationError, OSError):
            edit.target.write(edit.before, edit.mode)


def apply_edits(
    edits: Sequence[Edit],
    environ: Mapping[str, str] | None = None,
    run: bool = True,
    folder: Path | None = None,
) -> Path | None:
    """Apply every changed edit of one step; return the backup folder used (None: no backup).

    Each target is checked against its planned ``before`` first, all of them before any write, so a
    file that changed since the plan stops the whole step with nothing written. Backups go to
    ``folder`` (one folder can serve several calls of one install), else to a new one.
    """
    return apply_all([edits], environ, folder=folder, run=run)


def _run_quietly(command: Sequence[str], environ: Mapping[str, str] | None) -> None:
    # launchctl/systemctl refusing (no user session, already loaded) must not undo the files
    # just written; `om doctor` reports a scheduler that is not active.
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            list(command),
            capture_output=True,
            timeout=30,
            env=dict(environ) if environ is not None else None,
            check=False,
        )


def _find_block(text: str, begin: str, end: str) -> tuple[int, int] | None:
    """The span of the block: from the start of the begin marker's line to after the end's."""
    start = text.find(begin)
    while start > 0 and text[start - 1] != "\n":
        start = text.find(begin, start + 1)
    if start < 0:
        return None
    found = text.find(end, start + len(begin))
    if found < 0:
        return None
    stop = text.find("\n", found)
    return start, len(text) if stop < 0 else stop + 1


def has_block(text: str | None, begin: str, end: str) -> bool:
    """True when ``text`` holds a block between the two markers."""
    return text is not None and _find_block(text, begin, end) is not None


def set_block(text: str | None, begin: str, end: str, body: str) -> str:
    """``text`` with the marked block set to ``body``: replaced in place, else appended.

    An appended block follows one newline added after the user's text, so that
    :func:`drop_block` gives back the user's bytes exactly.
    """
    block = f"{begin}\n{body.rstrip(chr(10))}\n{end}\n"
    current = text or ""
    span = _find_block(current, begin, end)
    if span:
        return current[: span[0]] + block + current[span[1] :]
    if not current:
        return block
    return current + "\n" + block


def drop_block(text: str | None, begin: str, end: str) -> str | None:
    """``text`` without the marked block; the exact inverse of appending it with set_block."""
    if text is None:
        return None
    span = _find_block(text, begin, end)
    if not span:
        return text
    head, tail = text[: span[0]], text[span[1] :]
    if not tail and head.endswith("\n"):
        head = head[:-1]
    return head + tail

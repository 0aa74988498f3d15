"""Every exception om raises on purpose, in one place.

The tree::

    OmError                      base; ``str(err)`` is one line: what went wrong, how to fix it
    ├── SettingsError            a setting has a bad value, or the settings file cannot be read
    ├── MemoryDirError           the memory directory cannot be created, read or written
    ├── MemoryFileError          a memory file cannot be read or written
    │   └── FileChanged          a memory file changed while om was merging into it
    ├── LockTimeout              another om process held the memory lock for too long
    ├── IndexError_              the search index cannot be opened or rebuilt
    ├── StateError               the capture state (transcript cursors) cannot be read or written
    ├── ObserverReplyError       the observer model's reply could not be used
    ├── ProviderError            an LLM provider call failed (``retryable``: worth trying later)
    ├── BudgetExceeded           today's OM_DAILY_TOKEN_BUDGET is spent; no request was sent
    ├── NotFound                 an id or file that was asked for does not exist
    ├── IntegrationError         an agent's settings, hooks or scheduler could not be changed
    └── UsageError               a command was given arguments it cannot act on

The CLI prints ``str(err)`` on one line and exits with status 2; library callers can catch
``OmError`` to handle them all. An ``OSError`` or ``sqlite3`` error that escapes a command is
turned into one of these by ``os_failure`` / ``sqlite_failure`` (what failed where, and the fix
its kind calls for); anything else escaping is a bug.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "FileChanged",
    "IndexError_",
    "IntegrationError",
    "LockTimeout",
    "MemoryDirError",
    "MemoryFileError",
    "NotFound",
    "ObserverReplyError",
    "OmError",
    "ProviderError",
    "SettingsError",
    "StateError",
    "UsageError",
    "explain",
    "os_failure",
    "sqlite_failure",
    "sqlite_hint",
]


class OmError(Exception):
    """Base of every error om raises deliberately.

    ``message`` says what went wrong; ``hint`` says how to fix it. ``str()`` joins them on one line.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class SettingsError(OmError):
    """A setting has a value om cannot use, or the settings file cannot be read."""


class MemoryDirError(OmError):
    """The memory directory cannot be created, read or written."""


class MemoryFileError(OmError):
    """A memory file cannot be read or written."""


class FileChanged(MemoryFileError):
    """A memory file changed (an editor saved it) between om's read and its write; om did not
    write over it. ``path`` is the file."""

    def __init__(self, message: str, hint: str | None = None, *, path: object = None) -> None:
        super().__init__(message, hint)
        self.path = path


class LockTimeout(OmError):
    """Another om process held the memory lock for longer than the timeout."""


class IndexError_(OmError):
    """The search index cannot be opened, migrated or rebuilt."""


class StateError(OmError):
    """The capture state (transcript cursors and leases) cannot be read or written."""


class ObserverReplyError(OmError):
    """The observer (or reflector) model replied with something that is not usable JSON."""


class ProviderError(OmError):
    """An LLM provider call failed: bad key, unknown model, unreachable server, retries spent.

    ``message`` names the provider, the model and what happened; ``hint`` says how to fix it.
    ``retryable`` is True when the failure is likely to pass (rate limit, overload, network,
    timeout), so the observer may fall back to the rules now and try the LLM again later; False
    when only the user can fix it (key, model name, base URL), so retrying would only repeat it.
    """

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        provider: str = "",
        model: str = "",
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message, hint)
        self.provider = provider
        self.model = model
        self.status = status
        self.retryable = retryable


class BudgetExceeded(OmError):
    """Today's ``OM_DAILY_TOKEN_BUDGET`` is spent (or this request would pass it); nothing was sent.

    ``spent`` and ``budget`` are today's tokens (input + output) and the daily budget.
    """

    def __init__(self, message: str, hint: str | None = None, *, spent: int, budget: int) -> None:
        super().__init__(message, hint)
        self.spent = spent
        self.budget = budget


class NotFound(OmError):
    """An id, file or entry that was asked for does not exist."""


class IntegrationError(OmError):
    """An agent's settings file, hooks or the scheduler could not be read or changed.

    ``om install`` checks every file before writing any, so when this is raised during planning
    nothing was changed.
    """


class UsageError(OmError):
    """A command or function was called with arguments it cannot act on."""


def _blocking_folder(path: str) -> tuple[str, str] | None:
    """The first folder on the way to ``path`` that is in the way: a file where a folder is
    expected (``"file"``), or a folder this process may not enter (``"denied"``)."""
    import os

    parts = os.path.abspath(path).split(os.sep)
    for depth in range(2, len(parts) + 1):
        here = os.sep.join(parts[:depth]) or os.sep
        if not os.path.lexists(here):
            return None
        if depth < len(parts) and not os.path.isdir(here):
            return here, "file"
        if os.path.isdir(here) and not os.access(here, os.R_OK | os.W_OK | os.X_OK):
            return here, "denied"
    return None


def os_failure(exc: OSError) -> OmError:
    """A one-line ``OmError`` for an ``OSError`` that escaped: what could not be done to which
    path, and how to fix it (by the error's kind)."""
    import errno

    path = exc.filename if isinstance(exc.filename, str) else None
    where = f" {path}" if path else ""
    reason = exc.strerror or type(exc).__name__
    code = exc.errno
    blocking = _blocking_folder(path) if path else None
    if blocking and blocking[1] == "file":
        return MemoryDirError(
            f"cannot use{where}: {blocking[0]} is a file where om expects a folder",
            f"move {blocking[0]} away, or point OM_HOME (or OM_STATE_DIR) elsewhere",
        )
    if code in (errno.EACCES, errno.EPERM):
        folder = blocking[0] if blocking else (path or "the memory directory")
        return MemoryDirError(
            f"cannot read or write{where}: {reason}",
            f"om needs to read and write {folder}: run chmod u+rwx {folder}"
            if blocking
            else f"check the permissions of {folder}",
        )
    if code in (errno.ENOSPC, errno.EDQUOT):
        return MemoryDirError(
            f"cannot write{where}: {reason}", "free some disk space and run the command again"
        )
    if code == errno.EROFS:
        return MemoryDirError(
            f"cannot write{where}: {reason}",
            "make the file system writable, or point OM_HOME elsewhere",
        )
    if code == errno.EISDIR:
        return MemoryDirError(
            f"cannot use{where}: it is a folder where om expects a file", f"move{where} away"
        )
    if code == errno.ENOTDIR:
        import os

        what = "it is" if path and os.path.isfile(path) else "a part of it is"
        return MemoryDirError(
            f"cannot use{where}: {what} a file where om expects a folder",
            "move that file away, or point OM_HOME (or OM_STATE_DIR) elsewhere",
        )
    return MemoryDirError(f"cannot use{where}: {reason}", "run `om doctor` to check the memory")


def sqlite_hint(exc: Exception, path: object = None) -> str | None:
    """How to fix an ``sqlite3`` error that is not damage (a full disk, a read-only file, a busy
    database, a folder it cannot be created in), naming ``path`` when given; None otherwise."""
    low = str(exc).lower()
    if "full" in low:
        return "free some disk space and run the command again"
    if "readonly" in low or "read-only" in low:
        if path is not None:
            return f"make {path} and its -wal and -shm files writable: chmod 600 {path}*"
        return "make the database and its -wal and -shm files writable (chmod 600), then retry"
    if "locked" in low or "busy" in low:
        return "another om process is using it; try again in a moment"
    if "unable to open" in low:
        return "check that the folder holding it exists and is writable"
    return None


def sqlite_failure(exc: Exception, what: str = "a database of om's") -> OmError:
    """A one-line ``OmError`` for an ``sqlite3`` error that escaped, with the fix its kind
    calls for (a full disk, a read-only file, a busy or a damaged database)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    hint = sqlite_hint(exc) or "run `om doctor`, which checks each of om's databases"
    return StateError(f"cannot use {what}: {text}", hint)


def explain(exc: BaseException) -> OmError | None:
    """The one-line error for a failure the user can fix: om's own, or an ``OSError`` or
    ``sqlite3`` error the system raised; None for anything else (a bug)."""
    import sqlite3

    if isinstance(exc, OmError):
        return exc
    if isinstance(exc, OSError):
        return os_failure(exc)
    if isinstance(exc, sqlite3.Error):
        return sqlite_failure(exc)
    return None

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
``OmError`` to handle them all. Anything else escaping is a bug.
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

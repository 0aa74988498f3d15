"""om: observational memory for coding agents.

The library is the product; the ``om`` command and the MCP server are thin adapters over it.
Importing ``obsmem`` needs neither click nor mcp. The names below are loaded on first use, so a
hot path such as ``om context`` (run at every session start) imports only what it needs.
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: importing typing costs every ``om context`` (each session start)
# a few milliseconds, and type checkers treat this name the same way.
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from typing import Any

    from obsmem.errors import (
        BudgetExceeded,
        IndexError_,
        LockTimeout,
        MemoryDirError,
        MemoryFileError,
        NotFound,
        OmError,
        ProviderError,
        SettingsError,
        StateError,
        UsageError,
    )
    from obsmem.forgetting import ForgetReport, forget
    from obsmem.memory.model import Entry, Observation, Provenance
    from obsmem.memory.store import MemoryStore, new_observation
    from obsmem.settings import Settings, load_settings

_EXPORTS = {
    "BudgetExceeded": "obsmem.errors",
    "IndexError_": "obsmem.errors",
    "LockTimeout": "obsmem.errors",
    "MemoryDirError": "obsmem.errors",
    "MemoryFileError": "obsmem.errors",
    "NotFound": "obsmem.errors",
    "OmError": "obsmem.errors",
    "ProviderError": "obsmem.errors",
    "SettingsError": "obsmem.errors",
    "StateError": "obsmem.errors",
    "UsageError": "obsmem.errors",
    "ForgetReport": "obsmem.forgetting",
    "forget": "obsmem.forgetting",
    "Entry": "obsmem.memory.model",
    "Observation": "obsmem.memory.model",
    "Provenance": "obsmem.memory.model",
    "MemoryStore": "obsmem.memory.store",
    "new_observation": "obsmem.memory.store",
    "Settings": "obsmem.settings",
    "load_settings": "obsmem.settings",
}

__all__ = [
    "BudgetExceeded",
    "Entry",
    "ForgetReport",
    "IndexError_",
    "LockTimeout",
    "MemoryDirError",
    "MemoryFileError",
    "MemoryStore",
    "NotFound",
    "Observation",
    "OmError",
    "Provenance",
    "ProviderError",
    "Settings",
    "SettingsError",
    "StateError",
    "UsageError",
    "__version__",
    "forget",
    "load_settings",
    "new_observation",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'obsmem' has no attribute {name!r}")
    import importlib  # here, not above: om context never needs it

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

"""om: observational memory for coding agents.

The library is the product; the ``om`` command and the MCP server are thin adapters over it.
Importing ``obsmem`` needs neither click nor mcp.
"""

from __future__ import annotations

__version__ = "0.1.0"

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
from obsmem.memory.model import Entry, Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.settings import Settings, load_settings

__all__ = [
    "BudgetExceeded",
    "Entry",
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
    "load_settings",
    "new_observation",
]

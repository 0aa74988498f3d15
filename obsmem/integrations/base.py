"""What every integration shares: the install context, a plan, and the record of what was added.

An integration (one module per agent, plus the scheduler) is a set of pure planning functions:

- ``detect(ctx)``: is the agent on this machine (its home exists)?
- ``plan_install(ctx)``: the :class:`Plan` that installs or refreshes it (idempotent: planning
  again after applying gives a plan with no changed edit);
- ``plan_uninstall(ctx)``: the plan that removes exactly what install added, using the record
  ``plan_install`` returned (kept in ``integrations.json``);
- ``checks(ctx)``: ``om doctor``'s verdicts on it.

Planning reads files and never writes; :func:`obsmem.integrations.edits.apply_edits` writes.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem.errors import IntegrationError
from obsmem.integrations.edits import Edit
from obsmem.memory.atomic import atomic_write
from obsmem.paths import integrations_path

__all__ = [
    "MARK",
    "InstallContext",
    "Plan",
    "find_om",
    "load_records",
    "om_command",
    "save_records",
]

#: Text every hook command and block om writes carries, so its entries can be told from others'.
MARK = "om"


def find_om(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """How hooks and scheduled jobs should start ``om``: an absolute path that will still work.

    The console script beside the running interpreter wins (a virtualenv or pipx install), then
    ``om`` on PATH, then ``python -m obsmem`` with this interpreter.
    """
    env = os.environ if environ is None else environ
    if env.get("OM_COMMAND"):
        return tuple(shlex.split(env["OM_COMMAND"]))
    beside = Path(sys.executable).parent / "om"
    if beside.is_file() and os.access(beside, os.X_OK):
        return (str(beside),)
    import shutil

    found = shutil.which("om", path=env.get("PATH"))
    if found:
        return (str(Path(found).resolve()),)
    return (sys.executable, "-m", "obsmem")


def om_command(om: tuple[str, ...], *args: str) -> str:
    """A shell command line running ``om`` with ``args``, quoted for sh."""
    return shlex.join([*om, *args])


@dataclass(frozen=True)
class InstallContext:
    """Everything a planner needs; built once per ``om install`` / ``om uninstall``."""

    environ: Mapping[str, str]
    #: The argv that starts om (see :func:`find_om`).
    om: tuple[str, ...]
    #: What this integration's last install recorded (empty when it was never installed).
    record: Mapping[str, Any] = field(default_factory=dict)
    #: Scheduler choice for scheduled integrations: auto, cron, launchd, systemd or none.
    scheduler: str = "auto"

    @property
    def home(self) -> Path:
        """The user's home directory (``HOME``)."""
        return Path(self.environ.get("HOME") or Path.home())

    def command(self, *args: str) -> str:
        """The shell command line for ``om <args>``."""
        return om_command(self.om, *args)


@dataclass
class Plan:
    """The edits that install or remove one integration, and what to remember about it."""

    name: str
    edits: list[Edit] = field(default_factory=list)
    #: Saved under ``name`` in integrations.json after install (None: forget the integration).
    record: dict[str, Any] | None = None
    #: Lines to show the user (what was found, what the user should do by hand).
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when applying the plan would change any file."""
        return any(edit.changed for edit in self.edits)


def load_records(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """What each installed integration recorded; empty when nothing was installed."""
    path = integrations_path(environ)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise IntegrationError(
            f"cannot read {path}: {exc}",
            "restore it from a backup, or delete it and run om install again",
        ) from None
    if not isinstance(data, dict):
        raise IntegrationError(f"{path} is not a JSON object", "delete it and run om install again")
    return {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}


def save_records(
    records: Mapping[str, Mapping[str, Any]], environ: Mapping[str, str] | None = None
) -> None:
    """Write integrations.json (mode 0600)."""
    text = json.dumps(records, indent=2, sort_keys=True) + "\n"
    atomic_write(integrations_path(environ), text.encode("utf-8"))

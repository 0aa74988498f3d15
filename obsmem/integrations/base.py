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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obsmem import paths
from obsmem.errors import IntegrationError
from obsmem.integrations.edits import Edit
from obsmem.memory.atomic import atomic_write
from obsmem.paths import integrations_path

__all__ = [
    "MARK",
    "PATH_VARIABLES",
    "InstallContext",
    "Plan",
    "find_om",
    "load_records",
    "om_command",
    "path_environment",
    "save_records",
    "with_paths",
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


#: Where om keeps things, each with the variable that moves it and the variables it depends on
#: (in order: a later place defaults to one under an earlier, see :mod:`obsmem.paths`).
_PLACES: tuple[tuple[str, Callable[[Mapping[str, str]], Path], tuple[str, ...]], ...] = (
    ("OM_HOME", paths.memory_dir, ("OM_HOME", "XDG_DATA_HOME")),
    ("OM_CONFIG_DIR", paths.config_dir, ("OM_CONFIG_DIR", "XDG_CONFIG_HOME")),
    ("OM_ENV_FILE", paths.env_file, ("OM_ENV_FILE",)),
    ("OM_STATE_DIR", paths.state_dir, ("OM_STATE_DIR",)),
    ("OM_INDEX_PATH", paths.index_path, ("OM_INDEX_PATH",)),
    ("OM_TURNS_PATH", paths.turns_path, ("OM_TURNS_PATH",)),
    ("OM_LOG_DIR", paths.logs_dir, ("OM_LOG_DIR",)),
)
#: The variables that move om's files; hooks, MCP entries and scheduled jobs carry them.
PATH_VARIABLES = tuple(name for name, _, _ in _PLACES)


def path_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The path overrides in effect, as absolute paths: what every hook, MCP server entry and
    scheduled job must be given so that it uses the memory ``om install`` was run for.

    An agent starts its hooks with its own environment, which may lack the install shell's
    ``OM_HOME`` (or ``XDG_DATA_HOME``): without these, a hook would write a second memory in the
    default place. A place is carried only when the overrides move it from where it would be
    without them, so a default install writes no variable at all.
    """
    moved = {name for _, _, names in _PLACES for name in names}
    base = {name: value for name, value in environ.items() if name not in moved}
    out: dict[str, str] = {}
    for name, where, _ in _PLACES:
        wanted = Path(os.path.abspath(where(environ)))
        if wanted != Path(os.path.abspath(where(base))):
            out[name] = base[name] = str(wanted)
    return out


def with_paths(current: Mapping[str, Any], carried: Mapping[str, str]) -> dict[str, Any]:
    """An MCP entry's ``env`` with om's path variables set to ``carried``; the user's other
    variables are kept, and a path variable om no longer needs is dropped."""
    kept = {k: v for k, v in current.items() if k not in PATH_VARIABLES}
    return {**kept, **carried}


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

    @property
    def carried(self) -> dict[str, str]:
        """The path overrides every hook and MCP entry is given (see :func:`path_environment`)."""
        return path_environment(self.environ)

    def hook_command(self, *args: str) -> str:
        """``om <args>`` as an agent should run it (see :meth:`with_paths_command`)."""
        return self.with_paths_command([*self.om, *args])

    def with_paths_command(self, argv: Sequence[str]) -> str:
        """``argv`` as a shell command line, preceded by ``env OM_HOME=...`` when the install
        uses a memory elsewhere than the default (``env`` works whether or not a shell runs it)."""
        assignments = [f"{name}={value}" for name, value in self.carried.items()]
        return shlex.join(["env", *assignments, *argv] if assignments else list(argv))


@dataclass
class Plan:
    """The edits that install or remove one integration, and what to remember about it."""

    name: str
    edits: list[Edit] = field(default_factory=list)
    #: Saved under ``name`` in integrations.json after install (None: forget the integration).
    record: dict[str, Any] | None = None
    #: Lines to show the user (what was found, what the user should do by hand).
    notes: list[str] = field(default_factory=list)
    #: What the user must know: a fallback taken, one of their settings om overrides.
    warnings: list[str] = field(default_factory=list)

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

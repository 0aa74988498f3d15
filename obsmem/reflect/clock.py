"""The memory's own clock, and what the reflector remembers from one run to the next.

Ages in memory are not measured from the wall clock. A user who imports months of old sessions
(``om backfill``), or comes back to a project after a holiday, wants that history treated as
yesterday's, not archived and retired at once because the calendar moved on. So:

- a project's **last activity** is the date of its newest observation; the memory's is the date
  of its newest observation of any project; neither is ever later than today (a clock skewed into
  the future must not age everything else);
- a reflection line ages (Dormant, Archive) by the days between its ``seen`` date and its
  project's last activity (a line without a project: the memory's);
- observation days are archived when they are older than ``OM_ARCHIVE_AFTER_DAYS`` before the
  memory's last activity, so ``observations.md`` always keeps the newest days of activity.

The reflector's state, ``<state dir>/reflector.json`` (``paths.REFLECTOR_STATE_FILE``), holds
the ids of the observations it has looked at, each project's last activity, and the size and
modification time of each archive month when it last read it. Which observations are new is a
question of ids, not of dates: an observation dated last year that arrives today (a backfill
after live capture) is new and is reflected like any other, so the order in which history
arrives does not change what is remembered. Archive months that have not changed since the last
run are not read again. The file is derived: deleting it costs one run that reads everything
(already reflected observations are recognised by the citations in ``reflections.md``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from obsmem.errors import MemoryFileError
from obsmem.memory.atomic import atomic_write
from obsmem.memory.store import MemoryStore
from obsmem.paths import REFLECTOR_STATE_FILE

__all__ = [
    "MEMORY",
    "Clock",
    "ReflectorState",
    "load_state",
    "save_state",
    "state_path",
]

#: The key of the memory as a whole in ``ReflectorState.activity`` (project names are never "").
MEMORY = ""
_VERSION = 1


@dataclass
class ReflectorState:
    """What one reflector run leaves for the next (see the module docstring)."""

    reflected: set[str] = field(default_factory=set)
    #: archive month file name -> (size, mtime_ns) when its observations were last read
    months: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: project name (``facts.project_name``) or ``MEMORY`` -> newest observation date seen
    activity: dict[str, str] = field(default_factory=dict)
    #: False when there was no state to read: the run must read every archive month
    known: bool = False

    def saw(self, project: str | None, day: str) -> None:
        """Move the last activity of ``project`` (and of the memory) forward to ``day``."""
        for key in (MEMORY, project) if project else (MEMORY,):
            if day > self.activity.get(key, ""):
                self.activity[key] = day

    def month_changed(self, path: Path) -> bool:
        """True when the archive month at ``path`` differs from when it was last read."""
        return _signature(path) != self.months.get(path.name)

    def read_month(self, path: Path) -> None:
        """Note that the archive month at ``path`` was read as it is now."""
        signature = _signature(path)
        if signature is None:
            self.months.pop(path.name, None)
        else:
            self.months[path.name] = signature


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def state_path(store: MemoryStore) -> Path:
    """``<state dir>/reflector.json``."""
    return store.state_dir / REFLECTOR_STATE_FILE


def load_state(store: MemoryStore) -> ReflectorState:
    """The state the last run left; an empty one (``known`` False) when there is none or it
    cannot be read (it is derived: the run then reads everything, losing nothing)."""
    path = state_path(store)
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return ReflectorState()
    except (OSError, ValueError, RecursionError):
        return ReflectorState()
    if not isinstance(data, dict) or data.get("version") != _VERSION:
        return ReflectorState()
    try:
        return ReflectorState(
            reflected={str(x) for x in data.get("reflected", [])},
            months={str(k): (int(v[0]), int(v[1])) for k, v in data.get("months", {}).items()},
            activity={str(k): str(v) for k, v in data.get("activity", {}).items()},
            known=True,
        )
    except (TypeError, ValueError, IndexError, AttributeError):
        return ReflectorState()


def save_state(store: MemoryStore, state: ReflectorState) -> None:
    """Write the state atomically (under the memory lock, by the caller)."""
    payload = {
        "version": _VERSION,
        "activity": dict(sorted(state.activity.items())),
        "months": {k: list(v) for k, v in sorted(state.months.items())},
        "reflected": sorted(state.reflected),
    }
    try:
        atomic_write(state_path(store), json.dumps(payload, separators=(",", ":")).encode())
    except OSError as exc:
        raise MemoryFileError(
            f"cannot write {state_path(store)}: {exc.strerror or exc}; "
            "check the permissions of the state directory (OM_STATE_DIR)"
        ) from exc


@dataclass(frozen=True)
class Clock:
    """The dates ages are measured from: each project's last activity and the memory's."""

    today: date
    memory: date
    projects: Mapping[str, date] = field(default_factory=dict)

    @classmethod
    def from_activity(cls, activity: Mapping[str, str], today: date) -> Clock:
        """The clock of an ``activity`` map (``ReflectorState.activity``), capped at ``today``."""

        def capped(day: str) -> date:
            try:
                return min(today, date.fromisoformat(day))
            except ValueError:
                return today

        memory = capped(activity[MEMORY]) if activity.get(MEMORY) else today
        projects = {k: capped(v) for k, v in activity.items() if k != MEMORY}
        return cls(today, memory, projects)

    def of(self, project: str | None) -> date:
        """The last activity of ``project``, else of the memory."""
        if project is None:
            return self.memory
        return self.projects.get(project, self.memory)

    def age(self, day: str, project: str | None = None) -> int:
        """Days between ``day`` and the last activity of ``project`` (0 for a later day)."""
        return max(0, (self.of(project) - date.fromisoformat(day)).days)

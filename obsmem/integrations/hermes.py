"""Hermes Agent: its sessions are read by the scheduler; om changes no Hermes file.

Hermes has no session hooks om can register, so its transcripts (``$HERMES_HOME/sessions``, and
each profile's ``sessions``) are read by the scheduled ``om observe --source all``; the
orchestrator installs the scheduler whenever Hermes is chosen. Installing Hermes therefore
writes nothing of its own: this module detects Hermes, says where its sessions are read from,
and lets ``om doctor`` check that a scheduler is reading them.

The original tool's Hermes support was a separate memory-provider plugin
(``$HERMES_HOME/plugins/observational_memory``) that imports the original Python library; om does
not install an equivalent, and :mod:`obsmem.integrations.migration` reports that plugin when it
is still present, since it would write to the same memory files beside om.
"""

from __future__ import annotations

from obsmem.doctor import Check
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.scheduler import sessions_check
from obsmem.paths import agent_home

__all__ = ["checks", "detect", "plan_install", "plan_uninstall"]

NAME = "hermes"
#: Hermes needs the scheduler: its sessions are read only by the scheduled observe.
NEEDS_SCHEDULER = True


def detect(ctx: InstallContext) -> bool:
    """True when Hermes' home (``$HERMES_HOME``, ``~/.hermes``) exists."""
    return agent_home(NAME, ctx.environ).is_dir()


def plan_install(ctx: InstallContext) -> Plan:
    """No file to change; the record says where sessions are read from."""
    sessions = agent_home(NAME, ctx.environ) / "sessions"
    return Plan(
        NAME,
        record={"sessions": str(sessions)},
        notes=[
            f"Hermes sessions in {sessions} are read by the scheduled om observe "
            "(the scheduler is installed with Hermes); no Hermes file is changed"
        ],
    )


def plan_uninstall(ctx: InstallContext) -> Plan:
    """Nothing to remove: forget the integration."""
    return Plan(NAME, record=None)


def checks(ctx: InstallContext) -> list[Check]:
    """om doctor: Hermes' sessions folder exists and a scheduler reads it."""
    sessions = agent_home(NAME, ctx.environ) / "sessions"
    if sessions.is_dir():
        found = Check("hermes sessions folder", "ok", str(sessions))
    else:
        found = Check(
            "hermes sessions folder",
            "warn",
            f"{sessions} does not exist (no Hermes session yet, or HERMES_HOME points elsewhere)",
            "set HERMES_HOME to Hermes' home before om install, or start a Hermes session",
        )
    return [found, sessions_check(ctx, NAME, "Hermes")]

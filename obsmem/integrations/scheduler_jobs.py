"""What the scheduler runs, whatever runs it: the jobs, their environment and their command line.

Three jobs:

- ``observe``: ``om observe --source all`` every ``OM_SCHEDULE_OBSERVE_MINUTES`` (default 15), the
  backstop that also ingests Hermes and OpenClaw sessions, which have no hooks;
- ``claude-memory``: ``om observe --source claude-memory`` hourly (Claude Code's auto-memory);
- ``reflect``: ``om reflect`` daily at 04:00 local time.

With ``--scheduler watch`` the two observe jobs give way to one long-running service, ``watch``
(``om observe --watch``: every agent's transcripts and Claude Code's auto-memory, as they
change); the daily ``reflect`` job stays.

Each job runs ``/bin/sh -c`` with a ``umask 077`` (new logs are private), creates the logs folder
if needed and appends its output to ``<logs dir>/<job>.log``; ``om`` rotates that file when a run
starts (:func:`obsmem.integrations.logs.rotate`).

cron starts jobs with a nearly empty environment, launchd and systemd with their own, so the
variables that decide where om and the agents keep things (``PATH``, the agents' homes,
``XDG_*``, and om's path overrides such as ``OM_HOME``, as absolute paths) are copied from the
environment ``om install`` ran in. om's other ``OM_*`` settings are not: they belong in the
settings file, which every job reads. Secrets are never copied.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from obsmem.integrations.base import InstallContext, path_environment
from obsmem.integrations.logs import job_log
from obsmem.settings import load_settings

__all__ = [
    "MANAGED",
    "WATCH_JOB",
    "Job",
    "cadence",
    "job_environment",
    "om_program_ok",
    "run_tool",
    "scheduled_jobs",
    "shell_command",
]

#: Written into every file and block the scheduler installs, so om can tell its own from others'.
MANAGED = "managed by om install; `om uninstall` removes it"

#: Variables copied into the jobs' environment besides om's path overrides.
_PASSED = (
    "PATH",
    "LANG",
    "LC_ALL",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "HERMES_HOME",
    "OPENCLAW_HOME",
)
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class Job:
    """One scheduled job: an interval in minutes, or a daily local time."""

    name: str
    args: tuple[str, ...]
    what: str
    every_minutes: int | None = None
    daily_at: tuple[int, int] | None = None
    #: A long-running service (the watcher), kept running rather than started on a schedule.
    service: bool = False


def cadence(job: Job) -> tuple[str, int, int]:
    """How often a job runs, for the backends to spell: ``("daily", hour, minute)``,
    ``("hourly", 0, 0)`` or ``("every", minutes, 0)`` (minutes below 60)."""
    if job.daily_at is not None:
        return ("daily", *job.daily_at)
    minutes = job.every_minutes or 60
    return ("hourly", 0, 0) if minutes >= 60 else ("every", minutes, 0)


#: The watcher as a service job (``om install --scheduler watch``).
WATCH_JOB = Job(
    "watch",
    ("observe", "--watch"),
    "observe the agents' sessions as they grow",
    service=True,
)
_REFLECT_JOB = Job("reflect", ("reflect",), "fold observations into reflections", daily_at=(4, 0))


def scheduled_jobs(environ: Mapping[str, str], *, watch: bool = False) -> list[Job]:
    """The jobs to install, with the observe interval from ``OM_SCHEDULE_OBSERVE_MINUTES``;
    with ``watch``, the watcher service and the daily reflection."""
    if watch:
        return [WATCH_JOB, _REFLECT_JOB]
    minutes = load_settings(environ).schedule_observe_minutes
    return [
        Job(
            "observe",
            ("observe", "--source", "all"),
            "observe new content in every agent's transcripts",
            every_minutes=minutes,
        ),
        Job(
            "claude-memory",
            ("observe", "--source", "claude-memory"),
            "scan Claude Code's auto-memory files",
            every_minutes=60,
        ),
        _REFLECT_JOB,
    ]


def job_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a job needs, sorted by name: where programs, agents and om's files are.

    om's own settings are not copied (they belong in the settings file, which every job reads,
    so a value changed there reaches the jobs); nor is any API key or token.
    """
    env = {name: environ[name] for name in _PASSED if environ.get(name)}
    env.update(path_environment(environ))
    env.setdefault("PATH", _DEFAULT_PATH)
    return dict(sorted(env.items()))


def shell_command(ctx: InstallContext, job: Job, env: Mapping[str, str] | None = None) -> str:
    """The ``sh`` command line a job runs: private umask, logs folder, output appended to its log.

    ``env`` is prefixed as ``NAME=value`` assignments (cron has no other way to pass it). A
    service ``exec``s om, so the stop signal of systemd or launchd reaches om itself.
    """
    log = job_log(job.name, ctx.environ)
    assignments = "".join(f"{name}={shlex.quote(value)} " for name, value in (env or {}).items())
    start = "exec " if job.service and not assignments else ""
    return (
        f"umask 077; mkdir -p {shlex.quote(str(log.parent))} && "
        f"{start}{assignments}{ctx.command(*job.args)} >> {shlex.quote(str(log))} 2>&1"
    )


def run_tool(
    argv: Sequence[str], environ: Mapping[str, str], timeout: float = 15
) -> subprocess.CompletedProcess[str] | None:
    """Run a read-only helper (``systemctl --user is-active``, ``launchctl print``).

    None when the program is not on the environment's PATH or could not be run.
    """
    program = shutil.which(argv[0], path=environ.get("PATH"))
    if program is None:
        return None
    try:
        return subprocess.run(
            [program, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(environ),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def om_program_ok(om: Sequence[str], environ: Mapping[str, str]) -> bool:
    """True when the program the jobs start (``om``, or python for ``python -m obsmem``) exists."""
    if not om:
        return False
    program = om[0]
    if "/" in program:
        path = Path(program).expanduser()
        return path.is_file() and bool(path.stat().st_mode & 0o111)
    return shutil.which(program, path=environ.get("PATH")) is not None

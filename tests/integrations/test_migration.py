"""Migration: the original observational-memory tool's hooks and jobs are found and removed."""

from __future__ import annotations

import copy
import json
import os
import plistlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.programs import FakeCrontab, FakeTool

from obsmem.integrations import migration, scheduler
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.edits import apply_edits
from obsmem.paths import agent_home

Ctx = Callable[..., InstallContext]

OTHER = {"type": "command", "command": "~/.claude/hooks/guard.sh", "timeout": 10}
KEEP = {"type": "command", "command": "echo keep"}
OURS = {"type": "command", "command": "/usr/local/bin/om context --for claude", "timeout": 10}

# Entries the original tool wrote into Claude Code's settings.json (several versions' shapes).
LEGACY_START = {
    "type": "command",
    "command": "/opt/om/bin/om context",
    "timeout": 5,
    "statusMessage": "Loading observational memory...",
}
LEGACY_CHECKPOINT = {"type": "command", "command": "'/opt/om/bin/om' claude-checkpoint"}
LEGACY_SCRIPT = {
    "type": "command",
    "command": "'/old path/lib/observational_memory/hooks/claude/session-end.sh'",
    "timeout": 60,
    "async": True,
}
LEGACY_BASH = {
    "type": "command",
    "command": "bash /usr/lib/py3/site-packages/observational_memory/hooks/claude/session-end.sh",
}

USER_CRONTAB = "MAILTO=me@example.com\n30 2 * * * /usr/local/bin/backup --all\n"
LEGACY_CRON = (
    "# --- observational-memory ---\n"
    "*/15 * * * * . /home/me/.config/observational-memory/env && /opt/om/bin/om observe "
    "--source codex 2>/dev/null\n"
    "0 * * * * /opt/om/bin/om observe --source claude-memory 2>/dev/null\n"
    "# --- end observational-memory ---\n"
)
LOOSE_CRON = "0 4 * * * /old/bin/om reflect 2>/dev/null\n"

CODEX_USER_AGENTS = "Team instructions\n\nAlways run the tests.\n"
CODEX_LEGACY_BLOCK = (
    "<!-- observational-memory -->\n## Observational Memory\n\n"
    "<!-- observational-memory:codex-hooks-fallback-v1 -->\n\n"
    "Codex startup context is normally injected through hooks.\n"
    "<!-- observational-memory -->"
)


def claude_settings() -> tuple[dict[str, Any], dict[str, Any]]:
    """(settings with the original's hooks mixed in, the same settings without them)."""
    clean: dict[str, Any] = {
        "model": "opus",
        "permissions": {"allow": ["Bash(git status)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [OTHER]}],
            "SessionStart": [{"matcher": "startup", "hooks": [KEEP]}, {"hooks": [OURS]}],
            "UserPromptSubmit": [{"hooks": [KEEP]}],
        },
    }
    dirty = copy.deepcopy(clean)
    hooks = dirty["hooks"]
    hooks["SessionStart"].insert(1, {"hooks": [LEGACY_START]})
    hooks["UserPromptSubmit"][0]["hooks"].insert(0, LEGACY_CHECKPOINT)
    dirty["hooks"] = {
        "PreToolUse": hooks["PreToolUse"],
        "SessionEnd": [{"hooks": [LEGACY_SCRIPT]}],
        "SessionStart": hooks["SessionStart"],
        "UserPromptSubmit": hooks["UserPromptSubmit"],
        "PreCompact": [{"hooks": [LEGACY_BASH]}],
    }
    return dirty, clean


def codex_hooks() -> tuple[dict[str, Any], dict[str, Any]]:
    ours = {"type": "command", "command": "/usr/local/bin/om hook checkpoint --agent codex"}
    clean: dict[str, Any] = {
        "hooks": {
            "SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "x"}]}],
            "Stop": [{"hooks": [ours]}],
        }
    }
    dirty = copy.deepcopy(clean)
    legacy_start = {
        "matcher": "startup|resume",
        "hooks": [{"type": "command", "command": "/opt/om/bin/om context", "timeout": 5}],
    }
    legacy_stop = {"hooks": [{"type": "command", "command": "/opt/om/bin/om codex-checkpoint"}]}
    dirty["hooks"]["SessionStart"].append(legacy_start)
    dirty["hooks"]["Stop"].insert(0, legacy_stop)
    return dirty, clean


def apply(plan: Plan, ctx: InstallContext) -> Plan:
    apply_edits(plan.edits, ctx.environ)
    return plan


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "command",
    [
        "om context",
        "'/a path/om' claude-checkpoint",
        "/bin/om.exe context",
        "/old/lib/observational_memory/hooks/claude/session-start.sh",
        "'/old path/lib/observational_memory/hooks/claude/session-start.sh'",
        "bash '/old path/lib/observational_memory/hooks/claude/session-end.sh'",
        "/old path/lib/observational_memory/hooks/claude/session-start.sh",
    ],
)
def test_the_originals_claude_commands_are_recognised(command: str) -> None:
    assert migration._claude_legacy(command)


@pytest.mark.parametrize(
    "command",
    [
        "om context --for claude",
        "/usr/bin/om hook checkpoint --agent claude",
        "echo om context",
        "om context && echo keep",
        "/bin/other context",
        "'unterminated",
        None,
        123,
        "/bin/echo hi; /lib/observational_memory/hooks/claude/session-start.sh",
    ],
)
def test_other_commands_are_not_the_originals(command: object) -> None:
    assert not migration._claude_legacy(command)


def test_claude_and_codex_hooks_removed_others_kept_byte_for_byte(install_context: Ctx) -> None:
    dirty, clean = claude_settings()
    settings = write(agent_home("claude") / "settings.json", json.dumps(dirty, indent=2) + "\n")
    codex_dirty, codex_clean = codex_hooks()
    hooks = write(agent_home("codex") / "hooks.json", json.dumps(codex_dirty, indent=4))
    ctx = install_context()
    assert len(migration.find_legacy(ctx)) == 6
    plan = apply(migration.plan_install(ctx), ctx)
    assert settings.read_text() == json.dumps(clean, indent=2) + "\n"
    assert hooks.read_text() == json.dumps(codex_clean, indent=4)
    assert plan.record is not None and len(plan.record["removed"]) == 6
    assert any("claude-checkpoint" in item for item in plan.record["removed"])
    assert migration.find_legacy(ctx) == []


def test_codex_agents_block_removed(install_context: Ctx) -> None:
    agents = agent_home("codex") / "AGENTS.md"
    write(agents, CODEX_USER_AGENTS.rstrip() + "\n\n" + CODEX_LEGACY_BLOCK + "\n")
    ctx = install_context()
    apply(migration.plan_install(ctx), ctx)
    assert agents.read_text() == CODEX_USER_AGENTS


def test_cron_block_and_loose_lines_removed_oms_own_block_kept(
    fake_crontab: FakeCrontab, install_context: Ctx
) -> None:
    fake_crontab.write(USER_CRONTAB + LEGACY_CRON + LOOSE_CRON)
    ctx = install_context(scheduler="cron")
    found = migration.find_legacy(ctx)
    assert len(found) == 3 and all(item.startswith("cron job") for item in found)
    apply(migration.plan_install(ctx), ctx)
    assert fake_crontab.read() == USER_CRONTAB
    sched = apply(scheduler.plan_install(ctx), ctx)
    with_ours = fake_crontab.read()
    assert not migration.plan_install(ctx).changed  # om's own `om observe` lines are not taken
    assert fake_crontab.read() == with_ours
    apply(scheduler.plan_uninstall(install_context(record=sched.record)), ctx)
    assert fake_crontab.read() == USER_CRONTAB


def test_a_dangling_marker_does_not_swallow_the_users_lines(
    fake_crontab: FakeCrontab, install_context: Ctx
) -> None:
    fake_crontab.write("# --- observational-memory ---\n" + USER_CRONTAB)
    ctx = install_context()
    apply(migration.plan_install(ctx), ctx)
    assert fake_crontab.read() == USER_CRONTAB


def test_launchd_jobs_booted_out_and_removed(
    fake_launchctl: FakeTool, install_context: Ctx
) -> None:
    ctx = install_context()
    folder = ctx.home / "Library" / "LaunchAgents"
    labels = [f"{migration.LEGACY_LABEL}{job}" for job in ("codex-observe", "reflect")]
    for label in labels:
        data = {"Label": label, "ProgramArguments": ["/opt/om/bin/om", "reflect"]}
        write(folder / f"{label}.plist", plistlib.dumps(data).decode())
    other = write(folder / "com.example.other.plist", "<plist/>\n")
    plan = apply(migration.plan_install(ctx), ctx)
    assert sorted(folder.iterdir()) == [other]
    domain = f"gui/{os.getuid()}"
    assert fake_launchctl.calls == [["bootout", f"{domain}/{label}"] for label in labels]
    assert plan.record == {"removed": [f"LaunchAgent {label}" for label in labels]}


def test_other_programs_leftovers_are_reported_not_touched(install_context: Ctx) -> None:
    plugin = agent_home("hermes") / "plugins" / "observational_memory"
    plugin.mkdir(parents=True)
    jobs = {"version": 1, "jobs": [{"name": "observer-memory"}, {"name": "daily-digest"}]}
    write(agent_home("openclaw") / "cron" / "jobs.json", json.dumps(jobs))
    (agent_home("openclaw") / "skills" / "observational-memory").mkdir(parents=True)
    unit = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user" / "observational-memory.service"
    write(unit, "[Service]\nExecStart=/opt/om/bin/om observe\n")
    ctx = install_context()
    found = migration.find_legacy(ctx)
    assert len(found) == 4
    assert any("hermes memory setup" in item for item in found)
    assert any("openclaw cron delete observer-memory" in item for item in found)
    assert not any("daily-digest" in item for item in found)
    plan = migration.plan_install(ctx)
    assert plan.edits == [] and plan.record is None
    assert sum(note.startswith("left for you") for note in plan.notes) == 4
    assert unit.exists() and plugin.is_dir()
    [check] = migration.checks(ctx)
    assert check.verdict == "warn"


def test_install_again_keeps_the_record_and_uninstall_restores_nothing(
    install_context: Ctx,
) -> None:
    dirty, clean = claude_settings()
    settings = write(agent_home("claude") / "settings.json", json.dumps(dirty, indent=2))
    ctx = install_context()
    first = apply(migration.plan_install(ctx), ctx)
    again = migration.plan_install(install_context(record=first.record))
    assert not again.changed and again.record == first.record
    assert again.notes == []
    gone = migration.plan_uninstall(install_context(record=first.record))
    assert gone.edits == [] and gone.record is None
    assert "not restored" in gone.notes[0]
    assert settings.read_text() == json.dumps(clean, indent=2)
    [check] = migration.checks(ctx)
    assert check.verdict == "ok"
    assert not migration.detect(ctx)


def test_unreadable_settings_are_reported_not_rewritten(install_context: Ctx) -> None:
    settings = write(agent_home("claude") / "settings.json", "{ not json")
    ctx = install_context()
    plan = migration.plan_install(ctx)
    assert plan.edits == [] and "could not be read as JSON" in plan.notes[0]
    assert settings.read_text() == "{ not json"

"""Hermes and OpenClaw: detection, OpenClaw's AGENTS.md block, and the scheduler they rely on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from obsmem.integrations import hermes, openclaw
from obsmem.integrations.base import InstallContext, Plan, save_records
from obsmem.integrations.edits import apply_edits
from obsmem.paths import agent_home, memory_dir

Ctx = Callable[..., InstallContext]

# The kind of AGENTS.md an OpenClaw workspace has, with the lines users added by hand for the
# original observational-memory skill.
AGENTS_MD = """# AGENTS.md - Your Workspace

This folder is home. Treat it that way.

## Every Session

Before doing anything else:
1. Read `SOUL.md` — this is who you are
2. Read `USER.md` — this is who you're helping
5. Read `memory/observations.md` — recent compressed observations (auto-maintained by Observer)
6. Read `memory/reflections.md` — long-term condensed memory (auto-maintained by Reflector)

## Safety

- Don't exfiltrate private data. Ever.
"""


def apply(plan: Plan, ctx: InstallContext) -> Plan:
    apply_edits(plan.edits, ctx.environ)
    return plan


@pytest.fixture
def workspace() -> Path:
    folder = agent_home("openclaw") / "workspace"
    folder.mkdir(parents=True)
    (folder / "AGENTS.md").write_text(AGENTS_MD)
    return folder


# --- Hermes ------------------------------------------------------------------------------------


def test_hermes_is_detected_by_its_home(install_context: Ctx) -> None:
    assert not hermes.detect(install_context())
    agent_home("hermes").mkdir()
    assert hermes.detect(install_context())


def test_hermes_install_changes_no_file_and_says_where_sessions_are_read(
    install_context: Ctx,
) -> None:
    plan = hermes.plan_install(install_context())
    sessions = agent_home("hermes") / "sessions"
    assert plan.edits == [] and plan.record == {"sessions": str(sessions)}
    assert any(str(sessions) in note for note in plan.notes)
    assert hermes.plan_uninstall(install_context(record=plan.record)).record is None


def test_hermes_checks_want_a_scheduler(install_context: Ctx) -> None:
    (agent_home("hermes") / "sessions").mkdir(parents=True)
    ctx = install_context(record={"sessions": "x"})
    verdicts = {c.name: c.verdict for c in hermes.checks(ctx)}
    assert verdicts == {"hermes sessions folder": "ok", "hermes sessions": "warn"}
    save_records({"scheduler": {"kind": "cron"}})
    verdicts = {c.name: c.verdict for c in hermes.checks(ctx)}
    assert verdicts["hermes sessions"] == "ok"
    save_records({"scheduler": {"kind": "none"}})
    assert {c.name: c.verdict for c in hermes.checks(ctx)}["hermes sessions"] == "warn"


# --- OpenClaw ----------------------------------------------------------------------------------


def test_openclaw_block_install_again_uninstall_gives_back_the_bytes(
    workspace: Path, install_context: Ctx
) -> None:
    ctx = install_context()
    assert openclaw.detect(ctx)
    plan = apply(openclaw.plan_install(ctx), ctx)
    text = (workspace / "AGENTS.md").read_text()
    assert text.startswith(AGENTS_MD)
    assert text.count(openclaw.BEGIN) == 1 and text.rstrip().endswith(openclaw.END)
    memory = memory_dir()
    assert f"`{memory / 'profile.md'}`" in text and f"`{memory / 'active.md'}`" in text
    assert 'om search "<words>"' in text
    again = openclaw.plan_install(install_context(record=plan.record))
    assert not again.changed
    apply(openclaw.plan_uninstall(install_context(record=plan.record)), ctx)
    assert (workspace / "AGENTS.md").read_text() == AGENTS_MD


def test_openclaw_block_is_refreshed_in_place(
    workspace: Path, install_context: Ctx, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = install_context()
    apply(openclaw.plan_install(ctx), ctx)
    path = workspace / "AGENTS.md"
    path.write_text(path.read_text() + "\n## Notes I added later\n")
    monkeypatch.setenv("OM_HOME", str(Path.home() / "memory"))
    apply(openclaw.plan_install(install_context()), ctx)
    text = path.read_text()
    assert "`~/memory/profile.md`" in text  # shown from ~ when under the home folder
    assert text.index(openclaw.END) < text.index("## Notes I added later")
    apply(openclaw.plan_uninstall(install_context()), ctx)
    # The user wrote after the block, so the blank line before it stays; the rest is theirs.
    assert path.read_text() == AGENTS_MD + "\n\n## Notes I added later\n"


def test_openclaw_missing_agents_md_is_not_created(install_context: Ctx) -> None:
    agent_home("openclaw").mkdir()
    plan = openclaw.plan_install(install_context())
    assert plan.edits == []
    assert any("does not exist yet" in note for note in plan.notes)
    checks = {c.name: c.verdict for c in openclaw.checks(install_context(record=plan.record))}
    assert checks["openclaw AGENTS.md"] == "warn"


def test_openclaw_workspace_from_environment_and_config(
    install_context: Ctx, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = agent_home("openclaw")
    home.mkdir()
    assert openclaw.workspace(install_context()) == home / "workspace"
    (home / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"workspace": str(tmp_path / "ws")}}})
    )
    assert openclaw.workspace(install_context()) == tmp_path / "ws"
    (home / "openclaw.json").write_text("{ // JSON5 comment\n}")
    assert openclaw.workspace(install_context()) == home / "workspace"
    monkeypatch.setenv("OPENCLAW_WORKSPACE", str(tmp_path / "elsewhere"))
    assert openclaw.workspace(install_context()) == tmp_path / "elsewhere"


def test_openclaw_checks(workspace: Path, install_context: Ctx) -> None:
    ctx = install_context()
    plan = apply(openclaw.plan_install(ctx), ctx)
    save_records({"scheduler": {"kind": "launchd"}})
    verdicts = {c.name: c.verdict for c in openclaw.checks(install_context(record=plan.record))}
    assert verdicts == {"openclaw AGENTS.md": "ok", "openclaw sessions": "ok"}
    (workspace / "AGENTS.md").write_text(AGENTS_MD)
    verdicts = {c.name: c.verdict for c in openclaw.checks(install_context(record=plan.record))}
    assert verdicts["openclaw AGENTS.md"] == "fail"

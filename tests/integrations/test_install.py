"""The install orchestrator: order, records, idempotence and dry runs, with stand-in planners."""

from __future__ import annotations

import json
import os
import stat
import sys
import types
from pathlib import Path

import pytest

from obsmem.errors import IntegrationError, UsageError
from obsmem.integrations import install as orchestrator
from obsmem.integrations.base import InstallContext, Plan, load_records
from obsmem.integrations.edits import Edit, FileTarget, drop_block, set_block
from obsmem.integrations.setup import configure_llm, update_env_file
from obsmem.paths import env_file, integrations_path

BEGIN, END = "# om begin", "# om end"


def _fake(name: str, folder: Path, calls: list[str], present: bool = True) -> types.ModuleType:
    """A planner that adds a marked block to one file, like the real ones do."""
    module = types.ModuleType(f"fake_{name}")
    target = FileTarget(folder / f"{name}.conf")

    def detect(ctx: InstallContext) -> bool:
        return present

    def plan_install(ctx: InstallContext) -> Plan:
        calls.append(f"install {name}")
        before = target.read()
        after = set_block(before, BEGIN, END, ctx.command("hook", name))
        record = {"created": before is None}
        if ctx.record:
            record = dict(ctx.record)
        return Plan(name, [Edit(target, before, after)], record, [f"{name} ready"])

    def plan_uninstall(ctx: InstallContext) -> Plan:
        calls.append(f"uninstall {name}")
        before = target.read()
        after = None if ctx.record.get("created") else drop_block(before, BEGIN, END)
        return Plan(name, [Edit(target, before, after)], None)

    module.detect = detect  # type: ignore[attr-defined]
    module.plan_install = plan_install  # type: ignore[attr-defined]
    module.plan_uninstall = plan_uninstall  # type: ignore[attr-defined]
    module.checks = lambda ctx: []  # type: ignore[attr-defined]
    return module


@pytest.fixture
def planners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    calls: list[str] = []
    folder = tmp_path / "files"
    folder.mkdir()
    modules = {
        "claude": _fake("claude", folder, calls),
        "codex": _fake("codex", folder, calls),
        "hermes": _fake("hermes", folder, calls, present=False),
        "openclaw": _fake("openclaw", folder, calls, present=False),
        "scheduler": _fake("scheduler", folder, calls),
        "migration": _fake("migration", folder, calls),
    }
    monkeypatch.setattr(orchestrator, "integration", lambda name: modules[name])
    monkeypatch.setenv("OM_COMMAND", "/opt/om/bin/om")
    return folder, calls


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_install_order_records_and_idempotence(planners: tuple[Path, list[str]]) -> None:
    folder, calls = planners
    (folder / "codex.conf").write_text("user = 1\n")
    report = orchestrator.install()
    assert calls == ["install migration", "install claude", "install codex", "install scheduler"]
    assert report.skipped == ["hermes", "openclaw"]
    assert set(report.changed) == {"migration", "claude", "codex", "scheduler"}
    assert "/opt/om/bin/om hook codex" in (folder / "codex.conf").read_text()
    records = load_records()
    assert set(records) == {"migration", "claude", "codex", "scheduler"}
    assert stat.S_IMODE(integrations_path().stat().st_mode) == 0o600
    assert len(report.backups) == 1  # only codex.conf existed before
    first = _snapshot(folder)
    again = orchestrator.install()
    assert again.changed == [] and again.backups == []
    assert _snapshot(folder) == first


def test_uninstall_removes_exactly_what_was_added(planners: tuple[Path, list[str]]) -> None:
    folder, _ = planners
    (folder / "codex.conf").write_text("user = 1")
    orchestrator.install()
    orchestrator.uninstall()
    assert _snapshot(folder) == {
        "codex.conf": "user = 1",
        "migration.conf": "# om begin\n/opt/om/bin/om hook migration\n# om end\n",
    }
    assert set(load_records()) == {"migration"}  # the migration is not undone


def test_uninstalling_one_agent_keeps_the_scheduler(planners: tuple[Path, list[str]]) -> None:
    _folder, calls = planners
    orchestrator.install(["claude", "codex"])
    calls.clear()
    orchestrator.uninstall(["claude"])
    assert calls == ["uninstall claude"]
    assert "scheduler" in load_records() and "codex" in load_records()
    calls.clear()
    orchestrator.uninstall(["codex"])
    assert calls == ["uninstall codex", "uninstall scheduler"]


def test_dry_run_writes_nothing_and_shows_the_diff(planners: tuple[Path, list[str]]) -> None:
    folder, _ = planners
    report = orchestrator.install(["codex"], scheduler="none", dry_run=True)
    assert "+/opt/om/bin/om hook codex" in report.diff
    assert list(folder.iterdir()) == []
    assert not integrations_path().exists()


def test_named_agents_and_bad_names(planners: tuple[Path, list[str]]) -> None:
    _, calls = planners
    orchestrator.install(["hermes"], scheduler="none")  # named: installed even if not detected
    assert calls == ["install migration", "install hermes"]
    with pytest.raises(UsageError, match="unknown agent"):
        orchestrator.install(["vim"])
    with pytest.raises(UsageError, match="unknown scheduler"):
        orchestrator.install(scheduler="at")


def test_purge_deletes_settings_and_memory(planners: tuple[Path, list[str]]) -> None:
    orchestrator.install(["claude"], scheduler="none")
    configure_llm("none")
    memory = Path(os.environ["OM_HOME"])
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "observations.md").write_text("# Observations\n")
    orchestrator.uninstall(purge=True)
    assert not memory.exists() and not env_file().exists()


def test_settings_file_keeps_the_users_lines(tmp_path: Path) -> None:
    path = tmp_path / "env"
    path.write_text("# mine\nOM_LLM_MODEL=old\nexport OM_LLM_MODEL=dup\nOTHER='x y'\n")
    text = update_env_file({"OM_LLM_MODEL": "claude-x", "ANTHROPIC_API_KEY": "sk a"}, path)
    assert text == "# mine\nOM_LLM_MODEL=claude-x\nOTHER='x y'\nANTHROPIC_API_KEY=\"sk a\"\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_configure_llm_validates() -> None:
    with pytest.raises(UsageError, match="needs the server"):
        configure_llm("ollama")
    with pytest.raises(UsageError, match="unknown provider"):
        configure_llm("skynet")
    path = configure_llm("anthropic", model="m", api_key="k")
    assert "ANTHROPIC_API_KEY=k" in path.read_text()


def test_cli_install_dry_run_and_json(planners: tuple[Path, list[str]]) -> None:
    from click.testing import CliRunner

    from obsmem.cli import load

    runner = CliRunner()
    result = runner.invoke(load(), ["install", "--codex", "--dry-run", "--scheduler", "none"])
    assert result.exit_code == 0, result.output
    assert "+/opt/om/bin/om hook codex" in result.output
    result = runner.invoke(
        load(), ["install", "--codex", "--non-interactive", "--provider", "none", "--json"]
    )
    data = json.loads(result.output)
    assert "codex" in data["changed"] and "OM_LLM_PROVIDER=none" in env_file().read_text()
    result = runner.invoke(load(), ["uninstall", "--codex", "--non-interactive"])
    assert result.exit_code == 0 and "Changed: codex" in result.output
    assert sys.modules  # the CLI imported nothing it could not


def test_cli_install_asks_for_the_llm_on_a_terminal(
    planners: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from obsmem.cli import install as install_cli
    from obsmem.cli import load

    monkeypatch.setattr(install_cli, "_interactive", lambda non_interactive, as_json: True)
    result = CliRunner().invoke(
        load(), ["install", "--codex", "--scheduler", "none"], input="anthropic\nsk-ant-x1\n\n"
    )
    assert result.exit_code == 0, result.output
    assert "sk-ant-x1" not in result.output  # the key is typed hidden, never echoed
    text = env_file().read_text()
    assert "OM_LLM_PROVIDER=anthropic" in text and "ANTHROPIC_API_KEY=sk-ant-x1" in text
    assert stat.S_IMODE(env_file().stat().st_mode) == 0o600
    again = CliRunner().invoke(load(), ["install", "--codex", "--scheduler", "none"], input="")
    assert again.exit_code == 0 and "provider" not in again.output  # asked once, not every time


class _Refusing:
    """A target whose write fails (a disk full, a crontab that refuses)."""

    label = "refusing"

    def read(self) -> str | None:
        return None

    def write(self, text: str | None, mode: int) -> None:
        raise OSError(28, "No space left on device")


def test_a_failing_write_puts_back_the_files_already_written(
    planners: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = planners
    (folder / "codex.conf").write_text("user = 1\n")
    broken = types.ModuleType("broken")
    broken.plan_install = lambda ctx: Plan(  # type: ignore[attr-defined]
        "scheduler", [Edit(_Refusing(), None, "jobs\n")], {"kind": "cron"}
    )
    modules = {name: orchestrator.integration(name) for name in orchestrator._MODULES}
    modules["scheduler"] = broken
    monkeypatch.setattr(orchestrator, "integration", lambda name: modules[name])
    with pytest.raises(IntegrationError, match="put back"):
        orchestrator.install(["claude", "codex"])
    assert _snapshot(folder) == {"codex.conf": "user = 1\n"}
    assert not integrations_path().exists()


def test_a_step_that_cannot_be_planned_changes_nothing(
    planners: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = planners
    broken = types.ModuleType("broken")

    def refuse(ctx: InstallContext) -> Plan:
        raise IntegrationError("the crontab program was not found on PATH")

    broken.plan_install = refuse  # type: ignore[attr-defined]
    modules = {name: orchestrator.integration(name) for name in orchestrator._MODULES}
    modules["scheduler"] = broken
    monkeypatch.setattr(orchestrator, "integration", lambda name: modules[name])
    with pytest.raises(IntegrationError, match="crontab"):
        orchestrator.install(["claude", "codex"])
    assert list(folder.iterdir()) == []  # claude and codex were planned, never written


def test_steps_on_one_file_are_planned_against_each_other(
    planners: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = planners
    shared = FileTarget(folder / "shared.conf")

    def appender(name: str) -> types.ModuleType:
        module = types.ModuleType(name)

        def plan_install(ctx: InstallContext) -> Plan:
            before = shared.read()
            return Plan(name, [Edit(shared, before, (before or "") + f"{name}\n")], {})

        module.plan_install = plan_install  # type: ignore[attr-defined]
        module.detect = lambda ctx: True  # type: ignore[attr-defined]
        return module

    modules = {name: appender(name) for name in orchestrator._MODULES}
    monkeypatch.setattr(orchestrator, "integration", lambda name: modules[name])
    report = orchestrator.install(["claude"], dry_run=True)
    assert "+claude\n" in report.diff and " migration\n" in report.diff  # context, not a clash
    orchestrator.install(["claude"])
    assert (folder / "shared.conf").read_text() == "migration\nclaude\nscheduler\n"


def test_install_offers_the_agent_cli_as_observer_when_no_key_is_set(
    fake_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note, never a switch: the CLI spends the user's subscription."""
    from fakes.programs import script

    script(fake_bin / "claude", "#!/bin/sh\nexit 0\n")
    report = orchestrator.install(["claude"], scheduler="none", dry_run=True)
    [note] = [n for n in report.notes if "OM_LLM_PROVIDER=claude-code" in n]
    assert "subscription" in note and "codex" not in note
    assert not env_file().exists()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    again = orchestrator.install(["claude"], scheduler="none", dry_run=True)
    assert not [n for n in again.notes if "OM_LLM_PROVIDER=" in n]

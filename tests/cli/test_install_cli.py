"""``om install`` / ``om uninstall`` as a user types them (click's CliRunner, real planners)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.integrations.base import load_records
from obsmem.paths import agent_home, memory_dir


def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _memory_with_a_user_file() -> tuple[Path, Path]:
    home = memory_dir()
    home.mkdir(parents=True)
    (home / "observations.md").write_text("# Observations\n")
    todo = home / "todo.txt"
    todo.write_text("buy milk\n")
    return home / "observations.md", todo


def test_purge_dry_run_lists_each_path_and_deletes_nothing() -> None:
    code, _, _ = run("install", "--claude", "--scheduler", "none", "--non-interactive")
    assert code == 0
    ours, todo = _memory_with_a_user_file()
    code, out, _ = run("uninstall", "--purge", "--dry-run")
    assert code == 0, out
    assert "Nothing to change." not in out
    assert f"  {ours}" in out and "Would delete" in out
    assert "Kept, not om's:" in out and f"  {todo}" in out
    assert ours.exists() and "claude" in load_records()


def test_purge_lists_what_it_deleted_and_keeps_the_users_file() -> None:
    run("install", "--claude", "--scheduler", "none", "--non-interactive")
    ours, todo = _memory_with_a_user_file()
    code, out, _ = run("uninstall", "--purge", "--non-interactive")
    assert code == 0, out
    assert "Deleted (om's files):" in out and f"  {ours}" in out
    assert f"  {todo}" in out
    assert not ours.exists() and todo.read_text() == "buy milk\n"


def test_saying_no_to_the_purge_still_uninstalls() -> None:
    run("install", "--claude", "--scheduler", "none", "--non-interactive")
    ours, _ = _memory_with_a_user_file()
    settings = agent_home("claude") / "settings.json"
    assert "om" in settings.read_text()
    code, out, err = run("uninstall", "--purge", stdin="n\n")
    assert code == 0, out + err
    assert "Not purging" in err and str(ours) in err  # the question showed what would go
    assert ours.exists()
    assert "claude" not in load_records()
    assert not settings.exists()  # om created it, so uninstall removed it


@pytest.fixture
def no_scheduler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Linux machine without cron or a systemd user manager (PATH holds neither)."""
    from obsmem.integrations import scheduler

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")


def _agent_files() -> dict[str, bytes | None]:
    claude, codex = agent_home("claude"), agent_home("codex")
    files = [claude / "settings.json", claude / ".claude.json", codex / "config.toml"]
    return {str(p): p.read_bytes() if p.exists() else None for p in files}


def test_install_without_cron_falls_back_and_says_what_to_run(no_scheduler: None) -> None:
    agent_home("claude").mkdir()
    agent_home("codex").mkdir()
    (agent_home("codex") / "config.toml").write_text('model = "o3"\n')
    code, out, err = run("install", "--dry-run")
    assert code == 0, out + err
    assert "om: warning: no scheduler here" in err and "observe --source all" in err
    assert _agent_files()[str(agent_home("codex") / "config.toml")] == b'model = "o3"\n'
    code, out, err = run("install", "--non-interactive")
    assert code == 0, out + err
    assert "om: warning: no scheduler here" in err
    assert load_records()["scheduler"]["kind"] == "none"
    assert "claude" in load_records() and "codex" in load_records()


def test_cron_by_name_without_cron_changes_no_file(no_scheduler: None) -> None:
    agent_home("claude").mkdir()
    (agent_home("claude") / "settings.json").write_text('{"model": "opus"}\n')
    before = _agent_files()
    code, _, err = run("install", "--claude", "--scheduler", "cron", "--non-interactive")
    assert code == 2 and "crontab program was not found" in err
    assert _agent_files() == before and load_records() == {}


def test_a_misspelled_setting_is_pointed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from obsmem.paths import env_file

    monkeypatch.setenv("OM_LLM_PROVDER", "anthropic")
    env_file().parent.mkdir(parents=True)
    env_file().write_text("OM_ARCHIVE_AFTER_DAY=3\nOM_LLM_PROVIDER=none\n")
    code, _, err = run("install", "--claude", "--dry-run", "--scheduler", "none")
    assert code == 0
    assert "unknown setting OM_LLM_PROVDER in the environment: did you mean OM_LLM_PROVIDER?" in err
    assert f"unknown setting OM_ARCHIVE_AFTER_DAY in {env_file()}" in err
    assert "did you mean OM_ARCHIVE_AFTER_DAYS?" in err
    code, out, err = run("status")
    assert code == 0 and "OM_LLM_PROVDER" in err and "OM_LLM_PROVDER" not in out
    code, out, err = run("context")
    assert code == 0 and err == "" and "PROVDER" not in out  # the hot path stays quiet


def test_the_provider_question_offers_an_agent_cli_found_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import click

    from obsmem.cli.install import _ask_llm

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OM_LLM_PROVIDER", "OM_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    command = click.command()(lambda: _ask_llm(None, ""))
    result = CliRunner().invoke(command, [], input="\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    offer = result.output.find("OM_LLM_PROVIDER=claude-code")
    assert offer != -1, result.output
    # Said before the question is asked, where the user chooses.
    assert offer < result.output.find("LLM provider")

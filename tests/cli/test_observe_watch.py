"""``om observe --watch`` and ``om install --scheduler watch`` as a user types them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes.programs import make_tool

from obsmem.cli import cli
from obsmem.integrations.base import load_records


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_watch_without_the_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # import watchfiles raises ImportError
    code, out, err = run("observe", "--watch")
    assert code == 2 and out == ""
    assert err.startswith("om: error: om observe --watch needs the watchfiles package")
    assert "pip install 'obsmem[watch]'" in err and len(err.strip().splitlines()) == 1


def test_om_imports_and_runs_without_watchfiles(tmp_path: Path) -> None:
    """Every other command works where watchfiles cannot be imported."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nsys.modules['watchfiles'] = None\n", encoding="utf-8"
    )
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "obsmem", "observe", "--source", "all"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    watch = subprocess.run(
        [sys.executable, "-m", "obsmem", "observe", "--watch"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert watch.returncode == 2 and "Traceback" not in watch.stderr
    assert "obsmem[watch]" in watch.stderr


@pytest.mark.parametrize("extra", [["--dry-run"], ["--flush"], ["--transcript", "x.jsonl"]])
def test_watch_refuses_one_shot_options(extra: list[str]) -> None:
    code, _, err = run("observe", "--watch", *extra)
    assert code == 2 and "--watch cannot be combined with" in err and extra[0] in err


def test_install_scheduler_watch_writes_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obsmem.integrations import scheduler

    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    make_tool(folder, tmp_path, "systemctl")
    monkeypatch.setattr(scheduler, "current_platform", lambda: "linux")
    code, out, err = run("install", "--hermes", "--scheduler", "watch", "--non-interactive")
    assert code == 0, err
    record = load_records()["scheduler"]
    assert record["capture"] == "watch" and record["services"] == ["om-watch"]
    assert "om observe --watch as a service" in out
    code, out, _ = run("status")
    assert "scheduler (systemd, watcher)" in out
    code, _, _ = run("uninstall", "--non-interactive")
    assert code == 0 and "scheduler" not in load_records()

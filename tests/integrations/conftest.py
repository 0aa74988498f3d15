"""Fixtures shared by the integration tests: fake system programs on PATH and install contexts.

The fakes are small Python scripts written into a temporary ``bin`` folder that is put first on
PATH, so the code under test finds them exactly as it would find the real programs:

- ``fake_crontab``: ``crontab -l`` prints the stored table (or "no crontab for <user>" and exits
  1 when there is none), ``crontab -`` stores stdin;
- ``fake_launchctl`` / ``fake_systemctl``: record every call (``.calls``) and answer what
  ``.respond(prefix, stdout, rc)`` told them to (exit 0 and print nothing otherwise).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from fakes.programs import FakeCrontab, FakeTool, make_crontab, make_tool, script

from obsmem.integrations.base import InstallContext


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder put first on PATH for fake programs."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


@pytest.fixture
def fake_crontab(fake_bin: Path, tmp_path: Path) -> FakeCrontab:
    """A ``crontab`` on PATH that keeps the table in a temporary file (none at first)."""
    return make_crontab(fake_bin, tmp_path / "crontab.txt")


@pytest.fixture
def fake_launchctl(fake_bin: Path, tmp_path: Path) -> FakeTool:
    """A recording ``launchctl`` on PATH."""
    return make_tool(fake_bin, tmp_path, "launchctl")


@pytest.fixture
def fake_systemctl(fake_bin: Path, tmp_path: Path) -> FakeTool:
    """A recording ``systemctl`` on PATH (``systemctl --user`` works: exit 0 by default)."""
    return make_tool(fake_bin, tmp_path, "systemctl")


@pytest.fixture
def default_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """om's places where they are by default (under the temporary HOME): no path override."""
    for name in ("OM_HOME", "OM_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_om(fake_bin: Path) -> Path:
    """An executable standing for the installed ``om`` (it prints its arguments)."""
    return script(fake_bin / "om", f"#!{sys.executable}\nimport sys\nprint(sys.argv[1:])\n")


@pytest.fixture
def install_context(fake_om: Path) -> Callable[..., InstallContext]:
    """Build an InstallContext on the current (temporary) environment, starting ``fake_om``."""

    def build(record: Mapping[str, Any] | None = None, scheduler: str = "auto") -> InstallContext:
        return InstallContext(
            environ=dict(os.environ), om=(str(fake_om),), record=record or {}, scheduler=scheduler
        )

    return build

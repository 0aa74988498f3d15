"""Fake system programs (``crontab``, ``launchctl``, ``systemctl``) written as small scripts.

Each fake is a Python script made executable in a folder that tests put first on PATH, so the
code under test runs it exactly as it would run the real program.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FakeCrontab", "FakeTool", "make_crontab", "make_tool", "script"]

_CRONTAB = """#!{python}
import os, sys
TABLE = {table!r}
args = sys.argv[1:]
if args == ["-l"]:
    if not os.path.exists(TABLE):
        sys.stderr.write("no crontab for tester\\n")
        sys.exit(1)
    with open(TABLE) as handle:
        sys.stdout.write(handle.read())
    sys.exit(0)
if args == ["-"]:
    data = sys.stdin.read()
    with open(TABLE, "w") as handle:
        handle.write(data)
    sys.exit(0)
sys.stderr.write("usage: crontab [-l | -]\\n")
sys.exit(1)
"""

_RECORDER = """#!{python}
import json, sys
argv = sys.argv[1:]
with open({log!r}, "a") as handle:
    handle.write(json.dumps(argv) + "\\n")
try:
    with open({rules!r}) as handle:
        rules = json.load(handle)
except FileNotFoundError:
    rules = []
joined = " ".join(argv)
for rule in rules:
    if joined.startswith(rule["prefix"]):
        sys.stdout.write(rule["stdout"])
        sys.exit(rule["rc"])
sys.exit(0)
"""


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@dataclass
class FakeCrontab:
    """The user's crontab as the fake ``crontab`` program stores it."""

    table: Path

    def read(self) -> str | None:
        """The stored table; None when the user has no crontab."""
        return self.table.read_text() if self.table.exists() else None

    def write(self, text: str) -> None:
        """Install ``text`` as the crontab (as ``crontab -`` would)."""
        self.table.write_text(text)


@dataclass
class FakeTool:
    """A recording fake program: its calls, and the answers it gives."""

    name: str
    log: Path
    rules: Path

    @property
    def calls(self) -> list[list[str]]:
        """Every call's arguments, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def respond(self, prefix: str, stdout: str = "", rc: int = 0) -> None:
        """Answer calls whose joined arguments start with ``prefix`` (first rule wins)."""
        rules: list[dict[str, Any]] = (
            json.loads(self.rules.read_text()) if self.rules.exists() else []
        )
        rules.append({"prefix": prefix, "stdout": stdout, "rc": rc})
        self.rules.write_text(json.dumps(rules))

    def forget(self) -> None:
        """Clear the recorded calls."""
        self.log.unlink(missing_ok=True)


def make_tool(folder: Path, tmp_path: Path, name: str) -> FakeTool:
    tool = FakeTool(name, tmp_path / f"{name}.calls", tmp_path / f"{name}.rules.json")
    text = _RECORDER.format(python=sys.executable, log=str(tool.log), rules=str(tool.rules))
    script(folder / name, text)
    return tool


def make_crontab(folder: Path, table: Path) -> FakeCrontab:
    """A fake ``crontab`` in ``folder`` keeping its table in ``table``."""
    script(folder / "crontab", _CRONTAB.format(python=sys.executable, table=str(table)))
    return FakeCrontab(table)

"""The README opens with the two-command quick start that a fresh machine needs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _first_section(text: str) -> tuple[str, str]:
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    title, body = sections[1].split("\n", 1)
    return title.strip(), body


def test_readme_starts_with_the_two_command_quick_start() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# ")
    title, body = _first_section(text)
    assert title == "Quick start"
    block = re.search(r"```sh\n(.*?)```", body, flags=re.DOTALL)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert [c for c in commands if c] == ["make demo", "make test"]


def test_readme_says_how_long_make_test_takes() -> None:
    _, body = _first_section((ROOT / "README.md").read_text(encoding="utf-8"))
    line = next(line for line in body.splitlines() if line.startswith("make test"))
    assert re.search(r"\d+ (?:to \d+ )?(?:min|minutes|s\b|seconds)", line)


def test_the_quick_start_commands_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE)

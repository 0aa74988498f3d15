"""The reliability suite's figures, printed after the results (``make reliability``).

Tests record their figures with ``hostile_figures.record``; this prints them grouped by the part
of ``docs/reliability.md`` they belong to, so the run ends with the numbers the page states.
"""

from __future__ import annotations

import pytest
from hostile_figures import FIGURES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print every recorded figure, by part, in the order the tests ran."""
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    parts: dict[str, list[str]] = {}
    for figure in FIGURES:
        parts.setdefault(figure.part, []).append(figure.text)
    for part, lines in parts.items():
        terminalreporter.write_line(f"{part}:")
        for line in lines:
            terminalreporter.write_line(f"  {line}")

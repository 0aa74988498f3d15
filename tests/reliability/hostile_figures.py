"""The figures the hostile-input, secrets, faults, disk and server tests measure.

A test calls :func:`record` with its part of ``docs/reliability.md`` and one line of figures;
the lines are kept for the run's summary (``pytest_terminal_summary`` in ``conftest.py`` prints
every recorded figure after the results, so ``make reliability`` ends with them).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FIGURES", "Figure", "record"]


@dataclass(frozen=True)
class Figure:
    """One measured line: which part of the reliability page it belongs to, and what it says."""

    part: str
    text: str


#: Every figure recorded in this process, in the order the tests ran.
FIGURES: list[Figure] = []


def record(part: str, text: str) -> None:
    """Keep one line of figures for the summary (``part``: "Hostile input", "Secrets", ...)."""
    FIGURES.append(Figure(part, text))

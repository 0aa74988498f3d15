"""The capture speed benchmark (``bench/capture_speed.py``) on one megabyte per agent.

Its "after a forget" figure means something only if the check it times would drop a forgotten
turn: both are checked here.
"""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke.scripts import load_script

C = load_script("capture_speed")


def test_parsing_reports_every_figure_for_each_agent(tmp_path: Path) -> None:
    figures = C.parsing(1, tmp_path)
    assert set(figures) == set(C.GROUPS)
    for row in figures.values():
        assert row["turns"] > 0 and row["mb"] >= 1.0
        # Each stage adds work to the one before: the reader alone is the fastest.
        assert row["cpu_mb_per_s"] >= row["redacted_cpu_mb_per_s"] > 0
        assert row["redacted_cpu_mb_per_s"] >= row["after_forget_cpu_mb_per_s"] > 0


def test_the_timed_check_drops_a_forgotten_turn(tmp_path: Path) -> None:
    check = C._after_forget(tmp_path)
    assert check.keep(["A forgotten  turn 7", "a turn nobody forgot"]) == [False, True]

"""Concurrency: eight ``om observe`` processes started together over growing transcripts, with
``om search`` and ``om context`` beside them. Afterwards every complete transcript message was
observed exactly once, and no process failed or printed a torn-file or locked-database error.

The run is ``conc_harness.ConcurrencyRun`` with the fake LLM server as the observer, so a
message observed twice would show (see its docstring). Small numbers here; fifty transcripts and
a minute of growth in the slow run behind ``make reliability``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conc_harness import ConcurrencyRun
from fakes.llm_server import FakeLLMServer
from hostile_figures import record


def _run(
    root: Path,
    llm: FakeLLMServer | None,
    *,
    claude: int,
    codex: int,
    writer_seconds: float,
    memory: int,
    readers: int = 2,
    reader_pause: float = 0.0,
) -> None:
    run = ConcurrencyRun(root, claude=claude, codex=codex, observers=8, llm=llm)
    run.setup(memory=memory)
    report = run.run(writer_seconds=writer_seconds, readers=readers, reader_pause=reader_pause)
    print(report.summary())
    record("Concurrency", report.summary().replace("\n  ", "; ").split("\n    ")[0])
    assert report.observe_runs >= 8 and report.search_runs and report.context_runs
    assert report.failures == [], report.summary()
    assert report.violations == [], report.summary()
    assert report.messages > claude + codex


def test_eight_observers_on_growing_transcripts_observe_each_message_once(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    _run(
        tmp_path,
        fake_llm,
        claude=8,
        codex=4,
        writer_seconds=4,
        memory=300,
        readers=1,
        reader_pause=0.3,
    )


@pytest.mark.slow
def test_eight_observers_on_fifty_growing_transcripts_observe_each_message_once(
    tmp_path: Path, fake_llm: FakeLLMServer
) -> None:
    _run(tmp_path, fake_llm, claude=40, codex=10, writer_seconds=60, memory=3000, reader_pause=0.2)


@pytest.mark.slow
def test_eight_rule_observers_on_fifty_growing_transcripts_lose_nothing(tmp_path: Path) -> None:
    _run(tmp_path, None, claude=40, codex=10, writer_seconds=60, memory=3000, reader_pause=0.2)

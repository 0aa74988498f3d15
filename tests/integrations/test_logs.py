"""Scheduled jobs' logs are rotated when om observe or om reflect starts."""

from __future__ import annotations

from click.testing import CliRunner

from obsmem.cli import load
from obsmem.integrations.logs import DEFAULT_MAX_BYTES, job_log, rotate_all


def test_rotate_all_rotates_only_what_is_due() -> None:
    big, small = job_log("observe"), job_log("reflect")
    big.parent.mkdir(parents=True)
    big.write_bytes(b"x" * DEFAULT_MAX_BYTES)
    small.write_text("ok\n")
    assert rotate_all() == [big]
    assert not big.exists() and big.with_name("observe.log.1").stat().st_size == DEFAULT_MAX_BYTES
    assert small.read_text() == "ok\n"


def test_observe_and_reflect_rotate_the_logs_as_they_start() -> None:
    for command, job in ((["observe", "--source", "hermes"], "observe"), (["reflect"], "reflect")):
        log = job_log(job)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"y" * DEFAULT_MAX_BYTES)
        result = CliRunner().invoke(load(), command)
        assert result.exit_code == 0, result.output
        assert log.with_name(f"{job}.log.1").exists()

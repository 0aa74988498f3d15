"""The `om` command through click's CliRunner, and once as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem import __version__
from obsmem.cli import cli
from obsmem.demo import prepare
from obsmem.memory.observations import parse_observations


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "mem"
    monkeypatch.setenv("OM_HOME", str(path))
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    code, out, _ = run("--version")
    assert code == 0
    assert out.strip() == f"om {__version__}"


def test_status_creates_missing_directory_and_reports_counts(home: Path) -> None:
    code, out, _ = run("status")
    assert code == 0
    assert home.is_dir()
    assert "observations      0" in out
    prepare(home)
    code, out, _ = run("status", "--json")
    data = json.loads(out)
    assert data["memory_dir"] == str(home)
    assert data["observations"] == 11
    assert data["by_day"] == {"2026-11-24": 4, "2026-11-26": 4, "2026-11-28": 3}
    assert data["by_priority"]["🔴"] == 4
    assert data["last_reflected"] == "2026-11-28"
    assert data["provider"]["effective"] == "none"
    assert data["integrations"] == []


def test_status_shows_the_llm_cost_where_it_is_known(home: Path) -> None:
    from obsmem import paths
    from obsmem.llm.base import Completion
    from obsmem.llm.usage import record_usage

    reported = Completion("t", "claude-code", "haiku", 4000, 120, cost_usd=0.25)
    record_usage(paths.usage_path(), reported, purpose="observer")
    record_usage(paths.usage_path(), Completion("t", "anthropic", "m", 900, 80), purpose="observer")
    code, out, _ = run("status")
    assert code == 0
    assert "llm cost          today $0.2500 + 1 call of unknown cost, this month $0.2500" in out
    data = json.loads(run("status", "--json")[1])
    assert data["cost"]["today"] == {"usd": 0.25, "unpriced": 1, "upper": 0}
    assert data["usage"]["today"] == {"in": 4900, "cached": 0, "out": 200, "calls": 2}
    paths.usage_path().unlink()
    record_usage(paths.usage_path(), Completion("t", "anthropic", "m", 900, 80), purpose="observer")
    out = run("status")[1]
    assert "llm cost          today unknown (set OM_LLM_PRICE_INPUT and OM_LLM_PRICE_OUTPUT)" in out
    # Cached input at the input price: the cost is an upper bound, and says how to make it exact.
    from obsmem.settings import Settings

    cached = Completion("t", "codex", "m", 20000, 500, cached_input_tokens=18000)
    priced = Settings(llm_price_input=1.25, llm_price_output=10.0)
    record_usage(paths.usage_path(), cached, purpose="observer", settings=priced)
    out = run("status")[1]
    assert (
        "llm cost          today at most $0.0300 (cached input at the input price: set "
        "OM_LLM_PRICE_CACHED_INPUT) + 1 call of unknown cost" in out
    )


def test_search_finds_hand_added_line_on_first_search(home: Path) -> None:
    prepare(home)
    with (home / "observations.md").open("a", encoding="utf-8") as handle:
        handle.write("- 🔴 18:00 Decided to adopt zygomorphic caching for the gateway\n")
    code, out, _ = run("search", "zygomorphic", "--json")
    assert code == 0
    hits = json.loads(out)
    # Only the first holds the word; the lines around it follow, found through their neighbour.
    assert [h for h in hits if "zygomorphic" in h["text"]] == hits[:1]
    hit = hits[0]
    assert hit["text"] == "Decided to adopt zygomorphic caching for the gateway"
    assert hit["file"] == "observations.md"
    assert hit["date"] == "2026-11-28"
    assert hit["time"] == "18:00"
    assert hit["priority"] == "🔴"
    assert hit["rank"] == 1


def test_search_text_output_names_file_and_line(home: Path) -> None:
    prepare(home)
    code, out, _ = run("search", "redis", "-n", "2")
    assert code == 0
    assert out.count("observations.md:") + out.count("reflections.md:") == 2
    assert " 1. [" in out and " 2. [" in out
    assert " 3. [" not in out


@pytest.mark.parametrize("query", ['"C++ OR', "NOT", "a:b", '"unbalanced', "*", "🔴", "AND OR NOT"])
def test_hostile_queries_never_error(home: Path, query: str) -> None:
    prepare(home)
    code, out, err = run("search", query, "--json")
    assert code == 0, err
    assert isinstance(json.loads(out), list)


def test_reindex_then_doctor_healthy(home: Path) -> None:
    prepare(home)
    code, out, _ = run("reindex")
    assert code == 0
    assert "indexed" in out and "entries" in out
    code, out, _ = run("doctor", "--json")
    checks = json.loads(out)
    assert code == 0
    assert {c["name"] for c in checks} >= {"settings", "memory directory", "search index"}
    assert all(c["verdict"] in ("ok", "warn") for c in checks)


def test_doctor_fails_on_bad_setting(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_LLM_PROVIDER", "skynet")
    code, out, _ = run("doctor")
    assert code == 1
    assert "[FAIL] settings: OM_LLM_PROVIDER='skynet' must be one of" in out


def test_doctor_repairs_corrupt_index(home: Path) -> None:
    prepare(home)
    run("reindex")
    index = home / ".om" / "index.sqlite3"
    index.write_bytes(b"this is not a database" * 100)
    code, out, _ = run("doctor", "--json")
    verdicts = {c["name"]: c["verdict"] for c in json.loads(out)}
    assert code == 0
    assert verdicts["search index"] in ("ok", "repaired")
    code, out, _ = run("search", "tortoise", "--json")
    assert json.loads(out)


def test_doctor_reports_unparsed_lines(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "observations.md").write_bytes(
        b"# Observations\n\nstray text\n\n## 2026-01-02\n\n- ok line\n"
    )
    code, out, _ = run("doctor")
    assert code == 0
    assert "[warn] file observations.md: 1 line(s) not understood" in out


def test_bad_setting_is_one_line_error(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_LOCK_TIMEOUT_SECONDS", "soon")
    code, _, err = run("status")
    assert code == 2
    assert err.strip() == (
        "om: error: OM_LOCK_TIMEOUT_SECONDS='soon' must be a number (change it in the environment)"
    )
    assert "Traceback" not in err


def test_bad_setting_in_env_file_names_the_file(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "env"
    env_file.write_text("OM_SEARCH_BACKEND=fuzzy\n")
    monkeypatch.setenv("OM_ENV_FILE", str(env_file))
    code, _, err = run("status")
    assert code == 2
    assert f"change it in {env_file}" in err
    assert len(err.strip().splitlines()) == 1


def test_demo_observes_samples_offline_and_searches(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    code, out, _ = run("demo", "--home", str(target))
    assert code == 0
    observed = re.search(
        r"observed (\d+) turn\(s\) from 2 of 2 transcript\(s\) with rules: "
        r"(\d+) new observation",
        out,
    )
    assert observed and int(observed.group(1)) > 10 and int(observed.group(2)) >= 5, out
    assert "om search 'redis workers'" in out
    doc = parse_observations((target / "memory" / "observations.md").read_bytes())
    # The sample memory's 11 lines are still there, plus what the transcripts gave.
    assert len(doc.observations) == 11 + int(observed.group(2))
    assert "ghp_R4nd0m" not in out and "hunter2" not in out  # the samples' fake secrets


def test_demo_without_home_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None
    try:
        code, _, _ = run("demo")
    finally:
        tempfile.tempdir = None
    assert code == 0
    assert list(tmp_path.iterdir()) == []


def test_demo_refuses_non_empty_home(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    code, _, err = run("demo", "--home", str(tmp_path))
    assert code == 2
    assert "is not empty" in err
    assert (tmp_path / "x").read_text() == "keep me"


def test_real_subprocess_search_and_version(tmp_path: Path) -> None:
    home = tmp_path / "mem"
    prepare(home)
    env = {**os.environ, "OM_HOME": str(home)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from obsmem.cli.main import main; main()",
            "search",
            "tortoise",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert any("Tortoise ORM" in h["text"] for h in hits)
    done = subprocess.run(
        [sys.executable, "-c", "from obsmem.cli.main import main; main()", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == f"om {__version__}"


def test_search_filters_narrow_the_hits(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    assert run("demo", "--home", str(target))[0] == 0
    os.environ["OM_HOME"] = str(target / "memory")
    try:
        code, out, _ = run("search", "redis", "--type", "decision", "--json")
        hits = json.loads(out)
        assert code == 0 and hits and all(h["type"] == "decision" for h in hits)
        code, out, _ = run(
            "search", "release", "--agent", "codex", "--since", "2026-11-27", "--json"
        )
        hits = json.loads(out)
        assert hits and all(h["provenance"]["agent"] == "codex" for h in hits)
        assert all(h["date"] >= "2026-11-27" for h in hits)
        assert len({h["id"] for h in hits}) == len(hits)  # vault copies do not repeat a hit
        code, _, err = run("search", "redis", "--type", "nonsense")
        assert code == 2 and "unknown type 'nonsense'" in err
    finally:
        del os.environ["OM_HOME"]


def test_search_raw_finds_what_was_said_with_its_transcript_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "demo"
    assert run("demo", "--home", str(target))[0] == 0  # observes the sample transcripts
    monkeypatch.setenv("OM_HOME", str(target / "memory"))
    code, out, _ = run("search", "--raw", "conventional", "commit", "--json")
    hits = {h["role"]: h for h in json.loads(out)}  # what the user asked and the agent's reply
    assert hits["assistant"]["text"] == "Understood: conventional commits from now on."
    hit = hits["user"]
    assert code == 0 and len(hits) == 2 and hit["kind"] == "turn"
    assert "Please always use conventional commit messages" in hit["text"]
    assert hit["provenance"]["agent"] == "codex" and hit["citation"].endswith(".jsonl:11")
    code, out, _ = run("search", "--raw", "migration", "guide", "--agent", "claude")
    assert code == 0
    assert "7d3f2c1e-5b8a-4e6f-9a2d-1c4b7e8f0a3d.jsonl:14" in out
    assert "codex" not in out and "migration guide" in out
    code, out, _ = run("search", "--raw", "migration", "--until", "2026-11-01")
    assert (code, out.strip()) == (0, "no matches")
    code, _, err = run("search", "--raw", "redis", "--type", "decision")
    assert code == 2 and "no type or importance" in err
    monkeypatch.setenv("OM_RAW_TURNS", "off")
    code, out, err = run("search", "--raw", "redis")
    assert code == 0 and "redis" in out.lower() and "OM_RAW_TURNS=off" in err

"""``om search`` without click (``cli/quick.py``): the same arguments, output and errors as the
click command, no click or memory modules loaded, no local model loaded in a cold process, and
scores printed as a share of the best hit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.cli.quick import parse_search, search_main
from obsmem.cli.render import shown_scores
from obsmem.demo import prepare
from obsmem.search import embeddings, rerank
from obsmem.search.bm25 import COLD_NOTE, COLD_RERANK_NOTE


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "mem"
    monkeypatch.setenv("OM_HOME", str(path))
    monkeypatch.setenv("OM_SEARCH_BACKEND", "bm25")
    prepare(path)
    return path


def _click(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["search", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _fast(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | None, str, str]:
    capsys.readouterr()
    status = search_main(args)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    "args",
    [
        ["redis"],
        ["redis", "workers"],
        ["--json", "redis", "workers"],
        ["redis", "--json", "workers"],
        ["-n", "1", "redis"],
        ["-n1", "redis"],
        ["--limit=2", "--json", "redis"],
        ["--limit", "3", "commit", "messages"],
        ["--since", "2026-11-26", "--json", "redis"],
        ["--until=2026-11-25", "redis"],
        ["--type", "decision", "--json", "redis"],
        ["--min-importance", "0.5", "redis"],
        ["--project", "atlas", "redis"],
        ["--agent", "claude", "--json", "redis"],
        ["--json", "--", "--json", "redis"],
        ["-n", "2", "-n", "1", "redis"],
        ["nothing-matches-this-zzq"],
        ["--raw", "redis"],
        ["--kind", "turn", "redis"],
        ["--kind=observation,reflection", "--json", "redis"],
        ["--kind", "observation", "--kind", "turn", "redis"],
    ],
)
def test_both_paths_accept_the_same_arguments_and_print_the_same(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = _click(args)
    status, fast_out, fast_err = _fast(args, capsys)
    assert (status, fast_out, fast_err) == (code, out, err)
    assert code == 0
    assert out.strip()


@pytest.mark.parametrize(
    "args",
    [
        ["--since", "2026-13-01", "redis"],
        ["--type", "mood", "redis"],
    ],
)
def test_both_paths_report_a_bad_filter_alike(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = _click(args)
    status, fast_out, fast_err = _fast(args, capsys)
    assert (status, fast_out, fast_err) == (code, out, err)
    assert code == 2
    assert err.startswith("om: error: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("raised", "status", "line"),
    [
        (KeyboardInterrupt(), 130, "om: interrupted\n"),
        (RuntimeError("disk\non fire"), 70, "om: internal error: RuntimeError: disk on fire "),
    ],
)
def test_both_paths_report_an_interrupt_or_a_bug_alike(
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    raised: BaseException,
    status: int,
    line: str,
) -> None:
    def boom(*args: object, **kwargs: object) -> str:
        raise raised

    monkeypatch.setattr("obsmem.cli.quick.search_output", boom)
    monkeypatch.delenv("OM_DEBUG", raising=False)
    code, out, err = _click(["redis"])
    fast = _fast(["redis"], capsys)
    assert fast == (code, out, err)
    assert (code, out) == (status, "")
    assert err.startswith(line) and err.count("\n") == 1
    if status == 70:  # a bug's traceback, when asked for
        monkeypatch.setenv("OM_DEBUG", "1")
        with pytest.raises(RuntimeError, match="disk"):
            search_main(["redis"])


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["-h"],
        ["-n", "0", "redis"],
        ["-n", "x", "redis"],
        ["--limit", "1001", "redis"],
        ["-n"],
        ["-n=3", "redis"],
        ["--min-importance", "2", "redis"],
        ["--min-importance", "high", "redis"],
        ["--json=yes", "redis"],
        ["--bogus", "redis"],
        ["--lim", "3", "redis"],
        ["--kind", "turns", "redis"],
        ["--kind"],
        ["--since", "--json", "redis"],
    ],
)
def test_what_the_hand_parser_is_unsure_of_goes_to_click(args: list[str]) -> None:
    assert parse_search(args) is None


def test_usage_errors_read_as_click_writes_them(home: Path) -> None:
    # The console script hands these to click: the message is click's own.
    env = {**os.environ, "OM_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "obsmem", "search", "-n", "0", "redis"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Invalid value for '-n' / '--limit'" in done.stderr


def test_the_console_script_searches_without_click_or_the_memory_modules(home: Path) -> None:
    # The default backend (auto, no model folder), as most users have it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OM_SEARCH_BACKEND")}
    env["OM_HOME"] = str(home)
    subprocess.run([sys.executable, "-m", "obsmem", "search", "redis"], env=env, check=True,
                   capture_output=True)  # fmt: skip  # the first search indexes and stamps
    code = (
        "import sys\n"
        "sys.argv = ['om', 'search', '--json', 'redis', 'workers']\n"
        "from obsmem.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    status = exc.code\n"
        "heavy = ('click', 'rich', 'obsmem.memory', 'obsmem.index.sync', 'obsmem.redact',"
        " 'obsmem.search.embeddings', 'numpy', 'typing', 'difflib')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules], status, file=sys.stderr)\n"
    )
    # A stamp is only recorded once the files are older than the racy window.
    for path in [home, *home.rglob("*")]:
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    subprocess.run([sys.executable, "-m", "obsmem", "search", "redis"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "LOADED [] 0" in done.stderr, done.stderr
    assert json.loads(done.stdout)[0]["rank"] == 1


def test_a_cold_search_never_loads_a_local_model(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OM_SEARCH_BACKEND", "hybrid")
    monkeypatch.setattr(embeddings, "backend_status", lambda settings: ("hybrid", "a model"))

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("a cold search loaded a model")

    monkeypatch.setattr(embeddings, "load_embedder", never)
    monkeypatch.setattr(embeddings, "_NOTICED", set())
    status, out, err = _fast(["--json", "redis", "workers"], capsys)
    assert status == 0
    assert err == f"om: {COLD_NOTE}\n"
    assert json.loads(out)[0]["rank"] == 1
    monkeypatch.setenv("OM_SEARCH_BACKEND", "bm25")
    monkeypatch.setenv("OM_RERANK_MODEL", "Xenova/ms-marco-MiniLM-L-6-v2")
    monkeypatch.setattr(rerank, "load_reranker", never)
    status, out, err = _fast(["redis"], capsys)
    assert status == 0
    assert err == f"om: {COLD_RERANK_NOTE}\n"


def test_an_endpoint_embedder_keeps_hybrid_search_silently(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obsmem.search.bm25 import for_cold_process
    from obsmem.settings import load_settings

    monkeypatch.setenv("OM_SEARCH_BACKEND", "hybrid")
    monkeypatch.setenv("OM_EMBED_PROVIDER", "openai-compatible")
    settings = load_settings()
    assert for_cold_process(settings) is settings
    monkeypatch.setenv("OM_SEARCH_BACKEND", "auto")
    monkeypatch.setenv("OM_EMBED_PROVIDER", "fastembed")
    settings = load_settings()
    assert for_cold_process(settings) is settings  # auto without a model folder: BM25 already


def test_scores_are_shown_as_a_share_of_the_best() -> None:
    assert shown_scores([2.4e-6, 1.2e-6, 0.6e-6]) == ["1.00", "0.50", "0.25"]
    assert shown_scores([6.95, 4.65]) == ["1.00", "0.67"]
    assert shown_scores([0.0, 0.0]) == ["0", "0"]
    assert shown_scores([]) == []


def test_a_small_memory_prints_scores_that_say_something(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In the demo's memory every BM25 score is near 1e-6: they used to print as [0.00].
    status, out, _ = _fast(["-n", "3", "redis", "workers"], capsys)
    assert status == 0
    assert " 1. [1.00] " in out
    assert "[0.00]" not in out

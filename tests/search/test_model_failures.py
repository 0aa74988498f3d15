"""A local embedding model that does not load is remembered (``search/model_failures.py``):
not retried by every search or daemon, retried once the files change or the time is up, and
explained by ``om status`` and ``om doctor``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.cli.render import status as render_status
from obsmem.doctor import _check_search_backend
from obsmem.errors import SettingsError
from obsmem.memory.store import MemoryStore
from obsmem.search import embeddings, model_failures
from obsmem.search.embeddings import load_embedder, reset_backend_cache
from obsmem.settings import Settings, load_settings
from obsmem.status import collect_status
from tests.search.daemon_setup import TEXTS, no_start, search


@pytest.fixture
def broken(
    memory: MemoryStore, model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The test model's folder with a damaged graph, named by OM_EMBED_MODEL_PATH."""
    folder = tmp_path / "broken-model"
    shutil.copytree(model_folder, folder)
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    monkeypatch.setenv("OM_EMBED_MODEL_PATH", str(folder))
    return folder


def _fail_once(settings: Settings) -> str:
    with pytest.raises(SettingsError) as failed:
        load_embedder(settings)
    return failed.value.message


def test_a_model_that_does_not_load_is_not_tried_again_by_the_next_process(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings()
    message = _fail_once(settings)
    assert message.startswith("cannot load embedding model")
    known = model_failures.remembered(settings)
    assert known is not None and known["reason"] == message
    reset_backend_cache()  # as a new process would start
    tried: list[object] = []
    monkeypatch.setattr(embeddings, "_new_embedder", lambda *a: tried.append(a))
    assert _fail_once(settings) == message
    assert tried == []


def test_a_cold_search_starts_no_daemon_and_says_why_hybrid_is_off(
    broken: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fail_once(load_settings())
    started = no_start(monkeypatch)
    capsys.readouterr()
    assert search("postgresql")[0]["text"] == TEXTS[0]
    err = capsys.readouterr().err
    assert err.startswith("om: hybrid search is off: cannot load embedding model")
    assert "see `om doctor`" in err and err.endswith("showing keyword (BM25) results\n")
    assert started == []


def test_status_and_doctor_say_why_and_how_to_fix_it(memory: MemoryStore, broken: Path) -> None:
    settings = load_settings()
    _fail_once(settings)
    report = collect_status(memory, settings)
    assert report.search["backend"] == "bm25"
    assert report.search["reason"].startswith("the embedding model did not load: cannot load")
    shown = render_status(report)
    assert "search            keyword (BM25): the embedding model did not load" in shown
    assert "`om reindex --embed` tries it now" in shown
    backend = _check_search_backend(memory, None)[0]
    assert backend.verdict == "warn"
    assert "hybrid search is off until" in backend.detail
    assert "om reindex --embed" in backend.fix


def test_fixed_files_or_time_let_the_model_be_tried_again(broken: Path, model_folder: Path) -> None:
    settings = load_settings()
    _fail_once(settings)
    known = model_failures.remembered(settings)
    assert known is not None
    later = known["at"] + model_failures.RETRY_SECONDS
    assert model_failures.remembered(settings, now=later) is None
    shutil.copyfile(model_folder / "model.onnx", broken / "model.onnx")  # the folder is fixed
    assert model_failures.remembered(settings) is None
    reset_backend_cache()
    assert load_embedder(settings).dim == 384
    assert not (Path(model_failures._file()).exists())  # a load that works forgets the failure


def test_om_reindex_tries_a_remembered_model_at_once(
    memory: MemoryStore, hybrid_env: dict[str, str]
) -> None:
    settings = load_settings()
    model_failures.remember(settings, "cannot load embedding model: it was broken")
    assert model_failures.remembered(settings) is not None
    result = CliRunner().invoke(cli, ["reindex", "--embed"])
    assert result.exit_code == 0, result.output
    assert "embedded 3 new text(s)" in result.output
    assert model_failures.remembered(settings) is None


def test_an_endpoint_embedder_is_never_remembered(memory: MemoryStore) -> None:
    settings = load_settings().replace(embed_provider="openai-compatible")
    model_failures.remember(settings, "whatever")
    assert model_failures.remembered(settings) is None

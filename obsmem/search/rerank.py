"""Optional cross-encoder reranking of the best results, blended with their fused rank.

A cross-encoder reads the query and one candidate together and scores how well they match: more
accurate than BM25 or an embedding, and too slow to run over a whole memory. So it reorders only
the first ``OM_RERANK_TOP`` (default 30) results of the fused ranking (``hybrid.py``; the BM25
ranking when there are no embeddings), and its order is blended with the fused one rather than
replacing it.

Blending by position (``blend_order``): with n candidates, the one at position p (1-based) of a
ranking gets the position score ``(n - p + 1) / n`` (1 for the first, 1/n for the last). Each
candidate's blended score is ``w * fused + (1 - w) * reranker``, where ``w`` depends on its
fused position among the candidates reranked:

============================  =====  ============================================
fused position                ``w``  why
============================  =====  ============================================
1 to 3                        0.75   the top of the retrieval is usually right,
                                     and exact keyword matches (names, ids, error
                                     strings) are where cross-encoders are weakest
4 to 10                       0.60   balanced
11 and beyond                 0.40   the reranker knows better down the list
============================  =====  ============================================

These are QMD's position bands; om blends positions rather than scores, because cross-encoder
logits have no fixed scale across models. What they do, with n = 30: the fused first gives way to
the fused second only when the reranker puts the second first and the first fifth or lower; a
candidate from fused position 11 that the reranker puts first passes the fused first only when
the reranker ranks that one 18th or lower. Ties keep the fused order. Results past
``OM_RERANK_TOP`` keep their fused order after the reranked ones, and BM25's unambiguous winner
(``hybrid.clear_winner``) stays first: it is not reranked at all. The bands have not been
measured on om's own benchmarks.

``OM_RERANK_MODEL`` names a fastembed cross-encoder (``Xenova/ms-marco-MiniLM-L-6-v2`` is a
small English one); empty turns reranking off. ``OM_RERANK_MODEL_PATH`` loads it from a local
folder; without one, fastembed downloads it on first use. A model that cannot be loaded, or that
fails while scoring, leaves the fused order in place and is reported once per process on stderr.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from obsmem.errors import SettingsError
from obsmem.search.embeddings import fastembed_installed, notice

if TYPE_CHECKING:
    from obsmem.settings import Settings

__all__ = [
    "TAIL_WEIGHT",
    "WEIGHT_BANDS",
    "FastEmbedReranker",
    "Reranker",
    "blend_order",
    "load_reranker",
    "position_score",
    "rerank_order",
    "reset_reranker_cache",
    "retrieval_weight",
]

#: (last fused position of the band, weight of the fused position) in order; see the module doc.
WEIGHT_BANDS: tuple[tuple[int, float], ...] = ((3, 0.75), (10, 0.60))
#: Weight of the fused position past the last band.
TAIL_WEIGHT = 0.40


class Reranker(Protocol):
    """Anything that scores (query, text) pairs; higher means a better match."""

    @property
    def name(self) -> str:
        """The model's name, for messages."""

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in the order of ``texts``; only their order matters."""


def retrieval_weight(position: int) -> float:
    """The weight of the fused ranking at ``position`` (1-based); the reranker gets the rest."""
    for last, weight in WEIGHT_BANDS:
        if position <= last:
            return weight
    return TAIL_WEIGHT


def position_score(position: int, count: int) -> float:
    """``(count - position + 1) / count``: 1 for the first of ``count``, 1/count for the last."""
    return (count - position + 1) / count


def blend_order(scores: Sequence[float]) -> list[int]:
    """The blended order of candidates given in fused order, with their cross-encoder scores.

    ``scores[i]`` is the score of the candidate at fused position ``i + 1``. Returns the indices
    of ``scores``, best first (see the module doc for the formula); ties keep the fused order.
    """
    count = len(scores)
    # The reranker's own positions: best score first, ties in fused order.
    by_score = sorted(range(count), key=lambda i: (-scores[i], i))
    reranked = {index: position for position, index in enumerate(by_score, start=1)}
    blended = []
    for index in range(count):
        weight = retrieval_weight(index + 1)
        blended.append(
            weight * position_score(index + 1, count)
            + (1.0 - weight) * position_score(reranked[index], count)
        )
    return sorted(range(count), key=lambda i: (-blended[i], i))


def rerank_order(
    query: str,
    texts: Sequence[str],
    reranker: Reranker,
    *,
    top: int,
    keep_first: bool = False,
) -> list[int]:
    """Indices of ``texts`` (given in fused order) in their final order.

    The first ``top`` are scored by ``reranker`` and blended (``blend_order``); the rest keep
    their place after them. ``keep_first`` leaves the first where it is and reranks the others.
    A reranker that fails is reported once (``notice``) and the fused order is returned.
    """
    start = 1 if keep_first else 0
    head = list(range(start, min(len(texts), start + top)))
    if len(head) < 2:
        return list(range(len(texts)))
    try:
        scores = [float(s) for s in reranker.score(query, [texts[i] for i in head])]
        if len(scores) != len(head):
            raise ValueError(f"{len(scores)} scores for {len(head)} texts")
    except Exception as exc:  # a model failing mid-query must not fail the search
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        notice(f"reranking skipped ({reranker.name}: {detail}); results keep their fused order")
        return list(range(len(texts)))
    order = [head[i] for i in blend_order(scores)]
    return [*range(start), *order, *range(head[-1] + 1, len(texts))]


#: What a cross-encoder folder (``OM_RERANK_MODEL_PATH``) must hold besides its ONNX graph.
RERANK_FILES: tuple[str, ...] = ("tokenizer.json", "config.json")
#: Where the ONNX graph may be in such a folder: fastembed's layout, then a flat one.
ONNX_FILES: tuple[str, ...] = ("onnx/model.onnx", "model.onnx")


def rerank_folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable cross-encoder folder, or None when it is."""
    if not path.is_dir():
        return f"OM_RERANK_MODEL_PATH {path} is not a folder"
    missing = [name for name in RERANK_FILES if not (path / name).is_file()]
    if not any((path / name).is_file() for name in ONNX_FILES):
        missing.insert(0, " or ".join(ONNX_FILES))
    if missing:
        return f"OM_RERANK_MODEL_PATH {path} lacks {', '.join(missing)}"
    return None


class FastEmbedReranker:
    """A fastembed ``TextCrossEncoder``, from a local folder or fastembed's cache.

    A model fastembed does not list is registered from the folder (its ONNX graph at
    ``onnx/model.onnx`` or ``model.onnx``), so any cross-encoder exported to ONNX can be used.
    """

    def __init__(self, model: str, path: Path | None = None, *, batch_size: int = 32) -> None:
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        known = {str(m["model"]) for m in TextCrossEncoder.list_supported_models()}
        if model not in known:
            if path is None:
                raise SettingsError(
                    f"OM_RERANK_MODEL={model!r} is not a cross-encoder fastembed knows",
                    "set OM_RERANK_MODEL_PATH to a folder holding that model",
                )
            _register_custom(model, path)
        kwargs: dict[str, Any] = {}
        if path is not None:
            kwargs["specific_model_path"] = str(path)
        self._model = TextCrossEncoder(model, **kwargs)
        self._name = model
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance logit per text."""
        if not texts:
            return []
        return [
            float(s) for s in self._model.rerank(query, list(texts), batch_size=self._batch_size)
        ]


def _register_custom(model: str, path: Path) -> None:
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    onnx = next((name for name in ONNX_FILES if (path / name).is_file()), ONNX_FILES[0])
    # ValueError: already registered by an earlier load in this process.
    with contextlib.suppress(ValueError):
        TextCrossEncoder.add_custom_model(
            model=model, sources=ModelSource(hf=model), model_file=onnx
        )


# One reranker per (model, folder) per process; None records a failure already reported.
_RERANKERS: dict[tuple[str, str], Reranker | None] = {}


def reset_reranker_cache() -> None:
    """Forget loaded rerankers and load failures (tests; a long-lived process)."""
    _RERANKERS.clear()


def load_reranker(settings: Settings) -> Reranker | None:
    """The cross-encoder ``OM_RERANK_MODEL`` names, loaded once per process; None when off.

    A model that cannot be loaded is reported once on stderr and gives None, so the search goes
    on with the fused order.
    """
    if not settings.rerank_model:
        return None
    path = Path(settings.rerank_model_path).expanduser() if settings.rerank_model_path else None
    key = (settings.rerank_model, str(path or ""))
    if key in _RERANKERS:
        return _RERANKERS[key]
    reranker: Reranker | None = None
    try:
        if not fastembed_installed():
            importlib.import_module("fastembed")  # raises the real ImportError, with its reason
        if path is not None and (problem := rerank_folder_problem(path)):
            raise SettingsError(problem)
        reranker = FastEmbedReranker(settings.rerank_model, path)
    except SettingsError as exc:
        notice(f"reranking unavailable ({exc.message}); results keep their fused order")
    except Exception as exc:  # fastembed and onnxruntime raise many kinds; none may escape
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        notice(
            f"reranking unavailable (cannot load {settings.rerank_model}: {detail}); "
            "results keep their fused order"
        )
    _RERANKERS[key] = reranker
    return reranker

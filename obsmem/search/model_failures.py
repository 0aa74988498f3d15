"""Local embedding models that failed to load, remembered so that searches stop retrying them.

Loading a fastembed model takes seconds and may fail for reasons no retry fixes soon: a broken
package, a model folder with a damaged graph. Without a memory of it every cold ``om search``
would start a search daemon that spends those seconds failing, and announce that hybrid search
is warming up. So a failure is written to ``model-failures.json`` in ``paths.run_dir`` (private
to the user, emptied at logout on most systems), keyed by provider, model and folder, with its
reason and a fingerprint of what loading depends on: the size and mtime of the model folder's
files and of the fastembed and onnxruntime packages.

A remembered failure holds (``remembered``) until ``RETRY_SECONDS`` have passed or the
fingerprint moves (the files were fixed, the package reinstalled); meanwhile searches use BM25
and say why, and ``om status`` and ``om doctor`` show the reason and the fix. A load that
succeeds forgets it; so does ``om reindex`` (which loads the model in the foreground at once).

Only fastembed models are remembered: an endpoint embedder loads nothing (its failures are
answers from the server, seen at each request).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

from obsmem import paths

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Mapping

    from obsmem.settings import Settings

__all__ = [
    "FILE_NAME",
    "RETRY_SECONDS",
    "forget",
    "known_to_fail",
    "remember",
    "remembered",
    "retry_time",
]

#: How long a failure is trusted before a search daemon tries the model again.
RETRY_SECONDS = 600.0
FILE_NAME = "model-failures.json"
#: The packages a fastembed model loads through; a reinstall of either is worth a new try.
_PACKAGES = ("fastembed", "onnxruntime")


def _file(environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(paths.run_dir(environ), FILE_NAME)


def _key(settings: Settings) -> str | None:
    """The model ``settings`` load, or None when it is not a local (fastembed) model."""
    if settings.embed_provider != "fastembed":
        return None
    from obsmem.search.embeddings import embed_model_name

    return f"fastembed|{embed_model_name(settings)}|{settings.embed_model_path}"


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path.name}:-"
    return f"{path.name}:{st.st_size}:{st.st_mtime_ns}"


def fingerprint(settings: Settings) -> str:
    """What loading the model depends on: its folder's files, the packages' own files."""
    from obsmem.search.embeddings import MODEL_FILES

    parts: list[str] = []
    if settings.embed_model_path:
        folder = Path(settings.embed_model_path).expanduser()
        parts += [_stamp(folder / name) for name in MODEL_FILES]
    for package in _PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        parts.append(_stamp(Path(origin)) if origin else f"{package}:-")
    return "|".join(parts)


def _read(environ: Mapping[str, str] | None) -> dict[str, Any]:
    try:
        with open(_file(environ), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(data: dict[str, Any], environ: Mapping[str, str] | None) -> None:
    """Replace the file whole (a reader never sees half of it); nothing when it cannot be."""
    from obsmem.search.client import private_dir_problem

    target = _file(environ)
    if private_dir_problem(os.path.dirname(target), create=True) is not None:
        return  # a run directory others can enter holds nothing of om's
    if not data:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        return
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def remembered(
    settings: Settings, environ: Mapping[str, str] | None = None, now: float | None = None
) -> dict[str, Any] | None:
    """The failure of the model ``settings`` load, while it holds (module doc), else None.

    Keys: ``reason``, ``at`` and ``retry_at`` (Unix times).
    """
    key = _key(settings)
    if key is None or not os.path.exists(_file(environ)):
        return None
    record = _read(environ).get(key)
    if not isinstance(record, dict) or not isinstance(record.get("at"), int | float):
        return None
    now = time.time() if now is None else now
    if now - record["at"] >= RETRY_SECONDS or now < record["at"]:
        return None
    if record.get("fingerprint") != fingerprint(settings):
        return None
    reason = str(record.get("reason") or "the embedding model did not load")
    return {"reason": reason, "at": record["at"], "retry_at": record["at"] + RETRY_SECONDS}


def retry_time(failure: Mapping[str, Any]) -> str:
    """When a remembered failure (``remembered``) is tried again, as local ``HH:MM``."""
    return time.strftime("%H:%M", time.localtime(failure["retry_at"]))


def known_to_fail(settings: Settings) -> bool:
    """True while the embedding model is remembered as failing and no reranker needs a model
    process anyway: a daemon started now would only fail the same way."""
    return not settings.rerank_model and remembered(settings) is not None


def remember(settings: Settings, reason: str, environ: Mapping[str, str] | None = None) -> None:
    """Write down that the model of ``settings`` did not load, and why."""
    key = _key(settings)
    if key is None:
        return
    data = _read(environ)
    data[key] = {"reason": reason, "at": time.time(), "fingerprint": fingerprint(settings)}
    _write(data, environ)


def forget(settings: Settings, environ: Mapping[str, str] | None = None) -> None:
    """Forget a failure of the model of ``settings`` (it loaded, or it is to be tried now)."""
    key = _key(settings)
    if key is None or not os.path.exists(_file(environ)):
        return
    data = _read(environ)
    if data.pop(key, None) is not None:
        _write(data, environ)

"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (``OM_EMBED_PROVIDER``).

Ollama, llama.cpp's server, vLLM, LM Studio, LiteLLM and OpenAI itself all serve this route, so
one class covers them; only ``OM_EMBED_BASE_URL``, ``OM_EMBED_MODEL`` and the key differ.

It goes through the official ``openai`` SDK rather than plain httpx: the SDK is already om's one
client for every OpenAI-compatible server (``obsmem/llm/openai.py``), it retries
429s, 5xxs and dropped connections with backoff that honours ``Retry-After``, and its typed
errors map directly to the one-line messages below. It is imported when an embedder is created,
never when this module is imported, so BM25 searches and ``om context`` never pay for it.

Requests ask for ``encoding_format="float"``: the SDK would otherwise ask for base64, which some
servers (older Ollama releases among them) do not implement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from obsmem.errors import ProviderError, SettingsError
from obsmem.llm.base import error_detail

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_MODEL", "OPENAI_URL", "EndpointEmbedder", "endpoint_name"]

#: The model used when ``OM_EMBED_MODEL`` is empty (it is OpenAI's; other servers need the name).
DEFAULT_MODEL = "text-embedding-3-small"
#: Where requests go when ``OM_EMBED_BASE_URL`` is empty.
OPENAI_URL = "https://api.openai.com/v1"
#: Retries of one request (the SDK's own backoff); a search waits on them, so they are few.
_RETRIES = 2
_PROVIDER = "openai-compatible embeddings"


def endpoint_name(model: str, base_url: str) -> str:
    """The name vectors are stored under: the model at its server.

    The server is part of it because two servers may serve different weights (or quantisations)
    under one model name, and vectors of two models must never be compared.
    """
    return f"{model}@{(base_url or OPENAI_URL).rstrip('/')}"


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise SettingsError(
            "OM_EMBED_PROVIDER=openai-compatible needs the openai package, which is not installed",
            "pip install 'obsmem[llm]'",
        ) from None
    return openai


class EndpointEmbedder:
    """Texts embedded by an OpenAI-compatible server, ``batch_size`` texts per request.

    Creating one sends nothing; ``dim`` is learned from the first reply (a one-text probe when
    asked for before any). Rows are normalised to unit length whatever the server returns.
    """

    #: The OpenAI client may be used from any thread (see ``embeddings.thread_safe``).
    thread_safe = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str,
        batch_size: int = 64,
        timeout: float = 30.0,
    ) -> None:
        if not base_url and not api_key:
            raise SettingsError(
                "OM_EMBED_PROVIDER=openai-compatible has no server: OM_EMBED_BASE_URL is empty "
                "and no API key is set for api.openai.com",
                "set OM_EMBED_BASE_URL (Ollama: http://localhost:11434/v1) or OM_EMBED_API_KEY",
            )
        self._sdk = _import_sdk()
        self._url = (base_url or OPENAI_URL).rstrip("/")
        # Local servers ignore the key, but the SDK refuses to start without one.
        self._client = self._sdk.OpenAI(
            api_key=api_key or "unused",
            base_url=self._url,
            timeout=timeout,
            max_retries=_RETRIES,
        )
        self._model = model
        self._name = endpoint_name(model, self._url)
        self._batch_size = batch_size
        self._timeout = timeout
        self._dim: int | None = None

    @property
    def name(self) -> str:
        """``model@base-url`` (see ``endpoint_name``)."""
        return self._name

    @property
    def dim(self) -> int:
        """The vector dimension the server returns (one probe request if nothing was embedded)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """A ``(len(texts), dim)`` float32 array of unit-length rows; raises ``ProviderError``."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            rows.extend(self._request(texts[start : start + self._batch_size]))
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except ValueError:
            raise self._failure("returned vectors of different lengths") from None
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise self._failure("returned empty vectors")
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise self._failure(f"returned {matrix.shape[1]} dimensions after {self._dim}")
        self._dim = int(matrix.shape[1])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out: npt.NDArray[np.float32] = matrix / norms
        return out

    def _request(self, batch: Sequence[str]) -> list[list[float]]:
        sdk = self._sdk
        # The API rejects empty strings; a space embeds as "nothing" on every server.
        inputs = [text if text.strip() else " " for text in batch]
        try:
            response = self._client.embeddings.create(
                model=self._model, input=inputs, encoding_format="float"
            )
        except sdk.APIError as exc:
            raise self._error(exc) from None
        if not isinstance(response, sdk.types.CreateEmbeddingResponse):
            raise self._failure("sent a reply that is not an embeddings response")
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(inputs):
            raise self._failure(f"returned {len(data)} vectors for {len(inputs)} texts")
        return [list(item.embedding) for item in data]

    def _where(self) -> str:
        return f"the embeddings endpoint {self._url} ({self._model})"

    def _failure(self, what: str) -> ProviderError:
        return ProviderError(
            f"{self._where()} {what}",
            "check that OM_EMBED_BASE_URL is an OpenAI-compatible server",
            provider=_PROVIDER,
            model=self._model,
        )

    def _error(self, exc: Exception) -> ProviderError:
        """One line for an SDK error: what happened and which setting fixes it."""
        sdk = self._sdk
        status = getattr(exc, "status_code", None)
        detail = error_detail(getattr(exc, "body", None), str(exc))[0]
        if isinstance(exc, sdk.APITimeoutError):
            message = f"{self._where()} did not answer within {self._timeout:g} s"
            hint = "check the server, or raise OM_EMBED_TIMEOUT_SECONDS"
        elif isinstance(exc, sdk.APIConnectionError):
            message = f"cannot reach {self._where()}"
            hint = "start the server, or fix OM_EMBED_BASE_URL"
        elif isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
            message = f"{self._where()} refused the key ({status}): {detail}"
            hint = "set OM_EMBED_API_KEY (or OPENAI_API_KEY)"
        elif isinstance(exc, sdk.NotFoundError):
            message = f"{self._where()} answered 404: {detail}"
            hint = "check OM_EMBED_MODEL (on Ollama: `ollama pull` it) and that the URL ends in /v1"
        elif isinstance(exc, sdk.APIStatusError):
            message = f"{self._where()} answered {status}: {detail}"
            hint = "check OM_EMBED_MODEL and OM_EMBED_BASE_URL, or try again later"
        else:
            message = f"{self._where()} sent a reply that is not an embeddings response"
            hint = "check that OM_EMBED_BASE_URL is an OpenAI-compatible server"
        retryable = (
            not isinstance(exc, sdk.APIStatusError)
            or status in (408, 429)
            or (isinstance(status, int) and status >= 500)
        )
        return ProviderError(
            message,
            hint,
            provider=_PROVIDER,
            model=self._model,
            status=status if isinstance(status, int) else None,
            retryable=retryable,
        )

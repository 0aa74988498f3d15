"""Claude through the ``anthropic`` SDK: directly, on Google Vertex AI, or on Amazon Bedrock.

The three share the Messages API and differ only in the client: ``anthropic.Anthropic`` (key
``ANTHROPIC_API_KEY``), ``anthropic.AnthropicVertex`` (Google credentials, ``CLOUD_ML_REGION``,
``ANTHROPIC_VERTEX_PROJECT_ID``) and ``anthropic.AnthropicBedrock`` (AWS credentials and region).

Requests carry no sampling parameters (``temperature``, ``top_p``) and no assistant prefill:
newer Claude models reject both with a 400. JSON is asked for in the system prompt; the reply's
text blocks are joined, skipping thinking blocks, which can come first.

The SDK is imported when a provider is created, never when this module is imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from obsmem.errors import ProviderError, SettingsError
from obsmem.llm.base import (
    BaseProvider,
    Completion,
    Failure,
    Hints,
    InvalidReply,
    RetryPolicy,
    failure_from_sdk,
)

__all__ = ["CLIENT_KINDS", "AnthropicProvider"]

#: provider name -> (SDK client class, extra to install for its auth library)
CLIENT_KINDS: dict[str, tuple[str, str]] = {
    "anthropic": ("Anthropic", ""),
    "anthropic-vertex": ("AnthropicVertex", "anthropic[vertex]"),
    "anthropic-bedrock": ("AnthropicBedrock", "anthropic[bedrock]"),
}


def _import_sdk(name: str, model: str) -> Any:
    try:
        import anthropic
    except ImportError:
        raise ProviderError(
            f"{name} ({model}): the anthropic package is not installed",
            "pip install 'obsmem[llm]'",
            provider=name,
            model=model,
        ) from None
    return anthropic


class AnthropicProvider(BaseProvider):
    """Claude via the Anthropic API, Vertex AI or Bedrock (``name`` picks the client)."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        timeout: float,
        policy: RetryPolicy,
        hints: Hints,
        client_options: dict[str, Any],
    ) -> None:
        """``client_options`` go to the SDK client (``api_key``/``base_url``, ``region``, ...)."""
        super().__init__(name=name, model=model, timeout=timeout, policy=policy, hints=hints)
        class_name, extra = CLIENT_KINDS[name]
        self._sdk: Any = _import_sdk(name, model)
        factory: Callable[..., Any] = getattr(self._sdk, class_name)
        try:
            self._client: Any = factory(**client_options, timeout=timeout, max_retries=0)
        except ImportError as exc:  # google-auth or boto3, which the vertex/bedrock extras add
            raise ProviderError(
                f"{name} ({model}): {exc}",
                f"pip install '{extra or 'anthropic'}'",
                provider=name,
                model=model,
            ) from None
        except ValueError as exc:  # the SDK's "no region was given" and similar
            raise SettingsError(f"{name}: {exc}", hints.auth) from None
        self._extra = extra

    def _complete_once(
        self, system: str, user: str, *, max_tokens: int, json_mode: bool
    ) -> Completion:
        del json_mode  # asked for in the system prompt; there is no JSON switch to flip
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": user}],
        }
        if system:
            kwargs["system"] = system
        sdk = self._sdk
        try:
            response: object = self._client.messages.create(**kwargs)
        except sdk.APIError:
            raise  # an HTTP exchange happened: the retry loop classifies it
        except (ImportError, sdk.AnthropicError) as exc:
            # Failed before any request: Vertex/Bedrock load their auth library on first use
            # (the SDK's MissingDependencyError), or found no credentials.
            raise self._setup_error(exc) from None
        return self._completion(response)

    def _setup_error(self, exc: BaseException) -> ProviderError:
        detail = " ".join(str(exc).split())
        missing = isinstance(exc, ImportError) or "missing required dependency" in detail
        if missing:
            detail = detail.split("$", 1)[0].strip()  # the SDK appends its own pip command
        return ProviderError(
            f"{self.name} ({self.model}): {detail[:200]}",
            f"pip install '{self._extra or 'anthropic'}'" if missing else self.hints.auth,
            provider=self.name,
            model=self.model,
        )

    def _completion(self, response: object) -> Completion:
        if not isinstance(response, self._sdk.types.Message):
            # The SDK hands back the raw text when the body is not JSON (an HTML page, say).
            shown = response if isinstance(response, str) else type(response).__name__
            raise InvalidReply(f"expected a message, got {' '.join(shown.split())[:60]!r}")
        text = "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        )
        usage = response.usage
        # Cached prompt tokens are billed (more cheaply) too: the budget counts them.
        input_tokens = (
            (usage.input_tokens or 0)
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        return Completion(
            text=text,
            provider=self.name,
            model=response.model or self.model,
            input_tokens=int(input_tokens),
            output_tokens=int(usage.output_tokens or 0),
            stop_reason=str(response.stop_reason or ""),
            # Cache reads are the cheap part; cache writes are billed at least the input price.
            cached_input_tokens=int(usage.cache_read_input_tokens or 0),
        )

    def _classify(self, exc: Exception) -> Failure | None:
        sdk = self._sdk
        failure = failure_from_sdk(
            exc,
            timeout=sdk.APITimeoutError,
            connection=sdk.APIConnectionError,
            status=sdk.APIStatusError,
            invalid=(json.JSONDecodeError, sdk.APIResponseValidationError, InvalidReply),
        )
        if failure is None and self.name != "anthropic" and _is_cloud_auth_error(exc):
            # google-auth / botocore credential errors: the user's cloud login, not a bug.
            return Failure("credentials", " ".join(str(exc).split())[:200])
        return failure


def _is_cloud_auth_error(exc: Exception) -> bool:
    module = type(exc).__module__
    return module.startswith(("google.auth", "botocore", "boto3"))

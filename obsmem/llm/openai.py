"""OpenAI and every server that speaks its chat-completions API, through the ``openai`` SDK.

One class serves four providers; only the endpoint, the key and the default model differ:

- ``openai``: api.openai.com (or ``OM_LLM_BASE_URL``), key ``OPENAI_API_KEY``;
- ``openai-compatible``: ``OM_LLM_BASE_URL`` (llama.cpp, vLLM, LM Studio, OpenRouter, ...), key
  optional (``OPENAI_API_KEY`` when set, else a placeholder: local servers ignore it);
- ``ollama``: ``http://localhost:11434/v1`` unless ``OM_LLM_BASE_URL`` says otherwise;
- ``gemini``: Google's OpenAI-compatible endpoint, key ``GEMINI_API_KEY``.

Servers differ in what they accept, so two request features adapt after a 400 instead of being
configured: JSON mode (``response_format={"type": "json_object"}``; LM Studio and some older
servers reject it, and the JSON instruction in the system prompt remains) and the name of the
output limit (OpenAI's reasoning models want ``max_completion_tokens``, many local servers only
know ``max_tokens``). Each adaptation happens at most once per provider object and costs no retry.

The SDK is imported when a provider is created, never when this module is imported.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from obsmem.errors import ProviderError
from obsmem.llm.base import (
    BaseProvider,
    Completion,
    Failure,
    Hints,
    InvalidReply,
    RetryPolicy,
    error_detail,
    estimate_tokens,
    failure_from_sdk,
    strip_thinking,
)

if TYPE_CHECKING:
    import openai as openai_sdk

__all__ = ["OpenAIProvider"]

# A 400 that names a parameter together with one of these words means "I do not know it".
_UNSUPPORTED = re.compile(r"unsupported|not supported|unrecogni[sz]ed|unknown|not permitted|extra")
_TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")


def _import_sdk(name: str, model: str) -> Any:
    try:
        import openai
    except ImportError:
        raise ProviderError(
            f"{name} ({model}): the openai package is not installed",
            "pip install 'obsmem[llm]'",
            provider=name,
            model=model,
        ) from None
    return openai


class OpenAIProvider(BaseProvider):
    """A chat-completions provider (OpenAI, Gemini, Ollama, any OpenAI-compatible server)."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        api_key: str,
        base_url: str | None,
        timeout: float,
        policy: RetryPolicy,
        hints: Hints,
        token_param: str = "max_tokens",
    ) -> None:
        super().__init__(name=name, model=model, timeout=timeout, policy=policy, hints=hints)
        self._sdk: Any = _import_sdk(name, model)
        self._client: openai_sdk.OpenAI = self._sdk.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self._token_param = token_param
        self._token_param_settled = False
        self._json_mode = True  # until the server rejects response_format

    def _complete_once(
        self, system: str, user: str, *, max_tokens: int, json_mode: bool
    ) -> Completion:
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": user})
        while True:
            send_json = json_mode and self._json_mode
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                self._token_param: max_tokens,
            }
            if send_json:
                kwargs["response_format"] = {"type": "json_object"}
            try:
                response: object = self._client.chat.completions.create(**kwargs)
            except (self._sdk.BadRequestError, self._sdk.UnprocessableEntityError) as exc:
                if not self._adapt(exc, sent_json=send_json):
                    raise
                continue
            return self._completion(response, system + user)

    def _adapt(self, exc: Exception, *, sent_json: bool) -> bool:
        """Change the request after a 400 that rejected one of our optional features."""
        text = " ".join(error_detail(getattr(exc, "body", None), str(exc))).lower()
        mentions_token_param = any(param in text for param in _TOKEN_PARAMS)
        if not self._token_param_settled and mentions_token_param and _UNSUPPORTED.search(text):
            self._token_param = _TOKEN_PARAMS[1 - _TOKEN_PARAMS.index(self._token_param)]
            self._token_param_settled = True
            return True
        if sent_json:
            # Servers rarely say which field they dislike; dropping JSON mode is the safe guess,
            # and if the 400 had another cause the next attempt reports it.
            self._json_mode = False
            return True
        return False

    def _completion(self, response: object, prompt: str) -> Completion:
        chat_completion = self._sdk.types.chat.ChatCompletion
        if not isinstance(response, chat_completion):
            # The SDK hands back the raw text when the body is not JSON (an HTML page, say).
            raise InvalidReply(f"expected a chat completion, got {_preview(response)}")
        if not response.choices:
            raise InvalidReply("the reply has no choices")
        choice = response.choices[0]
        text = strip_thinking(choice.message.content or "")
        usage = response.usage
        # Some servers report no usage; an estimate keeps the daily budget meaningful.
        input_tokens = usage.prompt_tokens if usage else estimate_tokens(prompt)
        output_tokens = usage.completion_tokens if usage else estimate_tokens(text)
        # prompt_tokens includes the cached ones; many servers leave the details out.
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        return Completion(
            text=text,
            provider=self.name,
            model=response.model or self.model,
            input_tokens=int(input_tokens or 0),
            output_tokens=int(output_tokens or 0),
            stop_reason=str(choice.finish_reason or ""),
            cached_input_tokens=max(0, min(cached, int(input_tokens or 0))),
        )

    def _classify(self, exc: Exception) -> Failure | None:
        sdk = self._sdk
        return failure_from_sdk(
            exc,
            timeout=sdk.APITimeoutError,
            connection=sdk.APIConnectionError,
            status=sdk.APIStatusError,
            invalid=(json.JSONDecodeError, sdk.APIResponseValidationError, InvalidReply),
        )


def _preview(value: object) -> str:
    text = value if isinstance(value, str) else type(value).__name__
    text = " ".join(text.split())
    return repr(text[:60] + ("…" if len(text) > 60 else ""))

"""LLM providers behind one small interface: ``get_provider(settings)`` and ``complete()``.

Which provider: ``OM_LLM_PROVIDER``. ``auto`` takes the first key found (Anthropic, OpenAI,
Gemini), else ``OM_LLM_BASE_URL`` as an OpenAI-compatible server, else nothing (the observer then
uses its offline rules). ``none`` is nothing. A provider chosen by name but missing what it needs
(its key, a base URL, a model) raises ``SettingsError`` saying what to set, rather than quietly
observing with the rules.

Which model: ``OM_LLM_OBSERVER_MODEL`` or ``OM_LLM_REFLECTOR_MODEL`` for that purpose, else
``OM_LLM_MODEL``, else the provider's default (``DEFAULT_MODELS``; see ``docs/providers.md`` for
why each was chosen).

``claude-code`` and ``codex`` run the agent's own CLI on the user's subscription (no API key;
:mod:`obsmem.llm.cli`); ``auto`` never picks them, ``om install`` suggests them.

``OM_LLM_BASE_URL`` points the OpenAI-protocol providers (``openai``, ``openai-compatible``,
``ollama``) at another server. ``anthropic`` and ``gemini`` use it only when chosen by name (a
gateway or proxy): under ``auto`` it is documented as an OpenAI-compatible server, which those two
cannot talk to.

Importing this package loads no SDK (``om context`` and the rules must stay fast); the SDK is
imported when a provider is created.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from obsmem import paths
from obsmem.errors import SettingsError
from obsmem.llm.base import Completion, Hints, Provider, RetryPolicy
from obsmem.settings import Settings, read_env_file

if TYPE_CHECKING:
    from obsmem.llm.usage import MeteredProvider

__all__ = [
    "DEFAULT_MODELS",
    "GEMINI_BASE_URL",
    "OLLAMA_BASE_URL",
    "Completion",
    "Provider",
    "get_metered_provider",
    "get_provider",
    "resolve_model",
    "validate_key",
]

#: Default model of each provider (``openai-compatible`` has none: the server decides its names).
DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-haiku-5-5",
    "anthropic-vertex": "claude-haiku-5-5",
    "anthropic-bedrock": "anthropic.claude-haiku-5-5",
    "openai": "gpt-5.4-mini",
    "gemini": "gemini-3.5-flash-lite",
    "ollama": "llama3.2",
    "claude-code": "haiku",
    "codex": "gpt-5.4-mini",
}
OLLAMA_BASE_URL = "http://localhost:11434/v1"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
_NO_KEY = "not-needed"  # the SDK insists on a key; local servers ignore it


def resolve_model(settings: Settings, provider: str, purpose: str = "observer") -> str:
    """The model for ``purpose``: its own setting, else ``OM_LLM_MODEL``, else the default."""
    specific = {
        "observer": settings.llm_observer_model,
        "reflector": settings.llm_reflector_model,
    }.get(purpose, "")
    return specific or settings.llm_model or DEFAULT_MODELS.get(provider, "")


def get_provider(
    settings: Settings,
    purpose: str = "observer",
    *,
    environ: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Provider | None:
    """The configured provider for ``purpose``, or None when no LLM is configured.

    ``environ`` is read for the cloud settings that are not om settings (``CLOUD_ML_REGION``,
    ``AWS_REGION``, ...; the settings file is consulted too); ``sleep`` replaces ``time.sleep``
    between retries (tests). Raises ``SettingsError`` when the chosen provider lacks its key,
    base URL or model, and ``ProviderError`` when its SDK is not installed.
    """
    name = settings.effective_provider()
    if name == "none":
        return None
    env = os.environ if environ is None else environ
    explicit = settings.llm_provider != "auto"
    model = resolve_model(settings, name, purpose)
    policy = RetryPolicy(
        max_retries=settings.llm_max_retries, sleep=time.sleep if sleep is None else sleep
    )
    timeout = settings.llm_timeout_seconds
    env_file = settings.env_file or paths.env_file(env)
    base_url = settings.llm_base_url.rstrip("/") or None

    if name in ("claude-code", "codex"):
        return _cli_provider(name, model, settings, env, sleep)

    if name in ("anthropic", "anthropic-vertex", "anthropic-bedrock"):
        from obsmem.llm.anthropic import AnthropicProvider

        url = base_url if explicit else None
        hints, options = _anthropic_setup(name, settings, env, env_file, url)
        return AnthropicProvider(
            name=name,
            model=model,
            timeout=timeout,
            policy=policy,
            hints=hints,
            client_options=options,
        )

    from obsmem.llm.openai import OpenAIProvider

    key_hint = f"check OPENAI_API_KEY in {env_file}"
    if name == "openai":
        if not settings.openai_api_key and not base_url:
            raise _missing_key("openai", "OPENAI_API_KEY", env_file)
        api_key = settings.openai_api_key or _NO_KEY
        url = base_url
    elif name == "gemini":
        if not settings.gemini_api_key:
            raise _missing_key("gemini", "GEMINI_API_KEY", env_file)
        api_key, key_hint = settings.gemini_api_key, f"check GEMINI_API_KEY in {env_file}"
        url = (base_url if explicit else None) or GEMINI_BASE_URL
    elif name == "ollama":
        # Ollama wants no key, and OPENAI_API_KEY is probably a real OpenAI key: never send it.
        api_key = _NO_KEY
        url = _ollama_url(base_url) if base_url else OLLAMA_BASE_URL
    else:  # openai-compatible
        if not base_url:
            raise SettingsError(
                "OM_LLM_PROVIDER=openai-compatible needs OM_LLM_BASE_URL",
                f"set it in {env_file} to your server's URL, e.g. http://localhost:8080/v1",
            )
        api_key, url = settings.openai_api_key or _NO_KEY, base_url
    if not model:
        raise SettingsError(
            f"{name} at {url} has no default model",
            f"set OM_LLM_MODEL in {env_file} to a model the server serves",
        )
    return OpenAIProvider(
        name=name,
        model=model,
        api_key=api_key,
        base_url=url,
        timeout=timeout,
        policy=policy,
        hints=_openai_hints(name, model, url, key_hint),
        # OpenAI's own reasoning models reject max_tokens; other servers may not know the new name.
        token_param="max_completion_tokens" if name == "openai" and not url else "max_tokens",
    )


def get_metered_provider(
    settings: Settings,
    purpose: str = "observer",
    *,
    environ: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> MeteredProvider | None:
    """``get_provider`` wrapped so that usage is recorded and the daily budget enforced."""
    from obsmem.llm.usage import MeteredProvider, usage_path

    provider = get_provider(settings, purpose, environ=environ, sleep=sleep)
    if provider is None:
        return None
    return MeteredProvider(provider, usage_path(environ), settings)


def validate_key(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> str:
    """One tiny live request (``om doctor --validate-key``): a one-line verdict, or ProviderError.

    At most one retry, so a doctor run never hangs on a struggling service. The few tokens it
    costs are not counted against the daily budget.
    """
    quick = settings.replace(llm_max_retries=min(settings.llm_max_retries, 1))
    provider = get_provider(quick, "observer", environ=environ, sleep=sleep)
    if provider is None:
        if settings.llm_provider == "none":
            return "OM_LLM_PROVIDER=none: no LLM is used; om observes with offline rules"
        return (
            "no LLM configured (no API key and no OM_LLM_BASE_URL found): "
            "om observes with offline rules"
        )
    started = time.monotonic()
    reply = provider.complete(
        "You check that an API key works.", "Reply with: ok", purpose="validate", max_tokens=8
    )
    elapsed = time.monotonic() - started
    return (
        f"{provider.name} works: {reply.model} answered in {elapsed:.1f} s "
        f"({reply.total_tokens} tokens)"
    )


def _cli_provider(
    name: str,
    model: str,
    settings: Settings,
    env: Mapping[str, str],
    sleep: Callable[[float], None] | None,
) -> Provider:
    """``claude-code`` or ``codex``: the agent's own CLI (see :mod:`obsmem.llm.cli`)."""
    from obsmem.llm.claude_code import ClaudeCodeProvider
    from obsmem.llm.codex import CodexProvider

    kind = ClaudeCodeProvider if name == "claude-code" else CodexProvider
    policy = RetryPolicy(
        max_retries=settings.llm_max_retries, sleep=time.sleep if sleep is None else sleep
    )
    return kind(
        name=name,
        model=model,
        timeout=settings.llm_cli_timeout_seconds,
        policy=policy,
        environ=env,
    )


def _missing_key(name: str, variable: str, env_file: Path) -> SettingsError:
    return SettingsError(
        f"OM_LLM_PROVIDER={name} but {variable} is not set",
        f"set {variable} in {env_file}, or choose another OM_LLM_PROVIDER (none: offline rules)",
    )


def _extra_setting(name: str, env: Mapping[str, str], env_file: Path) -> str:
    """A non-om variable (cloud region, project): the environment first, then the settings file."""
    return env.get(name, "").strip() or read_env_file(env_file).get(name, "").strip()


def _anthropic_setup(
    name: str, settings: Settings, env: Mapping[str, str], env_file: Path, base_url: str | None
) -> tuple[Hints, dict[str, object]]:
    """Hints and SDK client options for the three ways to reach Claude."""
    options: dict[str, object] = {}
    if base_url:
        options["base_url"] = base_url
    if name == "anthropic":
        if not settings.anthropic_api_key and not base_url:
            raise _missing_key(name, "ANTHROPIC_API_KEY", env_file)
        options["api_key"] = settings.anthropic_api_key or _NO_KEY
        endpoint = base_url or "api.anthropic.com"
        auth = f"check ANTHROPIC_API_KEY in {env_file}"
    elif name == "anthropic-vertex":
        region = _extra_setting("CLOUD_ML_REGION", env, env_file)
        if not region:
            raise SettingsError(
                "OM_LLM_PROVIDER=anthropic-vertex needs CLOUD_ML_REGION",
                f"set it (e.g. global or us-east5) in the environment or {env_file}",
            )
        options["region"] = region
        project = _extra_setting("ANTHROPIC_VERTEX_PROJECT_ID", env, env_file)
        if project:
            options["project_id"] = project
        endpoint = base_url or f"Vertex AI ({region})"
        auth = (
            "check your Google Cloud login (gcloud auth application-default login), "
            "ANTHROPIC_VERTEX_PROJECT_ID, and that Claude is enabled in the project"
        )
    else:
        region = _extra_setting("AWS_REGION", env, env_file) or _extra_setting(
            "AWS_DEFAULT_REGION", env, env_file
        )
        if region:
            options["aws_region"] = region
        endpoint = base_url or f"Amazon Bedrock ({region or 'default region'})"
        auth = (
            "check your AWS credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID) and AWS_REGION, "
            "and that the model is enabled in the Bedrock console"
        )
    if base_url:
        unreachable = f"the server at OM_LLM_BASE_URL ({base_url}) is unreachable: start it or "
        unreachable += "change the URL"
    else:
        unreachable = f"cannot reach {endpoint}: check the network connection and HTTPS_PROXY"
    return Hints(auth=auth, unreachable=unreachable, endpoint=endpoint, api="Messages"), options


def _openai_hints(name: str, model: str, url: str | None, key_hint: str) -> Hints:
    endpoint = url or "api.openai.com"
    not_found = ""
    if name == "ollama":
        unreachable = f"Ollama at {endpoint} is unreachable: start it (ollama serve) or change "
        unreachable += "OM_LLM_BASE_URL"
        not_found = f"pull the model (ollama pull {model}) or set OM_LLM_MODEL"
    elif name == "openai-compatible" or (url and name == "openai"):
        unreachable = f"the server at OM_LLM_BASE_URL ({endpoint}) is unreachable: start it or "
        unreachable += "change the URL"
        not_found = (
            f"check OM_LLM_MODEL ({model!r} must be a model the server serves) and "
            f"OM_LLM_BASE_URL ({endpoint}; OpenAI-compatible URLs usually end in /v1)"
        )
    else:
        host = urlsplit(endpoint).hostname or endpoint
        unreachable = f"cannot reach {host}: check the network connection and HTTPS_PROXY"
    return Hints(
        auth=key_hint,
        unreachable=unreachable,
        endpoint=endpoint,
        api="OpenAI chat-completions",
        not_found=not_found,
    )


def _ollama_url(url: str) -> str:
    # Ollama's own URL is often given without its OpenAI path; /v1 is where the API lives.
    parts = urlsplit(url)
    return url + "/v1" if parts.path in ("", "/") else url

"""Writing the LLM choice made at ``om install`` into the settings file.

The settings file (``KEY=VALUE`` lines) belongs to the user as much as to om: keys om sets are
replaced on their own line, every other line (comments included) stays as it was, and the file
is written atomically with mode 0600 because it holds API keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from obsmem.errors import UsageError
from obsmem.memory.atomic import atomic_write
from obsmem.paths import env_file
from obsmem.settings import PROVIDERS

__all__ = ["KEY_VARIABLES", "configure_llm", "needs_base_url", "update_env_file"]

#: The API key each provider reads (providers without one use other credentials or none).
KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    # OpenRouter and other hosted OpenAI-compatible servers take a key; local ones do not.
    "openai-compatible": "OPENAI_API_KEY",
}

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def needs_base_url(provider: str) -> bool:
    """True for providers that talk to a server the user runs (its address is required)."""
    return provider in ("openai-compatible", "ollama")


def update_env_file(values: Mapping[str, str], path: Path) -> str:
    """Set ``values`` in the settings file at ``path``; return the new text.

    Existing assignments of those keys are replaced in place (the first one; later duplicates are
    dropped so the file says one thing); new keys are appended. Other lines are kept verbatim.
    """
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    lines = old.splitlines()
    done: set[str] = set()
    out: list[str] = []
    for line in lines:
        match = _LINE.match(line)
        key = match.group(1) if match else ""
        if key and key in values:
            if key not in done:
                out.append(f"{key}={_quote(values[key])}")
                done.add(key)
            continue
        out.append(line)
    out.extend(f"{key}={_quote(value)}" for key, value in values.items() if key not in done)
    text = "\n".join(out) + "\n"
    atomic_write(path, text.encode("utf-8"), mode=0o600)
    return text


def _quote(value: str) -> str:
    if not value or any(ch in value for ch in " #'\"\t"):
        return '"' + value.replace('"', "") + '"'
    return value


def configure_llm(
    provider: str,
    *,
    model: str = "",
    api_key: str = "",
    base_url: str = "",
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Record the LLM provider (and model, key, server address) in the settings file."""
    if provider not in PROVIDERS:
        raise UsageError(f"unknown provider {provider!r}", f"use one of {', '.join(PROVIDERS)}")
    if needs_base_url(provider) and not base_url:
        raise UsageError(
            f"provider {provider} needs the server's address",
            "pass it as OM_LLM_BASE_URL, e.g. http://localhost:11434/v1",
        )
    values = {"OM_LLM_PROVIDER": provider}
    if model:
        values["OM_LLM_MODEL"] = model
    if base_url:
        values["OM_LLM_BASE_URL"] = base_url
    if api_key:
        variable = KEY_VARIABLES.get(provider)
        if variable is None:
            raise UsageError(f"provider {provider} takes no API key here")
        values[variable] = api_key
    path = env_file(environ)
    update_env_file(values, path)
    return path

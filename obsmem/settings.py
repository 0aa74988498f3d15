"""All of om's settings, read in one place.

Precedence, highest first: variables set in the process environment, then ``KEY=VALUE`` lines in the
settings file (``paths.env_file()``, normally ``~/.config/observational-memory/env``), then the
defaults below. Every setting is validated when read; a bad value raises ``SettingsError`` whose
message names the setting, the bad value, what is allowed and where to change it.

Each setting is one row of ``SPECS``; ``docs/configuration.md`` lists them for users.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from obsmem import paths
from obsmem.errors import SettingsError
from obsmem.records import dataclass, field

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py (every cold `om search` reads this)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "OTHER_NAMES",
    "PROVIDERS",
    "SPECS",
    "SettingSpec",
    "Settings",
    "load_settings",
    "read_env_file",
    "unknown_settings",
]

PROVIDERS = (
    "auto",
    "none",
    "anthropic",
    "anthropic-vertex",
    "anthropic-bedrock",
    "openai",
    "openai-compatible",
    "ollama",
    "gemini",
    "claude-code",
    "codex",
)
SEARCH_BACKENDS = ("auto", "bm25", "hybrid")
EMBED_PROVIDERS = ("fastembed", "openai-compatible")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value

    return parse


def _float_range(lo: float, hi: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ValueError("must be a number") from None
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo:g} and {hi:g}")
        return value

    return parse


def _int_range(lo: int, hi: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw.strip().replace("_", ""))
        except ValueError:
            raise ValueError("must be a whole number") from None
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return value

    return parse


def _text(raw: str) -> str:
    return raw.strip()


@dataclass(frozen=True)
class SettingSpec:
    """One setting: its variable name, attribute, parser, default and a line of help."""

    env: str
    attr: str
    parse: Callable[[str], Any]
    default: Any
    help: str
    secret: bool = False


SPECS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "OM_LLM_PROVIDER",
        "llm_provider",
        _choice(*PROVIDERS),
        "auto",
        "LLM used to observe and reflect; `auto`: the first key found; `none`: offline rules.",
    ),
    SettingSpec(
        "OM_LLM_MODEL",
        "llm_model",
        _text,
        "",
        "Model for both observer and reflector (provider default when empty).",
    ),
    SettingSpec(
        "OM_LLM_OBSERVER_MODEL", "llm_observer_model", _text, "", "Model for the observer only."
    ),
    SettingSpec(
        "OM_LLM_REFLECTOR_MODEL", "llm_reflector_model", _text, "", "Model for the reflector only."
    ),
    SettingSpec(
        "OM_LLM_BASE_URL", "llm_base_url", _text, "", "Base URL of an OpenAI-compatible server."
    ),
    SettingSpec(
        "ANTHROPIC_API_KEY", "anthropic_api_key", _text, "", "Anthropic API key.", secret=True
    ),
    SettingSpec("OPENAI_API_KEY", "openai_api_key", _text, "", "OpenAI API key.", secret=True),
    SettingSpec(
        "GEMINI_API_KEY", "gemini_api_key", _text, "", "Google Gemini API key.", secret=True
    ),
    SettingSpec(
        "OM_SEARCH_BACKEND",
        "search_backend",
        _choice(*SEARCH_BACKENDS),
        "auto",
        "`bm25`, `hybrid`, or `auto` (hybrid when the semantic extra and a model are available).",
    ),
    SettingSpec(
        "OM_EMBED_MODEL",
        "embed_model",
        _text,
        "",
        "Embedding model for hybrid search (empty: the provider's default).",
    ),
    SettingSpec(
        "OM_EMBED_MODEL_PATH",
        "embed_model_path",
        _text,
        "",
        "Folder holding a local embedding model.",
    ),
    SettingSpec(
        "OM_EMBED_PROVIDER",
        "embed_provider",
        _choice(*EMBED_PROVIDERS),
        "fastembed",
        "Where embeddings come from: `fastembed` (local) or an `openai-compatible` endpoint.",
    ),
    SettingSpec(
        "OM_EMBED_BASE_URL",
        "embed_base_url",
        _text,
        "",
        "Base URL of an OpenAI-compatible embeddings endpoint (empty: api.openai.com).",
    ),
    SettingSpec(
        "OM_EMBED_API_KEY",
        "embed_api_key",
        _text,
        "",
        "Key for the embeddings endpoint (empty: OPENAI_API_KEY).",
        secret=True,
    ),
    SettingSpec(
        "OM_EMBED_BATCH_SIZE",
        "embed_batch_size",
        _int_range(1, 2048),
        64,
        "Texts embedded per model call or endpoint request.",
    ),
    SettingSpec(
        "OM_EMBED_TIMEOUT_SECONDS",
        "embed_timeout_seconds",
        _float_range(1.0, 3600.0),
        30.0,
        "Timeout of one request to the embeddings endpoint.",
    ),
    SettingSpec(
        "OM_RERANK_MODEL",
        "rerank_model",
        _text,
        "",
        "fastembed cross-encoder that reranks the best results (empty: no reranking).",
    ),
    SettingSpec(
        "OM_RERANK_MODEL_PATH",
        "rerank_model_path",
        _text,
        "",
        "Folder holding a local cross-encoder model.",
    ),
    SettingSpec(
        "OM_RERANK_TOP",
        "rerank_top",
        _int_range(2, 200),
        30,
        "How many of the best results the cross-encoder reranks.",
    ),
    SettingSpec(
        "OM_SEARCH_BM25_WEIGHT",
        "search_bm25_weight",
        _float_range(0.0, 100.0),
        1.0,
        "Weight of the BM25 ranking in hybrid search's reciprocal rank fusion.",
    ),
    SettingSpec(
        "OM_SEARCH_VECTOR_WEIGHT",
        "search_vector_weight",
        _float_range(0.0, 100.0),
        0.3,
        "Weight of the embedding ranking in hybrid search's reciprocal rank fusion.",
    ),
    SettingSpec(
        "OM_SEARCH_RRF_K",
        "search_rrf_k",
        _float_range(1.0, 1000.0),
        20.0,
        "The k of reciprocal rank fusion (an entry at rank r earns weight / (k + r)).",
    ),
    SettingSpec(
        "OM_SEARCH_VECTOR_CONTEXT_WEIGHT",
        "search_vector_context_weight",
        _float_range(0.0, 10.0),
        1.0,
        "Hybrid search: an entry's cosine plus this x its neighbours' mean cosine; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_VECTOR_DATE_BOOST",
        "search_vector_date_boost",
        _float_range(0.0, 100.0),
        0.25,
        "Hybrid search: a query naming a date scores its entries cosine x (1 + this); 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_SPEAKER_CENTROID_WEIGHT",
        "search_speaker_centroid_weight",
        _float_range(0.0, 100.0),
        0.15,
        "Hybrid search: weight of the named speaker's centroid ranking in the fusion; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_VOCAB_BRIDGE_WEIGHT",
        "search_vocab_bridge_weight",
        _float_range(0.0, 100.0),
        0.5,
        "Hybrid search: weight of the category word's vocabulary ranking in the fusion; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_VOCAB_MAX_ITEMS",
        "search_vocab_max_items",
        _int_range(0, 1_000_000),
        30_000,
        "Hybrid search: at most this many vocabulary items are embedded (most frequent first).",
    ),
    SettingSpec(
        "OM_SEARCH_WINNER_RATIO",
        "search_winner_ratio",
        _float_range(0.0, 1000.0),
        2.0,
        "BM25's best hit stays first when its score is this many times the second's; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_IMPORTANCE_BOOST",
        "search_importance_boost",
        _float_range(0.0, 10.0),
        0.05,
        "Hybrid search: fused score x (1 + this x importance).",
    ),
    SettingSpec(
        "OM_SEARCH_RECENCY_BOOST",
        "search_recency_boost",
        _float_range(0.0, 10.0),
        0.05,
        "Hybrid search: fused score x (1 + this x 0.5^(age / half-life)).",
    ),
    SettingSpec(
        "OM_SEARCH_RECENCY_HALF_LIFE_DAYS",
        "search_recency_half_life_days",
        _float_range(0.1, 36500.0),
        30.0,
        "Age in days at which the recency boost is halved.",
    ),
    SettingSpec(
        "OM_SEARCH_CONTEXT_WEIGHT",
        "search_context_weight",
        _float_range(0.0, 100.0),
        0.3,
        "BM25 weight of an entry's neighbours' text (the entry's own text weighs 1); 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_DATE_BOOST",
        "search_date_boost",
        _float_range(0.0, 100.0),
        1.0,
        "A query naming a date: BM25 score x (1 + this) for entries of that date; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_SPEAKER_BOOST",
        "search_speaker_boost",
        _float_range(0.0, 100.0),
        1.0,
        "A query naming a speaker: BM25 score x (1 + this) for entries that speaker said; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_NEARBY_WEIGHT",
        "search_nearby_weight",
        _float_range(0.0, 10.0),
        0.3,
        "BM25: an entry's score + this x the best score within 8 lines of it that day; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_ANSWER_FORM_BOOST",
        "search_answer_form_boost",
        _float_range(0.0, 100.0),
        0.5,
        "A question asking when or how many: score x (1 + this) for entries stating a time or a "
        "number; 0: off.",
    ),
    SettingSpec(
        "OM_SEARCH_DAEMON",
        "search_daemon",
        _choice("on", "off"),
        "on",
        "`on`: a cold `om search` asks (and starts) the local search daemon for hybrid results.",
    ),
    SettingSpec(
        "OM_SEARCH_DAEMON_IDLE_MINUTES",
        "search_daemon_idle_minutes",
        _float_range(0.05, 1440.0),
        10.0,
        "The search daemon exits after this many minutes without a query.",
    ),
    SettingSpec(
        "OM_SEARCH_DAEMON_TIMEOUT_SECONDS",
        "search_daemon_timeout_seconds",
        _float_range(0.05, 60.0),
        2.0,
        "How long a cold `om search` waits for the daemon's answer before using BM25.",
    ),
    SettingSpec(
        "OM_LOCK_TIMEOUT_SECONDS",
        "lock_timeout_seconds",
        _float_range(0.1, 3600.0),
        30.0,
        "How long a writer waits for another om process to release the memory lock.",
    ),
    SettingSpec(
        "OM_LLM_TIMEOUT_SECONDS",
        "llm_timeout_seconds",
        _float_range(1.0, 3600.0),
        120.0,
        "Timeout of one LLM request.",
    ),
    SettingSpec(
        "OM_LLM_CLI_TIMEOUT_SECONDS",
        "llm_cli_timeout_seconds",
        _float_range(5.0, 3600.0),
        300.0,
        "claude-code and codex providers: the agent CLI is killed after this many seconds.",
    ),
    SettingSpec(
        "OM_LLM_MAX_RETRIES",
        "llm_max_retries",
        _int_range(0, 20),
        4,
        "Retries of a failed LLM request (429, 5xx, connection errors), with backoff.",
    ),
    SettingSpec(
        "OM_DAILY_TOKEN_BUDGET",
        "daily_token_budget",
        _int_range(0, 10**12),
        0,
        "Most LLM tokens (in + out) spent per day; 0 means no limit. Past it: OM_FALLBACK.",
    ),
    SettingSpec(
        "OM_LLM_PRICE_INPUT",
        "llm_price_input",
        _float_range(0.0, 10_000.0),
        None,
        "US dollars per million input tokens, for the cost of calls whose provider reports "
        "none (unset: cost unknown).",
    ),
    SettingSpec(
        "OM_LLM_PRICE_OUTPUT",
        "llm_price_output",
        _float_range(0.0, 10_000.0),
        None,
        "US dollars per million output tokens, as OM_LLM_PRICE_INPUT.",
    ),
    SettingSpec(
        "OM_LLM_PRICE_CACHED_INPUT",
        "llm_price_cached_input",
        _float_range(0.0, 10_000.0),
        None,
        "US dollars per million cached input tokens (unset: the input price, and the cost of "
        "a call with cached tokens is then an upper bound).",
    ),
    SettingSpec(
        "OM_LLM_REFLECTOR_PRICE_INPUT",
        "llm_reflector_price_input",
        _float_range(0.0, 10_000.0),
        None,
        "OM_LLM_PRICE_INPUT for reflector calls (unset: the shared price when the reflector "
        "uses the observer's model, else cost unknown).",
    ),
    SettingSpec(
        "OM_LLM_REFLECTOR_PRICE_OUTPUT",
        "llm_reflector_price_output",
        _float_range(0.0, 10_000.0),
        None,
        "OM_LLM_PRICE_OUTPUT for reflector calls, as OM_LLM_REFLECTOR_PRICE_INPUT.",
    ),
    SettingSpec(
        "OM_LLM_REFLECTOR_PRICE_CACHED_INPUT",
        "llm_reflector_price_cached_input",
        _float_range(0.0, 10_000.0),
        None,
        "OM_LLM_PRICE_CACHED_INPUT for reflector calls, as OM_LLM_REFLECTOR_PRICE_INPUT.",
    ),
    SettingSpec(
        "OM_FALLBACK",
        "fallback",
        _choice("rules", "defer"),
        "rules",
        "When the LLM fails or the budget is spent: `rules` observes offline, `defer` waits.",
    ),
    SettingSpec(
        "OM_OBSERVER_MAX_INPUT_TOKENS",
        "observer_max_input_tokens",
        _int_range(1000, 2_000_000),
        30000,
        "Largest chunk of new transcript sent to the observer in one request (tokens).",
    ),
    SettingSpec(
        "OM_OBSERVER_OVERLAP_TURNS",
        "observer_overlap_turns",
        _int_range(0, 20),
        3,
        "Turns of the previous chunk the observer sees again, marked as already observed.",
    ),
    SettingSpec(
        "OM_RAW_TURNS",
        "raw_turns",
        _choice("on", "off"),
        "on",
        "Keep the redacted transcript turns capture reads, for `om search --raw`; `off`: none.",
    ),
    SettingSpec(
        "OM_ARCHIVE_AFTER_DAYS",
        "archive_after_days",
        _int_range(0, 36500),
        7,
        "Days after which observations move from observations.md to archive/ (never deleted).",
    ),
    SettingSpec(
        "OM_REFLECTIONS_MAX_LINES",
        "reflections_max_lines",
        _int_range(50, 1_000_000),
        600,
        "Hard cap on reflections.md lines; past it, om's oldest, least important lines move out.",
    ),
    SettingSpec(
        "OM_MCP_TOKEN",
        "mcp_token",
        _text,
        "",
        "Bearer token `om mcp --http` requires (a new one is generated per start when empty).",
        secret=True,
    ),
    SettingSpec(
        "OM_MCP_HTTP_TIMEOUT_SECONDS",
        "mcp_http_timeout_seconds",
        _float_range(0.1, 3600),
        10.0,
        "`om mcp --http`: seconds a client has to send a whole request, and that an idle "
        "connection stays open; a slower or silent one is closed.",
    ),
    SettingSpec(
        "OM_SESSION_OBSERVER_INTERVAL_SECONDS",
        "session_observer_interval_seconds",
        _int_range(0, 86_400),
        900,
        "Least time between two checkpoints of one session by the prompt and compaction hooks.",
    ),
    SettingSpec(
        "OM_PROMPT_RECALL",
        "prompt_recall",
        _choice("on", "off"),
        "on",
        "`on`: the prompt hook adds the few memories most relevant to each prompt; `off`: none.",
    ),
    SettingSpec(
        "OM_PROMPT_RECALL_TOKENS",
        "prompt_recall_tokens",
        _int_range(50, 4000),
        300,
        "Most tokens the prompt hook adds to one prompt (its header included).",
    ),
    SettingSpec(
        "OM_PROMPT_RECALL_MIN_SCORE",
        "prompt_recall_min_score",
        _float_range(0.0, 20.0),
        1.5,
        "Least relevance of a memory the prompt hook adds (BM25 over the log of the memory's "
        "size: about the number of rare words of the prompt it shares).",
    ),
    SettingSpec(
        "OM_IDLE_FLUSH_MINUTES",
        "idle_flush_minutes",
        _float_range(0, 10_080),
        5.0,
        "Minutes a transcript must stay untouched before any run reads it to its end (0: never).",
    ),
    SettingSpec(
        "OM_WATCH_DEBOUNCE_SECONDS",
        "watch_debounce_seconds",
        _float_range(0.1, 600.0),
        5.0,
        "`om observe --watch`: seconds changes are gathered before one observe of them.",
    ),
    SettingSpec(
        "OM_WORKER_MAX_SECONDS",
        "worker_max_seconds",
        _int_range(10, 86_400),
        600,
        "How long the background worker started by hooks may run before it leaves the rest.",
    ),
    SettingSpec(
        "OM_WORKER_MAX_MEMORY_MB",
        "worker_max_memory_mb",
        _int_range(0, 1_048_576),
        4096,
        "Address-space cap of the background worker in MiB (0: no cap).",
    ),
    SettingSpec(
        "OM_SCHEDULE_OBSERVE_MINUTES",
        "schedule_observe_minutes",
        _int_range(1, 60),
        15,
        "Minutes between two scheduled `om observe --source all` runs (read by `om install`).",
    ),
    SettingSpec(
        "OM_PROFILE_TOKENS",
        "profile_tokens",
        _int_range(200, 100_000),
        1500,
        "Most tokens of om's part of profile.md (the best lines; the rest stays in reflections).",
    ),
    SettingSpec(
        "OM_ACTIVE_TOKENS",
        "active_tokens",
        _int_range(200, 100_000),
        1500,
        "Most tokens of om's part of active.md (the best lines; the rest stays searchable).",
    ),
)


@dataclass(frozen=True)
class Settings:
    """Validated settings, and where each came from (``environment``, ``file`` or ``default``)."""

    llm_provider: str = "auto"
    llm_model: str = ""
    llm_observer_model: str = ""
    llm_reflector_model: str = ""
    llm_base_url: str = ""
    anthropic_api_key: str = field(default="", repr=False)
    openai_api_key: str = field(default="", repr=False)
    gemini_api_key: str = field(default="", repr=False)
    search_backend: str = "auto"
    embed_model: str = ""
    embed_model_path: str = ""
    embed_provider: str = "fastembed"
    embed_base_url: str = ""
    embed_api_key: str = field(default="", repr=False)
    embed_batch_size: int = 64
    embed_timeout_seconds: float = 30.0
    rerank_model: str = ""
    rerank_model_path: str = ""
    rerank_top: int = 30
    search_bm25_weight: float = 1.0
    search_vector_weight: float = 0.3
    search_rrf_k: float = 20.0
    search_vector_context_weight: float = 1.0
    search_vector_date_boost: float = 0.25
    search_speaker_centroid_weight: float = 0.15
    search_vocab_bridge_weight: float = 0.5
    search_vocab_max_items: int = 30_000
    search_winner_ratio: float = 2.0
    search_importance_boost: float = 0.05
    search_recency_boost: float = 0.05
    search_recency_half_life_days: float = 30.0
    search_context_weight: float = 0.3
    search_date_boost: float = 1.0
    search_speaker_boost: float = 1.0
    search_nearby_weight: float = 0.3
    search_answer_form_boost: float = 0.5
    search_daemon: str = "on"
    search_daemon_idle_minutes: float = 10.0
    search_daemon_timeout_seconds: float = 2.0
    lock_timeout_seconds: float = 30.0
    llm_timeout_seconds: float = 120.0
    llm_cli_timeout_seconds: float = 300.0
    llm_max_retries: int = 4
    daily_token_budget: int = 0
    llm_price_input: float | None = None
    llm_price_output: float | None = None
    llm_price_cached_input: float | None = None
    llm_reflector_price_input: float | None = None
    llm_reflector_price_output: float | None = None
    llm_reflector_price_cached_input: float | None = None
    fallback: str = "rules"
    observer_max_input_tokens: int = 30000
    observer_overlap_turns: int = 3
    raw_turns: str = "on"
    archive_after_days: int = 7
    reflections_max_lines: int = 600
    mcp_token: str = field(default="", repr=False)
    mcp_http_timeout_seconds: float = 10.0
    session_observer_interval_seconds: int = 900
    prompt_recall: str = "on"
    prompt_recall_tokens: int = 300
    prompt_recall_min_score: float = 1.5
    idle_flush_minutes: float = 5.0
    watch_debounce_seconds: float = 5.0
    worker_max_seconds: int = 600
    worker_max_memory_mb: int = 4096
    schedule_observe_minutes: int = 15
    profile_tokens: int = 1500
    active_tokens: int = 1500
    sources: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    env_file: Path | None = field(default=None, compare=False)

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (``dataclasses.replace``; these settings are not validated)."""
        values = {name: getattr(self, name) for name in _SETTINGS_FIELDS}
        values.update(changes)
        return Settings(**values)

    def effective_provider(self) -> str:
        """The provider ``auto`` resolves to: the first API key found, else ``none``."""
        if self.llm_provider != "auto":
            return self.llm_provider
        for provider, key in (
            ("anthropic", self.anthropic_api_key),
            ("openai", self.openai_api_key),
            ("gemini", self.gemini_api_key),
        ):
            if key:
                return provider
        return "openai-compatible" if self.llm_base_url else "none"

    def describe(self) -> dict[str, Any]:
        """Every setting with its value (secrets shown only as set/unset) and its origin."""
        out: dict[str, Any] = {}
        for spec in SPECS:
            value = getattr(self, spec.attr)
            if spec.secret:
                value = "set" if value else "unset"
            out[spec.env] = {"value": value, "from": self.sources.get(spec.env, "default")}
        return out


#: Every field of ``Settings``, in order (``Settings.replace``).
_SETTINGS_FIELDS = (*(spec.attr for spec in SPECS), "sources", "env_file")


def read_env_file(path: Path) -> dict[str, str]:
    """Parse a ``KEY=VALUE`` settings file (``#`` comments, blanks, ``export`` and quotes allowed).

    A missing file is an empty mapping. A line that is not ``KEY=VALUE`` raises ``SettingsError``
    naming the file and line, because guessing could silently drop a key the user meant to set.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(
            f"cannot read settings file {path}: {exc.strerror}",
            "fix its permissions or set OM_ENV_FILE to another file",
        ) from None
    text = raw.decode("utf-8", errors="replace")
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("export "):
            stripped = stripped[len("export ") :].lstrip()
        key, sep, value = stripped.partition("=")
        key = key.strip()
        if not sep or not key.replace("_", "").isalnum():
            raise SettingsError(
                f"{path}:{number}: expected KEY=VALUE, found {stripped[:40]!r}",
                "fix or delete that line",
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[key] = value
    return values


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate every setting: environment first, then the settings file, then defaults."""
    env = os.environ if environ is None else environ
    file_path = paths.env_file(env)
    file_values = read_env_file(file_path)
    kwargs: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for spec in SPECS:
        if env.get(spec.env, "") != "":
            raw, origin = env[spec.env], "environment"
        elif file_values.get(spec.env, "") != "":
            raw, origin = file_values[spec.env], "file"
        else:
            kwargs[spec.attr] = spec.default
            continue
        try:
            kwargs[spec.attr] = spec.parse(raw)
        except ValueError as exc:
            where = "the environment" if origin == "environment" else str(file_path)
            shown = "***" if spec.secret else repr(raw)
            raise SettingsError(f"{spec.env}={shown} {exc}", f"change it in {where}") from None
        sources[spec.env] = origin
    return Settings(**kwargs, sources=sources, env_file=file_path)


#: ``OM_*`` variables om reads that are not settings: where its files are, how hooks start it,
#: and the traceback switch.
OTHER_NAMES = (
    "OM_HOME",
    "OM_CONFIG_DIR",
    "OM_ENV_FILE",
    "OM_STATE_DIR",
    "OM_INDEX_PATH",
    "OM_TURNS_PATH",
    "OM_LOG_DIR",
    "OM_RUN_DIR",
    "OM_BACKUP_DIR",
    "OM_COMMAND",
    "OM_DEBUG",
    "OM_OBSERVER_SESSION",
)


def unknown_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per ``OM_*`` name set in the environment or the settings file that om does not
    read (a typo like ``OM_LLM_PROVDER`` would otherwise be ignored without a word), with the
    closest known name when there is one. ``om install``, ``om status`` and ``om doctor`` show
    them; a settings file that cannot be read is reported by ``load_settings``, not here."""
    env = os.environ if environ is None else environ
    known = sorted({spec.env for spec in SPECS} | set(OTHER_NAMES))
    found = [(name, "the environment") for name in sorted(env) if name.startswith("OM_")]
    path = paths.env_file(env)
    with contextlib.suppress(SettingsError):
        found += [(name, str(path)) for name in read_env_file(path) if name.startswith("OM_")]
    out: list[str] = []
    for name, where in found:
        if name in known:
            continue
        import difflib

        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        hint = f"did you mean {close[0]}?" if close else "om ignores it (docs/configuration.md)"
        out.append(f"unknown setting {name} in {where}: {hint}")
    return out

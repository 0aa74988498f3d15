"""Where om keeps things. Every path om uses comes from here, each with an environment override.

- memory directory: ``OM_HOME``, else ``$XDG_DATA_HOME/observational-memory``,
  else ``~/.local/share/observational-memory``;
- config directory: ``OM_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/observational-memory``,
  else ``~/.config/observational-memory``;
- settings file: ``OM_ENV_FILE``, else ``<config dir>/env``;
- state directory (cursors, ledger, lock): ``OM_STATE_DIR``, else ``<memory dir>/.om``; the
  prepared startup context ``context.json`` and its output rendered ahead ``context.rendered``
  are there too;
- search index: ``OM_INDEX_PATH``, else ``<state dir>/index.sqlite3``;
- installed integrations: ``<config dir>/integrations.json``; backups of the files ``om install``
  changed: ``OM_BACKUP_DIR``, else ``<config dir>/backups``;
- logs of the worker and scheduled jobs: ``OM_LOG_DIR``, else ``<memory dir>/logs``;
- hook work queue: ``<state dir>/queue``;
- what per-prompt recall already gave each agent session: ``<state dir>/recalled``;
- the observer run through an agent's CLI: its lock ``<state dir>/observer.lock`` and its working
  directory ``<state dir>/observer`` (sessions started there are om's own, never captured);
- capture state (cursors, leases): ``<state dir>/state.sqlite3``;
- transcript turns kept for ``om search --raw``: ``OM_TURNS_PATH``, else
  ``<state dir>/turns.sqlite3``;
- the search daemon's socket and lock (``search_socket``): in a user-only directory,
  ``OM_RUN_DIR``, else ``$XDG_RUNTIME_DIR/observational-memory``, else ``/tmp/om-<uid>``; one
  daemon per index, so the names carry a checksum of the index path;
- agent homes: ``CLAUDE_CONFIG_DIR`` (``~/.claude``), ``CODEX_HOME`` (``~/.codex``),
  ``HERMES_HOME`` (``~/.hermes``), ``OPENCLAW_HOME`` (``~/.openclaw``).

The memory directory defaults to the original ``observational-memory`` tool's place, so its users
keep their memory. Functions read the environment on every call (tests and the demo change it).
``pathlib`` is imported on first use only: ``om context``, run at every session start, reads its
one file through ``context_file`` and never pays for it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = [
    "ACTIVE_FILE",
    "ARCHIVE_DIR",
    "OBSERVATIONS_FILE",
    "OBSERVER_SESSION_ENV",
    "PROFILE_FILE",
    "REFLECTIONS_FILE",
    "REFLECTOR_STATE_FILE",
    "VAULT_DIR",
    "agent_home",
    "backups_dir",
    "checksum_name",
    "config_dir",
    "context_file",
    "context_path",
    "env_file",
    "forget_key_path",
    "index_path",
    "integrations_path",
    "ledger_path",
    "lock_path",
    "logs_dir",
    "memory_dir",
    "observer_dir",
    "observer_lock_path",
    "observer_session",
    "queue_dir",
    "recalled_dir",
    "rendered_context_file",
    "run_dir",
    "search_socket",
    "state_db_path",
    "state_dir",
    "turns_path",
    "usage_path",
]

OBSERVATIONS_FILE = "observations.md"
REFLECTIONS_FILE = "reflections.md"
PROFILE_FILE = "profile.md"
ACTIVE_FILE = "active.md"
ARCHIVE_DIR = "archive"
VAULT_DIR = "vault"
#: In the state directory: what the reflector remembers between runs (obsmem.reflect.clock).
REFLECTOR_STATE_FILE = "reflector.json"

APP_DIR_NAME = "observational-memory"


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _path(value: str) -> Path:
    from pathlib import Path

    return Path(value)


def _expanded(value: str) -> str:
    return os.path.expanduser(os.path.expandvars(value))


def _expand(value: str) -> Path:
    return _path(_expanded(value))


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


def _memory_dir(env: Mapping[str, str]) -> str:
    if env.get("OM_HOME"):
        return _expanded(env["OM_HOME"])
    base = env.get("XDG_DATA_HOME") or _home(".local", "share")
    return os.path.join(_expanded(base), APP_DIR_NAME)


def memory_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The memory directory: ``OM_HOME``, else the XDG data home's ``observational-memory``."""
    return _path(_memory_dir(_env(environ)))


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The config directory: ``OM_CONFIG_DIR``, else XDG config home's ``observational-memory``."""
    env = _env(environ)
    if env.get("OM_CONFIG_DIR"):
        return _expand(env["OM_CONFIG_DIR"])
    base = env.get("XDG_CONFIG_HOME") or _home(".config")
    return _expand(base) / APP_DIR_NAME


def env_file(environ: Mapping[str, str] | None = None) -> Path:
    """The settings file (``KEY=VALUE`` lines): ``OM_ENV_FILE``, else ``<config dir>/env``."""
    env = _env(environ)
    if env.get("OM_ENV_FILE"):
        return _expand(env["OM_ENV_FILE"])
    return config_dir(env) / "env"


def _state_dir(env: Mapping[str, str]) -> str:
    if env.get("OM_STATE_DIR"):
        return _expanded(env["OM_STATE_DIR"])
    return os.path.join(_memory_dir(env), ".om")


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Machine state that is not memory (cursors, provenance ledger, usage, index)."""
    return _path(_state_dir(_env(environ)))


def index_path(environ: Mapping[str, str] | None = None) -> Path:
    """The SQLite search index, derived from the markdown and rebuildable at any time."""
    env = _env(environ)
    if env.get("OM_INDEX_PATH"):
        return _expand(env["OM_INDEX_PATH"])
    return state_dir(env) / "index.sqlite3"


def ledger_path(environ: Mapping[str, str] | None = None) -> Path:
    """The append-only provenance ledger (one JSON object per observation id)."""
    return state_dir(environ) / "provenance.jsonl"


def forget_key_path(environ: Mapping[str, str] | None = None) -> Path:
    """The memory's own random key for the hashes of forgotten transcript turns (the ledger
    keeps only keyed hashes, so a short forgotten text cannot be guessed from it alone)."""
    return state_dir(environ) / "forget.key"


def lock_path(environ: Mapping[str, str] | None = None) -> Path:
    """The inter-process lock that serialises writes to the memory directory."""
    return state_dir(environ) / "memory.lock"


def context_file(environ: Mapping[str, str] | None = None) -> str:
    """``context_path`` as a string, found without importing ``pathlib`` (the hot path's)."""
    return os.path.join(_state_dir(_env(environ)), "context.json")


def context_path(environ: Mapping[str, str] | None = None) -> Path:
    """The prepared startup context (``om context`` reads only this file, or the next)."""
    return _path(context_file(environ))


def rendered_context_file(environ: Mapping[str, str] | None = None) -> str:
    """``om context``'s output rendered ahead from ``context.json`` (``<state dir>``, beside it,
    so it moves with ``OM_STATE_DIR``), as a string like ``context_file``."""
    return os.path.join(_state_dir(_env(environ)), "context.rendered")


def usage_path(environ: Mapping[str, str] | None = None) -> Path:
    """The append-only log of LLM token usage (one JSON object per call)."""
    return state_dir(environ) / "usage.jsonl"


def state_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """The capture state: transcript cursors and the leases that keep observers apart."""
    return state_dir(environ) / "state.sqlite3"


def turns_path(environ: Mapping[str, str] | None = None) -> Path:
    """The transcript turns capture kept (redacted), searched by ``om search --raw``.

    Not derived from the markdown, so not rebuilt with the index: deleting it forgets them.
    """
    env = _env(environ)
    if env.get("OM_TURNS_PATH"):
        return _expand(env["OM_TURNS_PATH"])
    return state_dir(env) / "turns.sqlite3"


def integrations_path(environ: Mapping[str, str] | None = None) -> Path:
    """What ``om install`` added to each agent's files, so ``om uninstall`` removes exactly that."""
    return config_dir(environ) / "integrations.json"


def backups_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where ``om install`` and ``om uninstall`` copy each file before changing it."""
    env = _env(environ)
    if env.get("OM_BACKUP_DIR"):
        return _expand(env["OM_BACKUP_DIR"])
    return config_dir(env) / "backups"


def logs_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Logs of the background worker and the scheduled jobs (rotated)."""
    env = _env(environ)
    if env.get("OM_LOG_DIR"):
        return _expand(env["OM_LOG_DIR"])
    return memory_dir(env) / "logs"


def queue_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Work handed over by hooks to the background worker (one small JSON file per job)."""
    return state_dir(environ) / "queue"


def recalled_dir(environ: Mapping[str, str] | None = None) -> Path:
    """What per-prompt recall gave each agent session (one small JSON file per session, pruned
    by age), so that no prompt of a session is given a memory twice."""
    return state_dir(environ) / "recalled"


def run_dir(environ: Mapping[str, str] | None = None) -> str:
    """The directory of om's sockets (created 0700 by whoever needs it first).

    ``OM_RUN_DIR``, else ``$XDG_RUNTIME_DIR/observational-memory`` (a per-user directory the
    system empties at logout), else ``/tmp/om-<uid>`` (or under ``$TMPDIR``). Not under the
    memory directory: a Unix socket's path must be short (about 100 bytes) and the memory
    directory may be anywhere. A string, not a ``Path``: the cold ``om search`` asks for it.
    """
    env = _env(environ)
    if env.get("OM_RUN_DIR"):
        return _expanded(env["OM_RUN_DIR"])
    if env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], APP_DIR_NAME)
    return os.path.join(env.get("TMPDIR") or "/tmp", f"om-{os.getuid()}")


def checksum_name(data: bytes) -> str:
    """A short file name for ``data`` (a transcript's path, a session's id): its CRC-32 and
    Adler-32, 16 hex digits. Checksums, not ``hashlib``, whose import alone would cost every
    prompt hook more than what it names; a collision only makes two keys share a file."""
    import zlib

    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def search_socket(index: str, environ: Mapping[str, str] | None = None) -> str:
    """The search daemon's socket for the index at ``index``; its lock is the same path with
    ``.lock`` for ``.sock``. The name holds a CRC-32 of the index's absolute path, so two
    memories (two ``OM_HOME``) get two daemons; a collision only costs a refused handshake."""
    import zlib

    key = zlib.crc32(os.path.abspath(index).encode("utf-8", "surrogateescape"))
    return os.path.join(run_dir(environ), f"search-{key:08x}.sock")


#: Set (to 1) in the environment of the agent CLI om runs as its observer: om's hooks started by
#: that session do nothing, so the observer's own session is never queued or given context.
OBSERVER_SESSION_ENV = "OM_OBSERVER_SESSION"


def observer_lock_path(environ: Mapping[str, str] | None = None) -> Path:
    """The lock that lets one observer CLI process run at a time, whatever the om processes."""
    return state_dir(environ) / "observer.lock"


def observer_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The working directory of the observer CLI: a session started there is om's own."""
    return state_dir(environ) / "observer"


def observer_session(cwd: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """True when a session's working directory is the observer's (or under it)."""
    if not cwd:
        return False
    folder = os.path.abspath(str(observer_dir(environ)))
    where = os.path.abspath(os.path.expanduser(cwd))
    return where == folder or where.startswith(folder + os.sep)


#: Each agent's home: the environment variable that overrides it and its default under ``~``.
AGENT_HOMES: dict[str, tuple[str, str]] = {
    "claude": ("CLAUDE_CONFIG_DIR", ".claude"),
    "codex": ("CODEX_HOME", ".codex"),
    "hermes": ("HERMES_HOME", ".hermes"),
    "openclaw": ("OPENCLAW_HOME", ".openclaw"),
}


def agent_home(agent: str, environ: Mapping[str, str] | None = None) -> Path:
    """An agent's home directory (``~/.claude``, ``~/.codex``, ...), honouring its override."""
    env = _env(environ)
    variable, default = AGENT_HOMES[agent]
    if env.get(variable):
        return _expand(env[variable])
    return _path(_home(default))

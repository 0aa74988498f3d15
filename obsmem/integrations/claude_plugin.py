"""om's Claude Code plugin as Claude Code records it, and how om is wired into Claude Code.

The plugin (``plugins/claude-code`` in om's repository, listed by its ``marketplace.json``) brings
the same hooks ``om install --claude`` writes into ``settings.json`` and the same MCP server it
adds to ``.claude.json``. Both at once would run om twice on every event, so ``om install``
reads what Claude Code keeps about plugins before it plans:

- ``$CLAUDE_CONFIG_DIR/settings.json``, ``enabledPlugins``: ``{"om@<marketplace>": true}`` once
  the user installed and enabled it (``false`` when turned off);
- ``$CLAUDE_CONFIG_DIR/plugins/installed_plugins.json``: ``{"plugins": {"om@<marketplace>":
  [{"scope": "user", "installPath": ...}]}}`` (older files hold one object instead of a list).

Only the user scope counts: ``om install`` wires om in for every project, and a plugin enabled in
one project's ``.claude/settings.json`` does not serve the others. The plugin counts as enabled
only when ``enabledPlugins`` says ``true``: an installed plugin missing there has been seen not
to load its hooks, and two copies of a hook are better than none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from obsmem.doctor import Check
from obsmem.integrations.jsonhooks import is_om_command, is_om_server, missing_program
from obsmem.paths import agent_home

__all__ = [
    "PLUGIN",
    "PluginState",
    "installed_plugins_path",
    "mcp_config_path",
    "plugin_state",
    "settings_path",
    "wiring_check",
]

#: The plugin's name in its manifest; Claude Code knows it as ``om@<marketplace>``.
PLUGIN = "om"
_EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreCompact")


@dataclass(frozen=True)
class PluginState:
    """om's plugin as found in Claude Code's files."""

    #: ``om@<marketplace>``.
    key: str
    #: True when the user-scope ``enabledPlugins`` turns it on.
    enabled: bool
    #: Listed in ``installed_plugins.json`` (a plugin can be enabled before its files arrive).
    installed: bool


def settings_path(environ: Mapping[str, str]) -> Path:
    """Claude Code's user settings: ``$CLAUDE_CONFIG_DIR/settings.json``."""
    return agent_home("claude", environ) / "settings.json"


def mcp_config_path(environ: Mapping[str, str]) -> Path:
    """Where Claude Code keeps user-scope MCP servers: ``.claude.json``.

    It lives in the home directory, except when ``CLAUDE_CONFIG_DIR`` is set: Claude Code then
    keeps it in that directory.
    """
    if environ.get("CLAUDE_CONFIG_DIR"):
        return agent_home("claude", environ) / ".claude.json"
    return Path(environ.get("HOME") or Path.home()) / ".claude.json"


def installed_plugins_path(environ: Mapping[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR/plugins/installed_plugins.json``."""
    return agent_home("claude", environ) / "plugins" / "installed_plugins.json"


def _read_json(path: Path) -> dict[str, Any]:
    """The object in ``path``; empty when it is missing or unreadable (doctor reports those)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _ours(key: object) -> bool:
    return isinstance(key, str) and key.partition("@")[0] == PLUGIN


def _user_scope(value: object) -> bool:
    entries = value if isinstance(value, list) else [value]
    return any(
        isinstance(entry, dict) and entry.get("scope", "user") == "user" for entry in entries
    )


def plugin_state(environ: Mapping[str, str]) -> PluginState | None:
    """om's plugin when Claude Code knows it at user scope; None when it does not."""
    enabled = _read_json(settings_path(environ)).get("enabledPlugins")
    enabled = enabled if isinstance(enabled, dict) else {}
    plugins = _read_json(installed_plugins_path(environ)).get("plugins")
    plugins = plugins if isinstance(plugins, dict) else {}
    installed = {key for key, value in plugins.items() if _ours(key) and _user_scope(value)}
    keys = sorted({key for key in enabled if _ours(key)} | installed)
    if not keys:
        return None
    on = [key for key in keys if enabled.get(key) is True]
    key = on[0] if on else keys[0]
    return PluginState(key=key, enabled=bool(on), installed=key in installed)


def _settings_wiring(environ: Mapping[str, str]) -> tuple[list[str], bool]:
    """The events with an om hook in settings.json, and whether .claude.json has om's server."""
    hooks = _read_json(settings_path(environ)).get("hooks")
    events = []
    for event in _EVENTS:
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if any(isinstance(h, dict) and is_om_command(h.get("command")) for h in inner or []):
                events.append(event)
                break
    servers = _read_json(mcp_config_path(environ)).get("mcpServers")
    server = is_om_server(servers.get("om")) if isinstance(servers, dict) else False
    return events, server


def wiring_check(environ: Mapping[str, str]) -> Check:
    """``om doctor``: how om is wired into Claude Code (plugin, settings hooks, both, neither)."""
    name = "claude: wiring"
    plugin = plugin_state(environ)
    events, server = _settings_wiring(environ)
    settings = [*events, *(["the MCP server in .claude.json"] if server else [])]
    if plugin is not None and plugin.enabled:
        if settings:
            return Check(
                name,
                "warn",
                f"wired in twice: the plugin {plugin.key} and om's own entries "
                f"({', '.join(settings)}), so every event runs om twice",
                "run: om install --claude (it removes its own entries while the plugin is "
                f"enabled), or disable the plugin: claude plugin disable {plugin.key}",
            )
        if gone := missing_program("om", environ):
            return Check(
                name,
                "fail",
                f"the plugin {plugin.key} runs `{gone}` from PATH, and it is not on PATH",
                "install om where Claude Code finds it (pipx install obsmem), or use "
                "om install --claude instead of the plugin",
            )
        return Check(name, "ok", f"the plugin {plugin.key} (its hooks and MCP server)")
    off = f" (the plugin {plugin.key} is installed but not enabled)" if plugin else ""
    if settings:
        return Check(name, "ok", f"om's own entries: {', '.join(settings)}{off}")
    return Check(
        name,
        "warn",
        f"om is not wired into Claude Code{off}",
        "run: om install --claude, or install the plugin (docs/integrations/claude-code.md)",
    )

"""Claude Code: four hooks in ``settings.json`` and the MCP server in ``.claude.json``.

- ``$CLAUDE_CONFIG_DIR/settings.json`` (``~/.claude/settings.json``): SessionStart prints the
  startup context, SessionEnd queues the session's transcript for the background worker,
  UserPromptSubmit adds the memories relevant to the prompt and queues a throttled checkpoint
  (``om hook prompt``), and PreCompact queues a checkpoint. Each is one matcher group in the
  event's list, beside other tools' groups; an older install's UserPromptSubmit command
  (``om hook checkpoint``) is replaced in place.
- ``.claude.json``: the ``om`` entry of the top-level ``mcpServers`` (user scope, every project).
  Claude Code keeps that file in the home directory, or in ``$CLAUDE_CONFIG_DIR`` when it is set.
  The file is large and Claude Code rewrites it itself, so om touches only ``mcpServers.om``.

Both files are edited as text (:mod:`obsmem.integrations.jsonedit`): key order, indentation and
other tools' entries keep their bytes, and uninstall gives back the original file when nothing
else changed in it meanwhile.

When om's Claude Code plugin is enabled it brings the same hooks and server, and install writes
neither (:mod:`obsmem.integrations.claude_plugin`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations import jsonedit
from obsmem.integrations.base import InstallContext, Plan, with_paths
from obsmem.integrations.claude_plugin import (
    mcp_config_path,
    plugin_state,
    settings_path,
    wiring_check,
)
from obsmem.integrations.edits import Edit, FileTarget
from obsmem.integrations.jsonhooks import (
    HookSpec,
    check_hooks,
    check_json_text,
    close_object,
    is_om_server,
    merge_hooks,
    merged,
    missing_program,
    open_object,
    recorded,
    remove_hooks,
    same_file_record,
)
from obsmem.paths import agent_home

__all__ = [
    "EVENTS",
    "checks",
    "detect",
    "mcp_config_path",
    "plan_install",
    "plan_uninstall",
    "settings_path",
]

NAME = "claude"
EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreCompact")
SERVER = "om"
_FIX = "run om install --claude"


def detect(ctx: InstallContext) -> bool:
    """Claude Code is here when its config directory or its ``.claude.json`` exists."""
    return agent_home(NAME, ctx.environ).is_dir() or mcp_config_path(ctx.environ).is_file()


def _specs(ctx: InstallContext) -> list[HookSpec]:
    checkpoint = ctx.hook_command("hook", "checkpoint", "--agent", NAME)
    return [
        HookSpec("SessionStart", ctx.hook_command("context", "--for", NAME), 15),
        HookSpec("SessionEnd", ctx.hook_command("hook", "session-end", "--agent", NAME), 15),
        HookSpec("UserPromptSubmit", ctx.hook_command("hook", "prompt", "--agent", NAME), 10),
        HookSpec("PreCompact", checkpoint, 10),
    ]


def _server(ctx: InstallContext) -> dict[str, Any]:
    return {
        "type": "stdio",
        "command": ctx.om[0],
        "args": [*ctx.om[1:], "mcp"],
        "env": ctx.carried,
    }


def _merge_server(
    text: str | None, server: dict[str, Any], label: str
) -> tuple[str, dict[str, Any]]:
    """``text`` with ``mcpServers.om`` set; the record: what was created, what om replaced."""
    text, created = open_object(text)
    data = check_json_text(text, label)
    found: dict[str, Any] = {"created": created}
    servers = data.get("mcpServers")
    if "mcpServers" not in data:
        found["created"].append("mcpServers")
        return jsonedit.set_member(
            text, jsonedit.root_span(text), "mcpServers", {SERVER: server}
        ), found
    if not isinstance(servers, dict):
        raise IntegrationError(
            f'"mcpServers" in {label} is not an object', "fix the file; om changed nothing"
        )
    span = jsonedit.locate(text, ["mcpServers"])
    assert span is not None
    current = servers.get(SERVER)
    if not is_om_server(current):
        if SERVER in servers:
            found["previous"] = current
        return jsonedit.set_member(text, span, SERVER, server), found
    # Ours already: refresh what starts it and where its memory is; keep anything else the
    # user added (their own env variables, timeouts).
    env = current.get("env")
    wanted = {**server, "env": with_paths(env if isinstance(env, Mapping) else {}, server["env"])}
    for key in ("command", "args", "env"):
        if current.get(key) != wanted[key] and (key != "env" or env is not None or wanted[key]):
            where = jsonedit.locate(text, ["mcpServers", SERVER])
            assert where is not None
            text = jsonedit.set_member(text, where, key, wanted[key])
    return text, found


def _drop_server(text: str | None, label: str, section: Mapping[str, Any]) -> str | None:
    if text is None:
        return None
    data = check_json_text(text, label)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        return text
    created = list(section.get("created") or ())
    span = jsonedit.locate(text, ["mcpServers"])
    assert span is not None
    if is_om_server(servers.get(SERVER)):
        if "previous" in section:
            text = jsonedit.set_member(text, span, SERVER, section["previous"])
        else:
            text = jsonedit.remove_member(text, span, SERVER)
        span = jsonedit.locate(text, ["mcpServers"])
        assert span is not None
    if "mcpServers" in created and not jsonedit.members(text, span):
        text = jsonedit.remove_member(text, jsonedit.root_span(text), "mcpServers")
    return close_object(text, created)


def plan_install(ctx: InstallContext) -> Plan:
    """Hooks into settings.json and the MCP server into .claude.json; idempotent.

    While om's plugin is enabled it brings both, so the plan adds neither and takes out the
    copies an earlier install left (see :mod:`obsmem.integrations.claude_plugin`).
    """
    plugin = plugin_state(ctx.environ)
    if plugin is not None and plugin.enabled:
        return _plan_beside_plugin(ctx, plugin.key)
    settings = settings_path(ctx.environ)
    target = FileTarget(settings)
    before = target.read()
    after, created = merge_hooks(before, _specs(ctx), str(settings))
    old = same_file_record(ctx.record, "settings", settings)
    settings_record = {"path": str(settings), "created": merged(old.get("created"), created)}

    mcp = mcp_config_path(ctx.environ)
    mcp_target = FileTarget(mcp)
    mcp_before = mcp_target.read()
    mcp_after, found = _merge_server(mcp_before, _server(ctx), str(mcp))
    old_mcp = same_file_record(ctx.record, "mcp", mcp)
    mcp_record: dict[str, Any] = {
        "path": str(mcp),
        "created": merged(old_mcp.get("created"), found["created"]),
    }
    if "previous" in old_mcp:
        mcp_record["previous"] = old_mcp["previous"]
    elif "previous" in found:
        mcp_record["previous"] = found["previous"]

    edits = [
        Edit(target, before, after, "Claude Code hooks: startup context, capture at end"),
        Edit(mcp_target, mcp_before, mcp_after, "Claude Code user-scope MCP server om"),
    ]
    plan = Plan(NAME, edits, {"settings": settings_record, "mcp": mcp_record})
    if before and check_json_text(before, str(settings)).get("disableAllHooks") is True:
        # Not om's to change: the user turned every hook off on purpose.
        plan.warnings.append(
            f"disableAllHooks is true in {settings}: Claude Code runs no hook, om's included, "
            "until you set it to false (om left it as it is)"
        )
    if "previous" in found:
        plan.notes.append(f"replaced another MCP server named om in {mcp}; uninstall restores it")
    if plan.changed:
        plan.notes.append("Claude Code reads hooks and MCP servers at start: restart open sessions")
    return plan


def _plan_beside_plugin(ctx: InstallContext, key: str) -> Plan:
    """The plan while the plugin serves: om's own hooks and MCP entry out, the record kept."""
    settings = settings_path(ctx.environ)
    target = FileTarget(settings)
    before = target.read()
    old = same_file_record(ctx.record, "settings", settings)
    after = remove_hooks(before, EVENTS, str(settings), old.get("created"))
    mcp = mcp_config_path(ctx.environ)
    mcp_target = FileTarget(mcp)
    mcp_before = mcp_target.read()
    old_mcp = same_file_record(ctx.record, "mcp", mcp)
    mcp_after = _drop_server(mcp_before, str(mcp), old_mcp)
    edits = [
        Edit(target, before, after, "remove om's Claude Code hooks (the plugin has them)"),
        Edit(mcp_target, mcp_before, mcp_after, "remove om's MCP server (the plugin has it)"),
    ]
    record: dict[str, Any] = {"plugin": key}
    if old:
        record["settings"] = old
    if old_mcp:
        record["mcp"] = old_mcp
    plan = Plan(NAME, edits, record)
    note = f"the om plugin ({key}) is enabled in Claude Code: it brings the hooks and the MCP "
    note += f"server, so om install adds neither to {settings} or {mcp}"
    if plan.changed:
        note += " and removes the copies it added before"
    plan.notes.append(note)
    return plan


def plan_uninstall(ctx: InstallContext) -> Plan:
    """Remove om's hooks and MCP entry, and whatever containers install created for them."""
    settings, section = recorded(ctx.record, "settings", settings_path(ctx.environ))
    target = FileTarget(settings)
    before = target.read()
    created = section.get("created") if section else None
    after = remove_hooks(before, EVENTS, str(settings), created)

    mcp, mcp_section = recorded(ctx.record, "mcp", mcp_config_path(ctx.environ))
    mcp_target = FileTarget(mcp)
    mcp_before = mcp_target.read()
    mcp_after = _drop_server(mcp_before, str(mcp), mcp_section)
    edits = [
        Edit(target, before, after, "remove om's Claude Code hooks"),
        Edit(mcp_target, mcp_before, mcp_after, "remove om's Claude Code MCP server"),
    ]
    return Plan(NAME, edits, None)


def checks(ctx: InstallContext) -> list[Check]:
    """How om is wired in; then, unless the plugin serves, its hooks present and starting an om
    that exists and the MCP server registered."""
    wiring = wiring_check(ctx.environ)
    plugin = plugin_state(ctx.environ)
    if plugin is not None and plugin.enabled:
        return [wiring]
    settings, _ = recorded(ctx.record, "settings", settings_path(ctx.environ))
    found = [wiring, *check_hooks(NAME, settings, _specs(ctx), ctx.environ, _FIX)]
    found.append(_server_check(ctx))
    return found


def _server_check(ctx: InstallContext) -> Check:
    mcp, _ = recorded(ctx.record, "mcp", mcp_config_path(ctx.environ))
    try:
        text = FileTarget(mcp).read()
        data = check_json_text(text, str(mcp)) if text is not None else {}
    except IntegrationError as exc:
        return Check("claude: mcp", "fail", exc.message, exc.hint or _FIX)
    servers = data.get("mcpServers")
    server = servers.get(SERVER) if isinstance(servers, dict) else None
    if not is_om_server(server):
        return Check("claude: mcp", "fail", f"no om MCP server in {mcp}", _FIX)
    if gone := missing_program([str(server["command"])], ctx.environ):
        detail = f"the MCP server starts {gone}, which does not exist"
        return Check("claude: mcp", "fail", detail, _FIX)
    return Check("claude: mcp", "ok", f"mcpServers.om in {mcp}")

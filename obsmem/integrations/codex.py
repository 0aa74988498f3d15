"""Codex CLI: the hooks feature and the MCP server in ``config.toml``, two hooks in ``hooks.json``,
and a fallback block in ``AGENTS.md``. Everything lives in ``$CODEX_HOME`` (``~/.codex``).

- ``config.toml``: ``[features]`` ``hooks = true`` and its older name ``codex_hooks = true``,
  and ``[mcp_servers.om]`` (``command``, ``args``). Edited with tomlkit, so comments, spacing
  and key order stay; each flag's earlier value (or its absence) is recorded so that uninstall
  puts back exactly what was there. Tables om had to create are appended at the end after one
  newline, and uninstall cuts them off again, which gives back the original bytes.
- ``hooks.json``: SessionStart (matcher ``startup|resume``) prints the startup context;
  UserPromptSubmit adds the memories relevant to the prompt (``om hook prompt``, a throttled
  checkpoint too); Stop queues a throttled checkpoint of the session. Merged like Claude Code's
  settings (:mod:`obsmem.integrations.jsonhooks`).
- ``AGENTS.md``, which Codex reads at the start of every session: a block between markers saying
  where the memory is and how to search it, for sessions where hooks are off or not yet trusted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table
from tomlkit.toml_document import TOMLDocument

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations.base import InstallContext, Plan, with_paths
from obsmem.integrations.edits import Edit, FileTarget, drop_block, has_block, set_block
from obsmem.integrations.jsonhooks import (
    HookSpec,
    check_hooks,
    is_om_server,
    merge_hooks,
    merged,
    missing_program,
    recorded,
    remove_hooks,
    same_file_record,
)
from obsmem.paths import agent_home, memory_dir

__all__ = [
    "BEGIN",
    "END",
    "FLAGS",
    "agents_path",
    "checks",
    "config_path",
    "detect",
    "hooks_path",
    "plan_install",
    "plan_uninstall",
]

NAME = "codex"
#: The hooks feature flag under its current name and the name older releases read.
FLAGS = ("hooks", "codex_hooks")
SERVER = "om"
BEGIN = "<!-- om:begin (managed by om install; om uninstall removes it) -->"
END = "<!-- om:end -->"
_FIX = "run om install --codex"
_HEADERS = {"features": "[features]", "mcp_servers.om": "[mcp_servers.om]"}


def config_path(environ: Mapping[str, str]) -> Path:
    """Codex's ``config.toml``."""
    return agent_home(NAME, environ) / "config.toml"


def hooks_path(environ: Mapping[str, str]) -> Path:
    """Codex's user-level ``hooks.json``."""
    return agent_home(NAME, environ) / "hooks.json"


def agents_path(environ: Mapping[str, str]) -> Path:
    """The ``AGENTS.md`` every Codex session reads at start."""
    return agent_home(NAME, environ) / "AGENTS.md"


def detect(ctx: InstallContext) -> bool:
    """Codex is here when its home (``CODEX_HOME`` or ``~/.codex``) exists."""
    return agent_home(NAME, ctx.environ).is_dir()


def _specs(ctx: InstallContext) -> list[HookSpec]:
    return [
        HookSpec("SessionStart", ctx.hook_command("context", "--for", NAME), 15, "startup|resume"),
        HookSpec("UserPromptSubmit", ctx.hook_command("hook", "prompt", "--agent", NAME), 10, None),
        HookSpec("Stop", ctx.hook_command("hook", "checkpoint", "--agent", NAME), 10, None),
    ]


def _server(ctx: InstallContext) -> dict[str, Any]:
    server: dict[str, Any] = {"command": ctx.om[0], "args": [*ctx.om[1:], "mcp"]}
    if ctx.carried:
        server["env"] = ctx.carried
    return server


def _block(ctx: InstallContext) -> str:
    om = ctx.hook_command()
    return f"""## Memory (om)

Your long-term memory, shared with the user's other coding agents, is kept by om as plain
markdown in `{memory_dir(ctx.environ)}`: `profile.md` and `active.md` (who the user is and
what is in progress), `reflections.md` (long-term memory by topic), `observations.md` and
`archive/` (dated observations). Read them like any file; do not edit them.

When this session did not start with om's context (hooks off or not trusted yet), or when you
need something from earlier work:

- `{om} context --for codex` prints the startup context;
- `{om} search "what you are looking for"` searches the memory, with citations;
- the `om` MCP server's `search` tool does the same from inside the session."""


def _parse(text: str, label: str) -> TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise IntegrationError(
            f"{label} is not valid TOML ({exc})",
            "fix or move the file and run om install again; om changed nothing",
        ) from None


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _recordable(value: Any) -> Any:
    """``value`` as plain JSON for integrations.json (TOML dates become their text)."""
    return json.loads(json.dumps(_plain(value), default=str))


def _table(doc: TOMLDocument, key: str, label: str) -> Any:
    value = doc.get(key)
    if value is not None and not isinstance(value, Table | InlineTable | Mapping):
        raise IntegrationError(
            f"{key} in {label} is not a table", "fix the file; om changed nothing"
        )
    return value


def _appendix(tables: Mapping[str, Any]) -> str:
    """The text of the tables om adds at the end of the file."""
    extra = tomlkit.document()
    if "features" in tables:
        extra["features"] = tables["features"]
    if "mcp_servers.om" in tables:
        servers = tomlkit.table(is_super_table=True)
        servers[SERVER] = tables["mcp_servers.om"]
        extra["mcp_servers"] = servers
    return tomlkit.dumps(extra)


def _merge_config(
    text: str | None, ctx: InstallContext, old: Mapping[str, Any], label: str
) -> tuple[str, dict[str, Any], list[str]]:
    """``config.toml`` with the hooks flags and the om MCP server; what to remember; and the
    user's settings om overrides (an explicit ``hooks = false``), as ``key = value`` text."""
    doc = _parse(text or "", label)
    flags: dict[str, Any] = dict(old.get("flags") or {})
    appended = [str(item) for item in old.get("appended") or []]
    record: dict[str, Any] = {"created_file": bool(old.get("created_file")) or text is None}
    new_tables: dict[str, Any] = {}
    overridden: list[str] = []

    features = _table(doc, "features", label)
    if features is None:
        new_tables["features"] = {flag: True for flag in FLAGS}
        for flag in FLAGS:
            flags.setdefault(flag, {"existed": False})
    else:
        for flag in FLAGS:
            features = _table(doc, "features", label)  # fresh: see _drop_config
            if flag not in flags:
                flags[flag] = {"existed": flag in features}
                if flag in features:
                    flags[flag]["value"] = _recordable(features[flag])
            if features.get(flag) is not True:
                if flag in features:
                    overridden.append(f"{flag} = {json.dumps(_recordable(features[flag]))}")
                features[flag] = True

    server = _server(ctx)
    servers = _table(doc, "mcp_servers", label)
    if "previous" in old:
        record["previous"] = old["previous"]
    if servers is None or (SERVER not in servers and isinstance(servers, Table)):
        new_tables["mcp_servers.om"] = server
    elif SERVER not in servers:
        servers[SERVER] = server
    elif is_om_server(_plain(servers[SERVER])):
        current = _plain(servers[SERVER])
        env = current.get("env")
        carried = server.pop("env", {})
        if env is not None or carried:
            # The user's own variables stay; om's path variables follow this install.
            server["env"] = with_paths(env if isinstance(env, Mapping) else {}, carried)
        for key, value in server.items():
            if _plain(servers[SERVER].get(key)) != value:
                servers[SERVER][key] = value
    else:
        # Kept as TOML text, so that dates and the like come back as they were.
        holder = tomlkit.document()
        holder[SERVER] = servers[SERVER]
        record["previous"] = tomlkit.dumps(holder)
        servers[SERVER] = server

    after = tomlkit.dumps(doc)
    if new_tables:
        newline = "\r\n" if "\r\n" in after else "\n"
        appendix = _appendix(new_tables).replace("\n", newline)
        after += (newline if after else "") + appendix
        appended += [key for key in new_tables if key not in appended]
    try:
        tomlkit.parse(after)
    except TOMLKitError:  # pragma: no cover - a layout tomlkit cannot extend
        raise IntegrationError(
            f"om cannot add its settings to {label} without breaking it",
            "add [features] hooks = true and [mcp_servers.om] by hand (docs/integrations/codex.md)",
        ) from None
    record.update(flags=flags, appended=appended)
    return after, record, overridden


def _is_appendix(tail: Mapping[str, Any]) -> bool:
    """True when ``tail`` holds only what om appends (the two flags, the om server)."""
    if not set(tail) <= {"features", "mcp_servers"}:
        return False
    if "features" in tail and tail["features"] != {flag: True for flag in FLAGS}:
        return False
    if "mcp_servers" not in tail:
        return True
    servers = tail["mcp_servers"]
    return set(servers) == {SERVER} and is_om_server(servers[SERVER])


def _cut_appendix(text: str, appended: Sequence[str]) -> str | None:
    """``text`` without the tables om appended, when they are still its last lines, else None."""
    starts = [
        match.start()
        for key in appended
        if key in _HEADERS
        for match in re.finditer(rf"(?m)^{re.escape(_HEADERS[key])}[ \t]*\r?$", text)
    ]
    if not starts:
        return None
    start = min(starts)
    try:
        tail = tomlkit.parse(text[start:]).unwrap()
    except TOMLKitError:
        return None
    if not _is_appendix(tail):
        return None
    head = text[:start]
    return head.removesuffix("\r\n" if "\r\n" in text else "\n")


def _drop_config(text: str | None, section: Mapping[str, Any], label: str) -> str | None:
    if text is None:
        return None
    _parse(text, label)
    appended = [str(item) for item in section.get("appended") or []]
    cut = _cut_appendix(text, appended)
    doc = _parse(text if cut is None else cut, label)
    for flag, before in (section.get("flags") or {}).items():
        # Fetched again each time: tomlkit's view of dotted keys goes stale after a deletion.
        features = _table(doc, "features", label)
        if features is None or features.get(flag) is not True:
            continue  # gone or changed since install: the user's now
        if not before.get("existed"):
            del features[flag]
        elif before.get("value") is not True:
            features[flag] = before.get("value")
    if "features" in appended and _table(doc, "features", label) == {}:
        del doc["features"]
    servers = _table(doc, "mcp_servers", label)
    if servers is not None and is_om_server(_plain(servers.get(SERVER))):
        if isinstance(section.get("previous"), str):
            servers[SERVER] = tomlkit.parse(section["previous"])[SERVER]
        else:
            del servers[SERVER]
            if "mcp_servers.om" in appended and not servers:
                del doc["mcp_servers"]
    after = tomlkit.dumps(doc)
    if section.get("created_file") and not after.strip():
        return None
    return after


def plan_install(ctx: InstallContext) -> Plan:
    """The flags and MCP server in config.toml, the hooks, the AGENTS.md block; idempotent."""
    config = config_path(ctx.environ)
    config_target = FileTarget(config)
    config_before = config_target.read()
    config_after, config_record, overridden = _merge_config(
        config_before, ctx, same_file_record(ctx.record, "config", config), str(config)
    )

    hooks = hooks_path(ctx.environ)
    hooks_target = FileTarget(hooks)
    hooks_before = hooks_target.read()
    hooks_after, created = merge_hooks(hooks_before, _specs(ctx), str(hooks))
    created = merged(same_file_record(ctx.record, "hooks", hooks).get("created"), created)

    agents = agents_path(ctx.environ)
    agents_target = FileTarget(agents)
    agents_before = agents_target.read()
    agents_after = set_block(agents_before, BEGIN, END, _block(ctx))
    agents_created = bool(same_file_record(ctx.record, "agents", agents).get("created_file"))

    edits = [
        Edit(config_target, config_before, config_after, "Codex: hooks feature, om MCP server"),
        Edit(hooks_target, hooks_before, hooks_after, "Codex hooks: startup context, checkpoints"),
        Edit(agents_target, agents_before, agents_after, "Codex AGENTS.md: where memory is"),
    ]
    record = {
        "config": {"path": str(config), **config_record},
        "hooks": {"path": str(hooks), "created": created},
        "agents": {"path": str(agents), "created_file": agents_created or agents_before is None},
    }
    plan = Plan(NAME, edits, record)
    if "previous" in config_record and "previous" not in same_file_record(
        ctx.record, "config", config
    ):
        plan.notes.append(
            f"replaced another MCP server named om in {config}; uninstall restores it"
        )
    if overridden:
        plan.warnings.append(
            f"Codex hooks were turned off in {config} ({', '.join(overridden)}): om install "
            "turns them on so that its hooks run; om uninstall puts back what was there (to "
            "keep hooks off, run om uninstall --codex now)"
        )
    if edits[1].changed:
        plan.notes.append(
            "Codex runs new or changed hooks only once trusted: open /hooks in Codex and trust "
            "om's SessionStart and Stop hooks"
        )
    return plan


def plan_uninstall(ctx: InstallContext) -> Plan:
    """Remove what install added, putting back the flags' earlier values."""
    config, config_section = recorded(ctx.record, "config", config_path(ctx.environ))
    config_target = FileTarget(config)
    config_before = config_target.read()
    config_after = _drop_config(config_before, config_section, str(config))

    hooks, hooks_section = recorded(ctx.record, "hooks", hooks_path(ctx.environ))
    hooks_target = FileTarget(hooks)
    hooks_before = hooks_target.read()
    created = hooks_section.get("created") if hooks_section else None
    hooks_after = remove_hooks(
        hooks_before, [spec.event for spec in _specs(ctx)], str(hooks), created
    )

    agents, agents_section = recorded(ctx.record, "agents", agents_path(ctx.environ))
    agents_target = FileTarget(agents)
    agents_before = agents_target.read()
    agents_after = drop_block(agents_before, BEGIN, END)
    if agents_section.get("created_file") and agents_after == "":
        agents_after = None

    edits = [
        Edit(config_target, config_before, config_after, "remove om from Codex config.toml"),
        Edit(hooks_target, hooks_before, hooks_after, "remove om's Codex hooks"),
        Edit(agents_target, agents_before, agents_after, "remove om's block from AGENTS.md"),
    ]
    return Plan(NAME, edits, None)


def checks(ctx: InstallContext) -> list[Check]:
    """The hooks flags and MCP server in config.toml, the hooks, the AGENTS.md block."""
    found = _config_checks(ctx)
    hooks, _ = recorded(ctx.record, "hooks", hooks_path(ctx.environ))
    found += check_hooks(NAME, hooks, _specs(ctx), ctx.environ, _FIX)
    agents, _ = recorded(ctx.record, "agents", agents_path(ctx.environ))
    try:
        text = FileTarget(agents).read()
    except IntegrationError as exc:
        return [*found, Check("codex: AGENTS.md", "warn", exc.message, exc.hint or _FIX)]
    if has_block(text, BEGIN, END):
        return [*found, Check("codex: AGENTS.md", "ok", f"om's block in {agents}")]
    detail = f"no om block in {agents} (the fallback when hooks are off)"
    return [*found, Check("codex: AGENTS.md", "warn", detail, _FIX)]


def _config_checks(ctx: InstallContext) -> list[Check]:
    config, _ = recorded(ctx.record, "config", config_path(ctx.environ))
    try:
        text = FileTarget(config).read()
        doc = _parse(text, str(config)) if text is not None else None
    except IntegrationError as exc:
        return [Check("codex: config", "fail", exc.message, exc.hint or _FIX)]
    if doc is None:
        return [Check("codex: config", "fail", f"{config} does not exist", _FIX)]
    found: list[Check] = []
    features = doc.get("features")
    off = [flag for flag in FLAGS if isinstance(features, Mapping) and features.get(flag) is False]
    if off:
        detail = f"hooks are turned off in {config} ({', '.join(off)} = false)"
        found.append(Check("codex: hooks feature", "fail", detail, _FIX))
    else:
        found.append(Check("codex: hooks feature", "ok", f"on in {config}"))
    servers = doc.get("mcp_servers")
    server = _plain(servers.get(SERVER)) if isinstance(servers, Mapping) else None
    if not is_om_server(server):
        found.append(Check("codex: mcp", "fail", f"no [mcp_servers.om] in {config}", _FIX))
    elif gone := missing_program([str(server["command"])], ctx.environ):
        detail = f"the MCP server starts {gone}, which does not exist"
        found.append(Check("codex: mcp", "fail", detail, _FIX))
    else:
        found.append(Check("codex: mcp", "ok", f"[mcp_servers.om] in {config}"))
    return found

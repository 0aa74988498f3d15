"""Codex CLI: config.toml flags and MCP server, hooks.json, the AGENTS.md block, and back again."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from obsmem.errors import IntegrationError
from obsmem.integrations import codex
from obsmem.integrations.base import InstallContext, Plan
from obsmem.integrations.edits import apply_edits, render_diff
from obsmem.paths import memory_dir

# Comments, odd spacing, a [features] table with another flag (and the old hooks flag off),
# another MCP server, a profile after it, and no newline at the end.
CONFIG = """# Codex settings, edited by hand
model = "gpt-5-codex"   # the default model
approval_policy="on-request"

[features]
# try the new search tool
web_search_request = true
codex_hooks = false

[mcp_servers.docs]
command = "npx"
args    = [ "-y", "@upstash/context7-mcp" ]   # docs lookup

[profiles.fast]
model   =   "gpt-5-mini\""""

# Another tool's Stop hook, four-space indentation.
HOOKS = """{
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "notify-send 'Codex finished'",
                        "timeout": 5
                    }
                ]
            }
        ]
    }
}
"""

AGENTS = "# Global instructions\n\n- Prefer small commits.\n- Run the tests before saying done."

Build = Callable[..., InstallContext]


@pytest.fixture
def codex_home() -> Path:
    home = Path(os.environ["CODEX_HOME"])
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    (home / "hooks.json").write_text(HOOKS)
    (home / "AGENTS.md").write_text(AGENTS)
    return home


def install(ctx: InstallContext) -> Plan:
    plan = codex.plan_install(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def uninstall(ctx: InstallContext) -> Plan:
    plan = codex.plan_uninstall(ctx)
    apply_edits(plan.edits, ctx.environ)
    return plan


def originals(home: Path) -> dict[str, str]:
    return {name: (home / name).read_text() for name in ("config.toml", "hooks.json", "AGENTS.md")}


def test_install_merges_and_uninstall_restores_the_bytes(
    codex_home: Path, install_context: Build
) -> None:
    ctx = install_context()
    assert codex.detect(ctx)
    plan = install(ctx)
    assert plan.changed

    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["features"] == {"web_search_request": True, "codex_hooks": True, "hooks": True}
    server = {"command": ctx.om[0], "args": ["mcp"], "env": ctx.carried}
    assert config["mcp_servers"]["om"] == server
    assert config["mcp_servers"]["docs"] == {
        "command": "npx",
        "args": ["-y", "@upstash/context7-mcp"],
    }
    assert config["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    text = (codex_home / "config.toml").read_text()
    assert "# try the new search tool\n" in text and "args    = [ " in text  # layout kept

    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert hooks["Stop"][0] == json.loads(HOOKS)["hooks"]["Stop"][0]
    assert hooks["Stop"][1] == {
        "hooks": [
            {
                "type": "command",
                "command": ctx.hook_command("hook", "checkpoint", "--agent", "codex"),
                "timeout": 10,
            }
        ]
    }
    assert hooks["UserPromptSubmit"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": ctx.hook_command("hook", "prompt", "--agent", "codex"),
                    "timeout": 10,
                }
            ]
        }
    ]
    assert hooks["SessionStart"] == [
        {
            "matcher": "startup|resume",
            "hooks": [
                {
                    "type": "command",
                    "command": ctx.hook_command("context", "--for", "codex"),
                    "timeout": 15,
                }
            ],
        }
    ]

    agents = (codex_home / "AGENTS.md").read_text()
    assert agents.startswith(AGENTS + "\n" + codex.BEGIN + "\n")
    assert agents.endswith(codex.END + "\n")
    assert str(memory_dir(ctx.environ)) in agents
    assert f'{ctx.om[0]} search "' in agents
    assert f"{ctx.om[0]} context --for codex" in agents
    assert "`om` MCP server's `search` tool" in agents

    again = codex.plan_install(install_context(plan.record))
    assert not again.changed
    assert again.record == plan.record
    assert again.notes == []

    removal = uninstall(install_context(plan.record))
    assert removal.record is None
    assert originals(codex_home) == {
        "config.toml": CONFIG,
        "hooks.json": HOOKS,
        "AGENTS.md": AGENTS,
    }


def test_flags_record_what_was_there(codex_home: Path, install_context: Build) -> None:
    plan = install(install_context())
    assert plan.record is not None
    assert plan.record["config"]["flags"] == {
        "hooks": {"existed": False},
        "codex_hooks": {"existed": True, "value": False},
    }
    assert plan.record["config"]["appended"] == ["mcp_servers.om"]


@pytest.mark.parametrize(
    "config",
    [
        pytest.param('model = "o3"\n', id="no-features-table"),
        pytest.param("", id="empty-file"),
        pytest.param("# only a comment", id="comment-no-newline"),
        pytest.param('model = "o3"\n\n\n', id="trailing-blank-lines"),
        pytest.param("features.web_search_request = true\nmodel = 'o3'\n", id="dotted-features"),
        pytest.param("[features]\nhooks = true\n\n[profiles.x]\nmodel = 'a'\n", id="hooks-on"),
        pytest.param(
            "[mcp_servers]\n\n[mcp_servers.docs]\ncommand = 'npx'\n", id="mcp-servers-table"
        ),
        pytest.param(
            'model = "o3"\nmcp_servers = { docs = { command = "npx", args = [] } }\n',
            id="inline-mcp-servers",
        ),
        pytest.param(
            'features = { web_search_request = true }\nmodel = "o3"\n', id="inline-features"
        ),
        pytest.param('# windows\r\nmodel = "o3"\r\n', id="crlf"),
        pytest.param("[features]\r\nweb_search_request = true\r\n", id="crlf-features"),
    ],
)
def test_config_layouts_come_back_byte_for_byte(
    codex_home: Path, install_context: Build, config: str
) -> None:
    (codex_home / "config.toml").write_text(config)
    ctx = install_context()
    plan = install(ctx)
    data = tomllib.loads((codex_home / "config.toml").read_text())
    assert data["features"]["hooks"] is True and data["features"]["codex_hooks"] is True
    assert data["mcp_servers"]["om"] == {"command": ctx.om[0], "args": ["mcp"], "env": ctx.carried}
    assert not codex.plan_install(install_context(plan.record)).edits[0].changed
    uninstall(install_context(plan.record))
    assert (codex_home / "config.toml").read_bytes() == config.encode()


def test_new_tables_go_at_the_end_after_one_newline(
    default_paths: None, codex_home: Path, install_context: Build
) -> None:
    (codex_home / "config.toml").write_text('model = "o3"\n')
    ctx = install_context()
    install(ctx)
    assert (codex_home / "config.toml").read_text() == (
        'model = "o3"\n\n[features]\nhooks = true\ncodex_hooks = true\n\n'
        f'[mcp_servers.om]\ncommand = "{ctx.om[0]}"\nargs = ["mcp"]\n'
    )


def test_missing_files_are_created_private_and_removed_again(install_context: Build) -> None:
    home = Path(os.environ["CODEX_HOME"])
    ctx = install_context()
    assert not codex.detect(ctx)
    plan = install(ctx)
    assert (home.stat().st_mode & 0o777) == 0o700
    for name in ("config.toml", "hooks.json", "AGENTS.md"):
        assert ((home / name).stat().st_mode & 0o777) == 0o600
    assert (home / "AGENTS.md").read_text().startswith(codex.BEGIN + "\n## Memory (om)\n")
    uninstall(install_context(plan.record))
    assert sorted(p.name for p in home.iterdir()) == []


def test_a_changed_om_path_updates_everything_in_place(
    codex_home: Path, install_context: Build, tmp_path: Path
) -> None:
    first = install(install_context())
    moved = tmp_path / "elsewhere" / "om"
    moved.parent.mkdir()
    moved.write_text("#!/bin/sh\n")
    moved.chmod(0o755)
    ctx = InstallContext(dict(os.environ), (str(moved),), first.record)
    second = codex.plan_install(ctx)
    diff = render_diff(second.edits)
    assert f'-command = "{install_context().om[0]}"\n+command = "{moved}"\n' in diff
    start = ctx.hook_command("context", "--for", "codex")
    assert f'+                        "command": "{start}",' in diff
    assert f"+- `{start}` prints the startup context;" in diff
    apply_edits(second.edits, ctx.environ)
    assert second.record == first.record  # what was there before install is still known

    text = (codex_home / "config.toml").read_text()
    assert text.count("[mcp_servers.om]") == 1
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert len(hooks["SessionStart"]) == 1 and len(hooks["Stop"]) == 2
    assert len(hooks["UserPromptSubmit"]) == 1
    assert (codex_home / "AGENTS.md").read_text().count(codex.BEGIN) == 1
    assert any("/hooks" in note for note in second.notes)  # changed hooks need trusting again

    uninstall(ctx)
    assert originals(codex_home) == {
        "config.toml": CONFIG,
        "hooks.json": HOOKS,
        "AGENTS.md": AGENTS,
    }


def test_dry_run_diff_shows_every_file_and_writes_nothing(
    codex_home: Path, install_context: Build
) -> None:
    ctx = install_context()
    plan = codex.plan_install(ctx)
    diff = render_diff(plan.edits)
    for name in ("config.toml", "hooks.json", "AGENTS.md"):
        assert f"+++ {codex_home / name}\n" in diff
    assert "-codex_hooks = false\n+codex_hooks = true\n+hooks = true\n" in diff
    assert "+[mcp_servers.om]\n" in diff
    assert '+                "matcher": "startup|resume",' in diff
    assert f"+{codex.BEGIN}\n" in diff
    assert originals(codex_home) == {
        "config.toml": CONFIG,
        "hooks.json": HOOKS,
        "AGENTS.md": AGENTS,
    }


def test_without_a_record_uninstall_removes_only_oms_entries(
    codex_home: Path, install_context: Build
) -> None:
    install(install_context())
    uninstall(install_context())  # integrations.json lost: no record
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert "om" not in config["mcp_servers"]
    assert config["features"]["hooks"] is True  # unknown whether it was there: left alone
    # An empty list may have been the user's: without the record it stays.
    assert json.loads((codex_home / "hooks.json").read_text()) == {
        "hooks": {**json.loads(HOOKS)["hooks"], "SessionStart": [], "UserPromptSubmit": []}
    }
    assert (codex_home / "AGENTS.md").read_text() == AGENTS


def test_a_flag_changed_since_install_is_left_as_the_user_set_it(
    codex_home: Path, install_context: Build
) -> None:
    plan = install(install_context())
    path = codex_home / "config.toml"
    text = path.read_text()
    path.write_text(text.replace("\nhooks = true", "\nhooks = false"))
    uninstall(install_context(plan.record))
    features = tomllib.loads(path.read_text())["features"]
    assert features["hooks"] is False  # the user's choice now, not om's
    assert features["codex_hooks"] is False  # om's change undone


def test_someone_elses_om_server_is_replaced_and_put_back(
    codex_home: Path, install_context: Build
) -> None:
    theirs = CONFIG + (
        '\n\n[mcp_servers.om]\ncommand = "/usr/bin/other"\nargs = ["serve"]\nsince = 2025-01-02\n'
    )
    (codex_home / "config.toml").write_text(theirs)
    plan = install(install_context())
    assert any("another MCP server named om" in note for note in plan.notes)
    again = codex.plan_install(install_context(plan.record))
    assert not again.changed and again.record == plan.record
    uninstall(install_context(plan.record))
    assert tomllib.loads((codex_home / "config.toml").read_text()) == tomllib.loads(theirs)


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ("[features\nhooks = true\n", "config.toml is not valid TOML"),
        ('features = "on"\n', "features in"),
        ("mcp_servers = 3\n", "mcp_servers in"),
    ],
)
def test_config_om_cannot_edit_stops_the_install(
    codex_home: Path, install_context: Build, config: str, says: str
) -> None:
    (codex_home / "config.toml").write_text(config)
    with pytest.raises(IntegrationError) as caught:
        codex.plan_install(install_context())
    assert says in str(caught.value)
    assert (codex_home / "hooks.json").read_text() == HOOKS


def test_checks_follow_the_install(codex_home: Path, install_context: Build, fake_om: Path) -> None:
    ctx = install_context()
    before = {c.name: c.verdict for c in codex.checks(ctx)}
    assert before == {
        "codex: hooks feature": "fail",
        "codex: mcp": "fail",
        "codex: hooks": "fail",
        "codex: AGENTS.md": "warn",
    }
    plan = install(ctx)
    ctx = install_context(plan.record)
    assert {c.name: c.verdict for c in codex.checks(ctx)} == {
        "codex: hooks feature": "ok",
        "codex: mcp": "ok",
        "codex: hooks": "ok",
        "codex: hook commands": "ok",
        "codex: AGENTS.md": "ok",
    }
    fake_om.unlink()
    gone = {c.name: c.verdict for c in codex.checks(ctx)}
    assert gone["codex: mcp"] == "fail" and gone["codex: hook commands"] == "fail"


def test_an_explicit_hooks_false_is_flipped_with_a_warning_and_put_back(
    codex_home: Path, install_context: Build
) -> None:
    config = "[features]\nhooks = false  # I do not want hooks\nweb_search_request = true\n"
    (codex_home / "config.toml").write_text(config)
    plan = install(install_context())
    assert len(plan.warnings) == 1 and "hooks = false" in plan.warnings[0]
    assert tomllib.loads((codex_home / "config.toml").read_text())["features"]["hooks"] is True
    again = codex.plan_install(install_context(plan.record))
    assert again.warnings == []  # said once, when om changed it
    uninstall(install_context(plan.record))
    assert (codex_home / "config.toml").read_text() == config

"""om's hooks merged into and removed from JSON hook lists shared with other tools."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from obsmem.errors import IntegrationError
from obsmem.integrations import jsonedit
from obsmem.integrations.jsonhooks import (
    EMPTY_FILE,
    FILE,
    HookSpec,
    check_hooks,
    is_om_command,
    is_om_server,
    merge_hooks,
    missing_program,
    om_argv,
    om_hook_commands,
    remove_hooks,
)

OM = "/opt/om/bin/om"
SPECS = [
    HookSpec("SessionStart", f"{OM} context --for claude", 15),
    HookSpec("Stop", f"{OM} hook checkpoint --agent codex", 10, None),
]
# Another tool's hooks in both events, in the layout Claude Code itself writes.
THEIRS = """{
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/other-tool start",
            "timeout": 30
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [{"type": "command", "command": "say done"}]
      }
    ]
  },
  "model": "opus"
}
"""


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/opt/om/bin/om context --for claude", True),
        ("'/Users/me/My Tools/om' hook checkpoint --agent claude", True),
        ("om mcp", True),
        ("C:/tools/om.exe observe --source all", True),
        ("/usr/bin/obsmem reflect", True),
        ("/usr/bin/python3.12 -m obsmem hook session-end --agent claude", True),
        ("OM_HOME=/data/mem /opt/om/bin/om context --for codex", True),
        ("env OM_HOME=/x om mcp", True),
        ("om search 'what'", False),  # not a hook, server or job subcommand
        ("om", False),
        ("zoom context", False),
        ("/usr/local/bin/other-tool start", False),
        ("python3 -m other context", False),
        ("om 'context", False),  # unbalanced quote
        ("", False),
    ],
)
def test_is_om_command(command: str, ours: bool) -> None:
    assert is_om_command(command) is ours


def test_om_argv_returns_what_follows_the_program() -> None:
    assert om_argv(["/x/python", "-m", "obsmem", "mcp", "--http"]) == ["mcp", "--http"]
    assert om_argv(["/x/om"]) == []
    assert om_argv(["bash", "-c", "om context"]) is None
    assert is_om_command(None) is False


def test_is_om_server() -> None:
    assert is_om_server({"command": OM, "args": ["mcp"]})
    assert is_om_server({"command": "/usr/bin/python3", "args": ["-m", "obsmem", "mcp"]})
    assert not is_om_server({"command": "npx", "args": ["-y", "docs-mcp"]})
    assert not is_om_server({"command": OM, "args": "mcp"})
    assert not is_om_server("om mcp")


def test_hook_spec_group_leaves_out_a_matcher_of_none() -> None:
    assert SPECS[0].group() == {
        "matcher": "",
        "hooks": [{"type": "command", "command": f"{OM} context --for claude", "timeout": 15}],
    }
    assert "matcher" not in SPECS[1].group()


def test_merge_keeps_other_tools_entries_and_remove_gives_back_the_bytes() -> None:
    after, created = merge_hooks(THEIRS, SPECS, "settings.json")
    assert created == []
    data = json.loads(after)
    start = data["hooks"]["SessionStart"]
    assert start[0] == json.loads(THEIRS)["hooks"]["SessionStart"][0]
    assert start[1] == SPECS[0].group()
    assert data["hooks"]["Stop"][1] == SPECS[1].group()
    assert merge_hooks(after, SPECS, "settings.json") == (after, [])
    assert remove_hooks(after, ["SessionStart", "Stop"], "settings.json", created) == THEIRS


def test_missing_lists_and_objects_are_created_and_removed_again() -> None:
    text = '{\n  "model": "opus"\n}\n'
    after, created = merge_hooks(text, SPECS, "s")
    assert created == ["hooks", "hooks.SessionStart", "hooks.Stop"]
    assert remove_hooks(after, ["SessionStart", "Stop"], "s", created) == text
    partial = '{\n  "hooks": {\n    "Stop": []\n  }\n}\n'
    after, created = merge_hooks(partial, SPECS, "s")
    assert created == ["hooks.SessionStart"]
    assert remove_hooks(after, ["SessionStart", "Stop"], "s", created) == partial


def test_a_missing_file_is_created_and_removed_a_blank_one_emptied() -> None:
    after, created = merge_hooks(None, SPECS, "s")
    assert created == [FILE, "hooks", "hooks.SessionStart", "hooks.Stop"]
    assert after.startswith('{\n  "hooks": {\n    "SessionStart": [\n')
    assert remove_hooks(after, ["SessionStart", "Stop"], "s", created) is None
    after, created = merge_hooks("\n", SPECS, "s")
    assert created[0] == EMPTY_FILE
    assert remove_hooks(after, ["SessionStart", "Stop"], "s", created) == ""
    assert remove_hooks(None, ["Stop"], "s", created) is None


def test_a_changed_om_path_is_updated_in_place_and_duplicates_go() -> None:
    old = "/old/place/om"
    doubled = THEIRS.replace(
        '"hooks": [{"type": "command", "command": "say done"}]',
        f'"hooks": [{{"type": "command", "command": "{old} hook checkpoint", "timeout": 3}}]',
    )
    installed, _ = merge_hooks(doubled, SPECS, "s")
    assert len(json.loads(installed)["hooks"]["Stop"]) == 1  # updated, not added
    # A second group with om's Stop hook, as a broken earlier install might have left.
    stop = jsonedit.locate(installed, ["hooks", "Stop"])
    assert stop is not None
    twice = jsonedit.append_element(installed, stop, SPECS[1].group())
    after, _ = merge_hooks(twice, SPECS, "s")
    groups = json.loads(after)["hooks"]["Stop"]
    assert len(groups) == 1  # om's first entry kept (updated), the duplicate dropped
    assert groups[0]["hooks"][0] == {"type": "command", "command": SPECS[1].command, "timeout": 3}
    assert json.loads(after)["hooks"]["SessionStart"][1] == SPECS[0].group()


def test_a_group_shared_with_another_tool_keeps_the_other_hook() -> None:
    shared = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "say done"},
                        {"type": "command", "command": f"{OM} hook checkpoint --agent codex"},
                    ]
                }
            ]
        }
    }
    text = json.dumps(shared, indent=2)
    after = remove_hooks(text, ["Stop"], "s", [])
    assert after is not None
    assert json.loads(after) == {
        "hooks": {"Stop": [{"hooks": [shared["hooks"]["Stop"][0]["hooks"][0]]}]}
    }


def test_without_a_record_only_oms_hooks_go() -> None:
    group = '{"hooks": [{"type": "command", "command": "om hook x"}]}'
    text = '{\n  "hooks": {\n    "Stop": [\n      ' + group + "\n    ]\n  }\n}\n"
    after = remove_hooks(text, ["Stop"], "s", None)
    assert after == '{\n  "hooks": {\n    "Stop": []\n  }\n}\n'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"hooks": ', "is not valid JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"hooks": []}', '"hooks" in settings.json is not an object'),
        ('{"hooks": null}', '"hooks" in settings.json is not an object'),
        ('{"hooks": {"Stop": {}}}', '"hooks.Stop" in settings.json is not a list'),
    ],
)
def test_files_om_cannot_read_stop_it_with_a_hint(text: str, says: str) -> None:
    with pytest.raises(IntegrationError) as caught:
        merge_hooks(text, SPECS, "settings.json")
    assert says in str(caught.value)
    assert "om changed nothing" in str(caught.value)


def test_om_hook_commands_per_event() -> None:
    after, _ = merge_hooks(THEIRS, SPECS, "s")
    assert om_hook_commands(after, ["SessionStart", "Stop", "PreCompact"], "s") == {
        "SessionStart": [SPECS[0].command],
        "Stop": [SPECS[1].command],
        "PreCompact": [],
    }
    assert om_hook_commands(None, ["Stop"], "s") == {"Stop": []}


def test_missing_program(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "om"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    env = {"PATH": str(tool.parent)}
    assert missing_program(f"{tool} context --for claude", env) is None
    assert missing_program(f"OM_HOME=/x {tool} mcp", env) is None
    assert missing_program("om context", env) is None  # found on PATH
    assert missing_program("/nowhere/om context", env) == "/nowhere/om"
    assert missing_program("nothing-like-this hook", env) == "nothing-like-this"
    assert missing_program([str(tool)], env) is None
    assert missing_program([sys.executable, "-m", "obsmem"], env) is None


def test_check_hooks_verdicts(tmp_path: Path) -> None:
    tool = tmp_path / "om"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    specs = [
        HookSpec("SessionStart", f"{tool} context --for claude", 15),
        HookSpec("Stop", f"{tool} hook checkpoint --agent claude", 10),
    ]
    path = tmp_path / "settings.json"
    env = dict(os.environ)

    def verdicts() -> list[tuple[str, str]]:
        return [(c.name, c.verdict) for c in check_hooks("claude", path, specs, env, "fix")]

    assert verdicts() == [("claude: hooks", "fail")]
    path.write_text("{not json")
    assert verdicts() == [("claude: hooks", "fail")]
    text, _ = merge_hooks(None, specs[:1], str(path))
    path.write_text(text)
    assert verdicts() == [("claude: hooks", "fail"), ("claude: hook commands", "ok")]
    path.write_text(merge_hooks(None, specs, str(path))[0])
    assert verdicts() == [("claude: hooks", "ok"), ("claude: hook commands", "ok")]
    moved = [HookSpec(s.event, s.command.replace(str(tool), "/usr/bin/true"), 1) for s in specs]
    assert [c.verdict for c in check_hooks("claude", path, moved, env, "fix")][1] == "warn"
    path.chmod(0o666)
    assert ("claude: hooks file mode", "warn") in verdicts()
    tool.unlink()
    assert ("claude: hook commands", "fail") in verdicts()

"""Tool inputs are redacted before they are put on one line and shortened: a multi-line command
(a heredoc, a script) keeps the line structure that shows its settings are settings."""

from __future__ import annotations

import pytest

from obsmem.sources.calls import call_detail
from obsmem.sources.claude_tools import action_text

SECRET = "Qx7-vLp2Rt9wZk4"
HEREDOC = f"cat > values.yaml <<'EOF'\nreplicas: 2\ndb-password: {SECRET}\nimage: app:1.2\nEOF"
NETRC = f"cat > ~/.netrc <<EOF\nmachine git.example.com\nlogin deploy\npassword {SECRET}\nEOF"


@pytest.mark.parametrize("command", [HEREDOC, NETRC])
def test_claude_bash_heredoc_is_redacted_before_it_is_joined(command: str) -> None:
    line = action_text("Bash", {"command": command})
    assert SECRET not in line
    assert "[REDACTED:password]" in line
    assert "\n" not in line


@pytest.mark.parametrize("command", [HEREDOC, ["bash", "-lc", NETRC]])
def test_openai_style_call_detail_is_redacted_before_it_is_joined(command: object) -> None:
    detail = call_detail({"command": command})
    assert SECRET not in detail
    assert "[REDACTED:password]" in detail


def test_single_line_commands_are_left_to_the_turn_redaction() -> None:
    assert action_text("Bash", {"command": "ls -la"}) == "Bash: ls -la"

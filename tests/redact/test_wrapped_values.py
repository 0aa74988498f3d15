"""Keyed values wrapped over lines: the value of ``DB_PASSWORD=`` (or any key the key pass
knows) that runs to its line's end and goes on over the next line, in an ``.env`` paste, a JSON
string (escaped line breaks), a terminal's width and a quoted value cut before its quote; and
the lines after a value that are lines of their own and stay.

The rule (see ``obsmem.redact.keys.wrapped_value``): the next line is taken when it is a lone
run of token characters (after up to 12 blanks, nothing after it on its line) that reads as the
rest of a random value, not as a word, a setting, a flag, a path, a file name, a version, a
UUID, a short name with a number, or a commit SHA or digest after a value that is not hex.
"""

from __future__ import annotations

import json

import pytest

from obsmem.redact import redact, redact_all

PART1, PART2 = "Xk29fPq7", "Lm3Rt8Zw"


def test_the_keyed_value_of_the_issue_loses_its_second_line() -> None:
    out = redact(f"DB_PASSWORD={PART1}\n{PART2}\n")
    assert out == "DB_PASSWORD=[REDACTED:password]\n[REDACTED:password]\n"


@pytest.mark.parametrize(
    "text",
    [
        f"DB_PASSWORD={PART1}\r\n{PART2}\r\nok\r\n",
        json.dumps({"stdout": f"DB_PASSWORD={PART1}\n{PART2}\nLOG_LEVEL=info\n"}),
        json.dumps({"stdout": f"DB_PASSWORD={PART1}\n{PART2}"}),
        f'{{\n  "api_key": "{PART1}\n{PART2}",\n  "retries": 3\n}}',
        f"database:\n  password: {PART1}\n    {PART2}\n  host: db\n",
        f"export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bP{PART1}\n{PART2}fiCYEXAMPLEKEY\n",
        f"SERVICE_KEY={PART1[:5]}\n{PART1[5:]}{PART2}\n",  # judged random with its rest
        f"SECRET_KEY=3f786850e387550fdab8\n{'36ed7e6dc881de23001b' * 2}\n",  # hex goes on in hex
    ],
    ids=["crlf", "json-escaped", "json-string-end", "quoted", "yaml", "export", "weak", "hex"],
)
def test_a_wrapped_keyed_value_goes_whole(text: str) -> None:
    out = redact(text)
    lines = [line.strip("\"', ") for line in out.replace("\\n", "\n").splitlines()]
    assert not any(PART2 in line or "e23001b" in line or "fiCY" in line for line in lines), out
    assert out.count("[REDACTED:") == 2, out
    assert redact_all(["ok", text])[1] == out


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_value_wrapped_at_a_terminal_width_goes_over_every_line(width: int) -> None:
    value = "Xk29fPq7Lm3Rt8ZwQ2v9" * 12  # 240 characters: three lines and more at 80
    line = "dev@build-01:~/srv$ export SERVICE_TOKEN=" + value
    wrapped = "\n".join(line[i : i + width] for i in range(0, len(line), width))
    out = redact(wrapped + "\ndev@build-01:~/srv$ ./deploy.sh prod")
    assert "Q2v9" not in out and "Rt8Z" not in out, out
    assert out.endswith("\ndev@build-01:~/srv$ ./deploy.sh prod")
    assert out.startswith("dev@build-01:~/srv$ export SERVICE_TOKEN=[REDACTED:token]\n")


@pytest.mark.parametrize(
    "after",
    [
        "NEXT_KEY=abc123",  # the next setting of an .env
        "done",  # a command's output
        "EOF",  # a heredoc's end
        "HelloWorld",
        "--yes",  # a flag
        "  host: db.internal",  # the next key of a YAML block
        "3f786850e387550fdab836ed7e6dc881de23001b",  # a commit SHA
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a digest
        "550e8400-e29b-41d4-a716-446655440000",  # a UUID
        "src/obsmem/redact/core.py",
        "/usr/local/bin",
        "v20.11.1",
        "3.11.7",
        "python3",
        "x86_64",
        "$ ls -la",  # a shell prompt
        "print(token)",  # a code line
        "42",
        "Lm3R tail with words",  # a line that goes on with words
    ],
)
def test_a_line_of_its_own_after_a_keyed_value_stays(after: str) -> None:
    out = redact(f"DB_PASSWORD={PART1}\n{after}\nLOG_LEVEL=info")
    assert out == f"DB_PASSWORD=[REDACTED:password]\n{after}\nLOG_LEVEL=info"


@pytest.mark.parametrize(
    "text",
    [
        # Placeholders and keys that hold no secret are no values to go on.
        f"DB_PASSWORD=${{DB_PASSWORD}}\n{PART1}{PART2}\n",
        f"SECRET_KEY=changeme\n{PART1}{PART2}\n",
        f"SORT_KEY=created_at\n{PART1}{PART2}\n",
        f"PASSWORD_MIN_LENGTH=8\n{PART1}{PART2}\n",
        # A value that does not run to its line's end.
        f"DB_PASSWORD=${{X}} # set by CI\n{PART1}{PART2}\n",
        # An open quote with no rest of its value is code, not a value.
        'password = "abc\nprint(1)\n',
    ],
)
def test_no_value_no_wrapped_rest(text: str) -> None:
    assert redact(text) == text


def test_a_continuation_is_not_taken_for_a_second_value() -> None:
    # Two settings: the next key's own value is judged by its own key, not glued to the first.
    out = redact(f"DB_PASSWORD={PART1}\nAPI_TOKEN={PART2}abc\n")
    assert out == "DB_PASSWORD=[REDACTED:password]\nAPI_TOKEN=[REDACTED:token]\n"

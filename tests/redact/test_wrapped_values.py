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


VALUE = f"{PART1}{PART2}Q2v9"  # a whole random value: what follows it is judged on its own

#: Lone tokens a transcript holds on the line after a keyed value, each a line of its own.
OWN_LINES = [
    "3f78685",  # a short commit SHA (git log --format=%h, git rev-parse --short)
    "3f786850e387",  # a container id (docker ps -q)
    "d41d8cd98f00b204e9800998ecf8427e",  # an MD5 digest
    "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
    "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",  # a SHA-512 digest
    "550e8400e29b41d4a716446655440000",  # a UUID without dashes
    "550E8400-E29B-41D4-A716-446655440000",
    "01HGW2N7EHJ6ZQ8Y5K3M4P9R2T",  # a ULID
    "sha512-9tEqGkRZBWxQfQzMxAKyY4sKqgGJWl0hXmDcx3Mxt/9bYw7c3b6j0JwT7Sf2dNf4y7v2Kk8D5bF0tQ1o8d2cQ==",
    "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC",
    "requirements-dev.txt",  # ls output
    "docker-compose.override.yml",
    "my_script-v2.sh",
    "db-01.internal.example.com",  # a host name
    "__pycache__",
    "coredns-5d78c9869d-4x2kp",  # a pod name
    "get_user_by_id2",
    "test_redact_v2",
    "fix-issue-42",  # a branch
    "feature/JIRA-1234-add-auth",
    "release-2026-11-30",  # a tag
    "us-east-1",  # a region
    "ip-10-0-1-23",  # an EC2 host name
    "node18-alpine3.19",  # an image tag
    "useAuthToken",
]


@pytest.mark.parametrize("after", OWN_LINES)
def test_a_lone_token_of_its_own_after_a_whole_value_stays(after: str) -> None:
    out = redact(f"API_TOKEN={VALUE}\n{after}\nLOG_LEVEL=info")
    assert out == f"API_TOKEN=[REDACTED:token]\n{after}\nLOG_LEVEL=info"


@pytest.mark.parametrize("brk", ["\r\n", "\\n"], ids=["crlf", "json-escaped"])
def test_a_short_sha_after_a_value_stays_whatever_the_break(brk: str) -> None:
    lines = f"token={VALUE}\n3f78685\n9fceb02\n"
    text = json.dumps({"stdout": lines}) if brk == "\\n" else lines.replace("\n", "\r\n")
    out = redact(text)
    assert "3f78685" in out and "9fceb02" in out and VALUE not in out, out


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        # A hex value goes on in hex, a word of hex letters or a long number included.
        ("SECRET_KEY=3f786850e387550f\ndeadbeefcafe\n", "deadbeefcafe"),
        ("SECRET_KEY=3f786850e387550f\n80903802554\n", "80903802554"),
        # A value of one case goes on in that case; a value of both in both.
        ("API_KEY=k29fq7m3t8zwq2v9hs4nab7c\nx36ajmxe49kpq9vr2e3smkr0og\n", "x36ajmxe49kpq9"),
        (f"API_KEY={PART1}\n{PART2}Hs4NaBcD\n", f"{PART2}Hs4NaBcD"),
    ],
    ids=["hex-word", "hex-number", "one-case", "both-cases"],
)
def test_a_rest_of_the_value_s_own_alphabet_goes(text: str, rest: str) -> None:
    out = redact(text)
    assert rest not in out and out.count("[REDACTED:") == 2, out


@pytest.mark.parametrize(
    "text",
    [
        "database:\n  password: |\n    Xk29fPq7Lm3Rt8ZwQ2v9\n  host: db\n",
        "github:\n  api_token: >-\n    Xk29fPq7Lm3Rt8Zw\n    Q2v9Hs4NaB7c\n  org: acme\n",
        "- password: |\r\n    Xk29fPq7Lm3Rt8ZwQ2v9\r\n- host: db\r\n",
        json.dumps({"content": "database:\n  password: |\n    Xk29fPq7Lm3Rt8ZwQ2v9\n  host: db\n"}),
    ],
    ids=["literal", "folded", "list-crlf", "json-string"],
)
def test_a_yaml_block_value_goes_whole(text: str) -> None:
    out = redact(text)
    assert "Xk29fPq7" not in out and "Q2v9" not in out, out
    assert "host: db" in out or "org: acme" in out, out


@pytest.mark.parametrize(
    "text",
    [
        # A Python repr quotes with ': the key's line starts after that quote, and the block's
        # last line may end at it.
        repr({"content": "password: |\n  Xk29fPq7Lm3Rt8ZwQ2v9\nhost: db\n"}),
        repr({"content": "host: db\npassword: |\n  Xk29fPq7Lm3Rt8ZwQ2v9"}),
        # A key right after an escaped break: its "n" is not the key's.
        json.dumps({"content": "host: db\npassword: |\n  Xk29fPq7Lm3Rt8ZwQ2v9\n"}),
        # CRLF inside a JSON string: \\r\\n.
        json.dumps({"content": "database:\r\n  password: |\r\n    Xk29fPq7Lm3Rt8ZwQ2v9\r\n"}),
        json.dumps({"content": "password: |\r\n  Xk29fPq7Lm3Rt8ZwQ2v9\r\nhost: db\r\n"}),
    ],
    ids=["repr-first-line", "repr-last-line", "json-after-break", "json-crlf-nested", "json-crlf"],
)
def test_a_yaml_block_value_in_an_escaped_string_goes_whole(text: str) -> None:
    out = redact(text)
    assert "Xk29fPq7" not in out and "[REDACTED:password]" in out, out
    assert "host: db" in out or "database:" in out, out


def test_an_ansible_vault_keeps_its_header_and_loses_its_body() -> None:
    body = "62313365396662343061393464336163383764373764613633653634306231386433626436623361"
    vault = "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n"
    text = f"{vault}  {body}\n  {body[:40]}\nport: 5432\n"
    out = redact(text)
    assert out == (
        "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  [REDACTED:password]\n"
        "  [REDACTED:password]\nport: 5432\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "password: |\n  Ask Lena for the one in the team vault\nhost: db\n",  # prose
        "api_token: >-\n  ${GITHUB_TOKEN}\norg: acme\n",  # a placeholder
        "description: |\n  Xk29fPq7Lm3Rt8ZwQ2v9\n",  # no secret key
        "password: |\nXk29fPq7Lm3Rt8ZwQ2v9\n",  # not indented: no block
        "  password: |\\n  Xk29fPq7Lm3Rt8ZwQ2v9\\n",  # escaped, not indented past its key
    ],
)
def test_a_yaml_block_without_a_secret_stays(text: str) -> None:
    assert redact(text) == text

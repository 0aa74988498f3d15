"""Secrets that only their context gives away: a key named in a sentence by a generic word, a
value right after the word ``password``, an XML ``key``/``value`` pair, a ``.pgpass`` line in a
JSON string, and shapes told by their end when a line break falls right there. Each with the
near misses that must stay as they are."""

from __future__ import annotations

import json

import pytest

from obsmem.redact import redact, redact_counts

# Made up for these tests, never real keys.
_VALUE = "esbD8R53JWFIIyqgiXqF74gxm1CHgQKO"


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        (f"my service key is {_VALUE} if you need it", "key"),
        ("my license key is PAgCqkkl7j6VAthwxg0SDsrw if you need it", "key"),
        ("my db pass is s0x3gg06hIAHuJhd if you need it", "password"),
    ],
)
def test_a_key_named_in_a_sentence_by_a_generic_word(sentence: str, kind: str) -> None:
    out, counts = redact_counts(sentence)
    assert counts == {kind: 1}
    assert out.endswith(f" is [REDACTED:{kind}] if you need it")


@pytest.mark.parametrize(
    "sentence",
    [
        "the first pass is 3x faster than the second",
        "the key is stored in vault",
        "my key is 3f786850e387550fdab836ed7e6dc881de23001b",  # "my" names no key
        "the primary key is user_id42xa7",
        "the boarding pass is A12BC34DEF5",
        "my service key is in the vault",
        "my license key is ./license.key",
    ],
)
def test_a_sentence_that_names_no_key_stays(sentence: str) -> None:
    assert redact(sentence) == sentence


def test_a_value_that_starts_with_a_slash_but_is_no_path() -> None:
    token = "/HqDMbGCvTumA0mTqabQTMSlleQ5YpEJusI+PZsrEXzTuM1+fUAe0A0pWaFnv1n4eFdjQGd8jNF8y"
    assert redact(f"my kraken access token is {token} if you need it") == (
        "my kraken access token is [REDACTED:token] if you need it"
    )
    path = "the token is /var/run/secrets/kubernetes.io/serviceaccount/token"
    assert redact(path) == path


def test_a_made_up_value_right_after_the_word_password() -> None:
    command = "vault write auth/userpass/users/ci password 5xX4qdpXPzvTLCK6 policies=ci"
    expected = "vault write auth/userpass/users/ci password [REDACTED:password] policies=ci"
    assert redact(command) == expected
    assert redact(json.dumps({"command": command})) == json.dumps({"command": expected})
    for text in ("enter password abc then press enter", "reset the password 3 times"):
        assert redact(text) == text


def test_the_value_of_an_xml_key_value_pair() -> None:
    element = '<add key="Username" value="ci" /><add key="ClearTextPassword" value="1pdiuDtHbATn"/>'
    expected = element.replace("1pdiuDtHbATn", "[REDACTED:password]")
    assert redact(element) == expected
    assert redact(json.dumps({"xml": element})) == json.dumps({"xml": expected})


def test_a_pgpass_line_in_a_json_string() -> None:
    out = redact(json.dumps({"command": "db.internal:5432:app:deploy:FaKRjTYkmUec2n3uXd"}))
    assert out == '{"command": "db.internal:5432:app:deploy:[REDACTED:password]"}'
    benign = '{"ts": "2026-12-01T10:15:42Z", "addr": "10.0.0.5:8080", "a": "x:1:b:c:d"}'
    assert redact(benign) == benign


def test_a_pgpass_line_in_a_python_repr() -> None:
    line = "db.internal:5432:app:deploy:FaKRjTYkmUec2n3uXd"
    out = redact(repr({"stdout": line, "exit": 0}))
    assert out == "{'stdout': 'db.internal:5432:app:deploy:[REDACTED:password]', 'exit': 0}"
    # A ' inside a JSON string's password does not end it there.
    quoted = redact(json.dumps({"stdout": "db:5432:app:deploy:pa'ss1Word9x"}))
    assert quoted == '{"stdout": "db:5432:app:deploy:[REDACTED:password]"}'
    benign = repr({"ts": "2026-12-01T10:15:42Z", "addr": "10.0.0.5:8080", "a": "x:1:b:c:d"})
    assert redact(benign) == benign


@pytest.mark.parametrize(
    ("first", "second", "kind"),
    [
        ("a9cad859fc37646204", "90519d2a8b5099-us6", "mailchimp"),
        ("529168563:AADen1vGAy-Ct9DEh", "oqpt3h0_mbVHxeYemo", "telegram-bot"),
        ("ZR9cBa_ByUEKRdjeIabcdefghi123", "jklmnop_mmk", "maxmind"),
    ],
)
def test_a_shape_told_by_its_end_wrapped_before_another_line(
    first: str, second: str, kind: str
) -> None:
    # The line after the token is glued to it when every wrap point is joined: the end that
    # tells the shape must be seen at the break.
    out, counts = redact_counts(f"VALUE={first}\n{second}\nLOG_LEVEL=info")
    assert counts[kind] == 1
    assert first[-6:] not in out and second[:6] not in out and second[-6:] not in out
    assert out.endswith("\nLOG_LEVEL=info")

"""Tokens wrapped over two lines where both parts are shorter than a run of 20 token characters
(an AWS key id cut after 14 characters), and the multi-line texts that must stay as they are.

The search for token shapes starts from runs of 20 token characters; a wrapped token whose two
parts are both shorter has no such run, only the two joined do. Each kind of the corpus short
enough for that (at most 38 characters, cut in the middle) is put in the carriers a wrap happens
in: a sentence, an indented continuation, an ``.env`` value, CRLF line ends and a JSON string.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.redact import redact, redact_all
from obsmem.redact.keys import ascii_lower
from obsmem.redact.look import has_run, look
from obsmem.redact.shapes import redact_shapes
from obsmem.redact.wraps import wrapped_run

from .secret_kinds import KINDS, Kind

#: Kinds of the corpus that are a value of their own shape and whose halves are both short.
SHORT = tuple(kind for kind in KINDS if kind.mode == "s" and 20 <= len(kind.text) <= 38)


def _halves(value: str) -> tuple[str, str]:
    cut = len(value) // 2
    return value[:cut], value[cut:]


def _wrapped(value: str) -> dict[str, str]:
    a, b = _halves(value)
    return {
        "sentence": f"the key is {a}\n{b}\nplease rotate it",
        "indented": f"  key: {a}\n       {b}\n",
        "env": f"DEPLOY_ID={a}\n{b}\nLOG_LEVEL=info",
        "crlf": f"pasted {a}\r\n{b}\r\nthanks",
        "json-string": json.dumps({"output": f"key {a}\n{b}"}),
    }


def test_there_are_enough_short_kinds() -> None:
    assert len(SHORT) >= 30


@pytest.mark.parametrize("kind", SHORT, ids=[kind.name for kind in SHORT])
def test_a_short_token_wrapped_in_two_short_parts_is_redacted(kind: Kind) -> None:
    a, b = _halves(kind.text)
    assert len(a) < 20 and len(b) < 20
    for carrier, text in _wrapped(kind.text).items():
        out = redact(text)
        assert a not in out and b not in out, (carrier, out)
        assert redact_all(["ok", text, "done", "thanks"])[1] == out


def test_the_aws_key_id_of_the_issue_is_redacted() -> None:
    out = redact("aws key AKIAQ7XK2M9PL4\nRT8VWZ")
    assert out == "aws key [REDACTED:aws-access-key]\n[REDACTED:aws-access-key]"


def test_a_token_cut_near_its_start_and_near_its_end() -> None:
    key = "AKIAQ7XK2M9PL4RT8VWZ"
    for cut in (4, 5, 15, 16):
        out = redact(f"id {key[:cut]}\n{key[cut:]}\n")
        assert key[:cut] not in out.replace("[REDACTED:aws-access-key]", ""), cut
        assert key[cut:] not in out, cut


def test_parts_that_join_to_fewer_than_twenty_are_not_looked_at() -> None:
    # 18 characters joined: no token is that short; the text is left as it is.
    text = "AKIAQ7XK2M\n9PL4RT8V\n"
    assert not wrapped_run(text)
    assert redact(text) == text


def test_a_part_followed_by_more_words_on_its_line_is_no_wrapped_token() -> None:
    # The continuation must be a whole line, as for the longer parts.
    text = "AKIAQ7XK2M9PL4\nRT8VWZ is the rest"
    assert redact(text) == text


def test_the_first_part_alone_is_not_taken_for_a_token() -> None:
    # A 14-character jfrog shape ("AKC" + 10) is too short alone; it is looked at only as the
    # first part of a wrapped one, which the plain word on the next line is not.
    text = "AKCab12cd34ef\nandthenmore words\n"
    assert redact(text) == text


BENIGN_LINES = (
    "import os\nimport sys",
    "from pathlib import Path\nimport json\n\nprint(Path.cwd())",
    "The tests pass on the first run now, and the\nflaky one was a race in the fixture.",
    "commit 3f786850e387550f\ndab836ed7e6dc881de23001b",
    "sha 3f786850e387550fda\nb836ed7e6dc881de2300",
    "see /usr/local/lib/py\nthon3.11/site-packages",
    "src/obsmem/redact/\ncore.py",
    "uuid 550e8400-e29b-41d4\n-a716-446655440000",
    "version 2.31.0-rc.1\n+build.20261201",
    "  def test_x(self):\n      return self.value",
    "TODO: fix the parser\nDONE: the reader",
    "PASSED tests/redact\nFAILED tests/sources",
    "x = 1\ny = 2\nz = x + y",
    "it works\r\nthanks\r\n",
    '{"a": "line one\\nline two"}',
    "RESULT\nAll 42 tests passed in 3.1 seconds.\n",
)


# A short run at a line end that starts with an open-ended shape's prefix ("sk-"), joined with
# the next line: a branch name, a package name, a host, a pod name. No key looks like these.
BENIGN_SHORT_PREFIXES = (
    "  sk-142-retry\n  feature-payment-v2-rollout",
    "sk-utils\nsk-utils-config-v2",
    "sk-db-01\nsk-db-replica-02-eu",
    "sk-api-7d9f\n  web-5c6b8d9f7-x2k4p",
)


@pytest.mark.parametrize("text", BENIGN_SHORT_PREFIXES, ids=[t[:12] for t in BENIGN_SHORT_PREFIXES])
def test_a_short_run_with_an_open_ended_prefix_is_no_wrapped_token(text: str) -> None:
    assert redact(text) == text
    carried = json.dumps({"output": text})
    assert redact(carried) == carried
    assert redact_all(["a", text, carried])[1:] == [text, carried]


def test_a_short_first_part_of_an_open_ended_shape_that_looks_random_is_redacted() -> None:
    # The same shape, joined into a token of upper and lower case letters and digits.
    out = redact("key sk-Ab3dE5fG7h\nJ9kL1mN3pQ5rS7tU9\n")
    assert "Ab3dE5fG7h" not in out and "J9kL1mN3pQ5rS7tU9" not in out


@pytest.mark.parametrize("text", BENIGN_LINES, ids=[text[:20] for text in BENIGN_LINES])
def test_short_lines_of_prose_and_code_are_left_as_they_are(text: str) -> None:
    assert redact(text) == text
    assert redact_all(["a", text, "b", "c"])[1] == text


@pytest.mark.parametrize(
    "text",
    ["import os\nimport sys", "a line.\nnext line.", "one\n\ntwo", "x:\n  y", "foo,\nbar"],
)
def test_short_lines_get_no_run_pass(text: str) -> None:
    # The look rules them out: no two lines hold a wrapped run of 20 token characters.
    assert not wrapped_run(text)
    assert look(text, ascii_lower(text)) is None


@pytest.mark.parametrize(
    "text",
    [
        "AKIAQ7XK2M9PL4\nRT8VWZ",
        "AKIAQ7XK2M9PL4\r\nRT8VWZ",
        "AKIAQ7XK2M9PL4\n            RT8VWZ",
        "AKIAQ7XK2M9PL4\\nRT8VWZ",
        "AKIAQ7XK2M9PL4\\n  RT8VWZ",
        # A chain of short lines: the gated search joins every wrap point.
        "AAAA0123\n456:APA91b\n" + "abcdefgh\n" * 14,
    ],
)
def test_a_wrapped_run_gets_past_the_look(text: str) -> None:
    assert wrapped_run(text)
    assert look(text, ascii_lower(text)) is not None


@pytest.mark.parametrize(
    "text",
    [
        "AKIAQ7XK2M9PL4 \nRT8VWZ",  # a space before the break: no wrap point
        "AKIAQ7XK2M9PL4\n" + " " * 13 + "RT8VWZ",  # indented deeper than a wrap
        "AKIAQ7XK2M9PL4\n\nRT8VWZ",  # a blank line between
        "AKIAQ7XK2M9PL4\n:RT8VWZ",
    ],
)
def test_lines_that_no_wrap_joins_are_no_wrapped_run(text: str) -> None:
    assert not wrapped_run(text)


def test_a_firebase_key_wrapped_into_lines_shorter_than_ten_is_redacted() -> None:
    # No two neighbouring lines make 20, the chain of them does (the gated search joins all).
    text = "AAAA0123\n456:APA91b\n" + "abcd1fgh\n" * 14
    out = redact(text)
    assert "abcd1fgh" not in out and "APA91b" not in out


# Lines that are halves of wrapped tokens (two make one), and others.
_PARTS = st.sampled_from(
    [
        "AKIAQ7XK2M9PL4", "RT8VWZ", "KEY=AKIAQ7XK2M", "9PL4RT8VWZ", "FLWSECK_TEST",
        "-3bd824257519", "ghp_a1B2c3D4e5F6", "g7H8i9J0k1L2m3N4o5P6", "AAAA0123", "456:APA91b",
        "abcd1fgh", "ccd5f23abf1be50cf7d0", "f83dbe59280b-us12", "import os", "x: 1",
    ]
)  # fmt: skip
_LINE = st.tuples(st.sampled_from(["", "", " ", "\t", " " * 13]), _PARTS)
_BREAK = st.sampled_from(["\n", "\r\n", "\\n", " \n"])


@st.composite
def _lines(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_LINE, min_size=1, max_size=6))
    text = ""
    for indent, part in lines:
        text += (draw(_BREAK) if text else "") + indent + part
    return text


@settings(max_examples=500, deadline=None)
@given(_lines())
def test_a_text_the_gate_turns_away_holds_no_shape(text: str) -> None:
    # What the look and the shape pass skip (no run, whole or wrapped) the shapes would not
    # have found anything in: the token shapes, the gated ones and their wrapped forms.
    if not has_run(text) and not wrapped_run(text):
        assert redact_shapes(text, Counter()) == []

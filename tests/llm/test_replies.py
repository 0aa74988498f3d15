"""The one parser of model replies that the observer and the reflector share."""

from __future__ import annotations

import pytest

from obsmem.errors import ObserverReplyError
from obsmem.llm.replies import json_object
from obsmem.observe.llm import parse_reply
from obsmem.reflect.llm import parse_operations
from obsmem.sources.model import Turn

ANSWER = '{"observations": [{"text": "User chose SQLite", "turns": [1]}]}'


@pytest.mark.parametrize(
    "reply",
    [
        ANSWER,
        f"```json\n{ANSWER}\n```",
        f"```JSON\n{ANSWER}\n```\n",
        f"```\n{ANSWER}\n```",
        f"Here is the JSON you asked for:\n\n```json\n{ANSWER}\n```\nLet me know.",
        f"Sure: {ANSWER}",
        f"{ANSWER}\n\nNote: I skipped the routine reads {{like ls}}.",
        f"I used {{}} for empty values.\n{ANSWER}",
        f"```json\n{ANSWER}",  # an opening fence never closed
    ],
    ids=[
        "bare",
        "fenced",
        "fenced-upper",
        "fenced-plain",
        "prose-around-fence",
        "prefixed",
        "trailing-braces",
        "brace-in-prose-first",
        "unclosed-fence",
    ],
)
def test_the_answer_is_found_however_it_is_wrapped(reply: str) -> None:
    data = json_object(reply, "observations")
    assert data == {"observations": [{"text": "User chose SQLite", "turns": [1]}]}


@pytest.mark.parametrize(
    "reply",
    ["", "no", "```json\n```", '{"observations": [', "[1, 2, 3]", '"just a string"', "{ broken }"],
    ids=["empty", "prose", "empty-fence", "cut-off", "list", "string", "broken"],
)
def test_a_reply_without_an_object_gives_none(reply: str) -> None:
    assert json_object(reply) is None


def test_without_the_key_the_first_object_is_given() -> None:
    assert json_object('See {"a": 1} and {"b": 2}') == {"a": 1}
    assert json_object('See {"a": 1} and {"b": 2}', "b") == {"b": 2}
    assert json_object('See {"a": 1}', "b") == {"a": 1}  # the caller's shape check decides


def _turn() -> Turn:
    return Turn(
        role="user",
        text="Use SQLite",
        timestamp="2026-02-10T14:30:00Z",
        session="s",
        agent="claude-code",
        project="p",
        source_path="/t.jsonl",
        line_start=1,
        line_end=1,
        byte_start=0,
        byte_end=10,
    )


@pytest.mark.parametrize(
    "wrap",
    [
        "{}",
        "```json\n{}\n```",
        "Here you go:\n{}\nThat is all {{ok}}.",
    ],
)
def test_observer_and_reflector_read_the_same_wrappings(wrap: str) -> None:
    drafts, _ = parse_reply(wrap.format(ANSWER), [_turn()])
    assert [d.text for d in drafts] == ["User chose SQLite"]
    operations = '{"operations": [{"op": "add", "text": "x"}]}'
    assert parse_operations(wrap.format(operations)) == [{"op": "add", "text": "x"}]


def test_broken_replies_fail_each_caller_its_own_way() -> None:
    with pytest.raises(ObserverReplyError, match="not JSON"):
        parse_reply('{"observations": [', [_turn()])
    with pytest.raises(ObserverReplyError, match="expected shape"):
        parse_reply('{"observations": 3}', [_turn()])
    assert parse_operations('{"operations": [') is None
    assert parse_operations('{"operations": 3}') is None

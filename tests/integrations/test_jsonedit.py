"""In-place JSON edits: the change lands where it should and every other byte stays."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.integrations import jsonedit

SETTINGS = """{
  "permissions": {
    "allow": ["Bash(npm test:*)", "Read(~/.zshrc)"],
    "deny": []
  },
  "env": {"FOO": "1"},
  "model": "opus"
}
"""


def span_text(text: str, path: list[str | int]) -> str:
    span = jsonedit.locate(text, path)
    assert span is not None
    return text[span[0] : span[1]]


def test_locate_finds_values_by_key_and_index() -> None:
    assert span_text(SETTINGS, ["model"]) == '"opus"'
    assert span_text(SETTINGS, ["permissions", "allow", 1]) == '"Read(~/.zshrc)"'
    assert span_text(SETTINGS, ["permissions", "deny"]) == "[]"
    assert jsonedit.locate(SETTINGS, ["nope"]) is None
    assert jsonedit.locate(SETTINGS, ["model", "x"]) is None  # a key of a string
    assert jsonedit.locate(SETTINGS, ["permissions", "allow", 2]) is None
    assert jsonedit.locate(SETTINGS, ["env", 0]) is None  # an index of an object


def test_members_and_elements_in_file_order() -> None:
    root = jsonedit.root_span(SETTINGS)
    assert [m.key for m in jsonedit.members(SETTINGS, root)] == ["permissions", "env", "model"]
    allow = jsonedit.locate(SETTINGS, ["permissions", "allow"])
    assert allow is not None
    assert [SETTINGS[a:b] for a, b in jsonedit.elements(SETTINGS, allow)] == [
        '"Bash(npm test:*)"',
        '"Read(~/.zshrc)"',
    ]


def test_escaped_keys_and_the_last_duplicate_win_like_json_loads() -> None:
    text = '{"a\\"b": 1, "k": 1, "k": 2}'
    assert span_text(text, ['a"b']) == "1"
    assert span_text(text, ["k"]) == "2"


def test_a_byte_order_mark_is_allowed() -> None:
    text = '\ufeff{\n  "a": 1\n}\n'
    assert jsonedit.parse(text) == {"a": 1}
    added = jsonedit.set_member(text, jsonedit.root_span(text), "b", 2)
    assert added == '\ufeff{\n  "a": 1,\n  "b": 2\n}\n'


def test_set_member_appends_in_the_files_indentation() -> None:
    root = jsonedit.root_span(SETTINGS)
    after = jsonedit.set_member(SETTINGS, root, "hooks", {"Stop": [{"hooks": []}]})
    assert after == SETTINGS.replace(
        '"model": "opus"\n',
        '"model": "opus",\n  "hooks": {\n    "Stop": [\n      {\n        "hooks": []\n'
        "      }\n    ]\n  }\n",
    )
    assert jsonedit.remove_member(after, jsonedit.root_span(after), "hooks") == SETTINGS


@pytest.mark.parametrize("indent", ["    ", "\t"])
def test_other_indentations_are_followed(indent: str) -> None:
    text = json.dumps({"a": {"b": [1]}}, indent=indent) + "\n"
    span = jsonedit.locate(text, ["a"])
    assert span is not None
    after = jsonedit.set_member(text, span, "c", {"d": 1})
    assert after == json.dumps({"a": {"b": [1], "c": {"d": 1}}}, indent=indent) + "\n"


def test_crlf_files_get_crlf_lines() -> None:
    text = SETTINGS.replace("\n", "\r\n")
    after = jsonedit.set_member(text, jsonedit.root_span(text), "hooks", {"Stop": []})
    assert after == text.replace(
        '"model": "opus"\r\n', '"model": "opus",\r\n  "hooks": {\r\n    "Stop": []\r\n  }\r\n'
    )
    assert jsonedit.remove_member(after, jsonedit.root_span(after), "hooks") == text


def test_compact_files_stay_compact() -> None:
    text = '{"a": [1, 2], "b": {}}'
    arr = jsonedit.locate(text, ["a"])
    assert arr is not None
    after = jsonedit.append_element(text, arr, {"x": 1})
    assert after == '{"a": [1, 2, {"x": 1}], "b": {}}'
    obj = jsonedit.locate(after, ["b"])
    assert obj is not None
    assert jsonedit.set_member(after, obj, "k", "v") == '{"a": [1, 2, {"x": 1}], "b": {"k": "v"}}'


def test_empty_containers_in_a_pretty_file_open_on_new_lines() -> None:
    text = '{\n  "hooks": {},\n  "list": []\n}\n'
    hooks = jsonedit.locate(text, ["hooks"])
    assert hooks is not None
    after = jsonedit.set_member(text, hooks, "Stop", [])
    assert after == '{\n  "hooks": {\n    "Stop": []\n  },\n  "list": []\n}\n'
    again = jsonedit.locate(after, ["hooks"])
    assert again is not None
    assert jsonedit.remove_member(after, again, "Stop") == text


def test_set_member_replaces_an_existing_value_in_place() -> None:
    root = jsonedit.root_span(SETTINGS)
    after = jsonedit.set_member(SETTINGS, root, "model", "sonnet")
    assert after == SETTINGS.replace('"opus"', '"sonnet"')


def test_removing_a_first_or_middle_child_takes_its_comma() -> None:
    text = '{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}'
    root = jsonedit.root_span(text)
    assert jsonedit.remove_member(text, root, "a") == '{\n  "b": 2,\n  "c": 3\n}'
    assert jsonedit.remove_member(text, root, "b") == '{\n  "a": 1,\n  "c": 3\n}'
    assert jsonedit.remove_member(text, root, "zzz") == text
    arr = "[1, 2, 3]"
    span = jsonedit.root_span(arr)
    assert jsonedit.remove_element(arr, span, 1) == "[1, 3]"
    assert jsonedit.remove_element(arr, span, 2) == "[1, 2]"
    assert jsonedit.remove_element("[7]", jsonedit.root_span("[7]"), 0) == "[]"


def test_replace_value_lays_out_objects_like_the_file() -> None:
    text = '{\n  "servers": {\n    "om": "old"\n  }\n}\n'
    span = jsonedit.locate(text, ["servers", "om"])
    assert span is not None
    after = jsonedit.replace_value(text, span, {"command": "om", "args": ["mcp"]})
    assert jsonedit.parse(after) == {"servers": {"om": {"command": "om", "args": ["mcp"]}}}
    assert '\n    "om": {\n      "command": "om",\n' in after


def test_detect_indent_defaults_to_two_spaces() -> None:
    assert jsonedit.detect_indent("{}") == "  "
    assert jsonedit.detect_indent('{\n    "a": 1\n}') == "    "


def test_invalid_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        jsonedit.parse('{"a": }')
    for broken in ("{oops", '{"a": }', "  "):
        with pytest.raises(ValueError):
            jsonedit.locate(broken, ["a"])


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=8))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    data=st.dictionaries(st.text(max_size=6), _VALUES, max_size=5),
    indent=st.sampled_from([None, 2, 4, "\t"]),
    value=_VALUES,
)
def test_adding_then_removing_a_member_gives_back_the_bytes(
    data: dict[str, Any], indent: int | str | None, value: Any
) -> None:
    text = json.dumps(data, indent=indent) + "\n"
    key = "om-added-key"
    after = jsonedit.set_member(text, jsonedit.root_span(text), key, value)
    assert jsonedit.parse(after) == {**data, key: value}
    assert jsonedit.remove_member(after, jsonedit.root_span(after), key) == text

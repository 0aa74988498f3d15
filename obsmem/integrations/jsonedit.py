"""Edit JSON text in place: one member or element changes, every other byte stays as it was.

Agents' settings files are JSON that people edit by hand and that the agents rewrite themselves.
Parsing and re-serialising would rewrite spacing, escapes and number forms across the whole file
and leave ``om uninstall`` no way to give the user their bytes back. So these functions find a
value's span with the standard decoder (C speed, even on a large ``~/.claude.json``) and splice
text into that span only.

Appending writes ``,<newline><indent>value`` after the last member or element, in the
indentation the file already uses; removing the last one cuts exactly that, and emptying a
container leaves ``{}`` or ``[]``. An append followed by a removal therefore gives back the
original text.

Spans are ``(start, end)`` offsets into the text; every edit returns new text, so callers locate
again (:func:`locate`) after each edit rather than reuse old offsets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

__all__ = [
    "Member",
    "append_element",
    "detect_indent",
    "elements",
    "locate",
    "members",
    "parse",
    "remove_element",
    "remove_member",
    "replace_value",
    "root_span",
    "set_member",
]

Span = tuple[int, int]

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_INDENTED = re.compile(r"\n([ \t]+)[\"{\[\]}0-9tfn-]")
_BOM = "\ufeff"


@dataclass(frozen=True)
class Member:
    """One ``"key": value`` of an object: where the key starts and the value's span."""

    key: str
    start: int
    value: Span


def parse(text: str) -> Any:
    """The JSON value of ``text`` (a leading byte-order mark is allowed); ValueError if invalid."""
    return json.loads(text[1:] if text.startswith(_BOM) else text)


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _value_end(text: str, i: int) -> int:
    try:
        return int(_DECODER.raw_decode(text, i)[1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at offset {i}: {exc.msg}") from None


def root_span(text: str) -> Span:
    """The span of the document's top-level value (``text`` is valid JSON: see :func:`parse`).

    It ends where the text's trailing whitespace starts, which spares decoding the whole
    document once more for every edit of a large file.
    """
    start = _skip(text, 1 if text.startswith(_BOM) else 0)
    end = len(text.rstrip(" \t\n\r"))
    if end <= start:
        raise ValueError("no JSON value")
    return start, end


def _children(text: str, span: Span, opener: str) -> list[tuple[str, int, Span]]:
    """(key, where the child starts, its value's span) for each member or element, in order."""
    if text[span[0]] != opener:
        raise ValueError("not a JSON " + ("object" if opener == "{" else "array"))
    closer = "}" if opener == "{" else "]"
    found: list[tuple[str, int, Span]] = []
    i = _skip(text, span[0] + 1)
    if text[i] == closer:
        return found
    while True:
        start, key = i, ""
        if opener == "{":
            key, i = scanstring(text, i + 1)
            i = _skip(text, _skip(text, i) + 1)  # past the colon
        end = _value_end(text, i)
        found.append((key, start, (i, end)))
        i = _skip(text, end)
        if text[i] == closer:
            return found
        i = _skip(text, i + 1)  # past the comma


def members(text: str, span: Span) -> list[Member]:
    """The members of the object at ``span``, in file order."""
    return [Member(key, start, value) for key, start, value in _children(text, span, "{")]


def elements(text: str, span: Span) -> list[Span]:
    """The spans of the elements of the array at ``span``, in order."""
    return [value for _, _, value in _children(text, span, "[")]


def locate(text: str, path: Sequence[str | int]) -> Span | None:
    """The span of the value at ``path`` (object keys and array indexes); None when absent.

    A key asked of something that is not an object (or an index of a non-array) is absent too.
    """
    span = root_span(text)
    for step in path:
        opener = text[span[0]]
        if isinstance(step, str):
            if opener != "{":
                return None
            match = [m for m in members(text, span) if m.key == step]
            if not match:
                return None
            span = match[-1].value  # the last duplicate wins, as in json.loads
        else:
            if opener != "[":
                return None
            items = elements(text, span)
            if not 0 <= step < len(items):
                return None
            span = items[step]
    return span


def detect_indent(text: str) -> str:
    """The file's indentation unit (the first indented line's), or two spaces."""
    match = _INDENTED.search(text)
    return match.group(1) if match else "  "


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    match = re.match(r"[ \t]*", text[start:pos])
    return match.group() if match else ""


def _render(value: Any, indent: str | None, at: str, newline: str = "\n") -> str:
    """``value`` as JSON; pretty-printed with ``indent`` per level, continuing lines at ``at``."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=indent, ensure_ascii=False).replace("\n", newline + at)


def _newline(text: str) -> str:
    """The file's line ending: CRLF when it has any, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def _pretty(text: str) -> bool:
    return "\n" in text.strip()


def _insert_child(text: str, span: Span, children: list[Span], item: Any, key: str | None) -> str:
    """Append a child (a member when ``key`` is given) after the container's last one."""
    unit, nl = detect_indent(text), _newline(text)
    prefix = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
    if children:
        gap = text[span[0] + 1 : children[0][0]]
        if "\n" in gap:
            at = gap[gap.rindex("\n") + 1 :]
            piece = "," + nl + at + prefix + _render(item, unit, at, nl)
        else:
            piece = ", " + prefix + _render(item, None, "")
        end = children[-1][1]
        return text[:end] + piece + text[end:]
    inner = text[span[0] + 1 : span[1] - 1]
    if "\n" in inner or _pretty(text):
        base = _line_indent(text, span[0])
        at = base + unit
        filling = nl + at + prefix + _render(item, unit, at, nl) + nl + base
    else:
        filling = prefix + _render(item, None, "")
    return text[: span[0] + 1] + filling + text[span[1] - 1 :]


def _remove_child(text: str, span: Span, children: list[Span], index: int) -> str:
    """Cut one child: with the comma before it when last, with the one after it otherwise."""
    if len(children) == 1:
        return text[: span[0] + 1] + text[span[1] - 1 :]
    if index == len(children) - 1:
        return text[: children[index - 1][1]] + text[children[index][1] :]
    return text[: children[index][0]] + text[children[index + 1][0] :]


def set_member(text: str, span: Span, key: str, value: Any) -> str:
    """``text`` with the object at ``span`` holding ``key: value`` (replaced in place, or added)."""
    found = members(text, span)
    for member in reversed(found):
        if member.key == key:
            return replace_value(text, member.value, value)
    return _insert_child(text, span, [(m.start, m.value[1]) for m in found], value, key)


def remove_member(text: str, span: Span, key: str) -> str:
    """``text`` without the object's member ``key`` (unchanged when it has none)."""
    found = members(text, span)
    for index in range(len(found) - 1, -1, -1):
        if found[index].key == key:
            children = [(m.start, m.value[1]) for m in found]
            return _remove_child(text, span, children, index)
    return text


def append_element(text: str, span: Span, value: Any) -> str:
    """``text`` with ``value`` appended to the array at ``span``."""
    return _insert_child(text, span, elements(text, span), value, None)


def remove_element(text: str, span: Span, index: int) -> str:
    """``text`` without element ``index`` of the array at ``span``."""
    return _remove_child(text, span, elements(text, span), index)


def replace_value(text: str, span: Span, value: Any) -> str:
    """``text`` with the value at ``span`` replaced by ``value``, laid out like its neighbours."""
    pretty = "\n" in text[span[0] : span[1]] or (
        _pretty(text) and isinstance(value, dict | list) and bool(value)
    )
    unit = detect_indent(text) if pretty else None
    rendered = _render(value, unit, _line_indent(text, span[0]), _newline(text))
    return text[: span[0]] + rendered + text[span[1] :]

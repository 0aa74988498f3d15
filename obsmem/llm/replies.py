"""The JSON object in a model's reply, however the model wrapped it.

Both the observer and the reflector ask for one JSON object and nothing else, and both get, now
and then, the object inside a code fence, after a sentence ("Here is the JSON:"), or followed by
a remark. One parser serves both, so a reply one of them can read the other can too.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_object"]

# An opening fence (```json, ```JSON, ``` ) and a closing one, each on a line of its own or at
# the reply's edges: what is between them is the model's answer.
_FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```", re.DOTALL)
_DECODER = json.JSONDecoder()
#: How many ``{`` a reply is searched from before giving up: a reply is a few kilobytes, and a
#: broken one must not cost a decode attempt at every brace of a long text.
_MAX_STARTS = 50


def _candidates(text: str) -> list[str]:
    stripped = text.strip()
    fenced = [m.group(1).strip() for m in _FENCED.finditer(stripped)]
    if not fenced and stripped.startswith("```"):
        # An opening fence the reply never closed (cut off, or the model stopped short).
        fenced = [stripped.split("\n", 1)[1] if "\n" in stripped else ""]
    return [*fenced, stripped]


def _objects(candidate: str) -> list[dict[str, Any]]:
    """The JSON objects of ``candidate``: itself when it is one, else those that parse from
    its first few ``{`` (each position tried once, in order)."""
    try:
        data = json.loads(candidate)
    except ValueError:
        pass
    else:
        return [data] if isinstance(data, dict) else []
    found: list[dict[str, Any]] = []
    start = candidate.find("{")
    for _ in range(_MAX_STARTS):
        if start < 0:
            break
        try:
            data, end = _DECODER.raw_decode(candidate, start)
        except ValueError:
            end = start + 1
        else:
            if isinstance(data, dict):
                found.append(data)
        start = candidate.find("{", end)
    return found


def json_object(text: str, key: str | None = None) -> dict[str, Any] | None:
    """The JSON object a model's reply holds, or None when it holds none.

    The inside of each code fence is read first, then the reply itself; of each, the whole text
    when it is an object, else the objects that parse from a ``{`` onwards, so prose before the
    object and text after it (braces included) are ignored. With ``key``, the first object that
    has that key wins (a ``{}`` in a sentence before the answer is not the answer); failing
    that, the first object found. A JSON value that is not an object (a list, a string) is not
    what either caller asks for and is passed over.
    """
    first: dict[str, Any] | None = None
    for candidate in _candidates(text):
        for data in _objects(candidate):
            if key is None or key in data:
                return data
            if first is None:
                first = data
    return first

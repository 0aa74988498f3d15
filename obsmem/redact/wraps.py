"""Wrapped tokens: where a line break may cut a token, and the runs that only joined lines make.

Part of :mod:`obsmem.redact` (the token shapes of :mod:`obsmem.redact.shapes` use it). A wrap
point is a line break (real, CRLF or JSON-escaped ``\\n``) right after a token character, the
next line going on with one after up to 12 blanks: a terminal's width or a wrapped paste cuts a
token there. Every token is a run of 20 token characters; cut by wraps, only its parts joined
make that run.

- :func:`wrapped_run`: whether joining every wrap point makes a run of 20 (what the look and
  the shape pass ask of a multi-line text without a run: short lines of prose and code have
  none, so they get no run pass);
- :func:`short_tails`: the runs shorter than 20 that end at a wrap point and make 20 with the
  next line's run, where the first part of a token cut into two short parts may be (in a text
  of many short lines, found by one regex made by :func:`tail_starts`);
- :func:`join_all`, :func:`joins`: the joins the gated shapes are searched in, each with a
  table (:class:`Join`) that maps a match back to the parts of the text it is made of.

Each regex starts with its break, so ``re`` skips to line breaks rather than trying every
position of a text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

__all__ = [
    "CONTINUATION",
    "LINE_PART",
    "NEWLINE",
    "RUN_BYTES",
    "RUN_MIN",
    "RUN_NEEDLE",
    "RUN_TABLE",
    "WRAP_MAX",
    "Join",
    "Span",
    "cut_prefix",
    "join_all",
    "joins",
    "short_tails",
    "tail_starts",
    "wrapped_run",
]

Span = tuple[int, int, str]

# Runs of token characters are found on a copy of the text where each of them is "a" and every
# other character a space (one byte per character, so positions carry over): str.find on that
# is several times faster than any regex over a character class.
RUN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.+/=-")
#: Each byte of an ASCII-encoded text mapped to ``a`` (a token character) or a space.
RUN_TABLE = bytes(0x61 if i in RUN_BYTES else 0x20 for i in range(256))
RUN_MIN = 20  # no token shape is shorter
#: What a mapped text holds where it has a run long enough for a token.
RUN_NEEDLE = b"a" * RUN_MIN

# A line that may continue a wrapped token: indentation, then only token characters.
# It ends its line, or the JSON string it is in (a JSON-escaped line break before it).
CONTINUATION = re.compile(r"[ \t]{0,12}([A-Za-z0-9_+/=.~\-]{4,4000})[ \t]*(?=\r?\n|\\n|$|\")")
NEWLINE = re.compile(r"\r?\n|\\n")
# The part of a wrapped token on its first line: bounded, so a long run costs no rescans.
LINE_PART = re.compile(r"[^ \t\r\n\\\"'`]*")
WRAP_MAX = 400


def cut_prefix(text: str, pos: int, prefix: str) -> bool:
    """Whether the line at ``pos`` ends inside ``prefix`` (``FLWSECK_TEST`` then ``-...``)."""
    stop = pos + len(prefix) + 1
    if text.find("\n", pos, stop) == -1 and text.find("\\", pos, stop) == -1:
        return False  # no line break, real or JSON-escaped, that near: the common case
    part = LINE_PART.match(text, pos, pos + len(prefix))
    end = part.end() if part is not None else pos
    return (
        end - pos < len(prefix)
        and prefix.startswith(text[pos:end])
        and NEWLINE.match(text, end) is not None
    )


# A wrap point of a text whose breaks are all plain ones: a line break between two runs of
# token characters, where a wrapped token may be cut. The break is matched before the
# character ahead of it is checked, so re skips to line breaks.
_JOINED = r"A-Za-z0-9_+/=.~:|-"
_FLAT_JOIN = re.compile(rf"\n(?<=[{_JOINED}]\n)[ \t]{{0,12}}(?=[{_JOINED}])")
_CRLF = re.compile("\r\n")
_ESCAPED_NL = re.compile(r"\\n")


@dataclass(frozen=True)
class Join:
    """A text with stretches of another taken out (its wrap points), and where: ``cuts`` are
    the positions in ``text`` a stretch was taken out before, ascending, and ``shifts`` how far
    the other text is ahead of ``text`` from each on. A match in ``text`` is mapped back by
    position (:meth:`spans`), never searched for by its string: that costs a bisection, not a
    scan of the text, and finds every copy of a token, each where it is."""

    text: str
    cuts: list[int]
    shifts: list[int]

    def spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """The spans of the other text that ``text[start:end]`` is made of: one when no
        stretch was taken out inside it, else one per part."""
        i = bisect_right(self.cuts, start)
        shift = self.shifts[i - 1] if i else 0
        out = []
        while i < len(self.cuts) and self.cuts[i] < end:
            out.append((start + shift, self.cuts[i] + shift))
            start, shift = self.cuts[i], self.shifts[i]
            i += 1
        out.append((start + shift, end + shift))
        return out


def join_all(text: str) -> tuple[str, str]:
    """``text`` with every break a plain one, and that with every wrap point joined: what the
    gated shapes are looked for in first. Every break is made a plain one first so that the
    join is one regex that starts with its literal ``"\\n"`` (the three kinds of break in one
    pattern make ``re`` try every position)."""
    flat = _flat(text)
    return flat, _FLAT_JOIN.sub("", flat)


def _flat(text: str) -> str:
    """``text`` with every break, CRLF or JSON-escaped, a plain ``"\\n"``."""
    flat = text.replace("\r\n", "\n") if "\r" in text else text
    return flat.replace("\\n", "\n") if "\\n" in flat else flat


def joins(text: str) -> list[Join]:
    """The joins the gated shapes are searched in, each with its way back to ``text``: every
    wrap point joined (as :func:`join_all`), then, when there are two or more, every other
    one, and the others: a token cut once is joined there while the lines before and after it
    stay apart, so a shape that ends at a line break (its end is what tells it: ``-us12``,
    ``_mmk``) is not glued to the next line's word as it is when every wrap point is joined.
    Linear: one pass over the breaks."""
    # The two-character breaks made one character ("\r\n", "\\n"), at their positions in
    # text; the k-th is at k fewer in the flat text. A regex of a literal alone is a fast search.
    pairs = [m.start() for m in _CRLF.finditer(text)] if "\r" in text else []
    if "\\n" in text:
        pairs = sorted(pairs + [m.start() for m in _ESCAPED_NL.finditer(text)])
    flat = _flat(text)
    full_cuts: list[int] = []
    full_shifts: list[int] = []
    gaps: list[tuple[int, int]] = []  # the wrap points, in text
    shift = k = taken = 0  # text ahead of the join; pairs passed; flat characters joined away
    for m in _FLAT_JOIN.finditer(flat):
        g, e = m.span()
        while k < len(pairs) and pairs[k] - k < g:
            shift += 1  # a pair made one before this wrap point: one more character in text
            full_cuts.append(pairs[k] - k - taken)
            full_shifts.append(shift)
            k += 1
        at_pair = k < len(pairs) and pairs[k] - k == g
        gaps.append((g + k, e + k + at_pair))
        if at_pair:
            k += 1
        full_cuts.append(g - taken)  # where the next line goes on in the join
        shift += e - g + at_pair
        taken += e - g
        full_shifts.append(shift)
    while k < len(pairs):
        shift += 1
        full_cuts.append(pairs[k] - k - taken)
        full_shifts.append(shift)
        k += 1
    found = [Join(_FLAT_JOIN.sub("", flat), full_cuts, full_shifts)]
    if len(gaps) >= 2:
        for keep in (0, 1):
            found.append(_join_at(text, gaps[1 - keep :: 2]))
    return found


def _join_at(text: str, gaps: list[tuple[int, int]]) -> Join:
    """``text`` with the stretches ``gaps`` (ascending, apart) taken out."""
    parts, cuts, shifts = [], [], []
    at = shift = 0
    for g, e in gaps:
        parts.append(text[at:g])
        cuts.append(g - shift)
        shift += e - g
        shifts.append(shift)
        at = e
    parts.append(text[at:])
    return Join("".join(parts), cuts, shifts)


# A line break a wrapped token may be cut at (as _wrapped and NEWLINE take it: real, CRLF or
# JSON-escaped, nothing after the first part, up to 12 blanks before the second).
_R = "A-Za-z0-9_~.+/=\\-"
_BREAK = r"(?:\r?\n|\\n)"


def tail_starts(seconds: dict[str, str], ones: str, mixed: dict[str, str]) -> re.Pattern[str]:
    """The places where the first part of a wrapped token may start in a run shorter than 20
    that ends at a wrap point: a shape's first two characters (``seconds``: each first
    character with the second ones it may have) or its only one (``ones``), at the run's start
    or after ``. / = +`` (as the shapes are tried), then token characters up to the break, the
    next line going on with one; and one of the two runs has 10 (of two parts that make 20, one
    has), the sum told exactly afterwards (_tail_at). After the first two characters of
    ``mixed`` (the same form as ``seconds``), every shape a wrapped token may be takes it only
    when it has upper and lower case letters and digits: those must occur in the first part or
    the next line.

    One regex over the whole text: it starts with the shapes' first characters, which ``re``
    skips to, so a text of short lines that start no shape (``import os``, ``abcdefghij``) costs
    no Python step per line, as one search per line break did."""
    starts = {2: r"(?:(?<![{R}]..)|(?<=[./=+]..)|(?<=\\[nrt]..))", 1: ""}
    starts[1] = starts[2].replace("..", ".")
    # An upper case letter (lower case, a digit) in the rest of the first part or the next line.
    has = "".join(
        rf"(?=[{rest}]*+(?:[{c}]|{_BREAK}[ \t]{{{{0,12}}}}[{rest}]*+[{c}]))"
        for c, rest in (
            ("A-Z", "a-z0-9_~.+/=\\-"),
            ("a-z", "A-Z0-9_~.+/=\\-"),
            ("0-9", "A-Za-z_~.+/=\\-"),
        )
    )
    branches = []
    for first in sorted(set(seconds) | set(ones) | set(mixed)):
        parts = []
        if first in seconds:
            parts.append(f"[{re.escape(seconds[first])}]{starts[2]}[{{R}}]{{{{0,17}}}}+")
        if first in mixed:
            parts.append(f"[{re.escape(mixed[first])}]{starts[2]}{has}[{{R}}]{{{{0,17}}}}+")
        if first in ones:
            parts.append(f"{starts[1]}[{{R}}]{{{{0,18}}}}+")
        branches.append(re.escape(first) + "(?:" + "|".join(parts) + ")")
    ahead = rf"(?=(?:(?<=[{{R}}]{{{{10}}}})|(?={_BREAK}[ \t]{{{{0,12}}}}[{{R}}]{{{{10}}}}))"
    ahead += rf"{_BREAK}[ \t]{{{{0,12}}}}[{{R}}])"
    return re.compile(("(?:" + "|".join(branches) + ")" + ahead).format(R=_R))


def _tail_pattern(brk: str) -> re.Pattern[str]:
    """The wrap points at the break ``brk`` (a regex of literals, matched first) after a run
    shorter than 20, where one of the two runs has 10: that rules out most breaks of prose and
    code. The cheapest tests go first: a token character on each side."""
    return re.compile(
        rf"{brk}(?=[ \t]{{0,12}}[{_R}])(?<=[{_R}]{brk})"
        rf"(?:(?<=[{_R}]{{10}}{brk})|(?=[ \t]{{0,12}}[{_R}]{{10}}))(?<![{_R}]{{{RUN_MIN}}}{brk})"
    )


# Each kind of break on its own (one pattern for all three is several times slower), searched
# only in a text that holds it.
_TAIL_SEARCHES = (
    (_tail_pattern(r"\n"), "\n"),
    (_tail_pattern(r"\r\n"), "\r\n"),
    (_tail_pattern(r"\\n"), "\\n"),
)
# Per wrap point found at a break, a Python step costs about what `tail_starts` costs for 50
# characters of text: past that share, the one regex over the whole text is the cheaper.
_CHARS_PER_STEP = 50


def short_tails(text: str, mask: bytes, starts: re.Pattern[str]) -> list[tuple[int, int]]:
    """The runs shorter than 20 that end at a wrap point and make 20 with the run the next line
    starts with, where a shape may start: where the first part of a wrapped token may be
    (``mask`` as for _runs). The wrap points are looked for first by a search that skips to
    line breaks: most texts have none, and a few are each looked at in Python; a text with more
    than one in 50 characters (many short lines of token characters) is searched once with
    ``starts`` (from :func:`tail_starts`) instead, which leaves out the tails no shape can
    start in. Either way, the shapes find the same tokens."""
    limit = len(text) // _CHARS_PER_STEP
    ends: list[int] = []
    for pattern, needle in _TAIL_SEARCHES:
        if needle not in text:
            continue
        m = pattern.search(text)  # most texts have none: no iterator made for them
        while m is not None and len(ends) <= limit:
            ends.append(m.start())
            m = pattern.search(text, m.end())
    found: list[tuple[int, int]] = []
    if len(ends) <= limit:
        for line_end in ends:
            _tail_at(text, mask, line_end, found)
        if len(found) > 1:
            found.sort()
        return found
    last = -1
    for m in starts.finditer(text):
        line_end = m.end()
        if line_end != last:  # two places in one run: one tail
            last = line_end
            _tail_at(text, mask, line_end, found)
    return found


_AFTER_BREAK = re.compile(r"(?:\r?\n|\\n)[ \t]{0,12}")


def _tail_at(text: str, mask: bytes, line_end: int, found: list[tuple[int, int]]) -> None:
    """Add the run that ends at the wrap point at ``line_end`` to ``found`` when it is shorter
    than 20 and it and the run the next line starts with make 20."""
    start = mask.rfind(b" ", 0, line_end) + 1
    if start and text[start - 1] == "\\" and text[start] in "nrt":
        start += 1  # a JSON-escaped line break: the run starts after it
    tail = line_end - start
    after = _AFTER_BREAK.match(text, line_end)
    head_start = after.end() if after is not None else line_end
    head_end = mask.find(b" ", head_start, head_start + RUN_MIN)
    head = (head_end if head_end != -1 else min(len(mask), head_start + RUN_MIN)) - head_start
    if 0 < tail < RUN_MIN <= tail + head:
        found.append((start, line_end))


#: For :func:`wrapped_run`: each byte mapped to ``a`` (a token character), itself (a line
#: break), a space (a space or tab) or ``#`` (anything else); a carriage return is dropped.
_WRAP_TABLE = bytes(
    0x61 if i in RUN_BYTES else i if i == 0x0A else 0x20 if i in b" \t" else 0x23
    for i in range(256)
)
# A wrap point in that map: a break between token characters, up to 12 blanks after it. It
# starts with its literal "\n", so re skips to line breaks.
_WRAP_GAP = re.compile(rb"\n(?<=a\n) {0,12}(?=a)")


def wrapped_run(text: str) -> bool:
    """Whether ``text`` has a run of 20 token characters once every wrap point is joined (a
    line break, real or JSON-escaped, right after a token character, the next line going on
    with one after up to 12 blanks). A token cut by wraps (in two lines, or over many, as the
    gated search joins them) makes one; a whole token is a run of 20 already, which the caller
    looks for first (``has_run``). Short lines of prose and code ("import os" / "import sys")
    have none, and get no run pass."""
    if "\\n" in text:
        text = text.replace("\\n", "\n")  # positions no longer matter, only the yes or no
    if "\n" not in text:
        return False
    mask = text.encode("ascii", "replace").translate(_WRAP_TABLE, b"\r")
    return _WRAP_GAP.sub(b"", mask).find(RUN_NEEDLE) != -1

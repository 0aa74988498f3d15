"""The lines after a keyed value: of their own, or the value's (wrapped, or a YAML block).

Part of :mod:`obsmem.redact`, asked by :mod:`obsmem.redact.keys`:

- :func:`own_line`: whether the lone token on the line after ``DB_PASSWORD=Xk29fPq7`` is a line
  of its own rather than the rest of a value wrapped there (``wrapped_value`` asks it before it
  takes a line). A wrapped value's rest is drawn from the alphabet of its first part and written
  by no one; a line of its own is written (a word, a file or host name, a branch, a region) or
  has a shape of its own (a UUID, a commit SHA, a digest, a container id, an integrity string).
  Each test is a regex or a count over one short line.
- :func:`block_body`: the lines of a YAML block scalar (``password: |``, ``!vault |``).
"""

from __future__ import annotations

import re

__all__ = ["VAULT", "block_body", "own_line"]

_LETTER = re.compile(r"[A-Za-z]")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z")
# Hex of one case, as long as a short commit SHA or longer: a SHA, a digest, a container id.
_HEX_LINE = re.compile(r"[0-9a-f]{7,}\Z|[0-9A-F]{7,}\Z")
_HEX_LOWER = frozenset("0123456789abcdef")
_HEX_UPPER = frozenset("0123456789ABCDEF")
# A value that ends in hex of one case (eight characters at least, a letter among them).
_HEX_END = re.compile(r"(?=[0-9]*[a-f])[0-9a-f]{8,}\Z|(?=[0-9]*[A-F])[0-9A-F]{8,}\Z")
# A hex value's rest is all digits as often as (10/16)**n: one in 17 for six, so a number that
# long after hex is taken for its rest, a shorter one (a port, a count) for a line of its own.
_HEX_DIGITS = 6
# A subresource integrity string (package-lock.json, yarn.lock, a <script> tag).
_INTEGRITY = re.compile(r"sha(?:1|256|384|512)-[A-Za-z0-9+/]{16,}={0,2}\Z")
# Letters only, written as words are: lower, UPPER, Capitalised, camelCase or PascalCase parts
# of at least two lower-case letters, snake_ or kebab-joined ("done", "EOF", "fetchToken").
_PIECE = r"(?:[a-z]+|[A-Z]+|[A-Z][a-z]+|(?:[a-z]{2,}|[A-Z][a-z]{2,})(?:[A-Z][a-z]{2,})+)"
_WORD = re.compile(rf"{_PIECE}(?:[_\-]{_PIECE})*\Z")
_LONG_WORD = 12
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_FILE_NAME = re.compile(r"\.[A-Za-z0-9]{1,6}\Z")
_LOWER_PATH = re.compile(r"/?[a-z0-9_.\-]+(?:/[a-z0-9_.\-]*)+\Z")  # base64 mixes cases
# A file or host name without a path (requirements-dev.txt, db-01.internal.example.com): no
# token shape ends in a dot and a short extension (a JWT's last part is its long signature).
_NAMED_FILE = re.compile(r"[A-Za-z0-9_][\w\-]*(?:\.[\w\-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}\Z")
# A short name with a number: python3, utf8, x86_64, sha256.
_NAME = re.compile(r"[a-z]{1,6}[0-9]{1,3}(?:_[0-9]{1,3})?\Z")
_DUNDER = re.compile(r"__[A-Za-z][A-Za-z0-9_]*__\Z")  # __init__, __pycache__
# Pieces of a written name, joined by - _ . / (us-east-1, fix-issue-42, release-2026-11-30,
# feature/JIRA-1234-add-auth, node18-alpine3.19): words, each with a number after it or not,
# and numbers of up to four digits.
_JOINERS = re.compile(r"[\-_./]+")
# One piece at least is a word in lower case, or two letters among three pieces (ip-10-0-1-23).
_LOWER_WORD = re.compile(r"[a-z]{3}|\A[a-z]{2}(?:[\-_./][0-9A-Za-z]+){2}")
_NAMED_PIECE = re.compile(r"(?:[A-Z]?[a-z]{2,}|[A-Z]{2,})[0-9]{0,4}\Z|v?[0-9]{1,4}\Z")
# How long a line of one letter case after a value of both must be to be taken for a line of
# its own: the rest of a random value of both cases lacks one of them with a chance of about
# (36/62)**n, under 1 in 4,000 from 16 characters on.
_ONE_CASE_MIN = 16
_TAIL = 24  # the end of a value judged for its alphabet: a prefix (SK, dapi, sk_live_) aside
# How long that end must be, lacking a letter case, for a line with that case to be taken for a
# line of its own: a random end of both cases lacks one with a chance of about (36/62)**20.
_ONE_CASE_TAIL = 20
_TAIL_OTHERS = 3  # characters the end has that a line's alphabet lacks (or the other way)


def own_line(first: str, line: str) -> bool:
    """Whether ``line``, alone on the line after the value part ``first``, is a line of its own
    rather than the rest of ``first`` wrapped: another setting (``NEXT_KEY=1``), a dot file, a
    word (``done``, ``EOF``), a number, a UUID, a short name with a number (``python3``), a
    dunder, an integrity string, a path, a file or host name, a line of another alphabet than
    the value's end (a SHA or a digest after a value that is not hex, a ULID after a value of
    both cases) or a written name (``us-east-1``, ``fix-issue-42``). After a hex value, hex
    goes on: a word of hex letters (``cafe``) or a number of six digits or more is its rest.
    Versions and dotted names are left to the caller."""
    if "=" in line.rstrip("=") or line.startswith("."):
        return True
    tail = _JOINERS.split(first[-_TAIL:])[-1]  # the value's end, a prefix aside
    if _HEX_END.match(tail) and (set(line) <= _HEX_LOWER or set(line) <= _HEX_UPPER):
        return len(line) < _HEX_DIGITS and line.isdigit()  # hex goes on in hex ("cafe" too)
    if _is_word(first, line):
        return True
    if _LETTER.search(line) is None:
        return True  # a number
    if _UUID.match(line) or _NAME.match(line) or _DUNDER.match(line):
        return True
    if line.startswith("sha") and _INTEGRITY.match(line):
        return True
    if "/" in line and (_FILE_NAME.search(line) or _LOWER_PATH.match(line.lstrip("~"))):
        return True  # src/obsmem/core.py, usr/local/bin: a path, not base64
    if "." in line and _NAMED_FILE.match(line):
        return True
    return _other_alphabet(tail, line) or _written(line)


def _is_word(first: str, line: str) -> bool:
    """Whether ``line`` is written as words are (see _WORD), a flag's dashes aside. A random
    value of one case and digits may go on without a digit, so a run of one case longer than
    the words that end a command's output ("done", "EOF") after such a value is its rest; and
    a word has a vowel."""
    if not _WORD.match(line.lstrip("-")):
        return False
    if _VOWEL.search(line) is None:
        return False  # four letters and more without a vowel: "tphd" is no word
    one_case = line.islower() or line.isupper()
    return not (len(line) > _LONG_WORD and one_case and any(c.isdigit() for c in first))


def _other_alphabet(tail: str, line: str) -> bool:
    """Whether ``line`` is drawn from another alphabet than the value's end ``tail``: hex of one
    case after an end with three characters that are not (a commit SHA, a digest, a container
    id after a base64 value); a long line of one letter case after an end with three letters
    of the other (a ULID, a pod name after a value of both cases); or a line with three letters
    of a case a long end lacks (a name after a hex or lower-case value). The end is the
    value's last characters after its last ``- _ .``: a prefix (``SK``, ``sk_live_``,
    ``xoxb-``) may be of another alphabet than the random part after it."""
    if _HEX_LINE.match(line):
        hexes = _HEX_LOWER if line.islower() else _HEX_UPPER
        return sum(c not in hexes for c in tail) >= _TAIL_OTHERS
    if len(tail) < _ONE_CASE_TAIL and len(line) < _ONE_CASE_MIN:
        return False  # both short: no count tells (most lines, so the counts are spared)
    end, own = _cases(tail), _cases(line)  # (lower, upper) letters of each
    for case in (0, 1):
        one_case_end = not end[case] and len(tail) >= _ONE_CASE_TAIL
        if one_case_end and own[case] >= _TAIL_OTHERS and _JOINERS.search(line) is None:
            return True  # a value of one case does not go on in the other
        if not own[case] and end[case] >= _TAIL_OTHERS and len(line) >= _ONE_CASE_MIN:
            return True  # nor one of both cases in one
    return False


def _cases(text: str) -> tuple[int, int]:
    """How many lower-case and upper-case letters ``text`` holds."""
    lower: int = sum(map(str.islower, text))
    upper: int = sum(map(str.isupper, text))
    return lower, upper


def _written(line: str) -> bool:
    """Whether ``line`` is a written name: two pieces or more joined by ``- _ . /``, each a word
    (lower case, Capitalised or UPPER) with a number after it or not, or a number
    (``fix-issue-42``, ``us-east-1``, ``feature/JIRA-1234-add-auth``), one of them three
    lower-case letters at least. A name written in one piece of both cases (``getElementById``)
    is not told from a random rest: without a list of words, about one in a hundred random runs
    of 8 to 14 letters and digits reads as one."""
    if _JOINERS.search(line) is None:
        return False
    pieces = [p for p in _JOINERS.split(line) if p]
    return (
        len(pieces) > 1
        and all(_NAMED_PIECE.match(p) for p in pieces)
        and _LOWER_WORD.search(line) is not None
    )


# --- YAML block scalars: password: |, api_token: >-, password: !vault | ---------------------
# A key's block indicator (after an optional tag: !vault) and its line break, real or escaped
# in a string (JSON, a Python repr), LF or CRLF; then each line of the block: its indentation
# and its text.
_BLOCK = re.compile(
    r"[\"']?[ \t]{0,10}:[ \t]{1,10}(?:!{1,2}[\w-]{1,30}[ \t]{1,10})?[|>][+-]?[1-9]?[ \t]*"
    r"(\r?\n|(?:\\r)?\\n)"
)
_BLOCK_LINE = re.compile(r"([ \t]+)(\S[^\r\n]{0,1000}?)[ \t]*(?:\r?\n|\Z)")
# An escaped line ends at an escaped break or at the string's closing quote: a " (JSON escapes
# the others), or a ' that ends a Python repr's string, so before a , ) ] } or the line's end
# rather than a letter or a blank ("Lena's", "students' books" in a JSON string).
_ESCAPED_BLOCK_LINE = re.compile(
    r'([ \t]+)([^\s\\"][^\r\n\\"]{0,1000}?)[ \t]*'
    r"(?:(?:\\r)?\\n|(?=\")|(?='(?:[,;)\]}]|[ \t]*(?:\r?\n|\Z))))"
)
_BLOCK_MAX = 200  # lines of one block taken at most
_INDENT_MAX = 1000  # how far back the key's line start is looked for
#: What an Ansible vault's first line starts with.
VAULT = "$ANSIBLE_VAULT;"


def block_body(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """The lines of a YAML block scalar whose key is ``text[start:end]`` (each line's text, up
    to :data:`_BLOCK_MAX`), or None when no block follows the key. The block is the lines after
    it indented more than the key (a list item's ``- `` counted in), in a text of real line
    breaks or inside a string with escaped ones (JSON, a Python repr)."""
    m = _BLOCK.match(text, end)
    if m is None:
        return None
    escaped = m.group(1).endswith("\\n")
    floor = max(0, start - _INDENT_MAX)
    line_start = text.rfind("\n", floor, start) + 1
    if escaped:  # the line starts after an escaped break or the string's opening quote
        brk = text.rfind("\\n", floor, start)
        line_start = max(
            line_start,
            brk + 2 if brk != -1 else floor,
            text.rfind('"', floor, start) + 1,
            text.rfind("'", floor, start) + 1,  # a Python repr's
        )
    indent = start - max(line_start, floor)
    pattern = _ESCAPED_BLOCK_LINE if escaped else _BLOCK_LINE
    spans: list[tuple[int, int]] = []
    pos = m.end()
    while len(spans) < _BLOCK_MAX:
        line = pattern.match(text, pos)
        if line is None or len(line.group(1)) <= indent:
            break
        spans.append(line.span(2))
        pos = line.end()
    return spans

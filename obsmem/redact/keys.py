"""Secret values in assignments: ``password=...``, ``"token": "..."``, ``--api-key ...``, ``.env``.

Part of :mod:`obsmem.redact`. Keys are found by a keyword search over the lowercased
text (``pass``, ``pwd``, ``secret``, ``token``, ``credential``, ``api_key``, ...); each hit is
grown to the whole identifier, the identifier is split into words (``DB_PASSWORD``, ``apiKey``,
``PGPASSWORD``) and judged by its last secret word, then the value after the separator is taken
and checked against placeholders. Every step does bounded work per hit, so the pass is linear.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from obsmem.redact.rests import VAULT, block_body, own_line

__all__ = [
    "KEYWORDS",
    "KEYWORD_SET",
    "ascii_lower",
    "is_placeholder",
    "label",
    "looks_random",
    "redact_assignments",
    "splice",
    "wrapped_value",
]


_IDENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_MAX_KEY = 64  # an identifier longer than this is not a settings key


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    """``text`` lowercased with every position kept (positions in it are positions in ``text``)."""
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII letters change length when lowered
        low = text.translate(_ASCII_LOWER)
    return low


def label(kind: str) -> str:
    """The text that stands in for a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


# --- Placeholders: values that only stand for a secret --------------------------------------
_PLACEHOLDER_WORDS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "yes", "no", "on", "off",
        "required", "optional", "string", "str", "bytes", "int", "bool", "any", "object",
        "redacted", "hidden", "masked", "secret", "password", "passwd", "pass", "token",
        "api_key", "apikey", "key", "example", "placeholder", "dummy", "test", "todo", "tbd",
        "self", "this", "value", "empty", "env", "default", "changeme", "change_me", "change-me",
        "changeit",
    }
)  # fmt: skip
_MASK_CHARS = frozenset("*xX.•…-_?#")
_PLACEHOLDER_PREFIXES = (
    "your", "my_", "my-", "<", "os.environ", "os.getenv", "process.env", "env(", "env.",
    "getenv", "import.meta.env", "secrets.", "vars.", "/", "~/", "./", "../",
)  # fmt: skip
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")


def is_placeholder(value: str) -> bool:
    """True when ``value`` names or masks a secret instead of being one."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    if v[0] in "$%<{[":
        return True
    if set(v) <= _MASK_CHARS:
        return True
    low = v.lower()
    if low.startswith(("/", "./", "../", "~/")) and not _path_like(v):
        return False  # base64 may start with "/": a path has names between its slashes
    return low in _PLACEHOLDER_WORDS or low.startswith(_PLACEHOLDER_PREFIXES)


def _path_like(value: str) -> bool:
    slashes = value.count("/")
    return "." in value or (slashes >= 2 and len(value) / slashes < 24) or len(value) < 16


def _is_code(value: str) -> bool:
    """A bare value that is a code expression (call, index, attribute), not a literal."""
    return "(" in value or "[" in value or _DOTTED.match(value) is not None


# --- Assignments: password=..., "token": "...", --api-key ..., DB_PASSWORD=... ---------------
# Words a secret-holding key contains; searched with str.find (far faster than a regex
# alternation); "key" counts only behind one of _KEY_PAIRS' words.
_KEYWORDS = ("pass", "pwd", "secret", "token", "credential", "creds", "auth", "signature")
#: Lowercase substrings one of which a text must hold for :func:`redact_assignments` to find
#: anything in it.
KEYWORDS = (*_KEYWORDS, "key")
#: The same words as a set, for the cheap "may this text hold one" checks (``isdisjoint``
#: with it looks up the few words a text holds, not each keyword).
KEYWORD_SET = frozenset(KEYWORDS)
_KEY_BEFORE = re.compile(r"(?:api|access|private|auth|signing|encryption|master)[ _-]?\Z")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SPLIT = re.compile(r"[_.\- ]+")
_SUFFIX_KINDS = (
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("pwd", "password"),
    ("apikey", "api-key"),
    ("accesskey", "access-key"),
    ("privatekey", "private-key"),
    ("secretkey", "secret"),
    ("authkey", "secret"),
    ("secret", "secret"),
    ("token", "token"),
    ("credential", "credential"),
    ("credentials", "credential"),
    ("creds", "credential"),
)
_KEY_PAIRS = {
    "api": "api-key",
    "access": "access-key",
    "private": "private-key",
    "secret": "secret",
    "auth": "secret",
    "signing": "secret",
    "encryption": "secret",
    "master": "secret",
}
#: Words that may follow the secret word in a key that still holds the secret itself
#: (SECRET_KEY_BASE, PASSWORD_PLAIN); anything else (TOKEN_COUNT, PASSWORD_FILE) is not a secret.
_TRAILING_OK = frozenset({"key", "base", "value", "str", "string", "b64", "base64", "raw", "plain"})
#: Words before "key" that name a key of another sort (a database's, a sort order's, a public
#: one): not a secret, whatever the value looks like.
_NOT_SECRET_KEYS = frozenset(
    {
        "primary", "foreign", "sort", "partition", "cache", "idempotency", "public", "pub",
        "publishable", "bucket", "hot", "idx", "natural", "schema", "sequence", "row", "hash",
        "lookup", "unique", "composite", "index", "object", "range", "group", "shard", "routing",
        "dedup", "dedupe", "i18n", "translation", "label", "registry", "cursor", "page", "message",
        "event", "state", "order", "name", "map", "dict", "search", "sub", "issuer", "key",
        "monkey", "turkey", "hotkey", "ssh", "gpg", "pgp", "host", "known", "react",
    }
)  # fmt: skip


@lru_cache(maxsize=4096)  # the same few words ("passed", "tokens", "key") come back all the time
def _key_kind(key: str, flag: bool) -> tuple[str, bool] | None:
    """The kind of secret a settings key holds, and whether only a random-looking value counts
    (a weak key: ``SERVICE_KEY``, ``auth``), or None when it holds none."""
    parts = [p for p in _SPLIT.split(_CAMEL.sub(r"\1_\2", key).lower()) if p]
    if not parts or (len(parts) == 1 and parts[0] == "oldpwd"):
        return None  # $PWD is the working directory
    for i in range(len(parts) - 1, -1, -1):
        part = parts[i]
        kind: str | None = None
        weak = False
        if part == "key" and i > 0:
            kind = next((k for p, k in _KEY_PAIRS.items() if parts[i - 1].endswith(p)), None)
            if kind is None and parts[i - 1] not in _NOT_SECRET_KEYS:
                kind, weak = "key", True  # SERVICE_KEY, AccountKey, LICENSE_KEY
        elif part == "pass":
            # "PASS: test_x" is test output; db_pass / --pass are passwords.
            kind = "password" if flag or len(parts) > 1 else None
        elif part in ("auth", "signature", "sig"):
            kind, weak = "secret", True
        elif flag and part.endswith("pass"):
            kind = "password"  # keytool -storepass, --keypass
        else:
            kind = next((k for suffix, k in _SUFFIX_KINDS if part.endswith(suffix)), None)
        if kind is not None:
            return (kind, weak) if all(p in _TRAILING_OK for p in parts[i + 1 :]) else None
    return None


def looks_random(value: str) -> bool:
    """Whether ``value`` looks made up rather than written (a key, not ``created_at``, ``v2.1``,
    ``bearer``, ``12345`` or a path): long enough, letters with digits (or long mixed-case),
    and varied enough (Shannon entropy of at least 3 bits a character)."""
    v = value.strip("\"'`")
    if len(v) < 10 or is_placeholder(v) or "://" in v or v.startswith("/"):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    if not has_alpha:
        return False
    if not has_digit and not (
        len(v) >= 20 and any(c.isupper() for c in v) and any(c.islower() for c in v)
    ):
        return False
    if _VERSION.match(v) or _DOTTED.match(v):
        return False
    counts = Counter(v)
    entropy = -sum(n / len(v) * math.log2(n / len(v)) for n in counts.values())
    return entropy >= 3.0


# Possessive, each part taking what only it can: written as (?:[-+.]?[a-z0-9]+)* the tail could
# split a long run of letters and digits in exponentially many ways before failing on the one
# character it refuses (a key with a "~" in it took seconds). Same strings match.
_VERSION = re.compile(r"v?\d+(?:[._-]\d++)++[a-z0-9]*+(?:[-+.][a-z0-9]++)*+\Z", re.IGNORECASE)


_SEP_EQ = re.compile(r"[ \t]{0,10}(?:=>|:=|=(?!=))[ \t]{0,10}")
_SEP_COLON = re.compile(r"[ \t]{0,10}:(?!:)[ \t]{0,10}")
# "the staging password is hunter2-Xy9!": said in a sentence.
_SEP_PROSE = re.compile(
    r"(?:[ \t]{1,3}[A-Za-z][\w-]{0,15}){0,3}?[ \t]{1,3}"
    r"(?:is|was|is now|will be|should be|set to|=)[ \t]{1,3}:?[ \t]?[`'\"]?",
    re.IGNORECASE,
)
_BARE_PROSE = re.compile(r"[^\s`'\"]{6,200}")
# ``password: str = "x"``: a type annotation between the key and its value. An "=" glued to
# the "type" and followed by a blank or the line's end is base64 padding of a YAML value
# (``password: cHUz...GM=`` in a Kubernetes Secret), not an assignment.
_TYPE = r"[A-Za-z_][\w.]{0,40}(?:\[[\w., |]{0,60}\])?"
_SEP_ANNOTATED = re.compile(
    rf"[ \t]{{0,10}}:[ \t]{{0,10}}{_TYPE}(?:[ \t]{{0,5}}\|[ \t]{{0,5}}{_TYPE}){{0,3}}"
    r"(?:[ \t]{1,10}=(?!=)[ \t]{0,10}|=(?=[^=\s]))"
)
_SEP_FLAG = re.compile(r"=|[ \t]{1,10}")
_QUOTED = {
    '"': re.compile(r'"((?:[^"\\\n]|\\.){1,1000})"'),
    "'": re.compile(r"'([^'\n]{1,1000})'"),
    "`": re.compile(r"`([^`\n]{1,1000})`"),
}
# A quoted value cut by a real line break before its closing quote (a wrapped terminal or
# editor line): its first part; wrapped_value takes the rest, which must end at the quote.
_OPEN_QUOTED = re.compile(r"[\"'`]([A-Za-z0-9_+/=.~\-]{1,1000})(?=\r?\n)")
_XML_KEY = re.compile(r"key=\\?[\"']\Z")
_SEP_XML = re.compile(r"[ \t]{1,10}value[ \t]{0,5}=[ \t]{0,5}(?=\\?[\"'])")
_ESCAPED_QUOTED = re.compile(r'\\"((?:[^"\\\n]|\\[^"\n]){1,1000})\\"')
_BARE_EQ = re.compile(r"[^\s\"'`\\;]{1,1000}")  # ";" ends a value in connection strings
_BARE_QUERY = re.compile(r"[^\s\"'`\\&#]{1,1000}")
_BARE_COLON = re.compile(r"[^\s,;}\]\"'`\\]{1,1000}")
# What may follow a value that stands alone: end of line, a comment, or a closing bracket.
_VALUE_END = re.compile(r"[ \t]*(?:$|[,;)}\]#\r\n\"']|//|\\[nr])", re.MULTILINE)


# A key named in a sentence by a generic word and the word before it ("my service key is",
# "the db pass is"): that word says which key, unless it is one that names no key at all.
_PROSE_IS = re.compile(r"[ \t]{1,3}(?:is|was|will be|should be|set to)[ \t]")
_PROSE_QUALIFIER = re.compile(r"[a-z][a-z0-9]{1,19}\Z")
_NOT_QUALIFIERS = frozenset(
    {
        "the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that",
        "these", "those", "which", "what", "each", "every", "any", "no", "one", "first",
        "second", "third", "last", "next", "final", "same", "other", "another", "new", "old",
        "only", "whole", "full", "single", "double", "boarding", "hall", "free", "day", "season",
    }
)  # fmt: skip


def _prose_key(low: str, start: int, core: str) -> tuple[str, bool] | None:
    """The kind of ``key`` / ``pass`` at ``start`` named by the word before it in a sentence
    ("my service key is ..."), always weak (only a random-looking value counts), or None."""
    if core not in ("key", "pass") or start < 3 or low[start - 1] != " ":
        return None
    if _PROSE_IS.match(low, start + len(core)) is None:
        return None
    word = _PROSE_QUALIFIER.search(low, max(0, start - 21), start - 1)
    if word is None or (word.start() > 0 and low[word.start() - 1] in _IDENT):
        return None
    if word.group() in _NOT_QUALIFIERS:
        return None
    judged = _key_kind(f"{word.group()}_{core}", False)
    return None if judged is None else (judged[0], True)


def _keyword_hits(low: str, present: set[str] | None) -> list[tuple[int, int]]:
    """Where secret words occur in the lowercased text ``low``, in order (``present``: as in
    :func:`redact_assignments`)."""
    hits: list[tuple[int, int]] = []
    for word in _KEYWORDS:
        if present is not None and word not in present:
            continue
        at = low.find(word)
        while at != -1:
            hits.append((at, at + len(word)))
            at = low.find(word, at + len(word))
    # "key" is common; it counts only right behind api / access / private / ...
    at = low.find("key") if present is None or "key" in present else -1
    while at != -1:
        before = _KEY_BEFORE.search(low, max(0, at - 11), at)
        if before is not None:
            hits.append((before.start(), at + 3))
        elif at > 0 and low[at - 1] in _IDENT:
            hits.append((at, at + 3))  # SERVICE_KEY, accountKey: judged by their value
        elif at > 1 and low[at - 1] == " " and _PROSE_IS.match(low, at + 3) is not None:
            hits.append((at, at + 3))  # "my license key is ...": judged with the word before
        at = low.find("key", at + 3)
    hits.sort()
    return hits


def redact_assignments(
    text: str, counts: Counter[str], low: str | None = None, present: set[str] | None = None
) -> str:
    """Replace the values of secret-named keys (code, YAML, JSON, .env, CLI flags, headers).

    ``low`` is ``ascii_lower(text)`` when the caller has it already; ``present``, when given,
    holds every one of :data:`KEYWORDS` that occurs in ``low`` (and may hold other words).
    """
    if present is not None and present.isdisjoint(KEYWORD_SET):
        return text
    spans: list[tuple[int, int, str]] = []
    done = 0
    if low is None:
        low = ascii_lower(text)
    for hit_start, hit_end in _keyword_hits(low, present):
        if hit_start < done:
            continue
        start, end = _key_span(text, hit_start, hit_end)
        done = end
        key = text[start:end]
        core = key.lstrip("-")
        flag = key.startswith("-") and (start == 0 or text[start - 1] in " \t\n'\"")
        judged = _key_kind(core, flag)
        if judged is None:
            judged = _prose_key(low, start, core.lower())
        if judged is None:
            continue
        kind, weak = judged
        found = _value_after(text, start, end, flag)
        if found is not None and text[found[0]] in "|>!" and not flag:
            body = block_body(text, start, end)
            if body is not None:  # a YAML block scalar (password: |): its lines are the value
                secret = _secret_body(text, body, weak) if body else []
                if body:
                    done = body[-1][1]
                if secret:
                    spans.extend((a, b, kind) for a, b in secret)
                    counts[kind] += 1
                continue
        if found is None and kind == "password" and not weak and not flag:
            found = _bare_value(text, end)
        if found is None:
            continue
        vstart, vend, standalone = found
        done = vend  # a value judged harmless is skipped whole too: keeps the pass linear
        value = text[vstart:vend]
        if (
            not standalone
            or value.startswith(("[REDACTED", "[dropped"))
            or value.lower() == core.lower()
            or is_placeholder(value)
            or (text[vstart - 1] not in "\"'`" and _is_code(value))
        ):
            continue
        # A value that runs to its line's end may go on over the next lines (wrapped).
        rest = wrapped_value(text, vstart, vend)
        if not rest and text[vstart - 1] in "\"'`" and text.startswith(("\n", "\r\n"), vend):
            continue  # an open quote with no rest of its value up to the closing one: code
        if weak and not looks_random(value + "".join(text[a:b] for a, b in rest)):
            continue
        spans.append((vstart, vend, kind))
        spans.extend((a, b, kind) for a, b in rest)
        if rest:
            done = rest[-1][1]
        counts[kind] += 1
    return splice(text, spans)


def _key_span(text: str, hit_start: int, hit_end: int) -> tuple[int, int]:
    """The identifier holding the secret word ``text[hit_start:hit_end]``: grown at most
    ``_MAX_KEY`` characters each way, not back over an escaped break or tab (``\\npassword: |``
    in a JSON string: its letter is no part of the key) nor forward to a sentence's end."""
    start = hit_start
    while start > 0 and text[start - 1] in _IDENT and hit_start - start < _MAX_KEY:
        if start > 1 and text[start - 2] == "\\" and text[start - 1] in "nrt":
            break
        start -= 1
    end = hit_end
    while end < len(text) and text[end] in _IDENT and end - hit_end < _MAX_KEY:
        end += 1
    while end > hit_end and text[end - 1] in ".-":
        end -= 1  # "the password." ends a sentence, not a key
    return start, end


def _value_after(text: str, start: int, end: int, flag: bool) -> tuple[int, int, bool] | None:
    """The value after the key ``text[start:end]``: its span, and whether it stands alone as a
    value (False for the first word of prose or code that goes on), or None when none follows."""
    pos = end
    quote = text[start - 1] if start > 0 else ""
    escaped = quote == '"' and start > 1 and text[start - 2] == "\\"
    if escaped and text.startswith('\\"', pos):
        pos += 2
    elif quote in ("'", '"') and text.startswith(quote, pos):
        pos += 1
    if quote in ("'", '"') and _XML_KEY.search(text, max(0, start - 6), start) is not None:
        # <add key="ClearTextPassword" value="..."/>: the value is the next attribute's.
        sep = _SEP_XML.match(text, pos)
        if sep is not None:
            return _quoted_at(text, sep.end(), cut=False)
    colon = False
    if flag:
        sep = _SEP_FLAG.match(text, pos)
    else:
        sep = _SEP_EQ.match(text, pos) or _SEP_ANNOTATED.match(text, pos)
        if sep is None:
            sep = _SEP_COLON.match(text, pos)
            colon = True
        if sep is None:
            return _value_in_prose(text, pos)
    if sep is None:
        return None
    vpos = sep.end()
    if vpos >= len(text):
        return None
    if text.startswith('\\"', vpos) or text[vpos] in _QUOTED:
        return _quoted_at(text, vpos, cut=True)
    if colon:
        m = _BARE_COLON.match(text, vpos)
        if m is None:
            return None
        # Prose ("Password: the one I sent") has more words after it; a value stands alone.
        alone = len(m.group()) >= 4 and _VALUE_END.match(text, m.end()) is not None
        return m.start(), m.end(), alone
    query = start > 0 and text[start - 1] in "?&"
    m = (_BARE_QUERY if query else _BARE_EQ).match(text, vpos)
    if m is None:
        return None
    vend = m.end()
    while vend > vpos and text[vend - 1] in ",;:)}]":
        vend -= 1
    # Code writes "x = value" and a bare word there must end the statement: in
    # "const token = await fetchToken()" the word after "=" is no secret. Env files and shells
    # write "X=value", where anything goes.
    alone = vend - vpos >= 2 and (
        flag or sep.group() == "=" or _VALUE_END.match(text, vend) is not None
    )
    return vpos, max(vend, vpos), alone


def _quoted_at(text: str, pos: int, *, cut: bool) -> tuple[int, int, bool] | None:
    """The value in the quotes that open at ``pos`` (double, single or back quotes, or ``\\"``
    in a JSON string), standing alone; with ``cut``, also the first part of one a real line
    break cuts before its closing quote. None when the quotes do not close."""
    if text.startswith('\\"', pos):
        m = _ESCAPED_QUOTED.match(text, pos)
    elif text[pos] in _QUOTED:
        m = _QUOTED[text[pos]].match(text, pos) or (_OPEN_QUOTED.match(text, pos) if cut else None)
    else:
        m = None
    return (m.start(1), m.end(1), True) if m else None


def _word_after(sep: re.Pattern[str], text: str, pos: int) -> tuple[int, int, str] | None:
    """The word after ``sep`` at ``pos`` in a sentence, without the punctuation that ends the
    sentence ("!" may be the password's own): its span and itself."""
    found = sep.match(text, pos)
    if found is None:
        return None
    m = _BARE_PROSE.match(text, found.end())
    if m is None:
        return None
    vend = m.end()
    while vend > m.start() and text[vend - 1] in ".,;:)]}":
        vend -= 1
    return m.start(), vend, text[m.start() : vend]


def _value_in_prose(text: str, pos: int) -> tuple[int, int, bool] | None:
    """``password is <value>`` in a sentence: taken only when the word looks made up (letters
    and digits mixed), so "the token is expired" or "the password is in 1Password" stay."""
    word = _word_after(_SEP_PROSE, text, pos)
    if word is None:
        return None
    start, end, value = word
    made_up = (
        len(value) >= 6
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and "://" not in value
        and not (value.startswith(("/", "./", "~/", "../")) and _path_like(value))
    )
    return start, end, made_up


# ``vault write ... password S3cr3t-x9``: a value after the word with nothing between.
_SEP_BARE = re.compile(r"[ \t]{1,3}")


def _bare_value(text: str, pos: int) -> tuple[int, int, bool] | None:
    """The word right after a password word with only a space between, taken only when it
    looks made up (``looks_random``): "the password field" and "password hunter" stay."""
    word = _word_after(_SEP_BARE, text, pos)
    if word is None:
        return None
    start, end, value = word
    return start, end, looks_random(value) and "=" not in value


# --- Keyed values wrapped over lines -----------------------------------------------------
# A line break (real, CRLF or JSON-escaped) right where a value ends, and the next line: a lone
# run of token characters after up to 12 blanks, then its line's end, the end of a JSON string
# or a closing quote.
_LINE_BREAK = re.compile(r"\r?\n|\\r\\n|\\n")
_NEXT_LINE = re.compile(r"[ \t]{0,12}([A-Za-z0-9_+/=.~\-]{4,1000})[ \t]*(\r?\n|\\[rn]|\Z|[\"'`])")
_MAX_WRAPPED = 64
_WIDTH_MAX = 1000  # lines one wrapped value may go on over


def _continues(first: str, line: str) -> bool:
    """Whether ``line``, alone on the line after the value part ``first``, reads as the rest of
    it: not a line of its own (see :func:`obsmem.redact.rests.own_line`), a version or a dotted
    name, and random with ``first``."""
    if own_line(first, line):
        return False
    if "." in line and (_VERSION.match(line) or _DOTTED.match(line)):
        return False
    # looks_random takes a leading "/" for a path; base64 may start with one.
    return looks_random(first.lstrip("/") + line)


def wrapped_value(text: str, vstart: int, vend: int) -> list[tuple[int, int]]:
    """The spans of the lines a keyed value ``text[vstart:vend]`` goes on over when it runs to
    its line's end and was wrapped there (``DB_PASSWORD=Xk29fPq7`` then ``Lm3Rt8Zw``): the next
    line when it is a lone token that reads as the rest (see _continues), and the lines after
    while each one before was as long as the value's line (a terminal's width). A quoted value
    cut before its closing quote goes on up to that quote."""
    quote = text[vstart - 1] if vstart > 0 and text[vstart - 1] in "\"'`" else ""
    brk = _LINE_BREAK.match(text, vend)
    if brk is None:
        return []
    # Where the value's line starts, looked for only so far back (a width, not a whole text).
    floor = max(0, vstart - _WIDTH_MAX)
    escaped = text.rfind("\\n", floor, vstart)
    line_start = max(text.rfind("\n", floor, vstart) + 1, escaped + 2 if escaped != -1 else floor)
    width = vend - line_start
    spans: list[tuple[int, int]] = []
    value = text[vstart:vend]
    while brk is not None and len(spans) < _MAX_WRAPPED:
        nxt = _NEXT_LINE.match(text, brk.end())
        if nxt is None:
            break
        end = nxt.group(2)
        if quote and end != quote:
            break  # a quoted value goes on up to its closing quote
        if not quote and end in ("'", "`"):
            break
        line = nxt.group(1)
        if not _continues(value, line):
            break
        spans.append(nxt.span(1))
        value += line
        if quote or nxt.end(1) - brk.end() != width:
            break  # shorter than the first line: the value's last line
        brk = _LINE_BREAK.match(text, nxt.start(2))
    return spans


def _secret_body(text: str, body: list[tuple[int, int]], weak: bool) -> list[tuple[int, int]]:
    """The lines of the YAML block ``body`` that hold a secret: an Ansible vault's after its
    header (encrypted, yet what a password cracker starts from), or every line when all are
    lone tokens (a key or token folded over lines) that make no placeholder and, for a weak key,
    look random. Prose (``Ask Lena``) and lines already labelled stay."""
    lines = [text[a:b] for a, b in body]
    if lines[0].startswith(VAULT):
        return body[1:]
    if any(" " in line or line.startswith("[REDACTED") for line in lines):
        return []
    value = "".join(lines)
    return body if not is_placeholder(value) and (not weak or looks_random(value)) else []


def splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end, kind) span replaced by its label (spans in order)."""
    if not spans:
        return text
    parts: list[str] = []
    cursor = 0
    for start, end, kind in spans:
        if start < cursor:
            continue
        parts.append(text[cursor:start])
        parts.append(kind if kind.startswith("[") else label(kind))
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)

"""Secrets out of transcript text, before anything is sent to an LLM or written to memory.

Every turn passes through :func:`redact` when it leaves the reader stage. Each secret becomes
``[REDACTED:<kind>]`` (the kinds are listed in :data:`KINDS`); in an assignment only the value is
replaced, so ``DB_PASSWORD=hunter2`` becomes ``DB_PASSWORD=[REDACTED:password]`` and the
observation still says what was set. Long base64 runs and ``data:`` URIs are not secrets as such
but are never worth remembering: they become ``[dropped:base64 N chars]`` / ``[dropped:data-uri]``.

Left alone on purpose (placeholders, not secrets), in assignments and URL passwords: values
starting with ``$ % < { [`` (``${TOKEN}``, ``$(cat f)``, ``<your password>``, ``{{ token }}``),
masks (``****``, ``xxxx``, ``...``), stand-in words (``none``, ``null``, ``true``, ``password``,
``your_token``, ``example``, ...), paths (``/run/secrets/db``), code (``os.environ[...]``,
``args.token``, ``get_password()``, ``const token = await f()``) and a value equal to its key
(``token=token``); so ``postgres://user:password@db`` in a README stays as it is. Token shapes
(``sk-...``, ``ghp_...``) are redacted wherever they appear, whatever surrounds them.

Speed and safety: one look per text finds the trigger words (one regex for all of them) and
whether it has a run of 20 token characters, whole or made by the lines of a wrapped token; a
pass runs only when its trigger occurs, and a text with none returns at once. Token shapes run
only on such a run, every run of characters in a pattern is either bounded or can only start
at a run boundary (lookbehind), and multi-part constructs (PEM blocks, ``<private>`` spans,
URLs, assignments) are found with ``str.find``/``bisect`` rather than backtracking: the whole
pass is linear in the length of the text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from obsmem.redact.forms import PGPASS_COLONS, TRIGGERS, redact_forms
from obsmem.redact.keys import (
    KEYWORD_SET,
    ascii_lower,
    is_placeholder,
    redact_assignments,
    splice,
)
from obsmem.redact.look import HEADER_WORDS, has_run, look, looks, words_in
from obsmem.redact.shapes import (
    SHAPE_KINDS,
    has_digit,
    mixed,
    redact_shapes,
)
from obsmem.redact.wraps import wrapped_run

__all__ = ["KINDS", "redact", "redact_all", "redact_counts", "redact_turns", "safe_cut"]

#: Every label :func:`redact` can produce, with what it covers (for the docs).
KINDS: dict[str, str] = {
    "anthropic": "Anthropic API keys (sk-ant-...)",
    "openai": "OpenAI and OpenAI-style keys (sk-..., sk-proj-..., sk-svcacct-...)",
    "aws-access-key": "AWS access key ids (AKIA/ASIA/ABIA/ACCA + 16)",
    "aws-secret-key": "AWS secret access keys next to aws_secret_access_key / secretAccessKey",
    "github": "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    "gitlab": "GitLab personal access tokens (glpat-)",
    "slack": "Slack tokens (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-, xoxo-, xapp-)",
    "slack-webhook": "Slack incoming webhook paths (hooks.slack.com/services/...)",
    "stripe": "Stripe secret and restricted keys, webhook secrets (sk_live_, rk_test_, whsec_)",
    "google-api-key": "Google API keys (AIza...)",
    "npm": "npm access tokens (npm_...)",
    "pypi": "PyPI API tokens (pypi-AgEI...)",
    "huggingface": "Hugging Face tokens (hf_...)",
    "telegram-bot": "Telegram bot tokens (123456789:AA...)",
    "sendgrid": "SendGrid API keys (SG.xxx.yyy)",
    "jwt": "JSON Web Tokens (eyJ...eyJ...sig)",
    "private-key": "PEM/OpenSSH/PGP private key blocks (also when cut off before END)",
    "bearer": "Bearer tokens (Authorization: Bearer ...)",
    "basic-auth": "HTTP Basic credentials (Authorization: Basic ..., Docker / npm auth values)",
    "url-password": "the password part of scheme://user:password@host",
    "password": "values of password/passwd/passphrase/pwd keys, flags and .env lines; CLI password"
    " arguments (curl -u, mysql -p, sshpass -p, htpasswd -b, ...), .netrc and .pgpass lines",
    "secret": "values of secret/client_secret/secret_key/auth_key keys, random-looking auth /"
    " signature values, SAS and presigned URL signatures, Kubernetes Secret data",
    "token": "values of token/access_token/GITHUB_TOKEN keys",
    "api-key": "values of api_key/apiKey/X-Api-Key keys",
    "access-key": "values of access_key keys",
    "credential": "values of credential(s) / creds keys",
    "key": "random-looking values of other *_KEY / *Key keys (SERVICE_KEY=, AccountKey=)",
    "sidekiq": "Sidekiq Enterprise gem credentials (BUNDLE_GEMS__CONTRIBSYS__COM=)",
    "private": "<private>...</private> spans (the whole span)",
    "base64": "dropped: runs of 200+ base64 characters",
    "data-uri": "dropped: data: URIs",
}
KINDS.update(
    (kind, f"{kind} tokens ({', '.join(prefixes[:4])}{', ...' if len(prefixes) > 4 else ''})")
    for kind, prefixes in sorted(SHAPE_KINDS.items())
    if kind not in KINDS
)

# --- Token shapes ------------------------------------------------------------------------
# Each pattern starts with its literal prefix (so ``re`` skips to candidates fast) followed by a
# fixed-width lookbehind that refuses a prefix glued to a longer word: "task-sk-learn" is not a
# key, and a long run can only be scanned from its start, which keeps the search linear.


@dataclass(frozen=True)
class _Rule:
    """One token shape. ``judge`` sees the secret and names its kind, or None to let it be
    (default: ``kind``). ``back`` widens the replaced span leftwards by that many characters,
    for patterns that start after the first character to get a fast literal prefix."""

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...] = ()
    group: int = 0
    lower: bool = False  # the pattern is matched against the lowercased text (case-blind)
    judge: Callable[[str], str | None] | None = None
    back: int = 0
    # A punctuation character every match contains: a one-character ``in`` test (memchr)
    # rules the pattern out faster than running it.
    anchor: str = ""


def _needs(test: Callable[[str], bool], kind: str) -> Callable[[str], str | None]:
    return lambda secret: kind if test(secret) else None


_B64URL = r"A-Za-z0-9_\-"
# The shapes that start with a literal prefix are in redact_shapes; these need their context.
_TOKEN_RULES: tuple[_Rule, ...] = (
    _Rule(
        "slack-webhook",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{8,})"),
        group=1,
        anchor=".",
    ),
    # Header tokens: the scheme word stays, the credential goes.
    _Rule(
        "bearer",
        re.compile(r"bearer(?<![a-z0-9]bearer)[ \t]{1,10}([a-z0-9._~+/-]{16,}=*)"),
        ("bearer",),
        group=1,
        lower=True,
        judge=_needs(has_digit, "bearer"),
    ),
    _Rule(
        "basic-auth",
        re.compile(
            r"authorization[\"']?[ \t]{0,10}[:=][ \t]{0,10}[\"']?basic[ \t]{1,10}"
            r"([a-z0-9+/]{8,}={0,2})"
        ),
        ("authorization",),
        group=1,
        lower=True,
    ),
    _Rule(
        "aws-secret-key",
        re.compile(
            r"secret_?access_?key[\"']?(?:[ \t]{0,10}(?:=>|[:=])[ \t]{0,10}|[ \t]{1,10})[\"']?"
            r"([a-z0-9/+]{40})(?![a-z0-9/+=])"
        ),
        ("secret_access", "secretaccess"),
        group=1,
        lower=True,
    ),
)

# --- Multi-part constructs found with find/bisect -----------------------------------------
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# What a cut-off key body can contain: base64 lines (newlines real or JSON-escaped, or turned
# into spaces where a reader put a command on one line) and the Proc-Type / DEK-Info headers of
# encrypted keys. A space counts only before a run of base64 characters, not before any word.
_PEM_BODY = re.compile(
    r"(?:(?:Proc-Type|DEK-Info|Comment):[^\n\\]{0,200}|[A-Za-z0-9+/=]|\r?\n|\\r|\\n"
    r"|[ \t](?=[A-Za-z0-9+/=]{8}))*"
)
_PEM_WINDOW = 64 * 1024


def _private_keys(text: str, counts: Counter[str]) -> str:
    ends = [m.end() for m in _PEM_END.finditer(text)]
    spans: list[tuple[int, int, str]] = []
    cursor = 0
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < cursor:
            continue
        i = bisect_left(ends, begin.end())
        if i < len(ends) and ends[i] - begin.end() <= _PEM_WINDOW:
            stop = ends[i]
        else:
            body = _PEM_BODY.match(text, begin.end())
            stop = body.end() if body else begin.end()
            while stop > begin.end() and text[stop - 1] in "\r\n":
                stop -= 1
        spans.append((begin.start(), stop, "private-key"))
        counts["private-key"] += 1
        cursor = stop
    return splice(text, spans)


def _private_spans(text: str, counts: Counter[str]) -> str:
    low = ascii_lower(text)
    closes = [m.end() for m in re.finditer(r"</private\s*>", low)]
    spans: list[tuple[int, int, str]] = []
    cursor = 0
    for opening in re.finditer(r"<private\s*>", low):
        if opening.start() < cursor:
            continue
        i = bisect_left(closes, opening.end())
        stop = closes[i] if i < len(closes) else len(text)  # unclosed: hide the rest
        spans.append((opening.start(), stop, "private"))
        counts["private"] += 1
        cursor = stop
    return splice(text, spans)


_USERINFO = re.compile(r"[^\s:/@?#\"'<>\[\]]{0,256}:([^\s@/?#\"'<>]{1,256})@")


def _url_passwords(text: str, counts: Counter[str]) -> str:
    spans: list[tuple[int, int, str]] = []
    at = text.find("://")
    while at != -1:
        m = _USERINFO.match(text, at + 3)
        if m is not None:
            password = m.group(1)
            if not password.startswith("[REDACTED") and not is_placeholder(password):
                spans.append((m.start(1), m.end(1), "url-password"))
                counts["url-password"] += 1
        at = text.find("://", at + 3)
    return splice(text, spans)


_DATA_URI = re.compile(
    r"data:(?<![A-Za-z0-9]data:)(?:[A-Za-z]{1,20}/[A-Za-z0-9.+-]{1,100})?"
    r"(?:;[A-Za-z0-9=.+-]{1,100}){0,5},[A-Za-z0-9+/=%._~-]*"
)
_BLOB_MIN = 200
_BLOCK = _BLOB_MIN // 2
_BASE64 = re.compile(rf"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{{{_BLOB_MIN},}}={{0,2}}")


def _data_uris(text: str, counts: Counter[str]) -> str:
    def repl(m: re.Match[str]) -> str:
        counts["data-uri"] += 1
        return "[dropped:data-uri]"

    return _DATA_URI.sub(repl, text)


def _is_path(run: str) -> bool:
    """A long path or URL path, not base64: names between slashes far shorter than base64's
    (one "/" in 64 characters), or "/" mixed with "-" / "_", which no one base64 alphabet has."""
    slashes = run.count("/")
    if slashes == 0:
        return False
    return len(run) / (slashes + 1) < 24 or "-" in run or "_" in run


def _base64_blobs(text: str, counts: Counter[str]) -> str:
    def repl(m: re.Match[str]) -> str:
        blob = m.group()
        if not mixed(blob) or _is_path(blob):
            return blob
        counts["base64"] += 1
        return f"[dropped:base64 {len(blob)} chars]"

    # One pass over the whole text: the lookbehind lets a run start only at its first
    # character, so this stays linear however many blobs there are.
    return _BASE64.sub(repl, text)


def _apply_rule(rule: _Rule, text: str, counts: Counter[str], low: str | None = None) -> str:
    """``text`` with the secrets ``rule`` finds replaced. Case-blind rules match a lowercase copy
    of the same length (``low`` when the caller has it; faster than ``re.IGNORECASE``), so
    positions carry over."""
    haystack = (ascii_lower(text) if low is None else low) if rule.lower else text
    spans: list[tuple[int, int, str]] = []
    for m in rule.pattern.finditer(haystack):
        start, end = m.span(rule.group)
        start -= rule.back
        secret = text[start:end]
        if secret.startswith("[REDACTED"):
            continue
        kind = rule.kind if rule.judge is None else rule.judge(secret)
        if kind is not None:
            spans.append((start, end, kind))
            counts[kind] += 1
    return splice(text, spans)


# Bound methods, so the common no-match path is one C call per rule.
_CASED_SEARCHES = tuple(
    (rule.anchor, rule.pattern.search, rule) for rule in _TOKEN_RULES if not rule.lower
)
_CASELESS_RULES = tuple(rule for rule in _TOKEN_RULES if rule.lower)


def _may_hold_blob(text: str) -> bool:
    """Whether a run of 2 x 100 characters without whitespace may occur (cheap pre-check).

    Such a run always covers one whole aligned 100-character block, so looking at those blocks
    is enough, and far cheaper than splitting the text into words.
    """
    for k in range(0, len(text) - _BLOCK + 1, _BLOCK):
        block = text[k : k + _BLOCK]
        if " " not in block and "\n" not in block:
            return True
    return False


# Without one of these words (or enough colons) no form can be in a text.
_FORM_WORDS = frozenset(TRIGGERS)
_CASELESS_WORDS = frozenset(t for rule in _CASELESS_RULES for t in rule.triggers)
# The look finds every trigger word of the header rules.
assert set(HEADER_WORDS) >= _CASELESS_WORDS


def redact_counts(text: str, *, blobs: bool = True) -> tuple[str, Counter[str]]:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``, and how many of each kind.

    Base64 blobs (unless ``blobs`` is False) and data URIs are dropped and counted as ``base64``
    / ``data-uri``. Applying it twice changes nothing more (labels are never taken for secrets).
    """
    low = ascii_lower(text)
    seen = look(text, low)
    if seen is None:
        return text, Counter()
    return _redact(text, blobs, low, seen)


def _redact(
    text: str, blobs: bool, low: str, seen: tuple[set[str], bool]
) -> tuple[str, Counter[str]]:
    text, counts = _redact_once(text, blobs, low, *seen)
    if counts:
        # A label put in can bring what was on either side of a secret together into a new
        # shape (adversarial repetitions such as ``sk-sk-sk-...``): the passes run again, at most
        # twice, until nothing changes. Only texts that held a secret pay for it.
        for _ in range(_MAX_AGAIN):
            low = ascii_lower(text)
            again, more = _redact_once(text, blobs, low, words_in(low), has_run(text))
            if again == text:
                break
            text = again
            counts.update(more)
    return text, counts


_MAX_AGAIN = 2


def _counter() -> Counter[str]:
    """An empty Counter, made without ``Counter.__init__`` (a Python call into ``update`` that
    costs a text without secrets more than some of its passes): a Counter is a dict."""
    return Counter.__new__(Counter)


def _redact_once(
    text: str, blobs: bool, low: str, words: set[str], run: bool
) -> tuple[str, Counter[str]]:
    counts = _counter()
    original = text
    # The passes in order. Whole spans first (private, PEM, data URIs) so no rule sees their
    # insides; specific token shapes before the generic key=value pass, so a labelled value
    # keeps its precise kind. Each pass is skipped unless its trigger occurs; for the token
    # shapes the pattern's own literal-prefix search is the cheapest trigger test. Trigger words
    # are looked up once, in the original text: the passes before the forms and keys only put
    # labels in, and no label holds or makes up a word those look for ("-----begin ", "data:",
    # "://", the header words). The forms and keys look again where labels were put in.
    if "<private" in words:
        text = _private_spans(text, counts)
    if "-----begin " in words and "-----BEGIN " in text:
        text = _private_keys(text, counts)
    if "data:" in words and "data:" in text:
        text = _data_uris(text, counts)
    if text is not original:
        run = has_run(text)
    if run or wrapped_run(text):
        spans = redact_shapes(text, counts)
        if spans:
            text = splice(text, spans)
            run = has_run(text)
        if run:  # every header rule's match is a run of 20 too
            for anchor, search, rule in _CASED_SEARCHES:
                if (not anchor or anchor in text) and search(text) is not None:
                    text = _apply_rule(rule, text, counts)
    if words:
        if not words.isdisjoint(_CASELESS_WORDS):
            for rule in _CASELESS_RULES:
                for trigger in rule.triggers:
                    if trigger in words:
                        text = _apply_rule(rule, text, counts, low if text is original else None)
                        break
        if "://" in words:
            text = _url_passwords(text, counts)
    # Where labels were put in, a pass looks for its words again.
    if text is not original:
        text = splice(text, redact_forms(text, ascii_lower(text), counts))
    elif not words.isdisjoint(_FORM_WORDS) or text.count(":") >= PGPASS_COLONS:
        text = splice(text, redact_forms(text, low, counts, words))
    if text is not original:
        text = redact_assignments(text, counts)
    elif not words.isdisjoint(KEYWORD_SET):
        text = redact_assignments(text, counts, low, words)
    if blobs and run and len(text) >= _BLOB_MIN and _may_hold_blob(text):
        text = _base64_blobs(text, counts)
    return text, counts


def redact(text: str) -> str:
    """``text`` with secrets replaced by ``[REDACTED:<kind>]`` (see :func:`redact_counts`)."""
    low = ascii_lower(text)
    seen = look(text, low)
    if seen is None:
        return text  # without making the counts nobody asked for
    return _redact(text, True, low, seen)[0]


def redact_all(texts: Sequence[str]) -> list[str]:
    """``[redact(text) for text in texts]``, for less: the look every text gets first (trigger
    words, runs of token characters) is taken once over all of them (see :func:`looks`)."""
    out = list(texts)
    for i, low, seen in looks(out):
        out[i] = _redact(out[i], True, low, seen)[0]
    return out


#: How far a cut looks around the word it falls in: past the longest token shape, and back far
#: enough to see the key of a ``key = value`` assignment.
_CUT_LOOKAHEAD = 4096
_CUT_LOOKBACK = 256


def safe_cut(text: str, limit: int) -> int:
    """Where to cut ``text`` near ``limit`` so that no secret is cut in two: ``limit`` itself,
    or the start of the word it falls in when that word (with what precedes it) holds a secret.

    Readers shorten text before it is redacted; a token cut in the middle no longer has its
    shape (``ghp_`` and 36 characters) and its first part would pass redaction untouched. Cost:
    one ``redact`` of a few kilobytes, and only when the cut falls inside a word.
    """
    if limit <= 0 or limit >= len(text):
        return max(0, limit)
    if text[limit - 1].isspace() or text[limit].isspace():
        return limit
    start = limit
    floor = max(0, limit - _CUT_LOOKAHEAD)
    while start > floor and not text[start - 1].isspace():
        start -= 1
    end = limit
    ceiling = min(len(text), limit + _CUT_LOOKAHEAD)
    while end < ceiling and not text[end].isspace():
        end += 1
    window = text[max(0, start - _CUT_LOOKBACK) : end]
    return limit if redact(window) == window else start


class _HasText(Protocol):
    text: str


def redact_turns(turns: Iterable[_HasText]) -> Counter[str]:
    """Redact each turn's ``text`` in place; returns the counts over all of them."""
    turns = list(turns)
    total: Counter[str] = Counter()
    for i, low, seen in looks([turn.text for turn in turns]):
        turns[i].text, counts = _redact(turns[i].text, True, low, seen)
        total.update(counts)
    return total

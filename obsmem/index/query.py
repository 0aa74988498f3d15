"""Turning whatever a user or an agent typed into a safe FTS5 ``MATCH`` expression.

FTS5 has its own query language (``AND``, ``OR``, ``NOT``, ``NEAR(...)``, ``col:``, ``^``, ``*``,
``"phrases"``), and a query such as ``"C++ OR`` or ``a:b`` is a syntax error in it. Search input
comes from people and from language models, so it is never passed through: ``fts_query`` keeps
only word tokens, quotes each one as an FTS5 string, and joins them with ``OR``. Operators typed
by the user become plain words (or vanish as stopwords), and BM25 still ranks documents that
match more of the words higher, which is what a keyword search is expected to do.

Tokens are runs of Unicode letters and digits, which is how the index's ``unicode61`` tokenizer
splits text too (so ``snake_case`` is two words on both sides, and ``C++`` is ``c``). Each token
is quoted, so even a token FTS5 would split differently is read as a phrase, never as syntax.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_TOKENS", "MAX_TOKEN_CHARS", "STOPWORDS", "fts_query", "query_tokens"]

#: At most this many distinct words of a query are searched: a pasted log or transcript should
#: not become a thousand-term OR that scans the whole index. The first ones are kept.
MAX_TOKENS = 32

#: A "word" longer than this is not a word (a hash, base64, a run of one letter); it is cut so a
#: pathological query stays small. A cut token simply matches nothing.
MAX_TOKEN_CHARS = 128

# Letters and digits of any script; "_" is excluded because ``\w`` includes it and unicode61
# does not. Combining marks are not ``\w``, so text is NFC-composed first: a decomposed "naïve"
# would otherwise split into "nai" and "ve" (the index tokenizer then strips the diacritics).
_WORD = re.compile(r"[^\W_]+")

#: Very common English words. They match nearly every entry, so in an OR query they only add
#: noise and work; they are dropped unless the query has nothing else ("the who" still searches).
# fmt: off
STOPWORDS: frozenset[str] = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves",
))
# fmt: on


def query_tokens(text: str) -> list[str]:
    """The distinct search words of ``text``, case-folded, in order, stopwords dropped if possible.

    At most ``MAX_TOKENS`` words are returned, each at most ``MAX_TOKEN_CHARS`` long.
    """
    if not text:
        return []
    seen: dict[str, None] = {}
    for match in _WORD.finditer(unicodedata.normalize("NFC", text)):
        token = match.group(0).casefold()[:MAX_TOKEN_CHARS]
        if token:
            seen.setdefault(token, None)
    words = list(seen)
    content = [word for word in words if word not in STOPWORDS]
    # Keep the stopwords only when they are all there is: "to be or not to be" still searches.
    chosen = content or words
    return chosen[:MAX_TOKENS]


def _quote(token: str) -> str:
    # An FTS5 string: double quotes, with any inner quote doubled. Tokens come from _WORD and
    # hold no quotes, but the quoting must stay correct if the tokenizer rule ever widens.
    return '"' + token.replace('"', '""') + '"'


def fts_query(text: str) -> str | None:
    """A safe FTS5 ``MATCH`` expression for arbitrary user text, or None when nothing is searchable.

    Every word token is quoted and the tokens are joined with ``OR``::

        >>> fts_query('"C++ NEAR( x:y')
        '"c" OR "near" OR "x" OR "y"'
        >>> fts_query("*** 🤷") is None
        True

    The result never contains FTS5 syntax from the input, so ``MATCH`` cannot fail on it.
    """
    tokens = query_tokens(text)
    if not tokens:
        return None
    return " OR ".join(_quote(token) for token in tokens)

"""``fts_query``: any text becomes a MATCH expression FTS5 accepts, or None."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from obsmem.index.query import MAX_TOKENS, STOPWORDS, fts_query, query_tokens

NASTY = [
    '"C++ OR',
    "NOT",
    "a:b",
    'unbalanced "quote',
    'many """ quotes "',
    "*",
    "prefix*",
    "AND",
    "OR OR OR",
    "NEAR(",
    "NEAR(a b, 3)",
    "^start",
    "col:value",
    "{text section}: hello",
    "(((",
    "- -- ---",
    "+plus",
    "🤷‍♀️ 🔥🔥",
    "\x00",
    "nul\x00inside",
    "\udcff lone surrogate",
    "x" * 100_000,
    " ".join(f"w{i}" for i in range(5000)),
    "",
    "   \t\n",
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """A tiny index with the production tokenizer, to run generated expressions against."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(text, section, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.executemany(
        "INSERT INTO t (text, section) VALUES (?, ?)",
        [
            ("Chose C++ over Rust for the engine", "Decisions"),
            ("Naïve café owner in Zürich", "People"),
            ("snake_case everywhere in python code", None),
            ("NEAR and NOT are words too", None),
        ],
    )
    yield conn
    conn.close()


def run(conn: sqlite3.Connection, text: str) -> list[str]:
    expression = fts_query(text)
    if expression is None:
        return []
    return [
        row[0]
        for row in conn.execute("SELECT text FROM t WHERE t MATCH ? ORDER BY rank", (expression,))
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("C++", '"c"'),
        ("x:y", '"x" OR "y"'),
        ('"C++ NEAR( x:y', '"c" OR "near" OR "x" OR "y"'),
        ("Redis REDIS redis", '"redis"'),
        ("snake_case", '"snake" OR "case"'),
        ("why did we choose tortoise", '"choose" OR "tortoise"'),
        ("the who", '"the" OR "who"'),  # only stopwords: keep them rather than search nothing
        ("2026-02-10", '"2026" OR "02" OR "10"'),
    ],
)
def test_expressions(text: str, expected: str) -> None:
    assert fts_query(text) == expected


@pytest.mark.parametrize("text", ["", "*", "^", '"', "()", "🤷", "\x00", "— … ·", "\udcff", "_"])
def test_nothing_searchable_is_none(text: str) -> None:
    assert fts_query(text) is None


def test_tokens_are_bounded() -> None:
    many = " ".join(f"word{i}" for i in range(1000))
    assert len(query_tokens(many)) == MAX_TOKENS
    assert query_tokens(many)[:2] == ["word0", "word1"]
    (long,) = query_tokens("y" * 10_000)
    assert len(long) == 128


def test_stopwords_are_lowercase_words() -> None:
    assert all(word == word.casefold() and word.isalpha() for word in STOPWORDS)


def test_decomposed_accents_stay_one_word(fts: sqlite3.Connection) -> None:
    assert query_tokens("nai\u0308ve") == ["naïve"]
    assert run(fts, "nai\u0308ve") == ["Naïve café owner in Zürich"]
    assert run(fts, "zurich cafe") == ["Naïve café owner in Zürich"]


def test_operators_are_searched_as_words(fts: sqlite3.Connection) -> None:
    assert run(fts, "NEAR(") == ["NEAR and NOT are words too"]
    assert run(fts, '"C++ OR') == ["Chose C++ over Rust for the engine"]
    assert run(fts, "decisions") == ["Chose C++ over Rust for the engine"]  # section is searched


@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_nasty_strings_never_raise(fts: sqlite3.Connection, text: str) -> None:
    run(fts, text)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.text(alphabet=st.characters(codec=None, exclude_categories=())),  # surrogates too
        st.lists(st.sampled_from([*NASTY[:18], "C", "code", "AND", "*", '"', "(", ")", ":"])).map(
            " ".join
        ),
    )
)
@example("\x00")
@example('"')
def test_any_text_is_a_valid_match_expression(fts: sqlite3.Connection, text: str) -> None:
    tokens = query_tokens(text)
    assert all(tokens) and len(tokens) <= MAX_TOKENS
    assert (fts_query(text) is None) == (not tokens)
    run(fts, text)

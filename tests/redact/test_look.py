"""The look that decides which redaction passes run: it must never miss a trigger word or a run
a pass needs, or a secret would pass untouched."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.redact import redact, redact_counts
from obsmem.redact.keys import ascii_lower
from obsmem.redact.look import TRIGGER_WORDS as _TRIGGERS
from obsmem.redact.look import look as _look
from obsmem.redact.look import words_in as _words_in


def _naive(low: str) -> set[str]:
    return {word for word in _TRIGGERS if word in low}


@pytest.mark.parametrize(
    "text",
    [
        "mysqlcmd -S db",  # two words on one rare character ("q"), at one place
        "see data://x and thin://y",  # overlapping words ("data:" and "://")
        "sshpass -p x; htpasswd -b f u p; pass:",  # words inside another ("pass")
        "TOKENKEY=1 Bearer x AUTHORIZATION: y",
        'kind: secret\nkind: "secret" -----BEGIN x',
        "mc alias set; mc config host add; sudo -S; contribsys__com",
        "",
        "plain words only",
    ],
)
def test_trigger_words_are_all_found(text: str) -> None:
    low = ascii_lower(text)
    assert _words_in(low) == _naive(low)


_PIECES = st.sampled_from([*_TRIGGERS, "a", "s", "q", "k", " ", ":", "/", "-", "=", "\n", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_trigger_words_match_a_plain_lookup(text: str) -> None:
    low = ascii_lower(text)
    assert _words_in(low) == _naive(low)
    if _look(text, low) is None:
        assert not _naive(low)
        assert redact(text) == text


def test_a_token_of_exactly_twenty_characters_gets_past_the_look() -> None:
    key = "AKIA" + "Q7XK2M9PL4RT8VWZ"  # the shortest token shape: 20 characters, no trigger word
    text, counts = redact_counts(f"it uses {key} for uploads")
    assert key not in text
    assert counts["aws-access-key"] == 1

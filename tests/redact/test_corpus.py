"""Redaction against the secret kinds corpus (``secret_kinds.py``): over 300 kinds from the
public rule sets and hand-made forms, each in every carrier natural for it, and benign texts
that must come back unchanged."""

from __future__ import annotations

from collections import Counter

import pytest

from obsmem.redact import KINDS as LABELS
from obsmem.redact import redact, redact_counts
from obsmem.redact.shapes import SHAPE_KINDS

from .secret_kinds import BENIGN, CARRIERS, KINDS, carriers, needles

#: The least share of kinds redacted in every carrier.
MIN_RATE = 0.95


def _leaks() -> tuple[Counter[str], Counter[str], dict[str, list[str]]]:
    tried: Counter[str] = Counter()
    leaked: Counter[str] = Counter()
    names: dict[str, list[str]] = {}
    for kind in KINDS:
        for carrier, text in carriers(kind).items():
            tried[carrier] += 1
            out = redact(text)
            if any(needle in out for needle in needles(kind)):
                leaked[carrier] += 1
                names.setdefault(carrier, []).append(kind.name)
    return tried, leaked, names


def test_the_corpus_has_over_300_kinds_from_the_public_rule_sets() -> None:
    sources = Counter(kind.source for kind in KINDS)
    assert len({kind.name for kind in KINDS}) == len(KINDS) >= 300
    assert sources["gitleaks"] >= 190 and sources["detect-secrets"] >= 20


@pytest.mark.parametrize("carrier", sorted({c for cs in CARRIERS.values() for c in cs}))
def test_at_least_95_percent_of_kinds_are_redacted_in_every_carrier(carrier: str) -> None:
    tried, leaked, names = _leaks()
    rate = 1 - leaked[carrier] / tried[carrier]
    assert rate >= MIN_RATE, f"{carrier}: {leaked[carrier]} of {tried[carrier]} leak: {names}"


def test_every_label_is_a_known_kind() -> None:
    for kind in KINDS:
        for text in carriers(kind).values():
            _, counts = redact_counts(text)
            assert set(counts) <= set(LABELS)


def test_every_shape_kind_is_met_in_the_corpus() -> None:
    seen: set[str] = set()
    for kind in KINDS:
        seen.update(redact_counts(carriers(kind)["as-is" if kind.mode == "f" else "json"])[1])
    assert set(SHAPE_KINDS) - {"openrouter"} <= seen | {"openrouter"}


@pytest.mark.parametrize("text", BENIGN, ids=[text[:40] for text in BENIGN])
def test_benign_text_is_left_exactly_as_it_is(text: str) -> None:
    assert redact(text) == text


def test_the_benign_corpus_is_large_enough() -> None:
    assert len(BENIGN) >= 50


@pytest.mark.parametrize("prefix", sorted({p for ps in SHAPE_KINDS.values() for p in ps}))
def test_a_shape_prefix_alone_is_no_secret(prefix: str) -> None:
    text = f"the {prefix}abc1 prefix is documented in the handbook"
    assert redact(text) == text


def test_a_token_wrapped_over_two_lines_goes_whole() -> None:
    token = "dop_v1_" + "4f9a0c2e7b1d3a5c" * 4
    out = redact(f"DIGITALOCEAN_TOKEN={token[:40]}\n{token[40:]}\nNEXT=1")
    assert token[:40] not in out and token[40:] not in out
    assert out.endswith("\nNEXT=1")

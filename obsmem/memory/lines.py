"""One observation line: parse it into an ``Observation`` and render a new one.

Accepted shapes (after the bullet and its indentation)::

    🔴 14:30 [decision|c=0.95|i=0.90] text ^id     om
    🔴 14:00 text                                   the original observational-memory tool
    [decision|c=0.95|i=0.90] 14:30 text             ClawVault

Anything else after a bullet is still an observation: its text is the whole rest of the line, with
defaults for what is missing, and what looked like a tag but was not is reported.
"""

from __future__ import annotations

import re

from obsmem.memory.model import (
    DEFAULT_IMPORTANCE,
    LEGACY_IMPORTANCE,
    OBSERVATION_TYPES,
    Observation,
    ParseIssue,
    make_id,
    normalise_text,
    priority_for,
)

__all__ = ["parse_observation", "render_observation"]

_EMOJI = "|".join(map(re.escape, LEGACY_IMPORTANCE))
_TIME = r"(?:[01]?\d|2[0-3]):[0-5]\d"
_TAG = r"\[(?P<type>[a-z][a-z_-]*)(?P<scores>(?:\|[a-z]+=[0-9]*\.?[0-9]+)*)\]"
_LINE = re.compile(
    rf"^(?:(?P<emoji>{_EMOJI})\ufe0f?\s+)?"
    rf"(?:(?P<time>{_TIME})\s+)?"
    rf"(?:{_TAG}\s*)?"
    rf"(?:(?P<time2>{_TIME})\s+)?"
    r"(?P<text>.*)",
    re.DOTALL,
)
# The trailing block id is found apart from _LINE: inside it (after a lazy text) it was missed
# when the emoji or time had already taken the space before it (an empty text, so the line's id
# changed on every read and the line was added again), and long lines took quadratic time.
_BLOCK_ID = re.compile(r"(?<!\S)\^(?P<bid>[0-9a-z]{6,16})\s*$")
# ``[^\]|]*`` rather than ``[^\]]*`` before the bar: one way to match, so no quadratic backtracking.
_LOOKS_LIKE_TAG = re.compile(r"^\s*(?:\S+\s+){0,2}\[[^\]|]*\|[^\]]*\]")
_UNKNOWN_EMOJI = re.compile(r"^([\U0001F300-\U0001FAFF\u2600-\u27BF])\ufe0f?\s")
_MEANING = re.compile(r"\(meaning (\d{4}-\d{2}-\d{2})\)")


def _scores(raw: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in raw.split("|"):
        if "=" in part:
            key, _, value = part.partition("=")
            try:
                out[key] = float(value)
            except ValueError:
                continue
    return out


def parse_observation(
    rest: str,
    *,
    date: str,
    depth: int,
    line: int,
    raw: str,
    default_importance: float | None = None,
) -> tuple[Observation, list[ParseIssue]]:
    """Parse the text after a bullet into an observation, with any issues found on the way."""
    issues: list[ParseIssue] = []
    block = _BLOCK_ID.search(rest)
    match = _LINE.match(rest if block is None else rest[: block.start()])
    assert match is not None  # the pattern accepts any text
    emoji = match.group("emoji")
    obs_type = match.group("type")
    scores = _scores(match.group("scores") or "")
    text = match.group("text").strip()
    tagged = obs_type is not None
    if tagged and obs_type not in OBSERVATION_TYPES:
        issues.append(ParseIssue(line, f"unknown observation type {obs_type!r} (kept as written)"))
    if not tagged and _LOOKS_LIKE_TAG.match(rest):
        issues.append(
            ParseIssue(line, "a tag that could not be read (expected [type|c=0.9|i=0.8])")
        )
    if emoji is None and (unknown := _UNKNOWN_EMOJI.match(text)):
        issues.append(ParseIssue(line, f"unknown priority emoji {unknown.group(1)} (kept as text)"))
    confidence = scores.get("c")
    importance = scores.get("i")
    for key, value in (("c", confidence), ("i", importance)):
        if value is not None and not 0.0 <= value <= 1.0:
            issues.append(ParseIssue(line, f"{key}={value:g} is outside 0..1 (clamped)"))
    if importance is None:
        if emoji is not None:
            importance = LEGACY_IMPORTANCE[emoji]
        else:
            importance = DEFAULT_IMPORTANCE if default_importance is None else default_importance
    importance = min(1.0, max(0.0, importance))
    if confidence is not None:
        confidence = min(1.0, max(0.0, confidence))
    bid = block.group("bid") if block is not None else None
    obs = Observation(
        text=text,
        date=date,
        time=_pad_time(match.group("time") or match.group("time2")),
        priority=emoji,
        type=obs_type,
        confidence=confidence,
        importance=importance,
        referenced_date=(m.group(1) if (m := _MEANING.search(text)) else None),
        id=bid or make_id("obs", date, normalise_text(text)),
        depth=depth,
        tagged=tagged,
        block_id=bid is not None,
        line=line,
        line_end=line,
        raw=raw,
    )
    return obs, issues


def _pad_time(value: str | None) -> str | None:
    if value is None:
        return None
    hours, _, minutes = value.partition(":")
    return f"{int(hours):02d}:{minutes}"


def render_observation(obs: Observation) -> str:
    """The markdown line for a new observation (no line ending), in om's own format."""
    parts = ["  " * obs.depth + "-"]
    parts.append(obs.priority or priority_for(obs.importance))
    if obs.time:
        parts.append(obs.time)
    if obs.type:
        tag = obs.type
        if obs.confidence is not None:
            tag += f"|c={obs.confidence:.2f}"
        tag += f"|i={obs.importance:.2f}"
        parts.append(f"[{tag}]")
    text = " ".join(obs.text.split())
    if obs.referenced_date and obs.referenced_date not in text:
        text += f" (meaning {obs.referenced_date})"
    parts.append(text)
    if obs.id:
        parts.append(f"^{obs.id}")
    return " ".join(parts)

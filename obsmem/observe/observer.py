"""Observing one run of turns: chunk it, ask the LLM (or the rules), and vet what comes back.

Input is only new turns, in chunks bounded by ``OM_OBSERVER_MAX_INPUT_TOKENS``, plus a short tail
of recent observations; never the memory file. Whatever produced the drafts, code applies the
importance floors and drops what repeats a recent observation before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from obsmem.memory.model import Observation
from obsmem.observe.draft import CurrentContext, Draft, to_observation
from obsmem.observe.llm import Completer, build_request, load_prompt, parse_reply
from obsmem.observe.rules import observe_with_rules
from obsmem.observe.scoring import Deduper
from obsmem.sources.model import Turn

__all__ = ["CHARS_PER_TOKEN", "ChunkResult", "chunk_turns", "estimate_tokens", "observe_chunk"]

#: A rough, dependency-free token estimate: English prose and code average about 4 characters.
CHARS_PER_TOKEN = 4
#: Room kept for the prompt and the recent-observations tail inside the input bound.
PROMPT_RESERVE_TOKENS = 2500
RECENT_TAIL = 20


def estimate_tokens(text: str) -> int:
    """An estimate of the tokens in ``text`` (about 4 characters each)."""
    return len(text) // CHARS_PER_TOKEN + 1


def chunk_turns(turns: Sequence[Turn], max_tokens: int) -> Iterator[list[Turn]]:
    """Consecutive groups of turns whose text fits ``max_tokens`` (less the prompt's reserve).

    A single turn larger than the budget is cut to fit, so no request ever exceeds the bound.
    """
    budget = max(200, max_tokens - PROMPT_RESERVE_TOKENS)
    chunk: list[Turn] = []
    costs: list[int] = []
    for turn in turns:
        cost = estimate_tokens(turn.text) + 12  # the turn's number, time and role
        if cost > budget:
            keep = (budget - 12) * CHARS_PER_TOKEN
            turn = Turn(**{**turn.__dict__, "text": turn.text[:keep] + " …[cut]"})
            cost = budget
        if chunk and sum(costs) + cost > budget:
            # The cursor moves to the end of a chunk's last line: a chunk must not end in the
            # middle of a line's turns, or a run stopped after it would skip the line's rest.
            split = len(chunk)
            while split > 0 and chunk[split - 1].byte_end == turn.byte_end:
                split -= 1
            if split == 0 or sum(costs[split:]) + cost > budget:
                split = len(chunk)  # one line's turns exceed the budget: bound wins
            yield chunk[:split]
            chunk, costs = chunk[split:], costs[split:]
        chunk.append(turn)
        costs.append(cost)
    if chunk:
        yield chunk


@dataclass
class ChunkResult:
    """What observing one chunk gave: observations ready to write, and the day's context."""

    observations: list[Observation]
    context: CurrentContext
    dropped_duplicates: int = 0
    by: str = "rules"  # "llm" or "rules"
    drafts: list[Draft] = field(default_factory=list)


def observe_chunk(
    turns: list[Turn],
    *,
    provider: Completer | None,
    recent: Sequence[Observation],
    deduper: Deduper,
    max_output_tokens: int = 4096,
) -> ChunkResult:
    """Observe one chunk with ``provider`` (or the rules when it is None).

    Provider errors propagate, so the caller decides between falling back and deferring.
    """
    if provider is None:
        drafts, context = observe_with_rules(turns)
        by = "rules"
    else:
        reply = provider.complete(
            load_prompt("observer"),
            build_request(turns, list(recent)[-RECENT_TAIL:]),
            purpose="observer",
            max_tokens=max_output_tokens,
        )
        drafts, context = parse_reply(reply.text, turns)
        by = "llm"
    kept: list[Observation] = []
    dropped = 0
    for draft in drafts:
        obs = to_observation(draft)
        if deduper.admit(obs):
            kept.append(obs)
        else:
            dropped += 1
    return ChunkResult(kept, context, dropped, by, drafts)

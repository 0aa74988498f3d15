"""Observing one run of turns: chunk it, ask the LLM (or the rules), and vet what comes back.

Input is only new turns, in chunks bounded by ``OM_OBSERVER_MAX_INPUT_TOKENS``, plus continuity
taken from memory within a fixed share of that bound (``CONTINUITY_SHARE``): the Current Context
last written for the same project and its latest observations; never the whole memory file.
Whatever produced the drafts, code applies the importance floors and drops what repeats a recent
observation before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from obsmem.memory.model import Observation
from obsmem.memory.store import MemoryStore
from obsmem.observe.draft import CurrentContext, Draft, to_observation
from obsmem.observe.llm import Completer, build_request, load_prompt, parse_reply
from obsmem.observe.rules import observe_with_rules
from obsmem.observe.scoring import Deduper
from obsmem.sources.model import Turn

__all__ = [
    "CHARS_PER_TOKEN",
    "CONTINUITY_SHARE",
    "ChunkResult",
    "Continuity",
    "chunk_turns",
    "continuity",
    "estimate_tokens",
    "observe_chunk",
    "overlap",
    "overlap_budget",
]

#: A rough, dependency-free token estimate: English prose and code average about 4 characters.
CHARS_PER_TOKEN = 4
#: Room kept for the observer prompt (about 9,000 characters) and the request's own headings
#: inside the input bound.
PROMPT_RESERVE_TOKENS = 3000
RECENT_TAIL = 20
#: The share of ``OM_OBSERVER_MAX_INPUT_TOKENS`` given to continuity (previous Current Context
#: and recent observations of the project); chunks of turns get the rest, less the prompt.
CONTINUITY_SHARE = 0.15
#: The share of it given to the turns a chunk repeats from the previous one (``overlap``).
OVERLAP_SHARE = 0.05
#: The least it gets, so that a small bound still repeats a turn or two.
OVERLAP_FLOOR_TOKENS = 150


def estimate_tokens(text: str) -> int:
    """An estimate of the tokens in ``text`` (about 4 characters each)."""
    return len(text) // CHARS_PER_TOKEN + 1


def chunk_turns(turns: Sequence[Turn], max_tokens: int) -> Iterator[list[Turn]]:
    """Consecutive groups of turns whose text fits ``max_tokens`` (less the prompt's reserve).

    A single turn larger than the budget is cut to fit, so no request ever exceeds the bound.
    """
    reserved = PROMPT_RESERVE_TOKENS + continuity_budget(max_tokens) + overlap_budget(max_tokens)
    budget = max(200, max_tokens - reserved)
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


def overlap_budget(max_tokens: int) -> int:
    """The tokens a request may spend on turns repeated from the previous chunk."""
    return max(OVERLAP_FLOOR_TOKENS, int(max_tokens * OVERLAP_SHARE))


def overlap(chunk: Sequence[Turn], count: int, max_tokens: int) -> list[Turn]:
    """The last ``count`` turns of ``chunk``, within ``overlap_budget(max_tokens)``: what the next
    chunk's request repeats, marked as already observed, so an exchange a boundary cut in two
    still reads whole. The newest are kept first; a turn too long for what is left is cut."""
    left = overlap_budget(max_tokens)
    kept: list[Turn] = []
    for turn in reversed(chunk[-count:] if count > 0 else []):
        cost = estimate_tokens(turn.text) + 12
        if cost > left:
            keep = (left - 15) * CHARS_PER_TOKEN  # room for the cut mark too
            if keep < 200:  # a few words out of context would mislead more than help
                break
            turn = Turn(**{**turn.__dict__, "text": turn.text[:keep] + " …[cut]"})
            cost = left
        kept.append(turn)
        left -= cost
    return kept[::-1]


def continuity_budget(max_tokens: int) -> int:
    """The tokens a request may spend on continuity, out of ``max_tokens``."""
    return int(max_tokens * CONTINUITY_SHARE)


@dataclass
class Continuity:
    """What a request carries from memory so the model goes on where the last one stopped."""

    project: str | None
    budget: int  # tokens, for the context and the observations together
    context: dict[str, str] = field(default_factory=dict)
    recent: list[Observation] = field(default_factory=list)

    def after(self, added: Sequence[Observation], context: dict[str, str]) -> Continuity:
        """The continuity for the next chunk of the same file: its context, its observations."""
        return _fitted(self.project, self.budget, context or self.context, [*self.recent, *added])


def _fitted(
    project: str | None, budget: int, context: dict[str, str], candidates: Sequence[Observation]
) -> Continuity:
    # The newest observations first: they are what the next turns most likely go on from.
    left = budget - sum(estimate_tokens(f"{k}: {v}") for k, v in context.items())
    recent: list[Observation] = []
    for obs in reversed(candidates):
        cost = estimate_tokens(obs.text) + 6  # its date and time
        if cost > left or len(recent) == RECENT_TAIL:
            break
        recent.append(obs)
        left -= cost
    return Continuity(project, budget, dict(context), recent[::-1])


def continuity(store: MemoryStore, project: str | None, max_tokens: int) -> Continuity:
    """The continuity for the first chunk of a file of ``project``, within its share of
    ``max_tokens``: the latest observations whose provenance names that project, and the Current
    Context of the latest day whose most recently written observation came from it (a day's
    context is written with its chunk's observations, so that chunk's project is the context's).
    Nothing for a project-less file: another project's memory would only mislead the model.
    """
    budget = continuity_budget(max_tokens)
    if not project:
        return Continuity(project, budget)
    doc = store.read_observations()
    ledger = store.provenance()
    written = {obs_id: n for n, obs_id in enumerate(ledger)}
    mine = [o for o in doc.observations if (p := ledger.get(o.id)) and p.project == project]
    context: dict[str, str] = {}
    for day in reversed(doc.days):
        known = [o for o in day.observations if o.id in written]
        if day.context and known:
            last = max(known, key=lambda o: written[o.id])
            if ledger[last.id].project == project:
                context = day.context
                break
    return _fitted(project, budget, context, mine)


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
    previous_context: dict[str, str] | None = None,
    ended: bool = False,
    seen: Sequence[Turn] = (),
) -> ChunkResult:
    """Observe one chunk with ``provider`` (or the rules when it is None); ``recent`` and
    ``previous_context`` (the previous Current Context) are sent along as continuity, and
    ``seen`` (the previous chunk's last turns, see ``overlap``) as turns already observed;
    ``ended`` says the chunk ends a session that is over (the rules then say where work stopped).

    What the model derives from ``seen`` turns alone is dropped, counted with the duplicates:
    those turns were observed with the previous chunk. The rules read only ``turns``.
    Provider errors propagate, so the caller decides between falling back and deferring.
    """
    dropped = 0
    if provider is None:
        drafts, context = observe_with_rules(turns, ended=ended)
        by = "rules"
    else:
        reply = provider.complete(
            load_prompt("observer"),
            build_request(turns, list(recent)[-RECENT_TAIL:], previous_context, seen),
            purpose="observer",
            max_tokens=max_output_tokens,
            # The reflector's switch: JSON mode where the provider has one (OpenAI's
            # response_format, dropped once if a server rejects it), the instruction elsewhere.
            json_schema={},
        )
        drafts, context = parse_reply(reply.text, [*seen, *turns], seen=len(seen))
        observed = {id(t) for t in seen}
        fresh = [d for d in drafts if not all(id(t) in observed for t in d.turns)]
        dropped = len(drafts) - len(fresh)
        drafts = fresh
        by = "llm"
    kept: list[Observation] = []
    for draft in drafts:
        obs = to_observation(draft)
        if deduper.admit(obs):
            kept.append(obs)
        else:
            dropped += 1
    return ChunkResult(kept, context, dropped, by, drafts)

"""The offline observer: rules that pick out what matters when no LLM is configured.

Less thorough than an LLM (it sees sentences, not meaning) but free, private and fast. From the
user's words it takes decisions, preferences, commitments and to-dos; from the assistant's, the
milestones it reports (tests passing, releases, deploys, merges); from tool outcomes, failed
commands and their later fixes; from tool actions, the files changed. A session with none of
these collapses into one line: what the user asked for, and which files changed.

Transcript text is data, never instructions: a sentence that addresses the model ("ignore previous
instructions ...") is never extracted, whatever else it says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from obsmem.observe.draft import CurrentContext, Draft
from obsmem.sources.model import Turn

__all__ = ["observe_with_rules"]

MAX_TEXT = 220

_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget) (?:all |any |the )?(?:previous|prior|above|earlier|your)\b"
    r"|\bsystem prompt\b|\byou are now\b|\bnew instructions\b|\bact as\b|\bjailbreak\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(])|\n+")

_RULES: tuple[tuple[str, float, float, re.Pattern[str]], ...] = (
    ("decision", 0.8, 0.7, re.compile(
        r"\b(?:let'?s (?:go with|use|switch|stick with|keep)|we(?:'ll| will| should) (?:use|go with|switch)"
        r"|(?:i|we) (?:decided|chose|picked|settled on)|decided to|decision:|going with"
        r"|switch(?:ing)? (?:from \S+ )?to|instead of|rather than)\b", re.IGNORECASE)),
    ("preference", 0.7, 0.7, re.compile(
        r"\b(?:i (?:really )?(?:prefer|like|love|hate|dislike|don'?t like|do not like|want|don'?t want)"
        r"|i'?d rather|please (?:always|never|don'?t|do not|avoid)|always use|never use"
        r"|my preference)\b", re.IGNORECASE)),
    ("commitment", 0.6, 0.6, re.compile(
        r"\b(?:todo\b|to-do|i'?ll |i will |we need to|i need to|remember to|don'?t forget"
        r"|next step|follow up|later we|by (?:monday|tuesday|wednesday|thursday|friday|tomorrow"
        r"|next week|end of (?:day|week)))", re.IGNORECASE)),
    ("fact", 0.6, 0.6, re.compile(
        r"\b(?:my name is|i am a|i'm a|i work (?:at|on|for)|our (?:team|company|stack) (?:is|uses)"
        r"|we use|the project uses|deadline is)\b", re.IGNORECASE)),
)
_MILESTONE = re.compile(
    r"\b(?:all (?:\d+ )?tests? pass(?:ed|ing)?|tests? (?:are )?(?:now )?passing|released|deployed"
    r"|merged|published|tagged v?\d|shipped|is (?:now )?live|build (?:is )?green)\b",
    re.IGNORECASE,
)
_FAILED = re.compile(
    r"\b(?:error|failed|failure|exception|traceback|exit (?:code|status) [1-9]|fatal|denied)\b",
    re.IGNORECASE,
)
_PASSED = re.compile(r"\b(?:exit (?:code|status) 0|\d+ passed|succeeded|success)\b", re.IGNORECASE)
_CHANGE = re.compile(r"^(?:Edit|MultiEdit|Write|NotebookEdit|Patch|apply_patch|write_file|write"
                     r"|edit|patch)\s*:\s*(.+)$")  # fmt: skip
_ROUTINE_REPLY = re.compile(r"^(?:ok|okay|thanks|thank you|yes|no|sure|great|cool|done|go on"
                            r"|continue|lgtm|perfect)[.!]*$", re.IGNORECASE)  # fmt: skip
_ENTITY = re.compile(r"`([^`]{2,40})`|\b([A-Z][a-zA-Z0-9]+(?:[A-Z][a-z0-9]+)+|[A-Z]{2,}[a-z]*)\b")


def _sentences(text: str) -> Iterable[str]:
    for part in _SENTENCE.split(text):
        part = part.strip(" \t-*>#")
        if 12 <= len(part):
            yield part


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1].rstrip() + "…"


def _substantive(turn: Turn) -> bool:
    text = turn.text.strip()
    return len(text) >= 8 and not _ROUTINE_REPLY.match(text) and not text.startswith("/")


def _from_words(turn: Turn) -> list[Draft]:
    out: list[Draft] = []
    for sentence in _sentences(turn.text):
        if _INJECTION.search(sentence) or sentence.endswith("?"):
            continue  # instructions aimed at a model, and questions, are not facts
        for obs_type, importance, confidence, pattern in _RULES:
            if pattern.search(sentence):
                if turn.role == "assistant":
                    # The assistant's plans are weaker evidence than the user's own words.
                    importance, confidence = importance - 0.15, confidence - 0.2
                    if obs_type in ("preference", "fact"):
                        break
                text = _short(sentence)
                if turn.role == "user" and obs_type in ("preference", "decision", "commitment"):
                    text = "User: " + text
                out.append(Draft(text, obs_type, importance, confidence, [turn]))
                break
        else:
            if turn.role == "assistant" and _MILESTONE.search(sentence):
                out.append(Draft(_short(sentence), "milestone", 0.6, 0.6, [turn], completed=True))
    return out


def _from_tools(turns: list[Turn]) -> tuple[list[Draft], list[str]]:
    drafts: list[Draft] = []
    changed: list[str] = []
    failures: dict[str, tuple[Turn, Turn]] = {}
    last_action: Turn | None = None
    for turn in turns:
        if turn.role == "action":
            last_action = turn
            match = _CHANGE.match(turn.text.strip())
            if match:
                changed.append(match.group(1).strip())
            continue
        if turn.role != "outcome" or last_action is None:
            continue
        action = last_action.text.strip()
        first_line = turn.text.strip().splitlines()[0] if turn.text.strip() else ""
        if _FAILED.search(turn.text):
            failures[action] = (last_action, turn)
        elif action in failures and _PASSED.search(turn.text):
            failed_action, failed = failures.pop(action)
            error = failed.text.strip().splitlines()[0] if failed.text.strip() else "an error"
            drafts.append(Draft(_short(f"Fixed: `{action}` now succeeds ({first_line}) after "
                                       f"failing with: {error}"), "lesson", 0.65, 0.6,
                                [failed_action, failed, last_action, turn], completed=True))  # fmt: skip
    for action, (action_turn, outcome) in failures.items():
        error = outcome.text.strip().splitlines()[0] if outcome.text.strip() else "failed"
        drafts.append(Draft(_short(f"Failed: `{action}`: {error}"), "error", 0.55, 0.8,
                            [action_turn, outcome]))  # fmt: skip
    return drafts, changed


def _context(turns: list[Turn], changed: list[str]) -> CurrentContext:
    users = [t for t in turns if t.role == "user" and _substantive(t)]
    ctx = CurrentContext()
    if users:
        ctx.active_task = _short(users[-1].text.splitlines()[0])
        questions = [s for t in users[-3:] for s in _sentences(t.text) if s.endswith("?")]
        ctx.open_questions = [_short(q) for q in questions[-2:]]
    counts: Counter[str] = Counter()
    for turn in turns:
        if turn.role in ("user", "assistant"):
            for match in _ENTITY.finditer(turn.text):
                counts[match.group(1) or match.group(2)] += 1
    counts.update(path.rsplit("/", 1)[-1] for path in changed)
    ctx.key_entities = [name for name, _ in counts.most_common(6)]
    return ctx


def observe_with_rules(turns: list[Turn]) -> tuple[list[Draft], CurrentContext]:
    """Drafts and the Current Context for a run of turns from one transcript."""
    drafts: list[Draft] = []
    for turn in turns:
        if turn.role in ("user", "assistant"):
            drafts.extend(_from_words(turn))
    tool_drafts, changed = _from_tools(turns)
    drafts.extend(tool_drafts)
    users = [t for t in turns if t.role == "user" and _substantive(t)]
    if users:
        # One line for the session's request, so even a routine session is findable later.
        first = users[0]
        files = sorted(dict.fromkeys(changed))
        tail = ""
        if files:
            shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            tail = f" (changed {shown})"
        request = _short(first.text.splitlines()[0])
        drafts.insert(0, Draft(_short(f"User asked: {request}{tail}"), "task", 0.45, 0.9,
                               [first]))  # fmt: skip
    elif changed:
        files = sorted(dict.fromkeys(changed))
        drafts.append(Draft(_short("Changed files: " + ", ".join(files[:8])), "event", 0.3, 0.9,
                            [t for t in turns if t.role == "action"][:1]))  # fmt: skip
    return drafts, _context(turns, changed)

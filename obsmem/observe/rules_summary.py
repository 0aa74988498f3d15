"""The agent's own account of its work: the message that ends each exchange, condensed.

When an agent finishes what it was asked, it says what it did, often as a bulleted recap
("Summary", "What I did", "Changed:", "Next steps"). That recap is prime material: what was
built, what was learned, what is left open, in the agent's own dense words. The rules keep the
message that ends an exchange (the last assistant message before the user speaks again, or the
last of the run):

- as a *report* when it tells of work done (first-person past tense, "Done", "Implemented",
  "Summary", or the exchange wrote files): its opening and its sections, a few lines;
- as a *proposal* otherwise (a plan, an approach, an offer "Shall I ...?"): kept only when the
  user accepts it in their next words, as the user's decision; dropped when they reject or
  correct it;
- as an *answer* (an explanation) when it is neither: its opening, one or two lines.

The opening's lead-ins (pleasantries, "Let me ...", remarks on the user's point, "Here's a
summary:") and recap sections that name nothing are left out. Claims that the tool results
contradict are dropped: "I've created CLAUDE.md" when the write of
CLAUDE.md was refused. Plans' acceptance criteria are never read as results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from obsmem.observe.draft import Draft
from obsmem.observe.rules_text import LINE_CHARS, Section, pack, sections, shorten
from obsmem.sources.model import Turn

__all__ = ["Report", "announcement", "classify", "intent_only", "offer_of", "report_drafts"]

_DONE = re.compile(
    r"\b(?:I'?ve|I have|we'?ve|we have)\s+(?:now\s+|also\s+|successfully\s+)?"
    r"(?:\w+ed|built|written|made|done|run|set up|found|put)\b"
    r"|^(?:\W*)(?:Done|Finished|Completed|Implemented|Fixed|Created|Updated|Added|Removed"
    r"|Deleted|Changed|Summary|All set)\b"
    r"|\b(?:successfully|is now|are now|now (?:passes|works|includes|lists|uses))\b"
    r"|しました|完了",
    re.IGNORECASE | re.MULTILINE,
)
_INTENT_ONLY = re.compile(
    r"^\W*(?:let me|now let me|i'?ll|i will|i'?m going to|next,? i|first,? i|now i'?ll)\b",
    re.IGNORECASE,
)
_OFFER = re.compile(
    r"(?:^|[.!?]\s+)(?:should i|shall i|do you want me to|would you like me to|want me to"
    r"|i can also|i could)\s+([^?]{6,200})\?",
    re.IGNORECASE,
)
_INTERJECTION = re.compile(
    r"^(?:(?:perfect|great|excellent|good|brilliant|absolutely|sure|certainly|done|okay|ok"
    r"|got it|understood|noted|you'?re (?:absolutely |completely )?right|good catch|excellent catch"
    r"|great catch|great question|ah|i see|thanks?)\b[^.!?\n]{0,30}[.!?]\s*)+",
    re.IGNORECASE,
)
_RECAP_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*|\*\*)\W*(?:summary|what (?:i|we) (?:did|changed|built)|changes made"
    r"|changed|done|completed|results?|verification|implemented)\b",
    re.IGNORECASE | re.MULTILINE,
)
# A proposal puts something forward: a heading that names a plan or options, "I propose /
# recommend / suggest", "here's the plan", "option 2", "we could". The bare nouns are not enough:
# "a decorator is a design pattern" explains, it proposes nothing.
_PROPOSAL = re.compile(
    r"^\s*#{1,6}[^\n]*\b(?:plans?|proposals?|proposed|approach(?:es)?|options?|solutions?"
    r"|designs?|recommendations?)\b"
    r"|\b(?:i|we) (?:would |'d )?(?:propose|recommend|suggest)\b"
    r"|\b(?:my|the|this|our) (?:proposed|recommended|suggested)\b"
    r"|\bhere'?s (?:the|my|a|an|what i) (?:\w+ ){0,2}(?:plan|approach|proposal|design|solution"
    r"|options?|propose|recommend|suggest)\b"
    r"|\boption (?:\d|[a-c]\b|one|two)|\b(?:we|you) could\b",
    re.IGNORECASE | re.MULTILINE,
)
_NOT_RESULTS = re.compile(r"acceptance criteria|success criteria|definition of done", re.I)
# Whole words only, and "todo" not as part of a name: "Todo-app Subdirectory" or "OpenCode
# config" head a description, not a list of what is left to do.
_OPEN_HEADING = re.compile(
    r"\b(?:next|to-?dos?|to do|remaining|left|open|pending|follow[- ]?ups?|outstanding"
    r"|blockers?|issues?|known)\b(?!-)",
    re.I,
)
_LESSON_HEADING = re.compile(r"learn|finding|insight|cause|discover|why|note|problem|lesson", re.I)
_FACT_HEADING = re.compile(r"architect|stack|structure|overview|design|layout|component", re.I)


# What an agent says before it says anything: a pleasantry ("I'd be happy to help ..."), what it
# is about to do ("Let me redesign:"), a remark on the user's point ("This is a critical
# distinction"), an announcement of what follows ("Here's a comprehensive summary:"). Agents
# open most messages so; none of it is worth a line, so it is taken out of the opening.
_PLEASANTRY = re.compile(
    r"^(?:i'?d be (?:happy|glad) to help|happy to help|glad to help|i can help)\b",
    re.IGNORECASE,
)
_REMARK = re.compile(
    r"^(?:this|that|it)(?: is|'s| was) (?:a |an |the )?(?:\w+ ){0,3}(?:point|distinction"
    r"|insight|catch|question|observation|idea|clarification|requirement)\b[^.!?]*[.!?]?$",
    re.IGNORECASE,
)
_ANNOUNCEMENT = re.compile(
    r"^(?:based on [^,]{0,120}, )?(?:here'?s|here is|here are|below is|below are|the following"
    r"|this is what|that'?s what)\b[^.!?]{0,120}:$",
    re.IGNORECASE,
)


def _lead_out(text: str) -> str:
    """``text`` (a message's opening) without its lead-in sentences; empty when nothing else."""
    text = _INTERJECTION.sub("", text.strip()).strip()
    kept = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        plain = re.sub(r"\*\*|__", "", sentence)  # "This is a **critical distinction**"
        if not any(p.match(plain) for p in (_PLEASANTRY, _INTENT_ONLY, _REMARK, _ANNOUNCEMENT)):
            kept.append(sentence)
    return " ".join(kept).strip()


@dataclass
class Report:
    """The message that ends an exchange, and what it is."""

    turn: Turn
    kind: str  # "report", "proposal" or "answer"
    #: The agent's answer to a correction: its revised plan, which mostly restates the correction.
    revision: bool = False


def classify(turn: Turn, wrote: bool) -> str:
    """``report``, ``proposal`` or ``answer`` for the message that ends an exchange.

    A report says so early: its opening tells of work done ("I've updated ...", "Done", a
    "Summary" heading), or the exchange wrote files. Work done mentioned further down a design
    ("... is now tracked") does not make a proposal a report.
    """
    text = turn.text
    opening = _INTERJECTION.sub("", text.lstrip())[:300]
    if _DONE.search(opening) or _RECAP_HEADING.search(text) or (wrote and not _OFFER.search(text)):
        return "report"
    if _OFFER.search(text) or _PROPOSAL.search(text):
        return "proposal"
    return "answer"


def offer_of(text: str) -> str | None:
    """What the agent offered to do at the end of its message (``Shall I add the index?``)."""
    found = list(_OFFER.finditer(text[-600:]))
    return shorten(found[-1].group(1).strip(), 200) if found else None


def _opening(parts: list[Section]) -> tuple[str, list[Section]]:
    """The message's opening line (first paragraph, else its first heading) and the rest."""
    first = parts[0] if parts else Section("")
    if not first.heading and first.items:
        text = _lead_out(first.items[0])
        rest_items = first.items[1:]
        if text.endswith(":") and rest_items:
            text = f"{text} {rest_items[0]}"
            rest_items = rest_items[1:]
        rest = ([Section("", rest_items)] if rest_items else []) + parts[1:]
        if text.endswith(":") and not rest_items and len(parts) > 1 and parts[1].heading:
            # "I've created the spec at:" then the path on a line of its own.
            text = f"{text} {parts[1].heading}"
            rest = ([Section("", parts[1].items)] if parts[1].items else []) + parts[2:]
        if text:
            return text, rest
        return _opening(rest)
    if first.heading and first.items:
        # "## Summary" then the paragraph that says it: the paragraph is the opening.
        generic = re.fullmatch(r"(?:summary|done|result|results|overview)", first.heading, re.I)
        if generic or not _lead_out(first.heading):  # "Ah! Good point. Let me redesign:"
            text = _lead_out(first.items[0])
            rest = [Section("", first.items[1:])] if first.items[1:] else []
            return text, rest + parts[1:]
        return pack(first.heading, first.items), parts[1:]
    if first.heading and len(parts) > 1:
        return _opening(parts[1:])  # a title alone says little: what follows it opens
    return first.heading, parts[1:]


def _contradicted(text: str, refused: list[str]) -> bool:
    names = [p.rsplit("/", 1)[-1] for p in refused]
    return any(name and name in text for name in names) and bool(
        re.search(r"\b(?:created|wrote|written|updated|added|changed|saved)\b", text, re.I)
    )


def _kind_of(heading: str) -> str:
    if _OPEN_HEADING.search(heading):
        return "task"
    if _LESSON_HEADING.search(heading):
        return "lesson"
    if _FACT_HEADING.search(heading):
        return "fact"
    return "event"


def report_drafts(report: Report, *, lines: int, refused: list[str]) -> list[Draft]:
    """A report or an answer as at most ``lines`` observations (its opening, then sections)."""
    parts = sections(report.turn.text)
    opening, rest = _opening(parts)
    out: list[Draft] = []
    importance = 0.65 if report.kind == "report" else 0.45
    if opening and not _contradicted(opening, refused):
        out.append(Draft(shorten(opening), "event", importance, 0.7, [report.turn]))
    candidates: list[tuple[int, Section, list[str]]] = []
    for number, part in enumerate(rest):
        items = [
            i for i in part.items if not _NOT_RESULTS.search(i) and not _contradicted(i, refused)
        ]
        if not items or (not part.heading and len(items) == 1 and len(items[0]) < 24):
            continue
        if _kind_of(part.heading) == "event" and _specificity(part, items) == 0:
            # "Each step includes: code examples; testing requirements": a recap section that
            # names nothing (no file, number, command or identifier) describes the work's shape,
            # not what was done; what is left open and what was learned are kept whatever.
            continue
        candidates.append((number, part, items))
    room = max(0, lines - len(out))
    if len(candidates) > room:
        # The most specific sections (names, numbers, paths) and what is left open win; the
        # chosen ones keep the message's order.
        ranked = sorted(candidates, key=lambda c: -_specificity(c[1], c[2]))
        chosen = {c[0] for c in ranked[:room]}
        candidates = [c for c in candidates if c[0] in chosen]
    for _, part, items in candidates:
        text = pack(part.heading, items, LINE_CHARS)
        out.append(Draft(text, _kind_of(part.heading), importance - 0.05, 0.65, [report.turn]))
    return out


_SPECIFIC = re.compile(
    r"`[^`]+`|\d+(?:\.\d+)*|\b\w+\.\w{1,4}\b|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}\b"
)


def _specificity(part: Section, items: list[str]) -> int:
    """How much a section names (code, numbers, files, identifiers), per its length."""
    text = " ".join(items)
    score = len(_SPECIFIC.findall(text)) * 100 // (1 + len(text) // 80)
    if _OPEN_HEADING.search(part.heading):
        score += 1000  # what is left open is always worth a line
    return score


def intent_only(text: str) -> bool:
    """True for a message that only says what the agent is about to do ("Let me check ...")."""
    text = _INTERJECTION.sub("", text.strip())
    if len(text) < 60 and "\n" not in text and not _DONE.search(text):
        return True  # "Noted." / "Understood; I will not repeat those.": an acknowledgement
    return announcement(text)


def announcement(text: str) -> bool:
    """True for a short message that opens or ends with what the agent will do next ("Let me
    run the tests."): work announced, not work reported."""
    text = _INTERJECTION.sub("", text.strip())
    if len(text) >= 400 or "\n-" in text or "\n1." in text:
        return False
    sentences = re.split(r"(?<=[.!?:])\s+", text)
    return bool(_INTENT_ONLY.match(text)) or bool(_INTENT_ONLY.match(sentences[-1]))

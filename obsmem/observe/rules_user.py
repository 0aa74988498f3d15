"""The user's words: every request, and the decisions, corrections and constraints in them.

Each message the user typed gives one line, condensed (code and tables left out), typed by what
it does: a correction ("no, ...", "actually ...", "it's good, but ..."), a constraint ("must
not", "don't", "never", "use X instead"), a decision ("let's go with"), a commitment with a
deadline ("I need to ... by Friday"), or else a request. A long message gives its opening and,
as lines of their own, the sentences further on that decide or constrain something.

What the user says right after the agent's message is also their verdict on it: "yes", "go
ahead", "sounds good" accept a proposal (it becomes their decision); "no", "don't", a
correction reject it. Sub-agent prompts are the agent's words, not the user's, and give nothing
here.
"""

from __future__ import annotations

import re

from obsmem.observe.draft import Draft
from obsmem.observe.rules_text import condense, hostile, prose_sentences, shorten
from obsmem.sources.model import Turn

__all__ = ["ACK", "BINDING", "reaction", "user_drafts"]

#: Replies that say nothing but "carry on", one phrase or several ("ok, go on", "thanks!
#: continue"): no line of their own.
_ACK_PHRASE = (
    r"(?:ok(?:ay)?|k|thanks?(?: you)?|thx|ty|yes|yep|yeah|y|no|nope|n|sure|great|cool|nice"
    r"|done|go on|continue|proceed|next|lgtm|perfect|good|fine|right|correct|exactly"
    r"|go ahead|do it|sounds good|looks good|ship it|please do|yes please|approved?"
    r"|please|carry on|keep going|go|now)"
)
ACK = re.compile(rf"^{_ACK_PHRASE}(?:[\s.!,]+{_ACK_PHRASE})*[\s.!,]*$", re.IGNORECASE)
_ACCEPT = re.compile(
    r"^\W*(?:yes|yep|yeah|sure|ok(?:ay)?|great|perfect|good|nice|cool|excellent|lgtm|agreed"
    r"|approved?|go ahead|go for it|do it|let'?s do it|sounds good|looks good|ship it"
    r"|please do|proceed|that works|makes sense|correct|exactly|right)\b(?![-'])",
    re.IGNORECASE,
)
_BUT = re.compile(r"^[^.!?\n]{0,40}?\b(?:but|however|although|though|except)\b", re.IGNORECASE)
_REJECT = re.compile(
    r"^\W*(?:no\b|nope\b|nah\b|don'?t\b|do not\b|stop\b|wrong\b|not (?:quite|really|that|like)"
    r"|that'?s not\b|this is not\b|it'?s not\b|actually\b|wait\b|instead\b|rather\b"
    r"|revert\b|undo\b|cancel\b)",
    re.IGNORECASE,
)
# "Must have been", "must've", "must feel", "must be so hard": a guess about what happened or
# how someone feels, not a rule ("it must have been the cache" binds nothing). "Every PR must
# have a changelog entry" is still one: only "have" + a past participle is a guess.
_GUESSED = (
    r"(?!'ve\b|\s+have\s+(?:been|had|gone|seen|done|taken|got|gotten|forgotten|broken|written"
    r"|made|run|\w+ed)\b|\s+feel|\s+be\s+(?:so|such|really|very|quite|nice|hard|tough|great"
    r"|awesome|amazing|fun|exciting|scary|frustrating|annoying|tiring|exhausting|lovely"
    r"|wonderful|tricky|painful)\b)"
)
_CONSTRAINT = re.compile(
    rf"\b(?:must{_GUESSED}(?:n'?t| not)?|should(?:n'?t| not)|don'?t|do not|never|always|avoid"
    r"|no need to|not allowed|keep in mind|it'?s important|important(?: not)? to|important:"
    r"|make sure"
    r"|instead of|rather than|use \S+(?: \S+)? instead|i'?d rather|not acceptable"
    # "Use pytest, not unittest"; "please remember I deploy on a Pi": said to be kept.
    r"|use [^\s,]+(?: [^\s,]+)?,? not|please remember|remember that|bear in mind"
    r"|unacceptable|keep (?!\S*ing\b)(?:\S+ ){1,3}out of)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:let'?s (?:go with|use|switch|stick with|keep|do)|we(?:'ll| will| should) (?:use|go with"
    r"|switch)|(?:i|we) (?:decided|chose|picked|settled on)|decided to|decision:|going with"
    r"|switch(?:ing)? (?:from \S+ )?to|option \w+ is)\b",
    re.IGNORECASE,
)
# A date the user must meet: "by Friday", "due on 2026-03-02", "deadline".
_DEADLINE_WORDS = (
    r"deadline|due (?:on|by)|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|tomorrow|tonight|next week|end of (?:the )?(?:day|week|month)|eod|eow|\d{4}-\d{2}-\d{2}"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2})"
)
_DEADLINE = re.compile(rf"\b(?:{_DEADLINE_WORDS})\b", re.IGNORECASE)
_COMMITMENT = re.compile(
    r"\b(?:i'?ll|i will|i need to|we need to|i have to|we have to|remember to|don'?t forget"
    rf"|{_DEADLINE_WORDS})\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:i (?:really )?(?:prefer|like|love|hate|dislike|want)|i'?d rather|my preference"
    r"|please (?:always|never|don'?t|do not|avoid))\b",
    re.IGNORECASE,
)
_FILLER = re.compile(r"^(?:ultrathink|think hard|think)\b[\s,:-]*", re.IGNORECASE)
_GREETING = re.compile(r"^(?:hi|hello|hey|good (?:morning|afternoon|evening))\b", re.IGNORECASE)
#: Slash commands that only steer the agent's own session: nothing to remember.
_ROUTINE_COMMANDS = frozenset(
    {
        "/clear",
        "/compact",
        "/exit",
        "/quit",
        "/help",
        "/cost",
        "/status",
        "/model",
        "/resume",
        "/login",
        "/logout",
        "/config",
        "/doctor",
        "/mcp",
        "/permissions",
        "/context",
        "/usage",
        "/rewind",
        "/vim",
        "/theme",
        "/new",
    }
)
#: Sentences further on in a long message that earn a line of their own, at most.
EXTRA_LINES = 2


def reaction(text: str) -> str | None:
    """``accept``, ``reject`` or None: what the user's words say about the agent's last message."""
    head = text.strip()
    if _BUT.match(head):
        return "reject"  # "great, but ..." / "the idea is fine, however ..." corrects it
    if _REJECT.match(head):
        return "reject"
    if _ACCEPT.match(head):
        return "accept"
    return None


#: 🔴 (``priority_for``): what the user decided, forbade, corrected or must do by a date binds
#: the work from then on, and a colleague who missed it would get it wrong. What they asked or
#: prefer stays 🟡: it is context for the work, often done by the end of the session.
BINDING = 0.8


def _kind(sentence: str) -> tuple[str, str, float] | None:
    """``(type, label, importance)`` for a sentence that decides or constrains, else None."""
    if _DECISION.search(sentence):
        return "decision", "User decided", BINDING
    if _COMMITMENT.search(sentence):
        return "commitment", "User plans", BINDING if _DEADLINE.search(sentence) else 0.7
    if _PREFERENCE.search(sentence):
        return "preference", "User prefers", 0.7
    if _CONSTRAINT.search(sentence):
        return "preference", "User constraint", BINDING
    return None


# The sentence's own opening says again what its label says ("User prefers: I prefer X", "User
# decided: Let's go with X"): the line keeps what was decided, preferred or planned. Only
# openings whose meaning the label carries whole: "I hate X" or "I want you to" stay as said.
_LEAD_INS = {
    "User decided": re.compile(
        r"^(?:(?:so|ok(?:ay)?|then),?\s+)?(?:let'?s(?: go with)?|(?:i|we)(?: have|'ve)? (?:decided"
        r"(?: to| on)?|chose|picked|settled on|(?:are|'re) going with))\s+(?=\w)",
        re.IGNORECASE,
    ),
    "User prefers": re.compile(
        r"^(?:i (?:really |strongly |generally |would )?(?:prefer|like)(?: to)?"
        r"|i'?d (?:rather|prefer)|my preference is(?: to| for)?|please)\s+(?=\w)(?!you\b|not\b)",
        re.IGNORECASE,
    ),
    "User plans": re.compile(
        r"^(?:i'?ll|i will|i need to|i have to|(?:please )?remember to|don'?t forget to)\s+(?=\w)",
        re.IGNORECASE,
    ),
}
# Openings that only link the sentence to what came before ("By the way, ...", "Also ...").
_LINKING = re.compile(
    r"^(?:by the way|btw|also|and|oh|one more thing|another thing|plus)\b[,:]?\s+(?=\w)",
    re.IGNORECASE,
)


_NAMES_SOMETHING = re.compile(
    r"\b(?!(?:it|this|that|them|these|those|so|too|now|then|later|soon)\b)\w{3,}"
)


def _said(label: str, sentence: str) -> str:
    """``sentence`` without the opening its ``label`` already says."""
    sentence = _LINKING.sub("", sentence, count=1)
    lead_in = _LEAD_INS.get(label)
    trimmed = lead_in.sub("", sentence, count=1) if lead_in is not None else sentence
    # What is left must still name something ("I'll do it." keeps its words).
    return trimmed if _NAMES_SOMETHING.search(trimmed) else sentence


def _headings_only(text: str) -> bool:
    """True for a message that is only markdown headings (a document's title, no request)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith("#") for line in lines)


_LEADING_ACK = re.compile(
    r"^(?:ok(?:ay)?|thanks?(?: you)?|great|perfect|cool|nice|good|sure|yes|right)[.!,]+\s+",
    re.IGNORECASE,
)


def user_drafts(turn: Turn, text: str) -> list[Draft]:
    """The lines one message of the user gives (``text`` is its words, injected parts out).

    A correction is kept whole (it is one thought); otherwise the sentences that decide,
    constrain or commit get lines of their own (at most ``EXTRA_LINES + 1``) and the rest of
    the message is the request.
    """
    if not text or hostile(text) or ACK.match(text) or _headings_only(text):
        return []
    if text.startswith("/"):
        command, _, args = text.partition(" ")
        if command in _ROUTINE_COMMANDS and not args.strip():
            return []
        if not args.strip():
            return [Draft(f"User ran {command}", "task", 0.45, 0.9, [turn])]
    text = _FILLER.sub("", text)
    if reaction(text) == "reject":
        return [
            Draft(shorten(f"User corrected: {condense(text)}"), "decision", BINDING, 0.85, [turn])
        ]
    text = _LEADING_ACK.sub("", text) or text
    if _GREETING.match(text) and len(text) < 40:
        return [Draft(shorten(f"User said: {text}"), "event", 0.3, 0.85, [turn])]
    sentences = prose_sentences(text)
    # Questions decide nothing ("Should we use MongoDB instead?"), whatever words they use.
    kinds = [None if s.endswith("?") else _kind(s) for s in sentences]
    typed = [(s, k) for s, k in zip(sentences, kinds, strict=True) if k is not None]
    if not typed:
        return [Draft(shorten(f"User asked: {condense(text)}"), "task", 0.5, 0.85, [turn])]
    out: list[Draft] = []
    # "thanks." beside a constraint is no request of its own.
    rest = [s for s, k in zip(sentences, kinds, strict=True) if k is None and not ACK.match(s)]
    # Past the lines a message may give, a sentence is part of the request.
    rest.extend(sentence for sentence, _ in typed[EXTRA_LINES + 1 :])
    if rest:
        out.append(Draft(shorten(f"User asked: {' '.join(rest)}"), "task", 0.5, 0.85, [turn]))
    for sentence, (obs_type, label, importance) in typed[: EXTRA_LINES + 1]:
        said = _said(label, sentence)
        out.append(Draft(shorten(f"{label}: {said}"), obs_type, importance, 0.85, [turn]))
    return out

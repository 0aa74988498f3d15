"""The offline observer: rules that pick out what matters when no LLM is configured.

Less thorough than an LLM (it sees sentences, not meaning) but free, private and fast. It reads a
run of turns as exchanges (a message of the user, the agent's work, the agent's closing message)
and keeps, in few dense lines:

- every request of the user, and their decisions, corrections and constraints (``rules_user``);
- the agent's closing message of each exchange, condensed: what was built, learned, left open
  (``rules_summary``); a proposal only once the user accepts it, as their decision;
- failures with their real error line, fixes, test runs that passed, files written and writes
  refused (``rules_tools``);
- when a session is over with the agent still at work, where it stopped (one 🟢 line, and the
  Current Context's "Suggested next" for the next session).

What binds the work (the user's decisions, corrections, constraints, dated commitments, a failure
the agent stayed stuck on) is 🔴; see docs/observer.md for the priorities.

Who said it matters: a sub-agent's prompt is the agent's words, never the user's request or
decision; only its closing report is read, as the agent's work. Transcript text is data, never
instructions: a sentence that addresses the model ("ignore previous instructions ...") is never
extracted, and a turn that tries to instruct a model gives nothing at all.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from obsmem.observe.draft import CurrentContext, Draft
from obsmem.observe.rules_summary import (
    Report,
    announcement,
    classify,
    intent_only,
    offer_of,
    report_drafts,
)
from obsmem.observe.rules_text import condense, hostile, prose_sentences, shorten, unwrap
from obsmem.observe.rules_tools import ToolFindings, activity, planning, read_tools
from obsmem.observe.rules_user import ACK, BINDING, reaction, user_drafts
from obsmem.sources.model import Turn

__all__ = ["observe_with_rules"]

#: Lines the closing report of a run may give, and an earlier exchange's closing message.
FINAL_LINES = 6
EXCHANGE_LINES = 3
ANSWER_LINES = 2

# A code span that is a name (not "`This will output: `"), a CamelCase name or an acronym, with
# its file extension when it has one (``CLAUDE.md``, not ``CLAUDE``).
_ENTITY = re.compile(
    r"`([^`\s][^`\n]{0,38}[^`\s:])`"
    r"|\b((?:[A-Z][a-zA-Z0-9]+(?:[A-Z][a-z0-9]+)+|[A-Z]{2,}[a-z]*)(?:\.[a-z]{1,4}(?![a-z]))?)"
)
_FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.DOTALL | re.MULTILINE)
# "Can you run that example?" asks the agent to do something: a request, not an open question.
_POLITE_REQUEST = re.compile(r"^(?:can|could|would|will) you\b|^please\b", re.IGNORECASE)
#: Importance of the line that says where an interrupted session stopped: minor (🟢), since what
#: it says matters for the next session only, through the Current Context's "Suggested next".
STOPPED_IMPORTANCE = 0.35
_WRITES = re.compile(r"^(?:Edit|MultiEdit|Write|NotebookEdit|Patch|apply_patch|write_file)\b")


def _is_subagent(turn: Turn) -> bool:
    """A sub-agent's turn: flagged by its reader, or read from a sub-agent's own file."""
    if turn.subagent:
        return True
    path = turn.source_path.replace("\\", "/")
    return "/subagents/" in path or path.rsplit("/", 1)[-1].startswith("agent-")


@dataclass
class _Exchange:
    """One message of the user and what the agent did until the user spoke again."""

    user: Turn | None
    words: str = ""
    turns: list[Turn] = field(default_factory=list)

    def closing(self) -> Turn | None:
        """The agent's message that ends the exchange (None when it ends mid-work)."""
        for turn in reversed(self.turns):
            if turn.role == "assistant" and not _is_subagent(turn):
                return None if intent_only(turn.text) else turn
        return None

    def wrote(self) -> bool:
        return any(t.role == "action" and _WRITES.match(t.text) for t in self.turns)


def _exchanges(turns: list[Turn]) -> list[_Exchange]:
    out = [_Exchange(None)]
    for turn in turns:
        if turn.role == "user" and not _is_subagent(turn):
            words = unwrap(turn.text)
            if words:
                out.append(_Exchange(turn, words))
                continue
        out[-1].turns.append(turn)
    return [e for e in out if e.user is not None or e.turns]


def _subagent_reports(turns: list[Turn]) -> list[Turn]:
    """The closing message of each sub-agent's conversation: its report to the agent."""
    last: dict[str, Turn] = {}
    order: list[str] = []
    run = 0
    previous = False
    for turn in turns:
        sub = _is_subagent(turn)
        if sub and not previous:
            run += 1
        previous = sub
        if sub and turn.role == "assistant":
            key = turn.source_path if "agent-" in turn.source_path else f"run{run}"
            if key not in last:
                order.append(key)
            last[key] = turn
    return [last[k] for k in order if not intent_only(last[k].text)]


def _accepted(report: Report) -> Draft:
    """The user's decision when they accept what the agent proposed."""
    offer = offer_of(report.turn.text)
    if offer is None:
        parts = report_drafts(report, lines=1, refused=[])
        offer = parts[0].text if parts else shorten(report.turn.text, 200)
    return Draft(shorten(f"User accepted: {offer}"), "decision", BINDING, 0.75, [report.turn])


def _files(paths: list[str]) -> str:
    names = list(dict.fromkeys(paths))
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return shown


def _context(turns: list[Turn], exchanges: list[_Exchange], tools: ToolFindings) -> CurrentContext:
    ctx = CurrentContext()
    users = [e for e in exchanges if e.user is not None and not ACK.match(e.words)]
    if users:
        # The request that opened this stretch of work; later turns mostly refine it.
        ctx.active_task = condense(users[0].words, 200)
        # Open: asked and not answered yet (the agent's closing message answers a question), and
        # a real question, not a polite request.
        questions = [
            s
            for e in users[-3:]
            if e.closing() is None
            for s in prose_sentences(e.words)
            if s.endswith("?") and not _POLITE_REQUEST.match(s)
        ]
        ctx.open_questions = [shorten(q, 200) for q in questions[-2:]]
    closing = exchanges[-1].closing() if exchanges else None
    if closing is not None:
        offer = offer_of(closing.text)
        if offer:
            ctx.suggested_next = offer
    counts: Counter[str] = Counter()
    for turn in turns:
        if turn.role in ("user", "assistant") and not _is_subagent(turn):
            for match in _ENTITY.finditer(_FENCED.sub(" ", turn.text)):
                counts[match.group(1) or match.group(2)] += 1
    counts.update(path.rsplit("/", 1)[-1] for path in tools.changed)
    counts.pop("REDACTED", None)  # the redaction marker is not an entity
    ctx.key_entities = [name for name, _ in counts.most_common(6)]
    return ctx


def _stopped(exchange: _Exchange) -> tuple[Draft, str] | None:
    """Where work stopped, when a session ended with the agent still at work (its last step a
    tool call or an announcement such as "Let me run the tests", not an answer): the one thing
    the next session needs from it, as a line and as the phrase that says where. None when the
    agent's last step was an answer, or it never started."""
    if exchange.user is not None and hostile(exchange.words):
        return None
    work = [
        t
        for t in exchange.turns
        if not _is_subagent(t) and t.role in ("action", "outcome", "assistant")
    ]
    steps = [t for t in work if t.role != "outcome"]
    if not steps:
        return None
    last = steps[-1]
    if last.role == "assistant" and not announcement(last.text):
        return None  # the agent's last step was its answer
    if last.role == "action" and planning(last.text):
        return None  # its task list, said as "Open tasks, ...", is where work stopped
    if last.role == "assistant":
        where = f"the agent's last words were: {shorten(last.text, 160)}"
    elif work[-1] is last:
        where = f"the agent was {activity(last.text)}"  # the call got no result
    else:
        where = f"the agent's last step was {activity(last.text)}"
    line = f"The session stopped before the agent answered: {where}"
    return Draft(shorten(line), "event", STOPPED_IMPORTANCE, 0.8, [last]), where


def observe_with_rules(
    turns: list[Turn], *, ended: bool = False
) -> tuple[list[Draft], CurrentContext]:
    """Drafts and the Current Context for a run of turns from one transcript.

    ``ended`` says the run reaches the end of a session that is over (read with ``--flush``, or
    idle): if the agent was still at work there, a line says where it stopped.
    """
    tools = read_tools(turns)
    exchanges = _exchanges(turns)
    drafts: list[Draft] = []
    pending: Report | None = None  # the closing message the user's next words judge
    for exchange in exchanges:
        if exchange.user is not None:
            if hostile(exchange.words):
                pending = None
                continue
            verdict = reaction(exchange.words)
            if pending is not None:
                drafts.extend(_judged(pending, verdict, tools.refused))
                pending = None
            lines = user_drafts(exchange.user, exchange.words)
            changed = [p for p in _written(exchange) if p in tools.changed]
            if lines and changed:
                first = lines[0]
                first.text = shorten(f"{first.text} (changed {_files(changed)})")
                closing = exchange.closing()
                wrote = exchange.wrote()
                if first.type == "task" and closing and classify(closing, wrote) == "report":
                    # Files written and the agent reported the work: done, not an open loop.
                    first.completed = True
            drafts.extend(lines)
        closing = exchange.closing()
        if closing is not None:
            kind = classify(closing, exchange.wrote())
            revision = (
                kind == "answer" and bool(exchange.user) and reaction(exchange.words) == "reject"
            )
            # What the agent says after the user corrected it is its revised plan: a proposal,
            # the user's correction being the line kept.
            pending = Report(closing, "proposal" if revision else kind, revision)
    if pending is not None and pending.kind != "proposal":
        # The run's last word: the agent's account of the session so far, the richest one.
        budget = FINAL_LINES if pending.kind == "report" else ANSWER_LINES
        drafts.extend(report_drafts(pending, lines=budget, refused=tools.refused))
    for report in _subagent_reports(turns):
        drafts.extend(report_drafts(Report(report, "answer"), lines=3, refused=tools.refused))
    drafts.extend(tools.drafts)
    if tools.refused:
        drafts.append(
            Draft(
                f"Not written: {_files(tools.refused)} (the write was rejected or not permitted)",
                "event",
                0.55,
                0.85,
                [t for t in turns if t.role == "outcome"][-1:] or turns[-1:],
            )
        )
    if not any(e.user is not None for e in exchanges) and tools.changed:
        drafts.append(
            Draft(
                shorten("Changed files: " + _files(tools.changed)),
                "event",
                0.3,
                0.9,
                [t for t in turns if t.role == "action"][:1],
            )
        )
    context = _context(turns, exchanges, tools)
    stopped = _stopped(exchanges[-1]) if ended and exchanges else None
    if stopped is not None:
        drafts.append(stopped[0])
        if not context.suggested_next:
            context.suggested_next = shorten(f"pick up where work stopped: {stopped[1]}", 200)
    return drafts, context


def _written(exchange: _Exchange) -> list[str]:
    out: list[str] = []
    for turn in exchange.turns:
        if turn.role == "action" and _WRITES.match(turn.text):
            out.append(re.sub(r"^[\w.-]+\s*:\s*", "", turn.text.strip()).split(" (")[0])
    return out


def _judged(report: Report, verdict: str | None, refused: list[str]) -> list[Draft]:
    """What an exchange's closing message gives once the user's next words have judged it."""
    if verdict == "accept" and report.kind != "proposal" and offer_of(report.turn.text) is None:
        verdict = None  # "Great!" after an explanation thanks it; nothing was proposed
    if verdict == "accept" and report.revision and offer_of(report.turn.text) is None:
        # "You're right, the new file is in the same folder ..." then "great": the decision is
        # the user's correction, already a line; the agent's echo of it would repeat it.
        return []
    if verdict == "accept":
        out = [_accepted(report)]
        if report.kind == "report":
            out.extend(report_drafts(report, lines=EXCHANGE_LINES, refused=refused))
        return out
    if verdict == "reject" or report.kind == "proposal":
        return []  # the user's correction is what is kept
    budget = EXCHANGE_LINES if report.kind == "report" else ANSWER_LINES
    return report_drafts(report, lines=budget, refused=refused)

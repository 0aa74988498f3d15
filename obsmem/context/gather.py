"""What memory offers a startup context: candidate entries from reflections and observations.

Each candidate lands in one prepared section (``obsmem.context.startup``):

- reflections.md: Core Identity, Preferences, Relationship and identity-like Key Facts are about
  the user; a project's lines (Active Projects ``### name``, and Key Facts whose cited
  observations come from one project) say what the project is, or are its decisions when the
  cited observations are decisions (or the line reads as one);
- observations.md: preferences, decisions, facts and lessons of a project, commitments and
  tasks still open, and the important or latest work; each day's Current Context (active task,
  suggested next step, open questions) becomes that project's "last time here".

Windows are measured from each project's last activity, not from the wall clock: a project last
touched in March still shows its last days of March. An open loop is a commitment or task with
no later completion (a ✅, a milestone or a "completed" line) that shares most of its words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from datetime import date, timedelta

from obsmem.context.startup import ABOUT, ACTIVE, DECISIONS, LAST, LOOPS, PROJECT, RECENT
from obsmem.context.startup import ContextEntry as Entry
from obsmem.context.when import plan_in, without_meaning
from obsmem.memory.model import Observation, normalise_text
from obsmem.memory.observations import ObservationsDoc
from obsmem.memory.sections import parse_sections
from obsmem.reflect.facts import FactIndex, project_preference
from obsmem.reflect.reflections import SUPERSEDED

__all__ = [
    "Candidate",
    "Completion",
    "completions_in",
    "content_words",
    "distinct",
    "drop_closed",
    "from_observations",
    "from_sections",
    "settled_cites",
    "since",
]

#: Days before a project's last activity that still count as its "last days".
RECENT_DAYS = 3
#: Days an important observation, or an open commitment, stays a candidate.
WINDOW_DAYS = 14
LOOP_DAYS = 30

# The reflector's "(seen 2026-11-28; ^id1, ^id2)" tail and "(replacing ...)" note: provenance
# for people, noise in a prompt.
_CITATION = re.compile(r"\s*\((?:seen [^;)]*;\s*)?\^[0-9a-z]{6,16}(?:,\s*\^[0-9a-z]{6,16})*\)")
_REPLACING = re.compile(r"\s*\(replacing [^)]*\)")
_SEEN = re.compile(r"\(seen (\d{4}-\d{2}-\d{2})[;)]")
_BLOCK_ID = re.compile(r"\s*\^[0-9a-z]{6,16}\s*$")
_DECISION_CUE = re.compile(
    r"\b(?:chose|chosen|decided|decision|going with|goes with|switched to|settled on|opted|"
    r"picked|agreed|will use|instead of)\b",
    re.IGNORECASE,
)
_PLAN_CUE = re.compile(
    r"\b(?:plan|planned|planning|due|deadline|release|releases|ship|ships|launch|until|by|"
    r"before|scheduled|target)\b",
    re.IGNORECASE,
)
_DONE_CUE = re.compile(
    r"\b(?:completed?|done|finished|shipped|merged|resolved|closed|delivered|fixed)\b",
    re.IGNORECASE,
)
GENERAL = "general"  # the reflector's heading for lines without a project

#: reflections.md sections (the original tool's names) -> (prepared section, importance, heading)
_SECTIONS: dict[str, tuple[str, float, str]] = {
    "core identity": (ABOUT, 0.9, "Identity"),
    "preferences & opinions": (ABOUT, 0.8, "Preferences"),
    "relationship & communication": (ABOUT, 0.7, "Working style"),
    "key facts & context": (ABOUT, 0.65, "Key facts"),
    "active projects": (PROJECT, 0.7, ""),
    "recent themes": (RECENT, 0.5, ""),
    # active.md's own headings (the original tool's), for the lines people write there
    "current projects": (ACTIVE, 0.6, ""),
    "open loops": (LOOPS, 0.6, ""),
}

#: The sections of reflections.md about the user (not Key Facts: those may be a project's).
_USERS_SECTIONS = frozenset(
    {"core identity", "preferences & opinions", "relationship & communication"}
)

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Words that carry no content: two lines differing only in these say the same thing
# ("Prefers small commits whose messages explain why" / "Small commits with messages that
# explain why").
_FILLER = frozenset(
    "a an and are as at be been by for from has have i in into is it its me my of on or our "
    "so than that the their them then these this those to was we were which who whose with "
    "you your user users user's prefers prefer preferred likes like wants want always please "
    "should would will shall must need needs going let let's lets us can could also just now "
    "here there when about up before after asked ask remember todo".split()
)


@dataclass
class Candidate:
    """A prepared entry with what preparing it needs to know: its profile heading, and whether
    it came from a hand-written part of profile.md / active.md."""

    entry: Entry
    heading: str = ""
    hand: bool = False
    moment: tuple[str, str, int] | None = None  # when an observed loop was said


def _stem(word: str) -> str:
    """A crude stem (plural ``s``, ``ing``, ``ed``): enough for "fixing" and "fixed" or "tests"
    and "test" to meet; both sides of every comparison go through it."""
    if len(word) > 5 and word.endswith(("ing", "ied")):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content, case-folded and without plural ``s``."""
    return [_stem(w) for w in _TOKEN.findall(text.casefold()) if w not in _FILLER]


def _clean(text: str) -> str:
    text = _REPLACING.sub("", _CITATION.sub("", text))
    return _BLOCK_ID.sub("", text.lstrip("🔴🟡🟢✅\ufe0f ")).strip()


def _majority(ids: Iterable[str], projects: Mapping[str, str | None]) -> str | None:
    counts: dict[str, int] = {}
    for obs_id in ids:
        name = projects.get(obs_id)
        if name:
            counts[name] = counts.get(name, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


def from_sections(
    data: bytes,
    kind: str,
    default: tuple[str, float, str],
    projects: Mapping[str, str | None],
    types: Mapping[str, str | None],
) -> list[Candidate]:
    """Candidates from a sectioned file (reflections.md, or the hand part of profile/active).

    ``projects`` and ``types`` map observation ids to their project and type, so that a line
    citing observations takes their project and, when they are decisions, becomes one. A line
    of active.md that starts with a known project's name ("Atlas: ...") is that project's.
    """
    known = {p.casefold(): p for p in projects.values() if p}
    out: list[Candidate] = []
    for entry in parse_sections(data, kind=kind).entries:
        top, _, sub = entry.section.partition(" / ")
        name = top.strip().lower()
        if name in ("archive", "dormant"):
            continue  # what the reflector set aside is not worth a session's attention
        section, importance, heading = _SECTIONS.get(name, default)
        text = _clean(entry.text)
        if not text or text.startswith("<!--"):
            continue
        project = sub.strip() if section == PROJECT and sub.strip() else None
        if project and project.lower() == GENERAL:
            project = None
        project = project or _majority(entry.cites, projects)
        if project is None and section in (ACTIVE, LOOPS):
            head = text.partition(":")[0].strip().casefold()
            project = known.get(head) if head != text.casefold() else None
        cited = {types.get(c) for c in entry.cites} - {None}
        if section == ABOUT and heading == "Key facts" and project:
            section = PROJECT  # a fact about one project, not about the user
        if section in (PROJECT, RECENT) and (
            "decision" in cited or (not cited and _DECISION_CUE.search(text))
        ):
            section = DECISIONS
        elif section == PROJECT and cited == {"milestone"}:
            section = RECENT
        elif section == PROJECT and cited and cited <= {"commitment", "task"}:
            section = LOOPS
        # When the line was last confirmed: its "(seen D)" (the first date of a line may be one
        # its text names).
        seen = _SEEN.search(entry.text)
        said = seen.group(1) if seen else None
        # A line that does not say when it was written plans for its date only in words of a
        # plan ("release on 2026-12-05"), not when it merely names a day ("incident of ...").
        planning = section != ABOUT and (said is not None or _PLAN_CUE.search(text) is not None)
        out.append(
            Candidate(
                Entry(
                    section,
                    text,
                    entry.importance or importance,
                    said or entry.date,
                    project,
                    entry.id,
                    kind=next(iter(cited)) if len(cited) == 1 else None,
                    planned=plan_in(text, said) if planning else None,
                    seen=max(len(entry.cites), 1),
                ),
                heading or top.strip(),
                hand=kind != "reflections",
            )
        )
    return out


#: Observations that no line of the user's settles: an open task or commitment is a loop, even
#: when a line cites it ("User asked: I'm new to Django, help me add a coupon field" is cited by
#: "User is new to Django") or holds its words ("Always add type hints to the parser module and
#: every other module" does not do the task "Add type hints to the parser module"). A decision
#: is settled only by a line that states it (``_states_decision``: a working-style decision filed
#: under Preferences as it was said), which would show it twice otherwise.
_NEVER_SETTLED = frozenset({"task", "commitment"})

#: The observer's lead-in of a decision, which its line under Preferences may leave out.
_DECISION_LEAD_IN = re.compile(r"^user\s+(?:decided|corrected|prefers)\s*:\s*")


def _states_decision(line: str, decision: str) -> bool:
    """True when the durable ``line`` states the ``decision`` itself: their normalised texts are
    equal, or equal once the decision's "User decided:/corrected:/prefers:" lead-in is removed.
    Containment or likeness is not enough: a wider rule is another fact. Empty texts never
    match."""
    said, stated = normalise_text(decision), normalise_text(line)
    if not said or not stated:
        return False
    return stated in (said, _DECISION_LEAD_IN.sub("", said, count=1))


def settled_cites(
    data: bytes, types: Mapping[str, str | None], texts: Mapping[str, str] | None = None
) -> set[str]:
    """The observations whose fact reflections.md has settled, which are no candidates of their
    own: those its superseded lines (``~~old~~ → replaced by new``) rest on, out of date and
    never to be served again, and those its lines about the user (Core Identity, Preferences,
    Relationship) rest on, served from there, in the profile, as the reflector placed them,
    except tasks and commitments (``types`` maps observation ids to their type), which no line
    settles, and decisions the line only cites without stating them (``texts`` maps observation
    ids to their text; without it, such a line settles none of them)."""
    texts = texts or {}
    out: set[str] = set()
    for entry in parse_sections(data, kind="reflections").entries:
        top = entry.section.partition(" / ")[0].strip().lower()
        line = _clean(entry.text)
        if line.startswith("~~") and SUPERSEDED.search(line):
            out.update(entry.cites)
        elif top in _USERS_SECTIONS:
            out.update(
                c
                for c in entry.cites
                if types.get(c) not in _NEVER_SETTLED
                and (types.get(c) != "decision" or _states_decision(line, texts.get(c, "")))
            )
    return out


def _anchors(
    observations: list[Observation], projects: Mapping[str, str | None]
) -> dict[str | None, str]:
    """Each project's last day of activity (None: the whole memory's)."""
    out: dict[str | None, str] = {}
    for obs in observations:
        for key in (projects.get(obs.id), None):
            if obs.date > out.get(key, ""):
                out[key] = obs.date
    return out


def since(anchor: str, days: int) -> str:
    """The ISO day ``days`` before ``anchor`` ("" when ``anchor`` is not a date)."""
    try:
        return (date.fromisoformat(anchor) - timedelta(days=days)).isoformat()
    except ValueError:
        return ""


def _moment(obs: Observation) -> tuple[str, str, int]:
    return (obs.date, obs.time or "", obs.line or 0)


def _is_done(obs: Observation) -> bool:
    return obs.completed or obs.type == "milestone" or bool(_DONE_CUE.search(obs.text))


def _closes(shared: int, loop: frozenset[str]) -> bool:
    """A completion sharing ``shared`` of the loop's words closes it: half of them or three, and
    two at least (one for a loop of one word)."""
    return shared >= min(2, len(loop)) and (2 * shared >= len(loop) or shared >= 3)


@dataclass(frozen=True)
class Completion:
    """A line saying something was done: when, which project, its content words."""

    moment: tuple[str, str, int]
    project: str | None
    words: frozenset[str]


def completions_in(
    observations: list[Observation], projects: Mapping[str, str | None]
) -> list[Completion]:
    """The observations that say something was done (✅, a milestone, "completed", "fixed")."""
    return [
        Completion(_moment(o), projects.get(o.id), frozenset(content_words(o.text)))
        for o in observations
        if _is_done(o)
    ]


def drop_closed(candidates: list[Candidate], completions: list[Completion]) -> list[Candidate]:
    """``candidates`` without the open loops that a later completion of the same project closes
    (lines written by hand stay: closing them is the user's call)."""
    loops = [c for c in candidates if c.entry.section == LOOPS and not c.hand]
    first = min((_said(c) for c in loops), default=None)
    postings: dict[str, list[int]] = {}
    for index, done in enumerate(completions):
        if first is None or done.moment <= first:
            continue  # done before any loop was opened: it closes none
        for word in done.words:
            postings.setdefault(word, []).append(index)
    out = []
    for candidate in candidates:
        entry = candidate.entry
        if entry.section != LOOPS or candidate.hand:
            out.append(candidate)
            continue
        words = frozenset(content_words(without_meaning(entry.text)))
        when = _said(candidate)
        shared: dict[int, int] = {}
        for word in words:
            for index in postings.get(word, ()):
                shared[index] = shared.get(index, 0) + 1
        if not any(
            _closes(count, words)
            and completions[index].moment > when
            and _related(entry.project, completions[index].project)
            for index, count in shared.items()
        ):
            out.append(candidate)
    return out


def _said(candidate: Candidate) -> tuple[str, str, int]:
    return candidate.moment or ((candidate.entry.date or "")[:10], "", 0)


def _related(a: str | None, b: str | None) -> bool:
    return not a or not b or a.casefold() == b.casefold()


def _observed(obs: Observation, section: str, project: str | None) -> Entry:
    planned = obs.referenced_date or plan_in(obs.text, obs.date)
    if planned is not None and planned <= obs.date:
        planned = None  # a date in the past when it was said is not a plan
    return Entry(
        section, obs.text, obs.importance, obs.date, project, obs.id, True, obs.type, planned
    )


def from_observations(
    doc: ObservationsDoc,
    projects: Mapping[str, str | None],
    today: date,
    settled: Set[str] = frozenset(),
) -> list[Candidate]:
    """Candidates from observations.md: its observations and each day's Current Context, less
    the ``settled`` ones (``settled_cites``).

    Open loops are every commitment and task not marked done; ``drop_closed`` then removes the
    ones a later completion closes."""
    observations = [o for o in doc.observations if o.date <= today.isoformat()]
    anchors = _anchors(observations, projects)  # a settled fact was activity all the same
    out: list[Candidate] = []
    for obs in observations:
        if obs.id in settled:
            continue
        project = projects.get(obs.id)
        anchor = anchors.get(project) or anchors.get(None, today.isoformat())
        recent = obs.date >= since(anchor, RECENT_DAYS)
        windowed = obs.date >= since(anchor, WINDOW_DAYS)
        section: str | None = None
        if obs.type == "preference" and obs.importance >= 0.6:
            # Said of this project by name: the project's, not one for every session.
            section = PROJECT if project_preference(obs.text, project) else ABOUT
        elif obs.importance >= 0.5 and (
            obs.type == "decision" or (obs.type is None and _DECISION_CUE.search(obs.text))
        ):
            section = DECISIONS
        elif obs.type in ("fact", "project", "lesson") and obs.importance >= 0.5 and project:
            section = PROJECT
        elif obs.type in ("commitment", "task") and not obs.completed:
            if obs.importance >= 0.4 and obs.date >= since(anchor, LOOP_DAYS):
                entry = _observed(obs, LOOPS, project)
                out.append(Candidate(entry, moment=_moment(obs)))
            continue
        elif (obs.importance >= 0.8 and windowed) or (recent and obs.importance >= 0.4):
            section = RECENT
        if section is not None:
            heading = "Preferences" if section == ABOUT else ""
            out.append(Candidate(_observed(obs, section, project), heading))
    out += _last_times(doc, projects, {p for p in anchors if p})
    return out


#: Current Context keys shown as "last time here", in the order shown.
_LAST_KEYS = ("Active task", "Suggested next", "Open questions")


def _last_times(
    doc: ObservationsDoc, projects: Mapping[str, str | None], known: set[str]
) -> list[Candidate]:
    """Each project's latest Current Context block (days are newest last in the file)."""
    out: list[Candidate] = []
    done: set[str | None] = set()
    for day in reversed(doc.days):
        pairs = {k: v for k, v in day.context.items() if k in _LAST_KEYS and v.strip()}
        if not pairs:
            continue
        project = _day_project(day.observations, day.context, projects, known)
        if project in done:
            continue
        done.add(project)
        for rank, key in enumerate(_LAST_KEYS):
            if key in pairs:
                entry = Entry(LAST, f"{key}: {pairs[key]}", 0.9 - 0.05 * rank, day.date, project)
                out.append(Candidate(entry))
    return out


def _day_project(
    observations: list[Observation],
    context: Mapping[str, str],
    projects: Mapping[str, str | None],
    known: set[str],
) -> str | None:
    """Whose work a day's Current Context describes: the project of the day's latest observation
    (the block describes the latest state), else the one project its text names."""
    for obs in sorted(observations, key=_moment, reverse=True):
        if projects.get(obs.id):
            return projects[obs.id]
    words = set(_TOKEN.findall(" ".join(context.values()).casefold()))
    named = [p for p in known if p.casefold() in words]
    return named[0] if len(named) == 1 else None


def _key(candidate: Candidate) -> str:
    text = without_meaning(candidate.entry.text)
    return " ".join(content_words(text)) or text.casefold()


#: The sections whose lines state something (a preference, a fact, a decision, a loop), where
#: two lines sharing most words say the same; in the work done, lines about one command or file
#: share most words and still tell different outcomes ("16 passed", "the build passes").
_STATEMENTS = frozenset({ABOUT, PROJECT, DECISIONS, LOOPS})


class _Words:
    """The content words of the lines kept so far, to find a line that says the same thing in
    other words ("Tortoise ORM over SQLAlchemy", "Prefers Tortoise ORM to SQLAlchemy"): three
    shared words at least, and most of the shorter line's (``LOOP_SHARE`` between two open
    loops, ``LINE_SHARE`` otherwise), in the same project or against a kept line of no project.
    A word index keeps the comparisons to lines that share a word."""

    LOOP_SHARE = 0.6
    LINE_SHARE = 0.75

    def __init__(self) -> None:
        self._lines: list[tuple[frozenset[str], str, bool]] = []
        self._by_word: dict[str, list[int]] = {}

    def add(self, words: frozenset[str], project: str | None, loop: bool) -> None:
        for word in words:
            self._by_word.setdefault(word, []).append(len(self._lines))
        self._lines.append((words, (project or "").casefold(), loop))

    def repeats(self, words: frozenset[str], project: str | None, loop: bool) -> bool:
        """True when a kept line of ``project`` says what ``words`` say."""
        shared: dict[int, int] = {}
        for word in words:
            for i in self._by_word.get(word, ()):
                shared[i] = shared.get(i, 0) + 1
        where = (project or "").casefold()
        for i, count in shared.items():
            other, other_where, other_loop = self._lines[i]
            # A line of no project is in every context: it may stand for a project's line,
            # never the other way round.
            if count < 3 or other_where not in ("", where):
                continue
            share = self.LOOP_SHARE if loop and other_loop else self.LINE_SHARE
            if count >= share * min(len(words), len(other)):
                return True
        return False


def _repeats(entry: Entry, kept: Entry) -> bool:
    """Whether ``entry`` may go for ``kept``, which says the same: a project's last state only
    stands for lines of that project (it is shown in no other project's context)."""
    if kept.section != LAST:
        return True
    return (entry.project or "").casefold() == (kept.project or "").casefold()


def distinct(candidates: list[Candidate], rank: Mapping[int, float]) -> list[Candidate]:
    """``candidates`` without lines that say the same thing (the observer's rules: equal,
    contained, or word-bigram Jaccard of 0.8 or more, on the content words; also lines of one
    project sharing most of their words, see ``_Words``): the best-ranked copy of each is kept
    (``rank`` by index), hand-written lines first; the order is kept."""
    index: FactIndex[int] = FactIndex()
    words = _Words()
    keep: set[int] = set()
    # A project's last state comes first and always stays: a loop or a line that only repeats
    # its active task goes instead.
    order = sorted(
        range(len(candidates)),
        key=lambda i: (
            candidates[i].entry.section != LAST,
            not candidates[i].hand,
            -rank.get(i, 0.0),
        ),
    )
    for i in order:
        entry = candidates[i].entry
        key = _key(candidates[i])
        if entry.section == LAST:
            keep.add(i)
            said = " ".join(content_words(entry.text.partition(": ")[2])) or key
            index.add(i, said)
            words.add(frozenset(said.split()), entry.project, loop=False)
            continue
        if any(_repeats(entry, candidates[j].entry) for j in index.matches(key)):
            continue
        if entry.section in _STATEMENTS:
            mine = frozenset(key.split())
            loop = entry.section == LOOPS
            if words.repeats(mine, entry.project, loop):
                continue
            words.add(mine, entry.project, loop)
        index.add(i, key)
        keep.add(i)
    return [c for i, c in enumerate(candidates) if i in keep]

"""What the offline reflector decides per observation: is it the same fact, where does it belong.

"The same fact" follows the observer's de-duplication (``obsmem.observe.scoring.Deduper``): equal
normalised text, one text containing the other as whole words (24 characters or more), or a
word-bigram Jaccard similarity of 0.8 or more. ``FactIndex`` answers "which of these texts say the
same thing as this one" without comparing against every text: two texts can only match when they
share at least one word bigram, so candidates come from a bigram posting list.

Where a reflection goes depends on the observation's type (the original tool's sections):

==============================================  ===========================================
type                                            section
==============================================  ===========================================
preference                                      Preferences & Opinions
relationship                                    Relationship & Communication
fact, lesson                                    Key Facts & Context (identity-like facts go
                                                to Core Identity)
decision, project, milestone, commitment        Active Projects, ``### <project>`` (a
                                                decision on how the work is done, whatever the
                                                project, goes to Preferences & Opinions)
anything else (task, error, event, untyped)     Recent Themes (identity-like ones go to
                                                Core Identity)
what the user is learning, any type             Core Identity
==============================================  ===========================================
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, pairwise
from typing import Generic, TypeVar

from obsmem.memory.model import Observation, normalise_text
from obsmem.observe.scoring import Deduper

__all__ = [
    "ACTIVE_PROJECTS",
    "ARCHIVE",
    "CORE_IDENTITY",
    "DORMANT",
    "GENERAL_PROJECT",
    "KEY_FACTS",
    "PREFERENCES",
    "RECENT_THEMES",
    "RELATIONSHIP",
    "SECTION_ORDER",
    "FactIndex",
    "Home",
    "SubjectIndex",
    "home_for",
    "is_identity",
    "is_learning",
    "is_project_fact",
    "is_working_style",
    "names_project",
    "passing_test_command",
    "project_name",
    "same_fact",
    "subject_overlap",
    "subject_words",
    "tests_run_with",
]

CORE_IDENTITY = "Core Identity"
ACTIVE_PROJECTS = "Active Projects"
PREFERENCES = "Preferences & Opinions"
RELATIONSHIP = "Relationship & Communication"
KEY_FACTS = "Key Facts & Context"
RECENT_THEMES = "Recent Themes"
DORMANT = "Dormant"
ARCHIVE = "Archive"

#: The ``##`` sections of reflections.md in reading order (the original tool's, plus Dormant).
SECTION_ORDER: tuple[str, ...] = (
    CORE_IDENTITY,
    ACTIVE_PROJECTS,
    PREFERENCES,
    RELATIONSHIP,
    KEY_FACTS,
    RECENT_THEMES,
    DORMANT,
    ARCHIVE,
)

GENERAL_PROJECT = "General"

_BY_TYPE: dict[str, str] = {
    "preference": PREFERENCES,
    "relationship": RELATIONSHIP,
    "fact": KEY_FACTS,
    "lesson": KEY_FACTS,
    "decision": ACTIVE_PROJECTS,
    "project": ACTIVE_PROJECTS,
    "milestone": ACTIVE_PROJECTS,
    "commitment": ACTIVE_PROJECTS,
}

# Statements about who the user is rather than about their work: the text starts with the user
# and says what they are, where, or how they are called. Deliberately narrow: a false positive
# puts a work fact among the identity lines that every session start shows.
_ABOUT_USER = re.compile(r"^\s*(?:the\s+)?(?:user|user's|i|i'm|my)\b", re.IGNORECASE)
_IDENTITY_CUE = re.compile(
    r"\b(?:is an?|am an?|'s name|name is|works as|working as|works at|based in|lives in|"
    r"located in|time ?zone|pronouns|native language|years of experience|role is|speaks)\b",
    re.IGNORECASE,
)
_IDENTITY_ALONE = re.compile(r"\bcalls the assistant\b", re.IGNORECASE)
# What the user is learning, in their own words ("I'm new to Rust", "help me understand how
# Python decorators work"): about them, not about a project. Not "help me understand why the
# build fails" or "how this function works": a question about the work at hand.
_USERS_WORDS = re.compile(r"^\s*user \w+:", re.IGNORECASE)
_LEARNING = re.compile(
    r"\b(?:i(?:'m| am) (?:learning|new to|studying|getting started with)|i want to learn"
    r"|(?:help me|teach me|want to|trying to) (?:understand|learn)|teach me)\s+(?P<rest>[^.?!;,]*)",
    re.IGNORECASE,
)
_LEAD = frozenset({"how", "about"})
_NOT_A_TOPIC = frozenset(
    "this that these those the our my your it its why what where which when if".split()
)
_CODE_LIKE = re.compile(r"[`/\\_.()]|[a-z][A-Z]")


def is_learning(text: str) -> bool:
    """True for the user saying what they are learning (a topic, not a piece of the work)."""
    if not _USERS_WORDS.match(text):
        return False
    found = _LEARNING.search(text)
    if found is None:
        return False
    words = found.group("rest").split()
    if words and words[0].casefold() in _LEAD:
        words = words[1:]
    return (
        bool(words)
        and words[0].casefold() not in _NOT_A_TOPIC
        and not any(_CODE_LIKE.search(w) for w in words)
    )


def is_identity(text: str) -> bool:
    """True for a statement about who the user is (name, role, place, language, time zone, what
    they are learning)."""
    if _IDENTITY_ALONE.search(text) or is_learning(text):
        return True
    return bool(_ABOUT_USER.search(text) and _IDENTITY_CUE.search(text))


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Words that name no subject: sharing only these says nothing about two facts being related.
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have in into is it its of on or our so than that "
    "the their then this to was were will with user users uses use now".split()
)


@dataclass(frozen=True)
class Home:
    """Where a reflection line belongs: a ``##`` section and, for projects, a ``###`` one."""

    section: str
    sub: str | None = None


def project_name(raw: str | None) -> str:
    """A project name fit for a ``###`` heading (one line, no markdown heading marks)."""
    name = " ".join((raw or "").replace("#", " ").split()).strip()
    return name[:80] or GENERAL_PROJECT


# What a project is built from and how it is laid out (a stack, an architecture, a structure),
# what it requires and the rules it follows (requirements, constraints, conventions, principles,
# its design decisions), its data model and where it runs. Looked for in the label an observer
# puts before a colon ("Tech stack: ...", "Conventions: ...", "技術スタック更新: ...") or in a
# statement that the project is built with or on something, not anywhere in the text: "this
# changes the architecture" says nothing about it, and a label saying what was done to it
# ("Changed: ...", "Fixed the deployment: ...") reports an outcome.
_PROJECT_FACT_LABEL = re.compile(
    r"\b(?:(?:tech(?:nology)?\s+)?stack|architecture|dependencies|project (?:structure|layout)"
    r"|directory (?:structure|layout)|tooling|frameworks?|components?|design"
    r"|requirements?|constraints?|conventions?|principles?|(?:key |technical )?decisions?"
    r"|data model|(?:database |db )?schema|environments?|deployment|infrastructure|hosting)\b"
    r"|スタック|アーキテクチャ|構成|構造|要件|制約|技术栈|架构|Architektur",
    re.IGNORECASE,
)
_OUTCOME_LABEL = re.compile(
    r"^\s*(?:changed|changes|fixed|added|removed|deleted|created|implemented|updated files"
    r"|verification|verified|ran|tests?|next steps?|to ?do|steps?|phase\s*\d|tracking)\b",
    re.IGNORECASE,
)
_PROJECT_FACT_STATEMENT = re.compile(
    r"\b(?:is|are) (?:built|written|implemented) (?:with|in|on)\b|\bruns on\b"
    r"|\b(?:the )?(?:project|app|application|repo(?:sitory)?|codebase|service) (?:is|uses) an?\b"
    # How it is put together: "state is persisted in localStorage", "the API is deployed on
    # Fly.io", "the CLI depends on click", "the backend uses FastAPI".
    # ("is deployed to staging" is mostly news of a deploy: only "deployed on" counts)
    r"|\b(?:is|are) (?:persisted|configured) (?:in|on|via|through|with)\b"
    r"|\b(?:is|are) (?:deployed|hosted|served) on\b"
    r"|\b(?:depends on|is powered by|is backed by)\b"
    r"|\b(?:project|app|application|repo(?:sitory)?|codebase|service|api|backend|frontend"
    r"|server|cli|pipeline|site|shop|website) uses\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s*([^:.!?]{2,60}):\s+\S")


def is_project_fact(text: str) -> bool:
    """True for a statement of what a project is built from, how it is laid out and what rules
    it follows (its stack, architecture, structure, requirements, conventions, data model, where
    it runs): a label naming one (not a report of what was done), or "is built with", "the app
    is a ...", "is deployed on", "depends on"."""
    label = _LABEL.match(text)
    if (
        label is not None
        and _PROJECT_FACT_LABEL.search(label.group(1))
        and not _OUTCOME_LABEL.match(label.group(1))
    ):
        return True
    return bool(_PROJECT_FACT_STATEMENT.search(text))


# A test run the observer saw pass ("Tests pass: `npm test -- --run src/a.test.ts`: 16 passed",
# "Fixed: `cargo test` passes now (5 passed); ..."): how the project's tests are run, a fact
# of the project that outlives the run. The command is kept up to its first path or quoted
# argument (the file or test a run picked), so runs of different files are one fact.
_TEST_RUN = re.compile(r"^\s*(?:Tests pass|Fixed): `(?P<command>[^`]+)`(?:: | passes now)")
_PICKED = re.compile(r"[/\\\"'*]|\.[a-z]{1,5}$", re.IGNORECASE)


def passing_test_command(text: str) -> str | None:
    """The command a passing test run in ``text`` shows the project's tests are run with, up to
    its first path or quoted argument after the program; None when ``text`` reports none."""
    found = _TEST_RUN.match(text)
    if found is None:
        return None
    words: list[str] = []
    for word in found.group("command").split():
        if word.endswith(("…", "...")) or (words and _PICKED.search(word)):
            break  # (the program itself may be a path: ./run_tests.sh)
        words.append(word)
    return " ".join(words) or None


def tests_run_with(command: str) -> str:
    """The project fact a passing run of ``command`` states (``passing_test_command``)."""
    return f"Tests run with `{command}`"


# How the user wants the work done, whatever the project: a directive (never, always, first,
# until, without) about the agent's own process (writing code, committing, testing, explaining,
# asking). "Don't produce code, design the solution first" is a preference of the user's;
# "the orchestrator must not refer to agent paths" is a decision about one project.
_DIRECTIVE = re.compile(
    r"\b(?:don'?t|do not|never|always|only|first|until|unless|without|before|instead of"
    r"|rather than|no more|stop)\b",
    re.IGNORECASE,
)
_PROCESS = re.compile(
    r"\b(?:(?:write|writing|produce|producing|generate|generating|touch|change) (?:any )?code"
    r"|code (?:yet|first)|commit(?:s|ting|ted)?|push(?:ing)?|merg(?:e|ing)|pull requests?|PRs?"
    r"|branch(?:es)?|force.push|tests? first|write tests|run(?:ning)? (?:the )?tests|explain\w*"
    r"|explanations?|answers?|summar\w+|ask(?:ing)? (?:me|first|before)|confirm\w*"
    r"|design (?:the )?(?:solution|approach)|plan (?:it )?first|step by step|comments?)\b",
    re.IGNORECASE,
)


def is_working_style(text: str) -> bool:
    """True for what the user wants of the way the work is done (not of one project's design):
    a directive about writing code, committing, testing, explaining or asking."""
    said = _SPEAKER_LABEL.sub("", text, count=1)
    return bool(_DIRECTIVE.search(said) and _PROCESS.search(said))


def names_project(text: str, project: str | None) -> bool:
    """True when ``text`` names ``project`` (its words, in order, as whole words): a preference
    or constraint said of one project by name ("I deploy tidepool on a Pi, so keep the
    dependencies pure-Python") holds for that project, not for every session of the user's."""
    words = _TOKEN.findall((project or "").casefold())
    if not words or len("".join(words)) < 3 or project_name(project) == GENERAL_PROJECT:
        return False
    return f" {' '.join(words)} " in f" {' '.join(_TOKEN.findall(text.casefold()))} "


def home_for(obs: Observation, project: str | None) -> Home:
    """The section (and project subsection) an observation's reflection goes to."""
    section = _BY_TYPE.get(obs.type or "", RECENT_THEMES)
    if (obs.type in (None, "fact") and is_identity(obs.text)) or is_learning(obs.text):
        return Home(CORE_IDENTITY)
    if obs.type == "decision" and is_working_style(obs.text):
        # How the user wants the work done holds for every project: a preference of theirs.
        return Home(PREFERENCES)
    if (
        obs.type == "preference"
        and names_project(obs.text, project)
        and not is_working_style(obs.text)
    ):
        return Home(ACTIVE_PROJECTS, project_name(project))  # said of this project by name
    if project and obs.type not in ("preference", "relationship") and is_project_fact(obs.text):
        # A project's stack and layout belong with the project, not with facts about the user.
        return Home(ACTIVE_PROJECTS, project_name(project))
    if section == ACTIVE_PROJECTS:
        return Home(section, project_name(project))
    return Home(section)


def _words(text: str) -> list[str]:
    return _TOKEN.findall(normalise_text(text))


def _grams(words: list[str]) -> frozenset[tuple[str, str]]:
    if len(words) < 2:
        return frozenset((w, "") for w in words)
    return frozenset(pairwise(words))


@dataclass(frozen=True)
class _Shape:
    norm: str
    joined: str  # the words with single spaces, padded: whole-word containment is a substring
    grams: frozenset[tuple[str, str]]


@lru_cache(maxsize=65536)
def _shape(text: str) -> _Shape:
    # Cached: one observation is looked up in three indexes, and its text was indexed already.
    norm = normalise_text(text)
    words = _TOKEN.findall(norm)  # _words(text), without normalising twice
    return _Shape(norm, f" {' '.join(words)} ", _grams(words))


def _same(a: _Shape, b: _Shape) -> bool:
    if a.norm == b.norm:
        return True
    shorter, longer = (a, b) if len(a.joined) <= len(b.joined) else (b, a)
    if len(shorter.joined) - 2 >= Deduper.MIN_CONTAINED and shorter.joined in longer.joined:
        return True
    union = a.grams | b.grams
    return bool(union) and len(a.grams & b.grams) / len(union) >= Deduper.THRESHOLD


def same_fact(a: str, b: str) -> bool:
    """True when two texts state the same fact (the observer's de-duplication rules)."""
    return _same(_shape(a), _shape(b))


def subject_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the words of two texts, or 0.0 when they share no subject word.

    Used to spot a new decision or preference that contradicts an old one: "Uses Alembic for
    migrations" and "Uses Aerich for migrations" share most words (0.6) and the subject word
    "migrations", without being the same fact. Subject words are the ones of three letters or
    more that are not stopwords ("uses", "for", "the").
    """
    x, y = subject_words(a), subject_words(b)
    if not x or not y:
        return 0.0
    if not any(len(w) > 2 and w not in _STOPWORDS for w in x & y):
        return 0.0
    return len(x & y) / len(x | y)


# The observer's label for who said what ("User decided:", "User constraint:"): shared by every
# line of its kind, so it must not count as a shared subject.
K = TypeVar("K", bound=Hashable)

_SPEAKER_LABEL = re.compile(r"^\s*user\s+\w+(?:\s+\w+)?:\s*", re.IGNORECASE)


def subject_words(text: str) -> frozenset[str]:
    """The words ``subject_overlap`` compares: the text's words, without the observer's
    "User <verb>:" label."""
    return frozenset(_words(_SPEAKER_LABEL.sub("", text, count=1)))


class SubjectIndex(Generic[K]):
    """Texts under keys; ``candidates(text, t)`` gives the keys whose words could have a Jaccard
    similarity of ``t`` or more with ``text``'s, without comparing against every text.

    Prefix filtering: when two word sets reach ``t``, they share at least ``ceil(t * |x|)`` of
    the query's ``|x|`` words, so any ``|x| - ceil(t * |x|) + 1`` of its words (the rarest are
    cheapest) include a shared one.
    """

    def __init__(self) -> None:
        self._words: dict[K, frozenset[str]] = {}
        self._postings: dict[str, set[K]] = {}

    def add(self, key: K, text: str) -> None:
        """Index ``text`` under ``key`` (replacing what ``key`` held before)."""
        self.remove(key)
        words = subject_words(text)
        self._words[key] = words
        for word in words:
            self._postings.setdefault(word, set()).add(key)

    def remove(self, key: K) -> None:
        """Forget ``key`` (nothing happens when it is not indexed)."""
        for word in self._words.pop(key, frozenset()):
            keys = self._postings.get(word)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._postings[word]

    def candidates(self, text: str, threshold: float) -> set[K]:
        """Keys whose words might reach ``threshold`` with ``text``'s (a superset)."""
        words = subject_words(text)
        if not words:
            return set()
        need = -int(-threshold * len(words) // 1)  # ceil
        probe = sorted(words, key=lambda w: len(self._postings.get(w, ())))
        out: set[K] = set()
        for word in probe[: len(words) - need + 1]:
            out.update(self._postings.get(word, ()))
        return out


class FactIndex(Generic[K]):
    """Texts under keys; ``matches(text)`` gives the keys whose text is the same fact."""

    def __init__(self, items: Iterable[tuple[K, str]] = ()) -> None:
        self._shapes: dict[K, _Shape] = {}
        self._order: dict[K, int] = {}
        self._postings: dict[tuple[str, str], set[K]] = {}
        self._next = 0
        for key, text in items:
            self.add(key, text)

    def __len__(self) -> int:
        return len(self._shapes)

    def add(self, key: K, text: str) -> None:
        """Index ``text`` under ``key`` (replacing what ``key`` held before)."""
        self.remove(key)
        shape = _shape(text)
        self._shapes[key] = shape
        self._order[key] = self._next
        self._next += 1
        for gram in shape.grams:
            self._postings.setdefault(gram, set()).add(key)

    def remove(self, key: K) -> None:
        """Forget ``key`` (nothing happens when it is not indexed)."""
        shape = self._shapes.pop(key, None)
        if shape is None:
            return
        del self._order[key]
        for gram in shape.grams:
            keys = self._postings.get(gram)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._postings[gram]

    def matches(self, text: str) -> list[K]:
        """Keys whose text is the same fact as ``text``, in the order they were added."""
        shape = _shape(text)
        postings = self._postings
        # Counted in C: a common bigram's posting list can hold thousands of keys.
        shared = Counter(chain.from_iterable([postings[g] for g in shape.grams if g in postings]))
        mine = len(shape.grams)
        threshold = Deduper.THRESHOLD
        found = []
        for key, count in shared.items():
            other = self._shapes[key]
            theirs = len(other.grams)
            # Only texts sharing every bigram of the shorter one (equal or contained) or enough
            # bigrams for the Jaccard threshold can match: skip the rest without comparing.
            if (
                count >= mine or count >= theirs or count >= threshold * (mine + theirs - count)
            ) and _same(shape, other):
                found.append(key)
        return sorted(found, key=self._order.__getitem__)

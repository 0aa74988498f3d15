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
preference                                      Preferences & Opinions (a rule of the
                                                product, ``is_product_rule``, or one said of
                                                the project by name goes to Active Projects)
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
from obsmem.reflect.project_facts import is_project_fact

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
    "is_product_rule",
    "is_working_style",
    "learning_fact",
    "names_project",
    "project_name",
    "project_preference",
    "same_fact",
    "subject_overlap",
    "subject_words",
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
# What the user is learning, said of themselves in their own words ("I'm new to Rust", "I want
# to learn dbt macros"): about them, not about a project. A request ("help me understand how
# pagination works on the orders page", "I want to understand each failing test") is work at
# hand, and "the model is trying to learn ..." is not the user at all.
_USERS_WORDS = re.compile(r"^\s*user \w+:", re.IGNORECASE)
_LEARNING = re.compile(
    r"\bi(?:'m|’m|m| am) (?:just )?(?P<is>learning|studying|new to|getting started with"
    r"|a beginner (?:in|with|at)|trying to learn)"
    r"|\bi(?:'ve|’ve| have) (?:just )?started (?P<started>learning)"
    r"|\bi(?P<wants> want|'d like|’d like| would like) to learn",
    re.IGNORECASE,
)
# The topic: up to a clause of its own ("I'm new to Django and need a coupon field", "I'm new
# to Airflow and this DAG fails"), a comma or the end of the sentence. "and" joins two topics
# ("HTML and CSS", "Ruby and Rails") unless a clause follows it: a pronoun, a verb, or a
# determiner and its noun with a verb ("and the plan keeps drifting"). A dot inside a word is
# part of the name ("Next.js", "ASP.NET Core", "socket.io"), unless a capitalised word follows
# it, which starts a sentence ("Django.Help me").
_VERB = (
    r"(?:is|are|was|were|am|be|fails?|failed|keeps?|kept|doesn'?t|don'?t|didn'?t|won'?t|can'?t"
    r"|cannot|isn'?t|aren'?t|has|have|had|needs?|wants?|throws?|threw|breaks?|broke|crash(?:es|ed)?"
    r"|returns?|returned|gives?|gave|shows?|showed|works?|runs?|seems?|looks?|would|will|can"
    r"|could|should|must|get|gets|got)"
)
_AND_CLAUSE = (
    r"and\s+(?:(?:i|we|you|he|she|they|it|there)\b|(?:i|we|you|it|they|there)['’]\w+|"
    + _VERB
    + r"\b|(?:this|that|these|those|the|my|our|its|their|a|an)\s+(?:[\w.'-]+\s+){0,3}?"
    + _VERB
    + r"\b)"
)
_SENTENCE_DOT = r"\.(?=(?-i:[A-Z][a-z]))"
_TOPIC = re.compile(
    r"\s+(?P<topic>(?:[^.?!;,]|(?!" + _SENTENCE_DOT + r")\.(?=[^\W_]))+?)"
    r"(?=\s+(?:"
    + _AND_CLAUSE
    + r"|(?:but|so|because|which|while)\b)|[?!;,]|\.(?![^\W_])|"
    + _SENTENCE_DOT
    + r"|$)",
    re.IGNORECASE,
)
_NOT_A_TOPIC = frozenset(
    "this that these those the our my your it its why what where which when if".split()
)
_WORK_AT_HAND = frozenset("this that these those our it its page bug test tests".split())
# A piece of code rather than a subject: a path, an identifier (snake_case, camelCase, a call)
# or a file name ("utils.py", "orders.total"). A capitalised dotted name ("Next.js", "ASP.NET")
# or PascalCase one ("TypeScript") is a technology's, and so is a lowercase "*.js", "*.io" or
# "*.net" ("three.js", "socket.io", "asp.net").
_CODE_LIKE = re.compile(
    r"[`/\\_()]|^[a-z]+[A-Z]|^[a-z0-9][\w-]*\.(?!(?:js|io|net|ai|dev|org|com)$)[^\W_]"
)
_MAX_TOPIC_WORDS = 6


def _learning(text: str) -> tuple[str, str] | None:
    """The user's own "I'm learning X" in ``text``: (what they say they are, the topic)."""
    if not _USERS_WORDS.match(text):
        return None
    found = _LEARNING.search(text)
    topic = _TOPIC.match(text, found.end()) if found is not None else None
    if found is None or topic is None:
        return None
    words = topic.group("topic").split()
    lead = 1 if words[0].casefold() in ("how", "about") and len(words) > 1 else 0
    if (
        len(words) > _MAX_TOPIC_WORDS
        or words[lead].casefold() in _NOT_A_TOPIC
        or any(w.casefold() in _WORK_AT_HAND for w in words)
        or any(_CODE_LIKE.search(w) for w in words)
    ):
        return None
    if found.group("wants"):
        return "wants to learn", " ".join(words)
    return "is " + (found.group("is") or "learning").casefold(), " ".join(words)


def is_learning(text: str) -> bool:
    """True for the user saying, of themselves, what they are learning (a topic, not a piece
    of the work): "I'm new to Django", "I want to learn Rust"."""
    return _learning(text) is not None


def learning_fact(text: str) -> str | None:
    """The identity line a statement of what the user is learning gives ("User is new to
    Django"), without the rest of the observation (a request in it stays the observation's);
    None when ``text`` is no such statement."""
    found = _learning(text)
    return None if found is None else f"User {found[0]} {found[1]}"


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


# How the user wants the agent to work with them, whatever the project: a directive (never,
# always, first, until, without) about the agent's own work (writing code, designing before it,
# tests it writes or runs, commits, pushes and pull requests, its answers and explanations,
# asking the user first), or an instruction on how to answer ("answer in short bullet points").
# Not a rule of the product, however alike the words: "only moderators can delete comments",
# "never send push notifications", "commit the transaction only after all rows validate",
# "ask for confirmation before charging the card" are decisions about one project.
_DIRECTIVE = re.compile(
    r"\b(?:don'?t|do not|never|always|only|first|until|unless|without|before|instead of"
    r"|rather than|no more|stop)\b",
    re.IGNORECASE,
)
# What may follow "commit" or "push" for it to be version control: nothing, a pronoun, "the
# changes", a branch, or a condition ("until", "before").
_VCS_OBJECT = (
    r"(?=\s*(?:$|[,.;!)]|(?:anything|any|changes|code|it|them|yet|directly|again|until|before"
    r"|without|unless|after|first|the (?:changes|code|diff|fix|work)|(?:to|into|on) (?:main"
    r"|master|develop|origin|the remote|remote|a branch|the branch|my branch|github))\b))"
)
_AGENT_WORK = re.compile(
    r"\b(?:(?:write|writing|produce|producing|generate|generating|touch|touching|change"
    r"|changing|refactor\w*) (?:any )?code|code (?:yet|first)|coding"
    r"|design (?:the )?(?:solution|approach)|agree on the (?:design|approach|plan)"
    r"|plan (?:it )?first|step by step"
    r"|(?:write|writing|run|running|add|adding) (?:the |any |unit )?tests?|tests? first"
    r"|commit(?:ting)?" + _VCS_OBJECT + r"|commits|commit messages?"
    r"|push(?:ing)?" + _VCS_OBJECT + r"|force.push\w*"
    r"|merg(?:e|ing)(?:\s+(?:the pr|prs?|pull requests?|(?:the |a )?branch(?:es)?)\b|"
    + _VCS_OBJECT
    + r")|pull requests?|prs?"
    r"|explain(?:ing)? (?:(?:the |each |every )?(?:change|changes|step|steps|plan|approach)"
    r"|what you|why you|your|first|before you)"
    r"|(?:your|short|shorter|brief|concise|long|longer|detailed|terse) (?:answers?"
    r"|explanations?|summar(?:y|ies)|replies|responses)"
    r"|summar(?:y|ies|i[sz]e) of what you|(?:answer|reply|respond) (?:in|with)"
    r"|ask(?:ing)? (?:me|first|before)|(?:check|confirm) with me|my (?:approval|go-ahead|ok|review)"
    # what the agent edits, writes and shows: "don't touch the generated files", "always use
    # type hints in the code you write", "always show me the diff before applying it"
    r"|(?:touch|touching|edit|editing|modify|modifying|reformat\w*) (?:the |any |my |those "
    r"|these )?(?:[\w.-]+ )?(?:files?|folders?|director(?:y|ies)|lockfiles?|config\w*)"
    r"|code you (?:write|produce|generate|add)|type (?:hints|annotations)"
    r"|(?:stop|no more|don'?t|do not|never) (?:add|adding|write|writing|leave|leaving)"
    r"(?: \w+){0,2} comments|show(?:ing)? me|apply(?:ing)? (?:it|them|the (?:changes?"
    r"|patch|fix|diff))"
    r"|until (?:i|we)(?: have|'ve)? (?:reviewed|approved|agreed|confirmed|said|checked)"
    r"|before (?:i|we) (?:review|approve|agree|confirm|check))\b",
    re.IGNORECASE,
)
# An instruction to the agent on how to answer needs no directive word, nor does an imperative
# about its work ("use conventional commits", "keep commits small").
_HOW_TO_ANSWER = re.compile(
    r"^\s*(?:please\s+)?(?:(?:answer|reply|respond) (?:in|with|briefly|first)"
    r"|keep (?:your )?(?:answers|replies|responses|explanations) )",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(r"^\s*(?:please\s+)?(?:use|follow|keep|prefer)\b", re.IGNORECASE)
# A rule whose subject is the product or one of its parts ("the chatbot must always reply in
# the customer's language", "the CLI should answer with JSON", "only moderators can delete
# comments"), or that holds on a schedule ("never merge PRs on Fridays"), is the project's,
# however much it reads like a working style. The agent and its own output as the subject
# ("you", "your answers", "the code you write") keep it the user's.
_PRODUCT_RULE = re.compile(
    r"^\s*(?P<subject>(?:the|our|this|its|their|each|every|all)\s+[\w.+#'/-]+"
    r"(?:\s+[\w.+#'/-]+){0,3}"
    r"|only\s+[\w.+#'/-]+(?:\s+[\w.+#'/-]+)?"
    r"|(?:api|cli|app|bot|chatbot|service|server|backend|frontend|ui|endpoints?|widget)\w*)"
    r"\s+(?:must|should|shall|has to|have to|needs? to|will|may|can|cannot|can't|mustn't"
    r"|shouldn't|won't)\b"
    r"|\bon (?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|holidays?)\b"
    r"|\bduring (?:the |a )?(?:(?:code |release |merge )?freeze|weekends?|holidays?)\b",
    re.IGNORECASE,
)
# The agent's own work as the subject ("the tests must pass before you commit").
_AGENT_SUBJECT = re.compile(
    r"\b(?:tests?|code|commits?|commit messages?|prs?|pull requests?|diffs?|changes)$",
    re.IGNORECASE,
)
# The agent's answers as the subject ("the answers should be in German", "all explanations
# should be brief", "every answer should start with the command"): how it talks to the user, not
# a part of the product, though "the/all/every <noun> should" reads like one.
_STYLE_SUBJECT = re.compile(
    r"\b(?:answers?|explanations?|reply|replies|summar(?:y|ies)|commit messages?)$",
    re.IGNORECASE,
)
# The user as the agent's counterpart ("never ask me for approval on weekends"): a schedule in
# such a rule is when the agent works with them, not a project's release rule.
_ME = re.compile(r"\b(?:me|my)\b", re.IGNORECASE)
_THE_AGENT = re.compile(
    r"^\s*(?:the\s+)?(?:[\w-]+\s+){0,2}(?:you|your|yours|assistant|agent|claude|codex)\b",
    re.IGNORECASE,
)

_AGENT_RULE = re.compile(_THE_AGENT.pattern + r".*?\b(?:must|should|has to|needs to)\b", re.I)


def is_product_rule(text: str) -> bool:
    """True for a rule of the product rather than of how the agent works: its subject is the
    product or a part of it ("the chatbot must always reply in the customer's language", "only
    admins can delete projects"), or it holds on a schedule ("never merge PRs on Fridays")."""
    said = _SPEAKER_LABEL.sub("", text, count=1)
    found = _PRODUCT_RULE.search(said)
    if found is None:
        return False
    subject = found.group("subject")
    if not subject:  # a schedule
        return not _ME.search(said)
    return not (
        _THE_AGENT.match(said) or _AGENT_SUBJECT.search(subject) or _STYLE_SUBJECT.search(subject)
    )


def is_working_style(text: str) -> bool:
    """True for how the user wants the agent to work with them (not a rule of one project's
    product): a directive about the agent's code, design, tests, commits, pushes or pull
    requests, answers and explanations, or asking the user first; or how to answer."""
    said = _SPEAKER_LABEL.sub("", text, count=1)
    if is_product_rule(said):
        return False
    if _HOW_TO_ANSWER.match(said):
        return True
    # A directive, an imperative, or the agent's own work as the subject of a rule ("your
    # answers should be short", "the code you write must have type hints").
    rule = _PRODUCT_RULE.match(said)
    told = (
        _DIRECTIVE.search(said)
        or _IMPERATIVE.match(said)
        or _AGENT_RULE.match(said)
        or (rule and rule.group("subject") and _AGENT_SUBJECT.search(rule.group("subject")))
    )
    return bool(told and _AGENT_WORK.search(said))


def project_preference(text: str, project: str | None) -> bool:
    """True for a preference said of ``project`` by name, which is that project's, not the
    user's in every project (``names_project``); how the user wants the work done
    (``is_working_style``) stays theirs, whichever project it was said in."""
    return names_project(text, project) and not is_working_style(text)


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
    if obs.type == "preference" and (
        project_preference(obs.text, project) or (project and is_product_rule(obs.text))
    ):
        # Said of this project by name, or a rule of its product: the project's.
        return Home(ACTIVE_PROJECTS, project_name(project))
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

"""What kind of answer a question asks for, and whether an entry's text states one.

"When did we move the build to uv?", "When did Caroline go to the support group?": a question
that asks *when* is answered by a line that says when ("yesterday", "last week", "in March",
"2024"); one that asks *how many* or *how often* by a line that holds a number ("two", "3",
"twice"). This is the answer-type match of classic question-answering retrieval: the question's
words find the topic, and among the lines on that topic the ones of the right form are the
likelier answers.

On the LoCoMo dev conversations, among the 30 best results of the questions that ask when, 79%
of the lines cited as evidence state a time, against 16% of the others (a likelihood ratio of
about 5); for how many / how often / how long, 50% against 12%. ``OM_SEARCH_ANSWER_FORM_BOOST``
(``bm25.search_rows``, ``hybrid.hybrid_rows``, and the turns of ``mixed.search_everything``)
multiplies the final score of such an entry by 1 + the boost, after every other factor, so it
reorders entries already found and finds nothing new. A question of any other form (what, who,
why) is left as it is: for those, no form of the line told the evidence apart (measured in
``docs/benchmarks.md``).

Only the entry's own words count: a leading speaker label (``Caroline:``) is skipped, so a label
never states a time. English only, like the query dates (``dates.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence

from obsmem.search.speakers import speaker_label

__all__ = ["NUMBER", "TIME", "AnswerForm", "asked_form", "form_order", "raised"]

_MONTHS = frozenset(
    "January February March April May June July August September October November December "
    "Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_TIME_WORDS = (
    frozenset("yesterday today tonight tomorrow ago recently lately".split())
    | _WEEKDAYS
    | {day + "s" for day in _WEEKDAYS}
)
# "last week", "next summer", "this Friday": a period after one of these words.
_RELATIVE = frozenset("last next this past coming".split())
_PERIODS = frozenset("week weekend month year night summer winter spring fall autumn".split())
_PERIODS |= _WEEKDAYS
_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty hundred "
    "thousand dozen dozens once twice several few couple".split()
)

# Questions, read as lower-case words: "when ...", "since when ...", "what / which year, month,
# day, date, week, weekend, time ...", "how long ago ..." ask for a time; "(for) how many / much
# / often / long / old / far ..." for a number. Words, not regular expressions: compiling one
# costs a cold process more than the whole test.
_WHICH = frozenset(("what", "which"))
_WHICH_TIME = frozenset(("year", "month", "day", "date", "week", "weekend"))
_HOW_NUMBER = frozenset(("many", "much", "often", "long", "old", "far"))
# Words without which a question asks for neither: most queries are tested by these alone.
_ASKING = ("when", "how", "year", "month", "day", "date", "week", "time")


@functools.cache
def _words() -> re.Pattern[str]:
    # An entry's words: runs of ASCII letters, runs of digits ("3pm" is "3" and "pm"). Compiled
    # on the first question that asks for a form: a cold ``om search`` of plain words never
    # pays for it.
    return re.compile(r"[A-Za-z]+|[0-9]+")


def _states_time(words: list[str]) -> bool:
    # Month names count capitalised only: "may" and "march" are verbs too.
    before = ""
    for word in words:
        lower = word.lower()
        if lower in _TIME_WORDS or word in _MONTHS:
            return True
        if before in _RELATIVE and lower in _PERIODS:
            return True
        if word.isdigit():
            if len(word) == 4 and word[:2] in ("19", "20"):
                return True  # a year
        elif lower in ("am", "pm") and before.isdigit() and len(before) <= 2:
            return True  # "3 pm", "10:30am"
        before = lower
    return False


def _states_number(words: list[str]) -> bool:
    return any(word.isdigit() or word.lower() in _NUMBER_WORDS for word in words)


class AnswerForm:
    """A kind of answer ("time" or "number") and the test of a line that states one."""

    __slots__ = ("_test", "name")

    def __init__(self, name: str, test: Callable[[list[str]], bool]) -> None:
        self.name = name
        self._test = test

    def stated_in(self, text: str) -> bool:
        """True when ``text`` (an entry's, speaker label skipped) states an answer of this form."""
        label = speaker_label(text)  # skipped: "May: hello" states no time
        return self._test(_words().findall(text, len(label) + 1 if label else 0))

    def __repr__(self) -> str:
        return f"AnswerForm({self.name!r})"


TIME = AnswerForm("time", _states_time)
NUMBER = AnswerForm("number", _states_number)


def _query_words(lowered: str) -> list[str]:
    return "".join(c if c.isalnum() else " " for c in lowered).split()


def asked_form(query: str) -> AnswerForm | None:
    """The form of answer ``query`` asks for: ``TIME`` for when, ``NUMBER`` for how many, how
    much, how often, how long or how old; None for any other question or a plain query."""
    lowered = query.lower()
    if not any(word in lowered for word in _ASKING):
        return None
    words = _query_words(lowered)
    if not words:
        return None
    if words[0] == "when" or words[:2] == ["since", "when"]:
        return TIME
    padded = [*words, "", ""]
    for first, second, third in zip(padded, padded[1:], padded[2:], strict=False):
        if first in _WHICH and (second in _WHICH_TIME or second == "time"):
            return TIME
        if (first, second, third) == ("how", "long", "ago"):
            return TIME
    if words[0] == "for":  # "For how long has Nate had his turtles?"
        words = words[1:]
    if words[:1] == ["how"] and len(words) > 1 and words[1] in _HOW_NUMBER:
        return NUMBER
    return None


def raised(
    scores: dict[int, float],
    texts: Mapping[int, str],
    form: AnswerForm | None,
    boost: float,
    within: int | None = None,
) -> dict[int, float]:
    """``scores`` (higher is better, by rowid) with those of the entries whose text states
    ``form`` multiplied by 1 + ``boost``; the same dict when there is nothing to raise.

    ``texts`` holds the entries' texts by rowid; a score below 0 is raised by its size. With
    ``within``, only the entries that could reach the first ``within`` are read: raising never
    lowers the ``within``-th best score, so an entry below it even once raised stays below.
    """
    if form is None or boost <= 0.0:
        return scores
    floor = float("-inf")
    if within is not None and len(scores) > within:
        floor = sorted(scores.values(), reverse=True)[within - 1]
    out = dict(scores)
    for rowid, score in scores.items():
        high = score + boost * abs(score)
        if high < floor:
            continue
        text = texts.get(rowid)
        if text is not None and form.stated_in(text):
            out[rowid] = high
    return out


def form_order(
    form: AnswerForm | None, boost: float, scores: Sequence[float], texts: Sequence[str]
) -> list[tuple[int, float]] | None:
    """A ranked list re-scored for ``form`` (``asked_form`` of its query): (position in the
    list, new score) pairs, best first, ties in list order; None when there is no form to
    raise (``form`` None or ``boost`` 0).

    ``scores`` are higher-is-better and ``texts`` the hits' texts, one each, in list order.
    """
    if form is None or boost <= 0.0:
        return None
    by_position = dict(enumerate(scores))
    new = raised(by_position, dict(enumerate(texts)), form, boost)
    return sorted(new.items(), key=lambda item: (-item[1], item[0]))

"""The form of answer a question asks for (when, how many) and the lines that state one."""

from __future__ import annotations

import pytest

from obsmem.memory.store import MemoryStore
from obsmem.search import search
from obsmem.search.answers import NUMBER, TIME, asked_form, raised
from obsmem.search.bm25 import answer_ordered
from obsmem.settings import load_settings


@pytest.mark.parametrize(
    ("question", "form"),
    [
        ("When did Caroline go to the LGBTQ support group?", TIME),
        ("when did we move the build to uv", TIME),
        ("In what year did Jon start his studio?", TIME),
        ("Which month was the release cut?", TIME),
        ("How long ago did Nate adopt the turtles?", TIME),
        ("How many times has Nate taken his turtles on a walk?", NUMBER),
        ("How often does the backup run?", NUMBER),
        ("How long has Melanie been practising art?", NUMBER),
        ("how much did the migration cost", NUMBER),
        ("For how long has Nate had his turtles?", NUMBER),
        ("What time does the nightly backup run?", TIME),
        ("What did Melanie paint?", None),
        ("Why did we pin the numpy version?", None),
        ("Where did Caroline move from?", None),
        ("pytest fixtures timeout", None),
        ("the release went out when the tests passed", None),  # "when" not asked
    ],
)
def test_the_form_a_question_asks_for(question: str, form: object) -> None:
    assert asked_form(question) is form


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("Caroline: I went to a LGBTQ support group yesterday", True),
        ("Moved the weekly report to Mondays", True),
        ("Cut the release last week", True),
        ("The conference is in March", True),
        ("Started the studio in 2019", True),
        ("The call is at 3 pm", True),
        ("Caroline: I may go, I will march with them", False),  # verbs, not months
        ("May: that sounds lovely", False),  # a speaker label is not the entry's words
        ("May: see you on Friday", True),
        ("Renamed the build target", False),
    ],
)
def test_a_line_that_states_a_time(text: str, states: bool) -> None:
    assert TIME.stated_in(text) is states


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("Nate: I took my two turtles out", True),
        ("Three tests still fail on Windows", True),
        ("Ran it twice, both green", True),
        ("The backup runs every 4 hours", True),
        ("Nate: they love the tank", False),
        ("Rewrote the parser", False),
    ],
)
def test_a_line_that_states_a_number(text: str, states: bool) -> None:
    assert NUMBER.stated_in(text) is states


def test_raised_multiplies_the_scores_of_lines_of_the_asked_form() -> None:
    scores = {1: 2.0, 2: 1.5, 3: -1.0}
    texts = {1: "talked about pottery", 2: "pottery class yesterday", 3: "back today"}
    assert raised(scores, texts, TIME, 0.5) == {1: 2.0, 2: 2.25, 3: -0.5}
    assert raised(scores, texts, None, 0.5) is scores
    assert raised(scores, texts, TIME, 0.0) is scores


def test_raised_within_reads_only_the_entries_that_could_reach_the_first_n() -> None:
    scores = {1: 10.0, 2: 9.0, 3: 1.0, 4: 7.0}
    texts = {rowid: "back today" for rowid in scores}
    # The second best is 9: entry 3 (1.5 once raised) cannot reach it, entry 4 (10.5) can.
    assert raised(scores, texts, TIME, 0.5, within=2) == {1: 15.0, 2: 13.5, 3: 1.0, 4: 10.5}
    assert raised(scores, texts, TIME, 0.5)[3] == 1.5


def _row(raw: float, text: str, rowid: int) -> tuple[object, ...]:
    # raw score, the entry columns (text the 11th), rowid last
    return (raw, *["x"] * 10, text, *["x"] * 9, rowid)


def test_answer_ordered_reorders_bm25_rows_for_a_when_question() -> None:
    rows = [_row(-3.0, "pottery is fun", 1), _row(-2.5, "pottery class yesterday", 2)]
    assert [r[-1] for r in answer_ordered(rows, "When was the pottery class?", 0.5)] == [2, 1]
    assert answer_ordered(rows, "When was the pottery class?", 0.5)[0][0] == -3.75
    assert [r[-1] for r in answer_ordered(rows, "What was the pottery class?", 0.5)] == [1, 2]
    assert [r[-1] for r in answer_ordered(rows, "When was the pottery class?", 0)] == [1, 2]


DAY = """# Observations

## 2026-04-02

### Observations

- 🟡 10:00 Caroline: The pottery class is such fun, pottery calms me and the class is lovely
- 🟡 10:01 Melanie: That sounds great, I should try it
- 🟡 10:02 Caroline: I took my first pottery class yesterday with a friend
- 🟡 10:03 Melanie: Did you make a bowl?
"""


def _first(store: MemoryStore, question: str, env: dict[str, str]) -> str:
    return search(store, question, settings=load_settings(env))[0].text


@pytest.mark.parametrize("backend", ["bm25", "hybrid"])
def test_a_when_question_ranks_the_line_that_says_when_first(
    store: MemoryStore, backend: str, request: pytest.FixtureRequest
) -> None:
    store.observations_path.write_text(DAY, encoding="utf-8")
    env = request.getfixturevalue("hybrid_env") if backend == "hybrid" else {}
    env = {**env, "OM_SEARCH_BACKEND": backend}
    question = "When did Caroline go to the pottery class?"
    # Without the boost, the line holding "pottery" and "class" twice wins.
    off = _first(store, question, {**env, "OM_SEARCH_ANSWER_FORM_BOOST": "0"})
    assert off.startswith("Caroline: The pottery class is such fun")
    assert _first(store, question, env) == (
        "Caroline: I took my first pottery class yesterday with a friend"
    )
    # A question of another form is ranked as without the boost.
    other = "What does Caroline think of the pottery class?"
    assert _first(store, other, env) == _first(
        store, other, {**env, "OM_SEARCH_ANSWER_FORM_BOOST": "0"}
    )

"""The offline rules: which single statements are durable, where project facts, working style
and what the user is learning go, and the same-subject look-up that must find every line the
full comparison would. Each rule is tried on observations of other kinds of projects than the
benchmark's sessions: a web shop, a data pipeline, a CLI tool."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.context.prepare import prepare_context
from obsmem.memory.model import Observation, Provenance, priority_for
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.facts import (
    ACTIVE_PROJECTS,
    CORE_IDENTITY,
    KEY_FACTS,
    PREFERENCES,
    RECENT_THEMES,
    Home,
    SubjectIndex,
    home_for,
    is_learning,
    is_working_style,
    subject_overlap,
)
from obsmem.reflect.offline import reflect
from obsmem.reflect.project_facts import is_project_fact, passing_test_command
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.reflect.rules import CONTRADICTION_OVERLAP, durable
from obsmem.settings import Settings


def obs(text: str, type_: str | None, i: float, c: float | None = 0.85) -> Observation:
    return Observation(
        text=text, date="2026-03-02", type=type_, importance=i, confidence=c,
        priority=priority_for(i),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "type_", "i", "c"),
    [
        ("User prefers: small commits whose messages explain why", "preference", 0.7, 0.85),
        ("User constraint: never push to main without a review", "preference", 0.7, 0.85),
        ("User decided: option 1 is not acceptable", "decision", 0.75, 0.85),
        ("User accepted: split the parser into two modules", "decision", 0.75, 0.75),
        ("The staging cluster lives in eu-west-3", "fact", 0.6, 0.65),
        ("Wants the answer before the explanation", "relationship", 0.6, None),
        ("Current Tech Stack Versions: Next.js 15.5.2; React 19.1.0", "event", 0.45, 0.7),
        ("Production outage on the gateway", "event", 0.85, 0.9),
    ],
)
def test_one_clear_statement_is_durable(text: str, type_: str, i: float, c: float | None) -> None:
    assert durable(obs(text, type_, i, c))


@pytest.mark.parametrize(
    ("text", "type_", "i", "c"),
    [
        ("User asked: fix the flaky login test", "task", 0.5, 0.85),
        ("Ran the test suite: 212 passed", "milestone", 0.6, 0.85),
        ("Failed: ls: cannot access 'dist'", "error", 0.55, 0.8),
        ("I've deleted hello.js.", "event", 0.65, 0.7),
        ("Maybe prefers tabs, unclear from the message", "preference", 0.7, 0.4),
        ("A passing preference of little weight", "preference", 0.5, 0.9),
        ("This completely changes the architecture. Let me redesign", "event", 0.65, 0.7),
    ],
)
def test_routine_lines_are_not_durable(text: str, type_: str, i: float, c: float | None) -> None:
    assert not durable(obs(text, type_, i, c))


def test_project_facts_go_to_their_project_preferences_stay_the_users() -> None:
    stack = obs("Tech stack: FastAPI, PostgreSQL 16, Tortoise ORM", "event", 0.45)
    assert home_for(stack, "atlas").section == ACTIVE_PROJECTS
    assert home_for(stack, "atlas").sub == "atlas"
    assert home_for(stack, None).section == RECENT_THEMES  # no project to file it under
    typed = obs("Architecture: one worker per queue, results in Redis", "fact", 0.6)
    assert home_for(typed, "atlas").sub == "atlas"
    assert home_for(obs("CI has four parallel workers", "fact", 0.6), "atlas").section == KEY_FACTS
    pref = obs("User prefers: the stack: keep it boring", "preference", 0.7)
    assert home_for(pref, "atlas").section == PREFERENCES
    assert is_project_fact("The app is a TODO list built with Next.js")
    assert is_project_fact("技術スタック更新: Next.js 15.5.2")
    assert not is_project_fact("Available tool groups in this session: web, functions")


def test_the_speakers_label_is_not_a_shared_subject() -> None:
    # Two different constraints share only "User constraint:" and "don't".
    a = "User constraint: don't produce code, design the solution first"
    b = "User constraint: don't commit until the final step"
    assert subject_overlap(a, b) < CONTRADICTION_OVERLAP
    assert subject_overlap("User decided: use Redis", "User decided: use Postgres") == 0.0
    assert subject_overlap("Uses Alembic for migrations", "Uses Aerich for migrations") >= 0.6


_WORDS = st.sampled_from("alpha beta gamma delta redis postgres cache queue the for use".split())
_TEXTS = st.lists(_WORDS, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=25), _TEXTS)
def test_subject_index_finds_every_line_the_full_comparison_finds(
    lines: list[str], query: str
) -> None:
    index: SubjectIndex[int] = SubjectIndex()
    for key, text in enumerate(lines):
        index.add(key, text)
    index.remove(0)
    found = index.candidates(query, CONTRADICTION_OVERLAP)
    for key, text in enumerate(lines):
        if key and subject_overlap(query, text) >= CONTRADICTION_OVERLAP:
            assert key in found
    assert 0 not in found


# --- durable on one sighting, tried on other kinds of projects -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # a web shop
        "Requirements: checkout works without JavaScript; prices are shown with VAT",
        "The shop uses Stripe for payments and PostgreSQL for orders",
        "Cart state is persisted in Redis with a seven-day expiry",
        # a data pipeline
        "Data model: one events table partitioned by day, one dimension table per source",
        "The pipeline depends on Airflow 2.9 and dbt 1.8",
        "Conventions: every DAG carries an owner tag and retries three times",
        # a CLI tool
        "Design principles: KISS, no global state, one module per command",
        "The CLI uses click for parsing and rich for output",
        "The docs are hosted on GitHub Pages, built from docs/ by mkdocs",
        "プロジェクト構造: src/ にコマンド、tests/ にテスト",
    ],
)
def test_a_projects_requirements_conventions_and_setup_are_project_facts(text: str) -> None:
    assert is_project_fact(text)
    assert durable(obs(text, "event", 0.45, 0.65))
    assert home_for(obs(text, "event", 0.45), "shop") == Home(ACTIVE_PROJECTS, "shop")


@pytest.mark.parametrize(
    "text",
    [
        # what was done, not what is: outcomes, test runs and plan steps stay observations
        "Changed: checkout.ts rounds VAT per line; cart.ts keeps the currency",
        "Fixed deployment: the nightly DAG retries on a timeout",
        "Tests pass: `pytest tests/cli`: 48 passed",
        "Verification passed: dbt run; dbt test",
        "Next steps: review the schema, then migrate the orders table",
        "Phase 1: requirements gathering and interfaces",
        "The export was stored in /tmp/orders.csv",
        "Ran the deployment script twice before it worked",
        "The fix is deployed to staging and the checkout works again",
    ],
)
def test_outcomes_and_plan_steps_are_not_project_facts(text: str) -> None:
    assert not is_project_fact(text)
    assert not durable(obs(text, "event", 0.65, 0.7))


@pytest.mark.parametrize(
    ("text", "style"),
    [
        ("User corrected: don't push to main, open a pull request", True),
        ("User decided: always write tests first for a new transform", True),
        ("User corrected: no, explain the change before writing code", True),
        ("User corrected: don't produce code yet, design the solution first", True),
        ("User decided: the cart must not keep card numbers", False),
        ("User corrected: the DAG runs daily, not hourly", False),
        ("User decided: use typer instead of argparse", False),
        ("User corrected: the orchestrator must not refer to one agent's folders", False),
    ],
)
def test_how_the_user_wants_the_work_done_is_their_preference(text: str, style: bool) -> None:
    assert is_working_style(text) is style
    home = home_for(obs(text, "decision", 0.85), "shop")
    assert home == (Home(PREFERENCES) if style else Home(ACTIVE_PROJECTS, "shop"))


@pytest.mark.parametrize(
    ("text", "learning"),
    [
        ("User said: I'm new to Kubernetes, keep the manifests simple", True),
        ("User said: I want to learn SQL window functions", True),
        ("User said: I'm learning Rust", True),
        # a request is work at hand, not who the user is
        ("User asked: teach me about SQL window functions", False),
        ("User asked: Can you help me understand how React hooks work?", False),
        ("User asked: help me understand why the checkout test fails", False),
        ("User asked: help me understand how this DAG works", False),
        ("User asked: help me understand how parse_args() works", False),
        ("Learning: I want to learn dbt macros", False),  # not the user's words
    ],
)
def test_what_the_user_is_learning_is_about_them(text: str, learning: bool) -> None:
    assert is_learning(text) is learning
    assert durable(obs(text, "task", 0.5)) is learning
    assert (home_for(obs(text, "task", 0.5), "shop") == Home(CORE_IDENTITY)) is learning


def test_one_session_of_a_web_shop_reaches_long_term_memory(store: MemoryStore) -> None:
    prov = Provenance(path="/t/shop.jsonl", line_start=1, project="shop")

    def seen(text: str, type_: str, i: float, at: str) -> Observation:
        return new_observation(text, date="2026-03-02", time=at, type=type_, importance=i,
                               confidence=0.7, provenance=prov)  # fmt: skip

    store.add_observations([
        seen("User asked: I'm new to Django, help me add a coupon field", "task", 0.5, "09:00"),
        seen("The shop uses Django 5 with PostgreSQL 16", "event", 0.45, "09:05"),
        seen("User corrected: don't commit until I have reviewed the diff", "decision", 0.85,
             "09:10"),
        seen("Changed: orders/models.py adds Coupon; checkout/views.py applies it", "event",
             0.6, "09:20"),
        seen("Tests pass: `pytest orders`: 31 passed", "milestone", 0.6, "09:25"),
    ])  # fmt: skip
    reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 3), provider=None)
    doc = ReflectionsDoc(store.read_bytes(store.home / "reflections.md"))
    placed = {p.line.text: (p.section.name, p.sub.name if p.sub else None) for p in doc.places()}
    assert placed == {
        # who the user is, without the request, which stays an observation (an open loop)
        "User is new to Django": ("Core Identity", None),
        "The shop uses Django 5 with PostgreSQL 16": ("Active Projects", "shop"),
        "User corrected: don't commit until I have reviewed the diff": (
            "Preferences & Opinions", None),
        # the test run stays an observation; how the tests are run is a fact of the project
        "Tests run with `pytest`": ("Active Projects", "shop"),
    }  # fmt: skip
    prepare_context(store, today=date(2026, 3, 3), settings=Settings(llm_provider="none"))
    profile = (store.home / "profile.md").read_text(encoding="utf-8")
    assert "don't commit until I have reviewed the diff" in profile
    assert "User is new to Django" in profile
    active = (store.home / "active.md").read_text(encoding="utf-8")
    assert "help me add a coupon field" in active  # the task is still open


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("Tests pass: `npm test -- --run src/cart/total.test.ts`: 16 passed", "npm test"),
        ("Fixed: `python -m pytest -q tests/test_dags.py` passes now (42 passed); it had failed "
         "with: E KeyError: 'owner'", "python -m pytest"),
        ("Tests pass: `cargo test`: 5 passed, 0 failed", "cargo test"),
        ("Tests pass: `./run_tests.sh tests/unit`: 3 passed", "./run_tests.sh"),
        ("Tests pass: `dbt test --select \"orders\"`: 12 passed", "dbt test"),
        ("Failed: `pytest -q`: 2 failed", None),
        ("User asked: make `npm test` pass", None),
    ],
)  # fmt: skip
def test_a_passing_run_says_how_the_tests_are_run(text: str, command: str | None) -> None:
    assert passing_test_command(text) == command


def run_of(command: str, day: str, at: str, project: str | None = "pipeline") -> Observation:
    prov = Provenance(path=f"/t/{day}.jsonl", line_start=1, project=project)
    return new_observation(f"Tests pass: `{command}`: 8 passed", date=day, time=at,
                           type="milestone", importance=0.6, completed=True,
                           confidence=0.85, provenance=prov)  # fmt: skip


def test_runs_of_one_test_command_are_one_fact_in_either_order(tmp_path: Path) -> None:
    runs = [
        run_of("python -m pytest -q tests/test_load.py", "2026-03-02", "10:00"),
        run_of("python -m pytest -q tests/test_dedupe.py", "2026-03-04", "11:00"),
        run_of("python -m pytest -q", "2026-03-06", "09:00"),
        run_of("dbt test", "2026-03-06", "09:30"),
        run_of("make check", "2026-03-06", "09:40", project=None),  # no project: no fact
    ]
    files = []
    for name, order in (("forward", runs), ("backfilled", runs[::-1])):
        store = MemoryStore(tmp_path / name)
        for one in order:  # one run of om reflect per session, as sessions come in
            store.add_observations([one])
            reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 7), provider=None)
        files.append(store.read_bytes(store.home / "reflections.md"))
    doc = ReflectionsDoc(files[0])
    lines = {p.line.text: p.line for p in doc.places()}
    assert set(lines) == {"Tests run with `python -m pytest`", "Tests run with `dbt test`"}
    pytest_line = lines["Tests run with `python -m pytest`"]
    assert pytest_line.cites == [r.id for r in runs[:3]] and pytest_line.seen == "2026-03-06"
    assert all(p.sub is not None and p.sub.name == "pipeline" for p in doc.places())
    # The same lines (ids, citations, dates) whichever came first; lines seen on one day keep
    # the order they came in.
    assert sorted(files[0].split(b"\n")[4:]) == sorted(files[1].split(b"\n")[4:])


@pytest.mark.parametrize(
    ("text", "project", "home"),
    [
        # said of the project by name: the project's, not the user's in every project
        ("User constraint: I deploy tidepool on a Raspberry Pi 4, keep dependencies pure-Python",
         "tidepool", Home(ACTIVE_PROJECTS, "tidepool")),
        ("User prefers: the web-shop checkout keeps one page", "web-shop",
         Home(ACTIVE_PROJECTS, "web-shop")),
        # a working style stays the user's, whichever project it was said in
        ("User constraint: never push to main in tidepool, open a pull request", "tidepool",
         Home(PREFERENCES)),
        # no name, part of a word, or a name too short to tell
        ("User prefers: small functions with docstrings", "tidepool", Home(PREFERENCES)),
        ("User prefers: tidepools of data are a bad idea", "tidepool", Home(PREFERENCES)),
        ("User prefers: ml code in notebooks", "ml", Home(PREFERENCES)),
    ],
)  # fmt: skip
def test_a_preference_said_of_its_project_by_name_stays_with_it(
    text: str, project: str, home: Home
) -> None:
    assert home_for(obs(text, "preference", 0.8), project) == home

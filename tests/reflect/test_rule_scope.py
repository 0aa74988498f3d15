"""The scope of the durable-fact rules: what they must not take for the user's working style,
who the user is, a project's stack or how its tests are run. Each case is a line of ordinary
project work from another kind of project (a forum, a shop, an ML model, a CRM), which the
rules once filed as a durable fact."""

from __future__ import annotations

from datetime import date

import pytest

from obsmem.context.gather import settled_cites
from obsmem.context.prepare import prepare_context
from obsmem.memory.model import Observation, Provenance, priority_for
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.facts import (
    ACTIVE_PROJECTS,
    CORE_IDENTITY,
    PREFERENCES,
    Home,
    home_for,
    is_learning,
    is_working_style,
    learning_fact,
    project_preference,
)
from obsmem.reflect.offline import reflect
from obsmem.reflect.project_facts import base_test_command, is_project_fact, passing_test_command
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.reflect.rules import durable
from obsmem.settings import Settings


def obs(text: str, type_: str | None, i: float) -> Observation:
    return Observation(text=text, date="2026-03-02", type=type_, importance=i, confidence=0.85,
                       priority=priority_for(i))  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        # a forum, a shop, a CRM: rules of the product, in the words of a working style
        "User decided: only moderators can delete comments",
        "User decided: merge duplicate threads before the import",
        "User decided: never send push notifications without opt-in",
        "User decided: ask for confirmation before charging the card",
        "User decided: commit the transaction only after all rows validate",
        "User decided: never merge customer records without a matching email",
        "User decided: only send the weekly summary to account owners",
        "User decided: always confirm the delivery address before shipping",
        "User decided: the tooltip must explain the fee before checkout",
        # an ML model, a quiz
        "User decided: always shuffle the training data before each epoch",
        "User decided: never evaluate on the test split before the final run",
        "User decided: the quiz shows answers only after submission",
    ],
)
def test_a_rule_of_the_product_is_its_projects_decision(text: str) -> None:
    assert not is_working_style(text)
    assert home_for(obs(text, "decision", 0.85), "forum") == Home(ACTIVE_PROJECTS, "forum")
    assert not project_preference(text, "forum")  # (names no project)


@pytest.mark.parametrize(
    "text",
    [
        "User corrected: don't write code before we agree on the design",
        "User decided: always run the tests before committing",
        "User said: answer in short bullet points",
        "User corrected: ask me before deleting any file",
        "User decided: never merge without a green CI run",
        "User constraint: never push to main in forum, open a pull request",
    ],
)
def test_how_the_agent_works_with_the_user_is_their_style(text: str) -> None:
    assert is_working_style(text)
    assert home_for(obs(text, "decision", 0.85), "forum") == Home(PREFERENCES)
    assert not project_preference(text, "forum")


def test_a_forum_decision_stays_out_of_the_shops_about_the_user(store: MemoryStore) -> None:
    def seen(text: str, project: str, at: str) -> Observation:
        prov = Provenance(path=f"/t/{project}.jsonl", line_start=1, project=project)
        return new_observation(text, date="2026-03-02", time=at, type="decision",
                               importance=0.85, confidence=0.8, provenance=prov)  # fmt: skip

    store.add_observations([
        seen("User decided: only moderators can delete comments", "forum", "09:00"),
        seen("User corrected: always run the tests before committing", "shop", "10:00"),
    ])  # fmt: skip
    reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 3), provider=None)
    doc = ReflectionsDoc(store.read_bytes(store.home / "reflections.md"))
    placed = {p.line.text: (p.section.name, p.sub.name if p.sub else None) for p in doc.places()}
    assert placed["User decided: only moderators can delete comments"] == (ACTIVE_PROJECTS, "forum")
    assert placed["User corrected: always run the tests before committing"] == (PREFERENCES, None)
    prepare_context(store, today=date(2026, 3, 3), settings=Settings(llm_provider="none"))
    profile = (store.home / "profile.md").read_text(encoding="utf-8")
    assert "always run the tests before committing" in profile
    assert "moderators" not in profile


@pytest.mark.parametrize(
    "text",
    [
        "User asked: help me understand how pagination works on the orders page, it skips page 2",
        "User said: I want to understand each failing test before we change the fixture",
        "User said: the model is trying to learn spurious correlations from the background",
        "User asked: teach me about the churn score in the CRM export",
        "User said: I'm learning how this DAG works",  # the work at hand
        "Learning: I'm new to Django",  # not the user's words
    ],
)
def test_a_request_about_the_work_is_not_who_the_user_is(text: str) -> None:
    assert not is_learning(text)
    assert learning_fact(text) is None
    assert not durable(obs(text, "task", 0.5))
    assert home_for(obs(text, "task", 0.5), "shop") != Home(CORE_IDENTITY)


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("User said: I'm learning Rust", "User is learning Rust"),
        ("User asked: I'm new to Django, help me add a coupon field", "User is new to Django"),
        ("User said: I'm new to Polars and need the join to be fast", "User is new to Polars"),
        ("User said: I'd like to learn SQL window functions", "User wants to learn SQL window "
         "functions"),
    ],
)  # fmt: skip
def test_what_the_user_says_they_learn_is_stated_without_the_request(text: str, fact: str) -> None:
    assert learning_fact(text) == fact


def test_a_task_cited_by_an_identity_line_stays_an_open_loop(store: MemoryStore) -> None:
    prov = Provenance(path="/t/ml.jsonl", line_start=1, project="ml")
    task = new_observation("User asked: I'm learning Rust, port the tokenizer to it", type="task",
                           date="2026-03-02", time="09:00", importance=0.6, confidence=0.8,
                           provenance=prov)  # fmt: skip
    store.add_observations([task])
    reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 3), provider=None)
    reflections = store.read_bytes(store.home / "reflections.md")
    doc = ReflectionsDoc(reflections)
    assert [(p.section.name, p.line.text, p.line.cites) for p in doc.places()] == [
        (CORE_IDENTITY, "User is learning Rust", [task.id])
    ]
    assert settled_cites(reflections, {task.id: "task"}) == set()
    assert settled_cites(reflections, {task.id: "fact"}) == {task.id}
    prepare_context(store, today=date(2026, 3, 3), settings=Settings(llm_provider="none"))
    assert "port the tokenizer" in (store.home / "active.md").read_text(encoding="utf-8")
    assert "User is learning Rust" in (store.home / "profile.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "text",
    [
        "Deployment failed: the health check timed out",
        "Environment variable missing: STRIPE_KEY",
        "Schema validation error: orders.total must be a number",
        "Infrastructure issue: the bucket is unreachable",
        "The server uses 100% CPU after the deploy",
        "The API uses 2 GB of memory at peak",
        "Merging the PR depends on the review from Sam",
        "The release depends on the security review",
        "The shop uses Stripe for payments but the webhook timed out",
    ],
)
def test_an_incident_or_a_step_of_the_work_is_no_project_fact(text: str) -> None:
    assert not is_project_fact(text)
    assert not durable(obs(text, "event", 0.65))


@pytest.mark.parametrize(
    "text",
    [
        "The CLI depends on click 8 and rich",
        "The forum backend is backed by PostgreSQL 16",
        "Deployment: Fly.io, two machines in fra",
        "The service uses a queue per tenant",
    ],
)
def test_a_components_stack_is_still_a_project_fact(text: str) -> None:
    assert is_project_fact(text)


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("pytest -k test_login -q", "pytest"),
        ("pytest --lf", "pytest"),
        ("npx jest cart", "npx jest"),
        ("go test -run TestParse ./parser", "go test"),
        ("uv run pytest -x tests/api", "uv run pytest"),
        ("poetry run pytest tests/api -k auth", "poetry run pytest"),
        ("CI=1 pnpm vitest run cart", "pnpm vitest"),
        ("npm run test:e2e -- --grep cart", "npm run test:e2e"),
        ("yarn test --watch=false", "yarn test"),
        ("cargo nextest run -p core", "cargo nextest"),
        ("make test-unit", "make test-unit"),
        ("tox -e py312", "tox"),
        ("nox -s tests", "nox"),
        ("utils.py", None),
        ("make build", None),
        ("npm run lint", None),
        ("ls dist", None),
    ],
)
def test_a_test_command_is_its_runners_base_command(command: str, runner: str | None) -> None:
    assert base_test_command(command) == runner
    assert passing_test_command(f"Tests pass: `{command}`: 8 passed") == runner


def test_a_fixed_file_is_no_test_run() -> None:
    assert passing_test_command("Fixed: `utils.py`: off-by-one in the page count") is None


def test_filtered_runs_of_one_runner_are_one_line(store: MemoryStore) -> None:
    prov = Provenance(path="/t/crm.jsonl", line_start=1, project="crm")
    runs = ["pytest -k test_login -q", "pytest --lf", "pytest tests/test_leads.py", "go test ./..."]
    store.add_observations([
        new_observation(f"Tests pass: `{c}`: 3 passed", date="2026-03-02", time=f"1{n}:00",
                        type="milestone", importance=0.6, completed=True, provenance=prov)
        for n, c in enumerate(runs)
    ])  # fmt: skip
    reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 3), provider=None)
    doc = ReflectionsDoc(store.read_bytes(store.home / "reflections.md"))
    assert sorted(p.line.text for p in doc.places()) == [
        "Tests run with `go test`",
        "Tests run with `pytest`",
    ]


@pytest.mark.parametrize(
    ("project", "text"),
    [
        ("shop", "User corrected: always run the tests before committing"),
        ("crm", "User decided: never push directly to main"),
        ("forum", "User said: always ask me before adding a dependency"),
    ],
)
def test_a_working_style_decision_is_shown_once_from_the_profile(
    store: MemoryStore, project: str, text: str
) -> None:
    prov = Provenance(path=f"/t/{project}.jsonl", line_start=1, project=project)
    decision = new_observation(text, type="decision", date="2026-03-02", time="09:00",
                               importance=0.7, confidence=0.8, provenance=prov)  # fmt: skip
    store.add_observations([decision])
    reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 3), provider=None)
    reflections = store.read_bytes(store.home / "reflections.md")
    assert [p.section.name for p in ReflectionsDoc(reflections).places()] == [PREFERENCES]
    assert settled_cites(reflections, {decision.id: "decision"}, {decision.id: text}) == {
        decision.id
    }
    prepare_context(store, today=date(2026, 3, 3), settings=Settings(llm_provider="none"))
    assert text in (store.home / "profile.md").read_text(encoding="utf-8")
    assert text not in (store.home / "active.md").read_text(encoding="utf-8")


def test_a_decision_cited_by_a_different_line_of_the_users_stays_a_decision(
    store: MemoryStore,
) -> None:
    prov = Provenance(path="/t/queue.jsonl", line_start=1, project="queue")
    text = "User decided: I'm new to Kafka, so the queue uses Redpanda's single binary"
    decision = new_observation(text, type="decision", date="2026-03-02", time="09:00",
                               importance=0.7, confidence=0.8, provenance=prov)  # fmt: skip
    store.add_observations([decision])
    reflect(store, Settings(llm_provider="none"), today=date(2026, 3, 3), provider=None)
    reflections = store.read_bytes(store.home / "reflections.md")
    assert [(p.section.name, p.line.text) for p in ReflectionsDoc(reflections).places()] == [
        (CORE_IDENTITY, "User is new to Kafka")
    ]
    assert settled_cites(reflections, {decision.id: "decision"}, {decision.id: text}) == set()
    assert settled_cites(reflections, {decision.id: "decision"}) == set()
    prepare_context(store, today=date(2026, 3, 3), settings=Settings(llm_provider="none"))
    assert "Redpanda" in (store.home / "active.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("User asked: I'm new to Next.js, help me fix the routing", "User is new to Next.js"),
        ("User said: I'm learning Vue.js", "User is learning Vue.js"),
        ("User said: I'm new to ASP.NET Core.", "User is new to ASP.NET Core"),
        ("User said: I'm new to Airflow and this DAG fails on retries", "User is new to Airflow"),
        ("User said: I'm learning Terraform but the plan keeps drifting", "User is learning "
         "Terraform"),
        ("User said: Im new to Python", "User is new to Python"),
        ("User said: I'm new to TypeScript", "User is new to TypeScript"),
        ("User said: I'm learning three.js, the scene is blank", "User is learning three.js"),
    ],
)  # fmt: skip
def test_a_learning_topic_keeps_its_dotted_name_and_ends_at_its_clause(
    text: str, fact: str
) -> None:
    assert learning_fact(text) == fact
    assert home_for(obs(text, "task", 0.5), "web") == Home(CORE_IDENTITY)


@pytest.mark.parametrize(
    "text",
    [
        "User said: I'm learning utils.py",
        "User said: I'm new to orders.total",
        "User said: I'm new to getUser",
    ],
)
def test_a_piece_of_code_is_no_learning_topic(text: str) -> None:
    assert learning_fact(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "Deployment: rolled back v2.3 after the payment webhook returned 500",
        "Architecture: the Spark executors crashed under load",
        "Environment: staging is down",
        "Deployment: the health check timed out",
        "Schema: orders.total failed validation",
        "Infrastructure: the gateway returned 503 for an hour",
        "Tech stack: the Redis node uses 95% memory",
    ],
)
def test_an_incident_after_a_fact_label_is_no_project_fact(text: str) -> None:
    assert not is_project_fact(text)
    assert home_for(obs(text, "event", 0.6), "pay") != Home(ACTIVE_PROJECTS, "pay")


@pytest.mark.parametrize(
    "text",
    [
        "Tech stack: FastAPI, Postgres, Redis",
        "Deployment: Fly.io, two machines in Amsterdam",
        "Architecture: a rollback-safe migration runner in front of Postgres",
        "Schema: orders.total is a decimal(10,2)",
    ],
)
def test_a_fact_label_over_a_plain_statement_stays_a_project_fact(text: str) -> None:
    assert is_project_fact(text)


@pytest.mark.parametrize(
    "text",
    [
        "User decided: the chatbot must always reply in the customer's language",
        "User decided: the CLI should always answer with JSON when --json is passed",
        "User decided: the API should never answer with HTML",
        "User decided: never merge PRs on Fridays",
        "User decided: the support bot should never reply with a refund promise",
        "User decided: no deploys during the release freeze unless the fix is ready",
        "User decided: only admins can delete projects",
        "User decided: the API responses must be JSON",
    ],
)
def test_a_rule_about_the_products_replies_is_the_projects(text: str) -> None:
    assert not is_working_style(text)
    assert home_for(obs(text, "decision", 0.85), "bot") == Home(ACTIVE_PROJECTS, "bot")
    assert home_for(obs(text, "preference", 0.85), "bot") == Home(ACTIVE_PROJECTS, "bot")


@pytest.mark.parametrize(
    "text",
    [
        "User corrected: don't touch the generated files",
        "User said: always use type hints in the code you write",
        "User corrected: stop adding comments everywhere",
        "User said: always show me the diff before applying it",
        "User said: use conventional commits",
        "User said: your answers should be short",
        "User corrected: never edit the migration files by hand",
        "User corrected: the tests must pass before you commit",
        "User said: all commits should follow conventional commits",
    ],
)
def test_an_instruction_about_the_agents_own_output_is_its_working_style(text: str) -> None:
    assert is_working_style(text)
    assert home_for(obs(text, "decision", 0.85), "bot") == Home(PREFERENCES)
    assert home_for(obs(text, "preference", 0.85), "bot") == Home(PREFERENCES)


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("./gradlew testDebugUnitTest", "./gradlew testDebugUnitTest"),
        ("xcodebuild test", "xcodebuild test"),
        ("xcodebuild -scheme App -destination 'platform=iOS' test", "xcodebuild test"),
        ("mvn -q test", "mvn test"),
        ("python manage.py test", "python manage.py test"),
        ("./manage.py test orders", "./manage.py test"),
        ("php artisan test", "php artisan test"),
        ("rails test", "rails test"),
        ("uv run --frozen pytest", "uv run pytest"),
        ("poetry run python -m pytest", "poetry run python -m pytest"),
        ("make -C app test", "make -C app test"),
        ("make -j4 test", "make test"),
        ("scripts/test-all.sh --fast", "scripts/test-all.sh"),
        ("./scripts/latest.sh", None),
        ("./bin/contest.py", None),
        ("python utils.py", None),
        ("mvn -q package", None),
        ("php artisan migrate", None),
        ("make -C app build", None),
        # a project's own test script, "test" a part of its file name
        ("./runtests.sh", "./runtests.sh"),
        ("./scripts/unittests.sh", "./scripts/unittests.sh"),
        ("./testall.sh", "./testall.sh"),
        ("./runtests.py --parallel", "./runtests.py"),
        ("./scripts/attestation.sh", None),
        # an option's value is not the action
        ("xcodebuild -scheme test build", None),
        ("mvn -pl core test", "mvn test"),
    ],
)
def test_runners_of_other_stacks_give_their_base_command(command: str, runner: str | None) -> None:
    assert base_test_command(command) == runner
    assert passing_test_command(f"Tests pass: `{command}`: 8 passed") == runner


@pytest.mark.parametrize(
    ("kind", "text", "line", "settled"),
    [
        # a task or commitment is never settled by a durable line, even one that states it
        ("task", "Add type hints to the parser module",
         "Always add type hints to the parser module and every other module you touch", False),
        ("task", "Add type hints to the parser module", "Add type hints to the parser module",
         False),
        ("commitment", "Will write the migration guide", "Will write the migration guide", False),
        # a decision only when the line states it, with or without the observer's lead-in
        ("decision", "User decided: never push directly to main", "Never push directly to main",
         True),
        ("decision", "User corrected: always run the tests",
         "user corrected: Always run  the tests", True),
        ("decision", "User decided: never push directly to main",
         "Never push directly to main or to any release branch", False),
        ("decision", "", "Never push directly to main", False),
    ],
)  # fmt: skip
def test_only_a_decision_its_line_states_is_settled(
    kind: str, text: str, line: str, settled: bool
) -> None:
    data = (
        "# Reflections — Long-Term Memory\n\n## Preferences & Opinions\n\n"
        f"- 🟡 {line} (seen 2026-03-02; ^k3v9q2m7xa) ^r7t8y9u0i1\n"
    ).encode()
    got = settled_cites(data, {"k3v9q2m7xa": kind}, {"k3v9q2m7xa": text})
    assert got == ({"k3v9q2m7xa"} if settled else set())


@pytest.mark.parametrize(
    ("text", "type_"),
    [
        ("User prefers: the answers should be in German", "preference"),
        ("User prefers: All explanations should be brief", "preference"),
        ("User prefers: Every answer should start with the command", "preference"),
        ("User prefers: the summary should list the files changed", "preference"),
        ("User decided: never ask me for approval on weekends", "decision"),
    ],
)
def test_a_rule_about_the_agents_answers_is_the_users_preference(text: str, type_: str) -> None:
    # The answers as the subject, or the user as the agent's counterpart on a schedule, win
    # over the "the/all/every <noun> should" and "on weekends" forms of a product rule.
    assert home_for(obs(text, type_, 0.85), "bot") == Home(PREFERENCES)


@pytest.mark.parametrize(
    "text",
    [
        "Constraints: cannot use Docker on the CI runners",
        "Requirements: the API must respond within 200 ms",
        "Constraints: the Raspberry Pi has 1 GB RAM",
        "Conventions: PRs without tests are rejected",
        "Architecture: requests timeout after 30 seconds",
    ],
)
def test_a_limit_or_requirement_after_a_fact_label_stays_a_project_fact(text: str) -> None:
    # Only an event after the label (failed, crashed, rolled back, is down, timed out) reports
    # an incident; a limit in the same words is what the label names.
    assert is_project_fact(text)
    assert home_for(obs(text, "event", 0.6), "pay") == Home(ACTIVE_PROJECTS, "pay")


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("User said: I'm learning HTML and CSS, help me style the page",
         "User is learning HTML and CSS"),
        ("User said: I'm new to Ruby and Rails", "User is new to Ruby and Rails"),
        ("User said: I'm learning Django.Help me", "User is learning Django"),
        ("User said: I'm new to socket.io", "User is new to socket.io"),
        ("User said: I'm new to asp.net core", "User is new to asp.net core"),
        ("User said: I'm new to Django and I need a coupon field", "User is new to Django"),
        ("User said: I'm new to Go and the build is slow", "User is new to Go"),
        ("User said: I'm new to Rust and it won't compile", "User is new to Rust"),
    ],
)  # fmt: skip
def test_a_learning_topic_ends_at_a_clause_not_at_any_and(text: str, fact: str) -> None:
    # "and" joins two topics unless a clause follows it; a dot before a capitalised word ends
    # the sentence, one inside a lowercase name ("socket.io", "asp.net") is part of it.
    assert learning_fact(text) == fact

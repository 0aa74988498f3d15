"""What an observation says about its project that outlives the session: its stack, layout and
rules (``is_project_fact``), and how its tests are run (``passing_test_command``).

Both are read from the observer's wording, so both are narrow on purpose: a false positive is a
routine line (a failed deploy, a CPU spike, one filtered test run) kept as a durable fact of the
project and shown at every session start.
"""

from __future__ import annotations

import re

__all__ = ["base_test_command", "is_project_fact", "passing_test_command", "tests_run_with"]

# What a project is built from and how it is laid out (a stack, an architecture, a structure),
# what it requires and the rules it follows (requirements, constraints, conventions, principles,
# its design decisions), its data model and where it runs. Looked for in the label an observer
# puts before a colon ("Tech stack: ...", "Conventions: ...", "技術スタック更新: ...") or in a
# statement that the project is built with or on something, not anywhere in the text: "this
# changes the architecture" says nothing about it, and a label saying what was done to it
# ("Changed: ...", "Fixed the deployment: ...") or what went wrong ("Deployment failed: ...",
# "Schema validation error: ...") reports an outcome.
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
# What went wrong, in a statement ("the health check timed out"): an incident, not a fact.
_INCIDENT = re.compile(
    r"\b(?:fail(?:s|ed|ing|ure|ures)?|timed? ?out|timeouts?|broke|broken|crash(?:es|ed|ing)?"
    r"|outages?|unavailable|cannot|can't|unable|rejected|denied|refused|exceeded"
    r"|leak(?:s|ing)?|spikes?|stuck|hangs?|regression|roll(?:ed|s|ing)[ -]back"
    r"|(?:is|are|was|were|went) down|returned (?:an? |a status of )?(?:5\d\d|5xx))\b",
    re.IGNORECASE,
)
# ... and in a label, also what is wrong ("Schema validation error:", "Environment variable
# missing:"): a label names its subject, so these words there report a problem with it.
_INCIDENT_LABEL = re.compile(
    r"\b(?:errors?|missing|invalid|not found|down|bugs?|issues?|problems?|warnings?)\b"
    r"|" + _INCIDENT.pattern,
    re.IGNORECASE,
)
# A measurement: "uses 100% CPU", "uses 3 GB of memory", "uses too much memory".
_METRIC = re.compile(
    r"\d\s*%|\b\d+(?:[.,]\d+)?\s*(?:ms|s|sec|seconds?|minutes?|[kmgt]i?b|cores?|threads?)\b"
    r"|\b(?:cpu|memory|ram|disk space|bandwidth|too much|too many|a lot of)\b",
    re.IGNORECASE,
)
# After a label naming a fact, only an event reports an incident ("Deployment: rolled back
# v2.3", "Environment: staging is down", "the health check timed out") or a measurement of use
# ("the Redis node uses 95% memory"): a limit or a requirement in the same words is the fact
# ("Constraints: cannot use Docker on the CI runners", "Requirements: the API must respond
# within 200 ms", "Architecture: requests timeout after 30 seconds").
_EVENT = re.compile(
    r"\b(?:fail(?:ed|ing)|crash(?:ed|ing)|broke|roll(?:ed|ing)[ -]back|(?:is|are|was|were|went)"
    r" down|returned (?:an? |a status of )?(?:5\d\d|5xx)|timed out)\b"
    r"|\b(?:uses|using|used|hit|hits|reached)\s+"
    r"(?:\d[\d.,]*\s*(?:%|[kmgt]i?b\b)|too much|too many)",
    re.IGNORECASE,
)
_PROJECT_FACT_STATEMENT = re.compile(
    r"\b(?:is|are) (?:built|written|implemented) (?:with|in|on)\b|\bruns on\b"
    r"|\b(?:the )?(?:project|app|application|repo(?:sitory)?|codebase|service) (?:is|uses) an?\b"
    # How it is put together: "state is persisted in localStorage", "the API is deployed on
    # Fly.io", "the backend uses FastAPI". ("is deployed to staging" is mostly news of a
    # deploy: only "deployed on" counts)
    r"|\b(?:is|are) (?:persisted|configured) (?:in|on|via|through|with)\b"
    r"|\b(?:is|are) (?:deployed|hosted|served) on\b"
    r"|\b(?:project|app|application|repo(?:sitory)?|codebase|service|api|backend|frontend"
    r"|server|cli|pipeline|site|shop|website) uses\b",
    re.IGNORECASE,
)
# "The CLI depends on click", "the API is backed by PostgreSQL": a component or tool as the
# subject (a noun phrase of a few words at the start, no gerund: "Merging the PR depends on the
# review from Sam" is a step of the work), and what it rests on is no step of the work either.
_DEPENDS = re.compile(
    r"^\s*(?:the |our |this )?(?P<subject>[\w.+#/-]+(?: [\w.+#/-]+){0,3}) "
    r"(?:depends on|is powered by|is backed by) (?P<object>.+)",
    re.IGNORECASE,
)
_WORK_STEP = re.compile(
    r"\b(?:reviews?|approvals?|sign-?off|feedback|answers?|replies|responses?|decisions?"
    r"|meetings?|merges?|merging|releases?|fix(?:es)?|tickets?|tasks?|prs?|pull requests?"
    r"|whether|when|if|who)\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s*([^:.!?]{2,60}):\s+\S")


def _depends_fact(text: str) -> bool:
    found = _DEPENDS.match(text)
    if found is None:
        return False
    subject = found.group("subject").split()
    return not (
        subject[0].casefold().endswith("ing")
        or _WORK_STEP.search(found.group("subject"))
        or _WORK_STEP.search(found.group("object"))
    )


def is_project_fact(text: str) -> bool:
    """True for a statement of what a project is built from, how it is laid out and what rules
    it follows (its stack, architecture, structure, requirements, conventions, data model, where
    it runs): a label naming one (not a report of what was done or went wrong), or "is built
    with", "the app is a ...", "is deployed on", "the CLI uses ...", "<component> depends on
    <tool>", in a statement that reports no incident or measurement (after a label, no event:
    a limit or a requirement there is the fact)."""
    label = _LABEL.match(text)
    if label is not None and _PROJECT_FACT_LABEL.search(label.group(1)):
        # "Deployment: rolled back v2.3 after the webhook returned 500" reports an incident
        # under a label that names a fact.
        if _OUTCOME_LABEL.match(label.group(1)) or _INCIDENT_LABEL.search(label.group(1)):
            return False
        return not _EVENT.search(text, label.end(1))
    if _INCIDENT.search(text) or _METRIC.search(text):
        return False
    return bool(_PROJECT_FACT_STATEMENT.search(text)) or _depends_fact(text)


# A test run the observer saw pass ("Tests pass: `npm test -- --run src/a.test.ts`: 16 passed",
# "Fixed: `cargo test` passes now (5 passed); ..."): how the project's tests are run, a fact
# of the project that outlives the run, when the command is a test runner's.
_TEST_RUN = re.compile(r"^\s*(?:Tests pass|Fixed): `(?P<command>[^`]+)`(?:: | passes now)")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
#: Programs that run tests whatever follows them (their options and arguments pick which).
_RUNNERS = frozenset(
    "pytest py.test jest vitest mocha ava tap rspec phpunit pest ctest tox nox nose2 unittest "
    "behave karma bats prove ward trial busted".split()
)
#: Programs whose test command is a sub-command ("go test", "cargo nextest", "php artisan
#: test"); "test*" stands for any sub-command starting with "test" ("./gradlew testDebugUnitTest").
_SUBCOMMANDS: dict[str, frozenset[str]] = {
    name: frozenset(subs.split())
    for name, subs in {
        "go": "test",
        "cargo": "test nextest",
        "dotnet": "test",
        "mix": "test",
        "deno": "test",
        "bun": "test",
        "dbt": "test",
        "swift": "test",
        "flutter": "test",
        "dart": "test",
        "gradle": "test* check",
        "./gradlew": "test* check",
        "gradlew": "test* check",
        "mvn": "test verify",
        "./mvnw": "test verify",
        "sbt": "test",
        "rake": "test spec",
        "rails": "test",
        "bin/rails": "test",
        "manage.py": "test",
        "./manage.py": "test",
        "artisan": "test",
        "xcodebuild": "test",
        "stack": "test",
        "cabal": "test",
        "meson": "test",
        "playwright": "test",
        "cypress": "run",
        "npm": "test t",
        "pnpm": "test t",
        "yarn": "test",
    }.items()
}
#: Wrappers that run the program after them ("python -m pytest", "uv run pytest", "npx jest"),
#: with the options they may take before it ("uv run --frozen pytest").
_WRAPPERS: dict[str, tuple[str, ...]] = {
    "python": ("-m",),
    "python3": ("-m",),
    "py": ("-m",),
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pdm": ("run",),
    "hatch": ("run",),
    "bundle": ("exec",),
    "pnpm": ("exec", "dlx"),
    "npx": (),
    "bunx": (),
    "pnpx": (),
}
#: Interpreters that run a script with a test sub-command ("python manage.py test", "php artisan
#: test").
_SCRIPT_HOSTS = frozenset({"python", "python3", "py", "php"})
_SCRIPT_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})  # "npm run test:unit"
_TEST_TARGET = re.compile(r"^(?:test\S*|\S*[-_:]tests?|check)$", re.IGNORECASE)
# A project's own test script names tests as a part of its file name ("./run_tests.sh",
# "scripts/test-all.sh", "./runtests.sh", "./unittests.sh", "./testall.sh"): "test" at its
# start or after "run", "unit", "all" or a separator, not inside another word
# ("./scripts/latest.sh", "contest.sh", "attestation.sh").
_TEST_SCRIPT = re.compile(r"(?:^|[-_.]|run|unit|all)tests?", re.IGNORECASE)
#: Options that take a value, per program: the value is not the action ("xcodebuild -scheme
#: test build" builds; "mvn -pl core test" tests). xcodebuild's options all take one but these.
_MVN_VALUED = frozenset(
    "-pl --projects -f --file -s --settings -gs --global-settings -t --toolchains -T --threads"
    " -rf --resume-from -P --activate-profiles -b --builder -l --log-file -D --define".split()
)
_VALUED: dict[str, frozenset[str]] = {"mvn": _MVN_VALUED, "./mvnw": _MVN_VALUED}
_XCODEBUILD_FLAGS = frozenset(
    "-quiet -verbose -dry-run -n -allTargets -alltargets -showsdks -showBuildSettings -list -json"
    " -usage -version -hideShellScriptEnvironment -parallelizeTargets -skipUnavailableActions"
    " -allowProvisioningUpdates -allowProvisioningDeviceRegistration -skipMacroValidation"
    " -skipPackagePluginValidation -showBuildTimingSummary -enableAddressSanitizer"
    " -enableThreadSanitizer".split()
)
#: Options of make that take a value: "-C app" says where the tests are, the rest is noise.
_MAKE_VALUED = frozenset({"-C", "--directory", "-f", "--file", "-j", "--jobs", "-I"})


def _unwrap(words: list[str]) -> tuple[list[str], list[str]]:
    """The wrappers before the program (without their options) and the words from it on."""
    prefix: list[str] = []
    while len(words) > 1:
        head = words[0]
        after = _WRAPPERS.get(head)
        if head in _SCRIPT_HOSTS and not words[1].startswith("-"):
            return [*prefix, head], words[1:]  # "python manage.py test"
        if after is None or (after and words[1] not in after):
            break
        taken = 1 if not after else 2
        prefix += words[:taken]
        words = words[taken:]
        while words and words[0].startswith("-") and head != "python":
            words = words[1:]  # "uv run --frozen pytest": the wrapper's own options
    return prefix, words


def _takes_value(program: str, option: str) -> bool:
    if program == "xcodebuild":
        return option.startswith("-") and "=" not in option and option not in _XCODEBUILD_FLAGS
    return option in _VALUED.get(program, ())


def _arguments(program: str, rest: list[str]) -> list[str]:
    """``program``'s words after it that are neither options nor an option's value."""
    return [
        w
        for before, w in zip(["", *rest], rest, strict=False)
        if not w.startswith("-") and not _takes_value(program, before)
    ]


def _subcommand(program: str, rest: list[str]) -> list[str] | None:
    """``program``'s test sub-command among ``rest`` (after its options), as the runner."""
    if program == "make":
        out: list[str] = []
        for before, word in zip(["", *rest], rest, strict=False):
            if before in ("-C", "--directory"):
                out = [before, word]
            elif not word.startswith("-") and before not in _MAKE_VALUED:
                return [program, *out, word] if _TEST_TARGET.match(word) else None
        return None
    subs = _SUBCOMMANDS.get(program)
    words = _arguments(program, rest)
    if subs is None or not words:
        return None
    # xcodebuild's action follows its options ("xcodebuild -scheme App test").
    word = (
        next((w for w in words if w == "test"), words[0]) if program == "xcodebuild" else words[0]
    )
    if word in subs or ("test*" in subs and word.startswith("test")):
        return [program, word]
    return None


def base_test_command(command: str) -> str | None:
    """The runner's base command of a test command: the program (with the wrappers that run
    it) and its test sub-command, script or target, without options, test names or paths
    ("pytest -k test_login -q" -> "pytest", "go test -run TestParse ./parser" -> "go test",
    "mvn -q test" -> "mvn test"; make keeps its "-C dir"); None when ``command`` runs no known
    test runner ("utils.py", "ls dist", "./scripts/latest.sh")."""
    words = command.split()
    while words and _ENV.match(words[0]):
        words = words[1:]  # "CI=1 pytest": the environment is no part of the runner
    prefix, words = _unwrap(words)
    if not words:
        return None
    program, rest = words[0], words[1:]
    runner: list[str] | None = None
    if program in _RUNNERS:
        runner = [program]
    elif program in _SCRIPT_RUNNERS and len(rest) > 1 and rest[0] == "run":
        runner = [program, "run", rest[1]] if _TEST_TARGET.match(rest[1]) else None
    elif program in _SCRIPT_RUNNERS and rest and rest[0] in _RUNNERS:
        runner = [program, rest[0]]  # "yarn jest", "pnpm vitest"
    elif program in _SUBCOMMANDS or program == "make":
        runner = _subcommand(program, rest)
    elif "/" in program and _TEST_SCRIPT.search(program.rsplit("/", 1)[-1]):
        runner = [program]  # a project's own test script: ./run_tests.sh
    return " ".join(prefix + runner) if runner else None


def passing_test_command(text: str) -> str | None:
    """The runner's base command (``base_test_command``) of a passing test run reported in
    ``text``; None when ``text`` reports none, or its command runs no known test runner."""
    found = _TEST_RUN.match(text)
    return base_test_command(found.group("command")) if found is not None else None


def tests_run_with(command: str) -> str:
    """The project fact a passing run of ``command`` states (``passing_test_command``)."""
    return f"Tests run with `{command}`"

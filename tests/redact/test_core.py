"""Secret redaction: a corpus of secrets in their usual places, near misses that must survive,
placeholders, dropped blobs, and linear-time behaviour on adversarial input."""

from __future__ import annotations

import base64
import random
import string
from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obsmem.redact import KINDS, redact, redact_counts, redact_turns
from obsmem.redact.shapes import SHAPE_KINDS

# The kinds this corpus covers case by case; every other token shape is in the kinds corpus
# (tests/sources/test_redact_corpus.py), each one with its own near miss.
_HAND_KINDS = {kind for kind in KINDS if kind not in SHAPE_KINDS} | {
    "anthropic", "openai", "aws-access-key", "github", "gitlab", "slack", "stripe",
    "google-api-key", "npm", "pypi", "huggingface", "sendgrid", "jwt",
}  # fmt: skip

_RNG = random.Random(20260308)
_ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    """A random-looking string (built here, never a real key) with every character class of
    ``alphabet`` among digits, upper and lower case present."""
    classes = [test for test in (str.isdigit, str.isupper, str.islower) if any(map(test, alphabet))]
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        if all(any(test(c) for c in value) for test in classes):
            return value


_B64URL = _ALNUM + "-_"
_UPPER = string.ascii_uppercase + string.digits

ANTHROPIC = "sk-ant-api03-" + _rand(93, _B64URL) + "AA"
OPENAI_PROJ = "sk-proj-" + _rand(48, _B64URL)
OPENAI_LEGACY = "sk-" + _rand(48)
OPENAI_SVC = "sk-svcacct-" + _rand(40)
AWS_ID = "AKIA" + "Z7" + _rand(14, _UPPER)
AWS_ID_2 = "ASIA" + "Q4" + _rand(14, _UPPER)
AWS_SECRET = _rand(40, _ALNUM + "/+")
GH_CLASSIC = "ghp_" + _rand(36)
GH_OAUTH = "gho_" + _rand(36)
GH_SERVER = "ghs_" + _rand(36)
GH_FINE = "github_pat_" + _rand(22) + "_" + _rand(59)
GITLAB = "glpat-" + _rand(20)
SLACK_BOT = "xoxb-" + "2750133451-" + "4861320975632-" + _rand(24)
SLACK_USER = "xoxp-" + "2750133451-" + "4861320975632-" + _rand(32, "abcdef0123456789")
SLACK_HOOK = "T024BE7LD/B0" + _rand(7, _UPPER) + "/" + _rand(24)
STRIPE_LIVE = "sk_live_" + _rand(24)
STRIPE_RESTRICTED = "rk_test_" + _rand(24)
STRIPE_WEBHOOK = "whsec_" + _rand(32)
GOOGLE = "AIza" + "Sy" + _rand(33, _B64URL)
NPM = "npm_" + _rand(36)
PYPI = "pypi-AgEIcHlwaS5vcmc" + _rand(70, _B64URL)
HF = "hf_" + _rand(34)
TELEGRAM_SECRET = "AA" + _rand(33, _B64URL)
SENDGRID = "SG." + _rand(22, _B64URL) + "." + _rand(43, _B64URL)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9."
    + _rand(43, _B64URL)
)
BEARER = _rand(40)
BASIC = base64.b64encode(b"deploy:" + _rand(12).encode()).decode()
PEM_BODY = "\n".join(_rand(64, _ALNUM + "+/") for _ in range(6))
PASSWORD = "Tr0ub4dor&3-" + _rand(6)
SECRET = _rand(32)


@dataclass(frozen=True)
class Case:
    kind: str
    secret: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.text[:40]}"


def _case(kind: str, secret: str, template: str) -> Case:
    return Case(kind, secret, template.replace("{s}", secret))


POSITIVES = [
    # Anthropic, OpenAI
    _case("anthropic", ANTHROPIC, "export ANTHROPIC_API_KEY={s}"),
    _case("anthropic", ANTHROPIC, '{"provider": "anthropic", "apiKey": "{s}"}'),
    _case("anthropic", ANTHROPIC, "I pasted {s} into the settings, is that safe?"),
    _case("openai", OPENAI_PROJ, "OPENAI_API_KEY={s}\nOPENAI_ORG=org-123"),
    _case("openai", OPENAI_LEGACY, 'client = OpenAI(api_key="{s}")'),
    _case("openai", OPENAI_SVC, "openai:\n  key: {s}\n  model: gpt-5"),
    _case(
        "openai",
        OPENAI_PROJ,
        "curl https://api.openai.com/v1/models -H 'Authorization: Bearer {s}'",
    ),
    # AWS
    _case("aws-access-key", AWS_ID, "AWS_ACCESS_KEY_ID={s}"),
    _case("aws-access-key", AWS_ID_2, '{"Credentials": {"AccessKeyId": "{s}"}}'),
    _case("aws-access-key", AWS_ID, "the key id {s} belongs to the CI user"),
    _case("aws-secret-key", AWS_SECRET, "[default]\naws_secret_access_key = {s}\n"),
    _case("aws-secret-key", AWS_SECRET, "$ aws configure set aws_secret_access_key {s}"),
    _case("aws-secret-key", AWS_SECRET, '{"AccessKeyId": "x", "SecretAccessKey": "{s}"}'),
    _case("aws-secret-key", AWS_SECRET, "AWS_SECRET_ACCESS_KEY={s}"),
    # GitHub, GitLab
    _case(
        "github",
        GH_CLASSIC,
        "git remote set-url origin https://x-access-token:{s}@github.com/o/r.git",
    ),
    _case("github", GH_FINE, "GITHUB_TOKEN={s}"),
    _case("github", GH_OAUTH, '{"token": "{s}", "scopes": ["repo"]}'),
    _case("github", GH_SERVER, "The action printed {s} in its log."),
    _case("gitlab", GITLAB, "GITLAB_TOKEN={s}"),
    _case(
        "gitlab", GITLAB, 'curl --header "PRIVATE-TOKEN: {s}" https://gitlab.com/api/v4/projects'
    ),
    # Slack
    _case("slack", SLACK_BOT, "SLACK_BOT_TOKEN={s}"),
    _case("slack", SLACK_USER, '{"ok": true, "access_token": "{s}"}'),
    _case(
        "slack-webhook", SLACK_HOOK, "curl -X POST https://hooks.slack.com/services/{s} -d @m.json"
    ),
    # Stripe
    _case("stripe", STRIPE_LIVE, "STRIPE_SECRET_KEY={s}"),
    _case("stripe", STRIPE_RESTRICTED, 'stripe.api_key = "{s}"'),
    _case("stripe", STRIPE_WEBHOOK, "webhooks:\n  signing_secret: {s}\n"),
    # Google, npm, PyPI, Hugging Face, Telegram, SendGrid
    _case(
        "google-api-key", GOOGLE, "https://maps.googleapis.com/maps/api/geocode/json?key={s}&a=1"
    ),
    _case("google-api-key", GOOGLE, '{"apiKey": "{s}", "authDomain": "x.firebaseapp.com"}'),
    _case("npm", NPM, "//registry.npmjs.org/:_authToken={s}"),
    _case("npm", NPM, "NPM_TOKEN={s} npm publish"),
    _case("pypi", PYPI, "[pypi]\nusername = __token__\npassword = {s}\n"),
    _case("pypi", PYPI, "TWINE_PASSWORD={s} twine upload dist/*"),
    _case("huggingface", HF, "HF_TOKEN={s}"),
    _case("huggingface", HF, "login with {s} before pulling the model"),
    _case("telegram-bot", TELEGRAM_SECRET, "https://api.telegram.org/bot7012345678:{s}/getMe"),
    _case("telegram-bot", TELEGRAM_SECRET, "TELEGRAM_BOT_TOKEN=7012345678:{s}"),
    _case("sendgrid", SENDGRID, "SENDGRID_API_KEY={s}"),
    # JWT
    _case("jwt", JWT, "Authorization: Bearer {s}"),
    _case("jwt", JWT, "Set-Cookie: session={s}; HttpOnly"),
    _case("jwt", JWT, '{"id_token": "{s}", "expires_in": 3600}'),
    # Private keys: whole blocks
    _case(
        "private-key",
        PEM_BODY,
        "Here is the key:\n-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----\nok",
    ),
    _case(
        "private-key",
        PEM_BODY.replace("\n", "\\n"),
        '{"key": "-----BEGIN OPENSSH PRIVATE KEY-----\\n{s}\\n-----END OPENSSH PRIVATE KEY-----"}',
    ),
    _case("private-key", PEM_BODY, "cat id_ec\n-----BEGIN EC PRIVATE KEY-----\n{s}"),
    # Header tokens
    _case("bearer", BEARER, "Authorization: Bearer {s}"),
    _case("bearer", BEARER, 'curl -H "authorization: bearer {s}" https://api.example.com'),
    _case("basic-auth", BASIC, "Authorization: Basic {s}"),
    # Passwords in URLs
    _case("url-password", PASSWORD, "DATABASE_URL=postgres://app:{s}@db.internal:5432/app"),
    _case("url-password", PASSWORD, "redis-cli -u redis://:{s}@cache:6379/0"),
    _case("url-password", PASSWORD, "git clone https://deploy:{s}@git.example.com/team/repo.git"),
    # Assignments: code, YAML, JSON, .env, CLI flags, headers
    _case("password", PASSWORD, "DB_PASSWORD={s}"),
    _case("password", PASSWORD, "database:\n  user: app\n  password: {s}\n"),
    _case("password", PASSWORD, '{"username": "app", "password": "{s}"}'),
    _case("password", PASSWORD, "mysql -u root --password {s} -h db"),
    _case("password", PASSWORD, "psql --password={s} -h db"),
    _case("password", PASSWORD, 'conn = connect(host="db", password="{s}")'),
    _case("password", PASSWORD, "PGPASSWORD={s} psql -h db -U app"),
    _case("password", PASSWORD, 'smtp_pass: "{s}"'),
    _case("password", PASSWORD, '{\\"password\\": \\"{s}\\"}'),
    _case("password", PASSWORD, "password: str = '{s}'"),
    _case("password", "hunter2-staging-Xy9!", "the staging password is {s} and keep it out"),
    _case("api-key", SECRET, "My API key is {s}, please rotate it tomorrow."),
    _case("secret", SECRET, 'client_secret: "{s}"'),
    _case("secret", SECRET, "SECRET_KEY_BASE={s}"),
    _case("secret", SECRET, "JWT_SECRET={s}"),
    _case("token", SECRET, "auth_token = '{s}'"),
    _case("token", SECRET, '{"refresh_token": "{s}", "expires": 3600}'),
    _case("token", SECRET, "vault login --token {s}"),
    _case("api-key", SECRET, "X-Api-Key: {s}"),
    _case("api-key", SECRET, "const config = { apiKey: '{s}' };"),
    _case("api-key", SECRET, "WEATHER_SERVICE_API_KEY={s}"),
    _case("access-key", SECRET, "minio:\n  access_key: {s}\n"),
    _case("credential", SECRET, 'credentials = "{s}"'),
    # Weak keys (judged by their value), connection strings, CLI arguments, config files
    _case("key", SECRET, "SERVICE_KEY={s}"),
    _case(
        "key",
        base64.b64encode(_rand(64).encode()).decode(),
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core",
    ),
    _case("sidekiq", "1a2b3c4d:9f8e7d6c", "BUNDLE_GEMS__CONTRIBSYS__COM={s}"),
    _case("password", PASSWORD, "Server=db;Database=app;User Id=sa;Password={s};Encrypt=true"),
    _case("password", PASSWORD, "curl -u deploy:{s} https://ci.example.com/api"),
    _case("password", PASSWORD, "mysql -u root -p{s} -h db app"),
    _case("password", PASSWORD, "sshpass -p '{s}' ssh deploy@host"),
    _case("password", PASSWORD, "htpasswd -bc /etc/nginx/.htpasswd admin {s}"),
    _case("password", PASSWORD, "machine api.example.com login deploy password {s}"),
    _case("password", PASSWORD, "db.internal:5432:app:deploy:{s}"),
    _case("password", PASSWORD, "cat <<EOF > values.yaml\ndb-password: {s}\nEOF"),
    _case(
        "basic-auth",
        base64.b64encode(b"deploy:" + _rand(16).encode()).decode(),
        '{"auths": {"registry.example.com": {"auth": "{s}"}}}',
    ),
    _case(
        "secret",
        base64.b64encode(_rand(24).encode()).decode(),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {s}\n",
    ),
    _case("secret", _rand(40, _ALNUM + "/+"), "my aws secret is {s} for the ci user"),
    # <private> spans
    _case("private", "my home address is 12 Elm St", "note <private>{s}</private> done"),
    _case("private", "unclosed secret text", "start <private>{s}"),
]

# Near misses, each next to the kind it must not be taken for.
NEGATIVES = [
    ("anthropic", "the sk-ant-prefix is documented in the handbook"),
    ("openai", "task-sk-learn and sk-learn and the risk-assessment-framework-2024-version"),
    ("aws-access-key", "AKIA" + "Z7" + _rand(33, _UPPER)),  # 39 characters: too long for an id
    ("aws-access-key", "ASIAPACIFICREGIONALX is a region code, not a key"),
    ("aws-secret-key", "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}"),
    ("github", "ghp_short and github_pattern_matching and gho_away"),
    ("gitlab", "glpat-short is too short"),
    ("slack", "xoxo-hugs from the team"),
    ("slack-webhook", "paste it after https://hooks.slack.com/services/ in the form"),
    ("stripe", "use sk_test_data_fixture in the tests"),
    ("google-api-key", "AIzaWord appears in a sentence"),
    ("npm", "npm_config_cache=/tmp/npm"),
    ("pypi", "upload with pypi-AgEI and a real token later"),
    ("huggingface", "hf_hub_download(repo_id='x')"),
    ("telegram-bot", "12345:AA" + _rand(33, _B64URL) + " (five digits is no bot id)"),
    ("sendgrid", "SG.short.key is a placeholder"),
    ("jwt", "the header eyJhbGciOi alone is not a token"),
    ("private-key", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"),
    ("bearer", "Bearer tokens are sent in the Authorization header"),
    ("basic-auth", 'Authorization: Basic realm="staging"'),
    ("url-password", "postgres://user:password@localhost/db"),
    ("url-password", "open http://localhost:8080/path@section"),
    ("password", "Reset your password from the settings page."),
    ("password", "Password: the one I sent you yesterday"),
    ("password", "PASS: test_login\nFAIL: test_logout\npassed=42"),
    ("password", "DB_PASSWORD_FILE=/run/secrets/db_password\nPWD=/home/me/project"),
    ("password", 'password = os.environ["DB_PASSWORD"]'),
    ("password", "docker login --password-stdin < token.txt"),
    ("secret", "secret: true\nthe secret sauce is caching"),
    ("password", "the password is in 1Password and the token is expired"),
    ("api-key", "The api key is stored in config/keys.yaml since v2"),
    ("token", "max_tokens=4096\nTOKEN_COUNT=12\nconst token = await getToken(user);"),
    ("token", "token=${GITHUB_TOKEN} password=**** secret=xxxxxxxx"),
    ("api-key", "self.api_key = api_key\napi_key=<your-api-key>"),
    ("access-key", "access_key_id=abc123 is the public half"),
    ("credential", "credentials: true  # send cookies"),
    ("private", "<privateer> is a word"),
    ("base64", "base64 " + _rand(150, _ALNUM + "+/") + " is short"),
    ("base64", "a long lowercase run " + "abcdefghij" * 30),
    ("data-uri", 'data: {"delta": "hi"}\n\ndata: [DONE]\nmetadata: {name: x}'),
    ("-", "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it"),
    ("-", "request id 123e4567-e89b-12d3-a456-426614174000 failed"),
    ("-", "def login(password=None, token=token):"),
    ("key", "SORT_KEY=created_at\nPRIMARY_KEY=3f786850e387550fdab836ed7e6dc881de23001b"),
    ("key", "PASSWORD_MIN_LENGTH=8\ntoken_type: bearer\nCACHE_KEY=user-profile-v2"),
    ("sidekiq", "BUNDLE_GEMS__CONTRIBSYS__COM=${SIDEKIQ_CREDS}"),
    ("-", "docker run -u 1000:1000 image && mysql -p -h db && curl -u $USER:$PASS x"),
]


@pytest.mark.parametrize("case", POSITIVES, ids=lambda case: case.id)
def test_secret_is_redacted_with_its_kind(case: Case) -> None:
    out, counts = redact_counts(case.text)
    assert case.secret not in out
    assert f"[REDACTED:{case.kind}]" in out
    assert counts[case.kind] >= 1
    assert case.kind in KINDS


def test_corpus_covers_every_kind_with_enough_cases() -> None:
    kinds = Counter(case.kind for case in POSITIVES)
    assert len(POSITIVES) >= 50
    redacted_kinds = {kind for kind in _HAND_KINDS if kind not in ("base64", "data-uri")}
    assert redacted_kinds <= set(kinds)  # the dropped kinds have their own test below


@pytest.mark.parametrize(("kind", "text"), NEGATIVES, ids=[f"{k}:{t[:30]}" for k, t in NEGATIVES])
def test_near_miss_is_left_alone(kind: str, text: str) -> None:
    out, counts = redact_counts(text)
    assert out == text
    assert not counts


def test_every_kind_has_a_near_miss() -> None:
    assert {kind for kind, _text in NEGATIVES} >= _HAND_KINDS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2x", "DB_PASSWORD=[REDACTED:password]"),
        ('"password": "hunter2x"', '"password": "[REDACTED:password]"'),
        ("--token s3cr3tvalue -v", "--token [REDACTED:token] -v"),
        ("postgres://app:s3cr3t@db/x", "postgres://app:[REDACTED:url-password]@db/x"),
        ("Authorization: Bearer abcdef0123456789xyz", "Authorization: Bearer [REDACTED:bearer]"),
    ],
)
def test_names_are_kept_around_the_value(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_blobs_and_data_uris_are_dropped() -> None:
    blob = _rand(320, _ALNUM + "+/") + "=="
    out, counts = redact_counts(f"image: {blob} end")
    assert out == "image: [dropped:base64 322 chars] end"
    assert counts["base64"] == 1
    uri = "data:image/png;base64," + _rand(60, _ALNUM + "+/")
    out, counts = redact_counts(f'<img src="{uri}">')
    assert out == '<img src="[dropped:data-uri]">'
    assert counts["data-uri"] == 1


def test_redaction_is_idempotent_on_the_corpus() -> None:
    for case in POSITIVES:
        once = redact(case.text)
        assert redact(once) == once


def test_redact_turns_rewrites_in_place() -> None:
    @dataclass
    class T:
        text: str

    turns = [T(f"key {GH_CLASSIC}"), T("nothing here"), T(f"DB_PASSWORD={PASSWORD}")]
    counts = redact_turns(turns)
    assert [t.text for t in turns] == [
        "key [REDACTED:github]",
        "nothing here",
        "DB_PASSWORD=[REDACTED:password]",
    ]
    assert counts == Counter({"github": 1, "password": 1})


def test_empty_and_plain_text() -> None:
    assert redact_counts("") == ("", Counter())
    prose = "We agreed to ship the offline mode in April; Lena owns the checklist.\n" * 50
    assert redact(prose) == prose


# --- Linear time --------------------------------------------------------------------------
_FRAGMENTS = [
    "a", "=", "-", "_", ":", "/", "@", ".", " ", "\n", '"', "'", "\\", "sk-", "sk-ant-", "ghp_",
    "AKIA", "eyJ", "xoxb-", "AIza", "npm_", "hf_", ":AA", "SG.", "k_live_", "whsec_", "://",
    "Bearer ", "password", "token", "api_key", "secret_access_key",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "<private>", "</private>",
    "data:", "data:a/b;base64,",
    "hooks.slack.com/services/", "1234567890", "Zz9", "pypi-AgEI",
]  # fmt: skip


@settings(
    max_examples=40,
    deadline=3000,  # a super-linear pattern takes minutes on these sizes, not milliseconds
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=12),
    st.integers(min_value=2_000, max_value=12_000),
)
def test_adversarial_repetitions_stay_fast_and_stable(pattern: list[str], repeat: int) -> None:
    text = "".join(pattern) * (repeat // len(pattern))
    out, _ = redact_counts(text)
    assert redact(out) == out


@given(st.text(max_size=3000))
@settings(max_examples=150, deadline=None)
def test_random_text_never_raises(text: str) -> None:
    out = redact(text)
    assert redact(out) == out


@pytest.mark.parametrize(
    "fragment",
    ["a=", "-", "=", "sk-", "password=", "token = ", "://a:", "api_key", "eyJ.", "api key is a1 "],
)
def test_one_megabyte_of_repetitions_finishes(fragment: str) -> None:
    text = (fragment * (1_000_000 // len(fragment) + 1))[:1_000_000]
    out, _ = redact_counts(text)
    assert len(out) <= len(text) + 100_000


def test_skip_reasons_quoting_a_record_type_are_redacted() -> None:
    from collections import Counter

    from obsmem.sources.model import ReadResult

    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 3
    result = ReadResult([], 0, 0, 0, Counter({f"unknown type: {secret}": 2, "broken json": 1}))
    assert not any(secret in reason for reason in result.skipped)
    assert sum(result.skipped.values()) == 3 and result.skipped["broken json"] == 1


def test_labels_that_bring_a_new_shape_together_are_redacted_in_the_same_call() -> None:
    # A repetition hypothesis found: the first labels joined the text around them into a shape
    # that only a second call redacted.
    pattern = ["sk-", "sk-", "sk-", "1234567890", "hooks.slack.com/services/"]
    text = "".join(pattern) * 400
    out, _ = redact_counts(text)
    assert redact(out) == out

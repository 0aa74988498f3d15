"""A corpus of secrets, and the texts that carry them into each place of a transcript.

Every value is made here from a seeded generator (never a real key), in the shape of its kind:
the token shapes ``tests/sources/test_redact.py`` covers (Anthropic, OpenAI, AWS, GitHub, GitLab,
Slack, Stripe, Google, npm, PyPI, Hugging Face, Telegram, SendGrid, JWT), and the secrets only
their surroundings reveal (passwords, client secrets, tokens and API keys after their key, URL
passwords, Authorization headers, private key blocks, ``<private>`` spans).

A secret is carried into one of seven places (:data:`PLACEMENTS`): the user's words, a tool's
input (a shell command), a tool's output (a failing command's error), a file path, a URL, the
folder the transcript itself is in (a working directory that holds it: Claude Code names a
project's folder after its working directory), and a Claude Code auto-memory file (its text,
and for a token shape its folder too). Each kind has the carrier a person or a tool
would really write there (``DB_PASSWORD=...`` in a command, ``?api_key=...`` in a URL); a
private key block or a ``<private>`` span has no meaning in a path or a URL, so those pairs are
not placed (:func:`carrier` returns None). Nor is a secret that only its key or its scheme
reveals placed in a folder name: Claude Code turns every character but letters and digits into
a dash, and ``DB-PASSWORD-...`` no longer says where the value starts; the token shapes are.

:func:`needles` gives what a leak check looks for: the whole value and slices of it, so a
secret cut short or split in two is caught as well as a whole one.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

__all__ = ["CORPUS", "PLACEMENTS", "Secret", "carrier", "memory_project", "needles", "own_part"]

_RNG = random.Random(20261129)
_ALNUM = string.ascii_letters + string.digits
_B64URL = _ALNUM + "-_"
_UPPER = string.ascii_uppercase + string.digits

#: Where a secret is put: the user's words, a shell command, its output, a file path, a URL, the
#: working directory whose folder holds the transcript, and an auto-memory file of Claude Code.
PLACEMENTS = (
    "user text",
    "tool input",
    "tool output",
    "file path",
    "URL",
    "transcript folder",
    "auto-memory",
)


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    """Random characters with a digit, an upper- and a lower-case letter among them when the
    alphabet has them (the redactor, like real keys, expects mixed runs)."""
    tests = [t for t in (str.isdigit, str.isupper, str.islower) if any(map(t, alphabet))]
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        if all(any(t(c) for c in value) for t in tests):
            return value


@dataclass(frozen=True)
class Secret:
    """One secret: its kind (the redactor's label), its value, and how it is recognised.

    ``style``: ``shape`` (the value alone says what it is), ``keyed`` (after ``key``, written
    ``KEY=value`` in shells and ``"key": "value"`` in JSON), ``url`` (a URL's password),
    ``header`` (``Authorization: <scheme> value``), ``block`` (a PEM body), ``span``
    (``<private>`` text).
    """

    kind: str
    value: str
    style: str
    key: str = ""
    scheme: str = ""

    @property
    def name(self) -> str:
        """The shell-style name of its key (``DB_PASSWORD``)."""
        return self.key.upper() if self.key.islower() else self.key

    @property
    def json_key(self) -> str:
        """The JSON-style name of its key (``password``)."""
        return self.key.lower()


def _shape(kind: str, value: str) -> Secret:
    return Secret(kind, value, "shape")


def _keyed(kind: str, key: str, value: str) -> Secret:
    return Secret(kind, value, "keyed", key=key)


def _password() -> str:
    # Characters that end neither a shell word nor a URL query value: what is placed is whole.
    return _rand(4) + "-" + _rand(10, _ALNUM + "_.") + "!" + _rand(3)


_PEM_LINES = 5

CORPUS: tuple[Secret, ...] = (
    _shape("anthropic", "sk-ant-api03-" + _rand(93, _B64URL) + "AA"),
    _shape("anthropic", "sk-ant-api03-" + _rand(93, _B64URL) + "AA"),
    _shape("openai", "sk-proj-" + _rand(48, _B64URL)),
    _shape("openai", "sk-" + _rand(48)),
    _shape("openai", "sk-svcacct-" + _rand(40)),
    _shape("aws-access-key", "AKIA" + "Z7" + _rand(14, _UPPER)),
    _shape("aws-access-key", "ASIA" + "Q4" + _rand(14, _UPPER)),
    _shape("github", "ghp_" + _rand(36)),
    _shape("github", "gho_" + _rand(36)),
    _shape("github", "ghs_" + _rand(36)),
    _shape("github", "github_pat_" + _rand(22) + "_" + _rand(59)),
    _shape("gitlab", "glpat-" + _rand(20)),
    _shape("gitlab", "glpat-" + _rand(20)),
    _shape("slack", "xoxb-2750133451-4861320975632-" + _rand(24)),
    _shape("slack", "xoxp-2750133451-4861320975632-" + _rand(32, "abcdef0123456789")),
    _shape("stripe", "sk_live_" + _rand(24)),
    _shape("stripe", "rk_test_" + _rand(24)),
    _shape("stripe", "whsec_" + _rand(32)),
    _shape("google-api-key", "AIza" + "Sy" + _rand(33, _B64URL)),
    _shape("google-api-key", "AIza" + "Sy" + _rand(33, _B64URL)),
    _shape("npm", "npm_" + _rand(36)),
    _shape("npm", "npm_" + _rand(36)),
    _shape("pypi", "pypi-AgEIcHlwaS5vcmc" + _rand(70, _B64URL)),
    _shape("huggingface", "hf_" + _rand(34)),
    _shape("huggingface", "hf_" + _rand(34)),
    _shape("sendgrid", "SG." + _rand(22, _B64URL) + "." + _rand(43, _B64URL)),
    _shape(
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9."
        + _rand(43, _B64URL),
    ),
    _shape(
        "jwt",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUuY29tIn0."
        + _rand(86, _B64URL),
    ),
    Secret("telegram-bot", "7012345678:AA" + _rand(33, _B64URL), "shape"),
    _keyed("aws-secret-key", "aws_secret_access_key", _rand(40, _ALNUM + "/+")),
    _keyed("aws-secret-key", "AWS_SECRET_ACCESS_KEY", _rand(40, _ALNUM + "/+")),
    _keyed("password", "DB_PASSWORD", _password()),
    _keyed("password", "SMTP_PASSWORD", _password()),
    _keyed("password", "PGPASSWORD", _password()),
    _keyed("password", "password", _password()),
    _keyed("password", "admin_password", _password()),
    _keyed("secret", "client_secret", _rand(32)),
    _keyed("secret", "SECRET_KEY_BASE", _rand(64)),
    _keyed("secret", "JWT_SECRET", _rand(32)),
    _keyed("token", "auth_token", _rand(32)),
    _keyed("token", "refresh_token", _rand(40)),
    _keyed("token", "GITHUB_TOKEN", _rand(40)),
    _keyed("api-key", "api_key", _rand(32)),
    _keyed("api-key", "WEATHER_SERVICE_API_KEY", _rand(32)),
    _keyed("access-key", "access_key", _rand(24)),
    _keyed("credential", "credentials", _rand(28)),
    Secret("url-password", _password(), "url"),
    Secret("url-password", _password(), "url"),
    Secret("url-password", _password(), "url"),
    Secret("bearer", _rand(40), "header", scheme="Bearer"),
    Secret("bearer", _rand(48, _B64URL), "header", scheme="Bearer"),
    Secret(
        "basic-auth",
        base64.b64encode(b"deploy:" + _rand(14).encode()).decode(),
        "header",
        scheme="Basic",
    ),
    Secret("private-key", "\n".join(_rand(64, _ALNUM + "+/") for _ in range(_PEM_LINES)), "block"),
    Secret("private-key", "\n".join(_rand(64, _ALNUM + "+/") for _ in range(_PEM_LINES)), "block"),
    Secret("private", "my home address is 12 Elm Street, flat " + _rand(6, _UPPER), "span"),
    Secret("private", "bank PIN " + _rand(8, string.digits) + " and card " + _rand(6), "span"),
)


def _pem(secret: Secret, label: str) -> str:
    return f"-----BEGIN {label} PRIVATE KEY-----\n{secret.value}\n-----END {label} PRIVATE KEY-----"


def carrier(secret: Secret, placement: str, marker: str) -> str | None:
    """The text that puts ``secret`` in ``placement``, with ``marker`` (a word of its own) beside
    it so a test can see the surrounding text arrived; None when the pair has no meaning.

    For ``transcript folder`` it is the session's working directory (the marker is a folder of
    it; the session's own words carry it to the model). For ``auto-memory`` it is the text of a
    memory file (the user's words as a bullet), kept in the folder of :func:`memory_project`."""
    v, m = secret.value, marker
    style = secret.style
    if placement == "transcript folder":
        return f"/home/dev/{m}/{v}" if style == "shape" else None
    if placement == "auto-memory":
        return f"# Project notes\n\n- {carrier(secret, 'user text', m)}\n- The {m} notes end here\n"
    if style == "shape":
        return {
            "user text": f"I pasted {v} into the {m} config by mistake",
            "tool input": f"deploy --env {m} --key {v}",
            "tool output": f"error: credential {v} was rejected for {m}",
            "file path": f"/home/dev/{m}/tokens/{v}/session.json",
            "URL": f"https://hooks.example.com/{m}/{v}?source=ci",
        }[placement]
    if style == "keyed":
        name, key = secret.name, secret.json_key
        return {
            "user text": f"set {name}={v} before the {m} deploy",
            "tool input": f"export {name}={v} && ./deploy.sh {m}",
            "tool output": f'error: {m} config rejected {{"{key}": "{v}"}}',
            "file path": f"/srv/{m}/conf.d/{name}={v}",
            "URL": f"https://api.example.com/{m}/login?user=ada&{key}={v}",
        }[placement]
    if style == "url":
        return {
            "user text": f"the {m} database is postgres://app:{v}@db.internal:5432/app",
            "tool input": f"psql postgres://app:{v}@db.internal:5432/{m} -c 'select 1'",
            "tool output": f"fatal: cannot reach redis://:{v}@cache.internal:6379/0 for {m}",
            "file path": f"sftp://deploy:{v}@files.internal/srv/{m}/app.conf",
            "URL": f"https://deploy:{v}@git.example.com/team/{m}.git",
        }[placement]
    if style == "header":
        header = f"Authorization: {secret.scheme} {v}"
        return {
            "user text": f"the {m} API wants {header} on every call",
            "tool input": f"curl -H '{header}' https://api.example.com/{m}/items",
            "tool output": f"> {header}\n< HTTP/1.1 401 Unauthorized\nerror: {m} unauthorized",
            "file path": f"/home/dev/.cache/{m}/access_token={v}",
            "URL": f"https://api.example.com/{m}/items?access_token={v}",
        }[placement]
    if style == "block":
        return {
            "user text": f"Here is the {m} deploy key:\n{_pem(secret, 'RSA')}\nplease install it",
            "tool input": f"cd /srv/{m} && printf '%s\\n' '{_pem(secret, 'OPENSSH')}' > id_deploy",
            "tool output": f"error: {m} key rejected:\n{_pem(secret, 'EC')}",
        }.get(placement)
    if style == "span":
        return {
            "user text": f"note for {m}: <private>{v}</private> thanks",
            "tool input": f"cd /srv/{m} && echo '<private>{v}</private>' >> notes.txt",
            "tool output": f"error: {m} wrote <private>{v}</private>",
        }.get(placement)
    raise ValueError(style)


def memory_project(secret: Secret, marker: str) -> str:
    """The working directory of the project whose auto-memory carries ``secret``: named after
    the secret too when a folder name can carry it (a token shape)."""
    return carrier(secret, "transcript folder", marker) or f"/home/dev/{marker}"


def needles(secret: Secret) -> list[bytes]:
    """What must not appear anywhere: the value, and slices that would betray part of it.

    Slices are taken from the characters that are the secret's own (not a fixed prefix such as
    ``sk-ant-api03-``, which is in every key of its kind): its start, middle and end, 12
    characters each (10 for short values); for a key block, every line of its body.
    """
    if secret.style == "block":
        return [line.encode() for line in secret.value.splitlines()]
    if secret.style == "span":
        return [secret.value.encode()]
    value = secret.value
    own = own_part(secret)
    size = 12 if len(own) >= 24 else 10
    picks = {value, own[:size], own[len(own) // 2 - size // 2 :][:size], own[-size:]}
    return sorted(p.encode() for p in picks if len(p) >= size)


def own_part(secret: Secret) -> str:
    """The value without the fixed prefix every key of its kind starts with (not a secret)."""
    return secret.value[_fixed_prefix(secret.value) :]


def _fixed_prefix(value: str) -> int:
    for prefix in (
        "sk-ant-api03-",
        "sk-proj-",
        "sk-svcacct-",
        "github_pat_",
        "xoxb-2750133451-4861320975632-",
        "xoxp-2750133451-4861320975632-",
        "pypi-AgEIcHlwaS5vcmc",
        "7012345678:AA",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2lkLmV4YW1wbGUuY29tIn0.",
        "AKIAZ7",
        "ASIAQ4",
        "AIzaSy",
        "sk_live_",
        "rk_test_",
        "whsec_",
        "glpat-",
        "ghp_",
        "gho_",
        "ghs_",
        "npm_",
        "hf_",
        "SG.",
        "sk-",
    ):
        if value.startswith(prefix):
            return len(prefix)
    return 0

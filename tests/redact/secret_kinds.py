"""The secret kinds corpus: every kind of ``tests/fixtures/secrets/kinds.txt`` with a made-up
value in its shape (a seeded generator, never a real key), and the natural places it is written.

A kind comes from gitleaks' default rules, detect-secrets' plugins, or elsewhere (a public
prefix neither has, a connection string, a CLI argument, a config file). :func:`carriers` puts
a kind's value where a person or a tool writes it: an ``.env`` line, JSON, YAML, a shell
command, a sentence, the value wrapped over two lines, and a Bash tool call as the Claude Code
reader turns it into an action line. A whole form (``mysql -p...``, a ``.netrc`` line) is
itself the text; it is carried as is, inside a tool call, inside a JSON string and inside a
message. :func:`needles` gives what must not survive: the value's own characters and slices of
them (10 characters from its start, middle and end; every line of a multi-line body).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BENIGN", "CARRIERS", "KINDS", "Kind", "carriers", "needles"]

_FILE = Path(__file__).resolve().parent.parent / "fixtures" / "secrets" / "kinds.txt"
_RNG = random.Random(20261201)
_CLASSES = {
    "a0": string.ascii_lowercase + string.digits,
    "A0": string.ascii_letters + string.digits,
    "U0": string.ascii_uppercase + string.digits,
    "h": "0123456789abcdef",
    "H": "0123456789ABCDEF",
    "d": string.digits,
    "w": string.ascii_letters + string.digits + "_-",
    "b": string.ascii_letters + string.digits + "+/",
    "age": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}
_FIELD = re.compile(r"\{(\w+)(?::(\d+))?\}")

#: Where a kind is carried, by mode: a value of its own shape, a keyed value, a whole form.
CARRIERS = {
    "s": ("env", "json", "yaml", "shell", "prose", "wrapped", "tool-input", "repr", "crlf-json"),
    "k": (
        "env",
        "json",
        "yaml",
        "shell",
        "prose",
        "tool-input",
        "wrapped",
        "wrapped-json",
        "wrapped-terminal",
        "wrapped-quoted",
        "repr",
        "crlf-json",
    ),
    "f": ("as-is", "json-string", "message", "tool-input", "repr", "crlf-json"),
}


def _random(cls: str, n: int) -> str:
    alphabet = _CLASSES[cls]
    tests = [t for t in (str.isdigit, str.isupper, str.islower) if any(map(t, alphabet))]
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        if all(any(t(c) for c in value) for t in tests):
            return value


def _field(m: re.Match[str]) -> str:
    name, size = m.group(1), m.group(2)
    if name in ("u", "U"):
        value = "-".join(_random("h", n) for n in (8, 4, 4, 4, 12))
        return value.upper() if name == "U" else value
    if name == "dockerauth":
        return base64.b64encode(f"deploy:{_random('A0', 18)}".encode()).decode()
    return _random(name, int(size))


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "\\": "\\"}.get(m.group(1), m.group(0)), text)


@dataclass(frozen=True)
class Kind:
    """One kind: where it comes from, its name, its mode (``s``, ``k``, ``f``), the text (the
    value, or the whole form), the secret's own characters, and the key a keyed value goes by."""

    source: str
    name: str
    mode: str
    text: str
    own: str
    key: str


def _kind(line: str) -> Kind:
    source, name, mode, template = (part.strip() for part in line.split(" | ", 3))
    rest = []
    if mode == "k" and " | " in template:  # a keyed value may name its key after it
        template, key_name = (part.strip() for part in template.split(" | ", 1))
        rest = [key_name]
    literal = template.split("{", 1)[0]
    rendered = _unescape(_FIELD.sub(_field, template))
    if "^" in rendered:
        before, after = rendered.split("^", 1)
        own, tail = after.split("$", 1) if "$" in after else (after, "")
        text = before + own + tail
    else:
        text, own = rendered, rendered[len(literal) :] if mode != "f" else rendered
    key = rest[0] if rest else name.upper().replace("-", "_")
    return Kind(source, name, mode, text, own, key)


KINDS: tuple[Kind, ...] = tuple(
    _kind(line)
    for line in _FILE.read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)


KINDS_INDEX = {kind.name: i for i, kind in enumerate(KINDS)}


def _bash_action(command: str) -> str:
    from obsmem.sources.claude_tools import action_text

    return action_text("Bash", {"command": command, "description": "Deploy"})


def carriers(kind: Kind) -> dict[str, str]:
    """The texts that carry ``kind``, by carrier name (:data:`CARRIERS` for its mode)."""
    if kind.mode == "f":
        form = kind.text
        return {
            "as-is": form,
            "json-string": json.dumps({"command": form}),
            "message": f"I ran this and it worked:\n{form}\nthen I restarted the service.",
            "tool-input": _bash_action(f"set -eu\n{form}\necho done"),
            **_escaped(form),
        }
    v, key = kind.text, kind.key
    low = key.lower()
    words = low.replace("_", " ")
    out = {
        "env": f"# added by hand\n{key}={v}\nLOG_LEVEL=info\n",
        "json": json.dumps({"region": "eu-west-1", low: v, "retries": 3}),
        "yaml": f"settings:\n  region: eu-west-1\n  {low}: {v}\n  retries: 3\n",
        "shell": f"export {key}={v} && ./deploy.sh prod",
        "tool-input": _bash_action(f"cat >> .env <<'EOF'\n{key}={v}\nEOF\n./deploy.sh"),
    }
    if kind.mode == "s":
        out["shell"] = f"./deploy.sh prod {v} --yes"
        out["prose"] = f"I pasted {v} into the chat by mistake, can you rotate it?"
        cut = len(v) - len(kind.own) + len(kind.own) // 2
        out["wrapped"] = f"{key}={v[:cut]}\n{v[cut:]}\nLOG_LEVEL=info"
    else:
        out["prose"] = f"my {words} is {v} if you need it"
        out.update(_wrapped_keyed(key, v, kind))
    out.update(_escaped(out["yaml"], out["env"]))
    return out


def _escaped(text: str, lines: str | None = None) -> dict[str, str]:
    """The text as a tool's result printed as a Python dict (a repr, quoted with '), and
    ``lines`` (else the text) inside a JSON string with Windows line breaks (escaped ``\r\n``)."""
    crlf = (text if lines is None else lines).replace("\n", "\r\n")
    return {
        "repr": repr({"stdout": text, "exit": 0}),
        "crlf-json": json.dumps({"stdout": crlf, "exit": 0}),
    }


#: Terminal widths a keyed value is wrapped at, one per kind in turn.
_WIDTHS = (80, 100, 120)


def _wrapped_keyed(key: str, v: str, kind: Kind) -> dict[str, str]:
    """A keyed value wrapped over two lines: pasted in an ``.env`` (cut in the middle), the same
    inside a JSON string (escaped line breaks), an ``export`` at a terminal's width after a long
    prompt (the second part the longer) and a quoted JSON value wrapped before its quote."""
    cut = len(v) // 2
    env = f"# added by hand\n{key}={v[:cut]}\n{v[cut:]}\nLOG_LEVEL=info\n"
    width = _WIDTHS[KINDS_INDEX.get(kind.name, 0) % len(_WIDTHS)]
    command = f"export {key}={v}"
    first = max(4, len(v) // 3)  # the part of the value on the prompt's line
    prompt = "deploy@build-01:/srv/" + "app/" * 40
    prompt = prompt[: max(0, width - len(command) + len(v) - first - 2)] + "$ "
    line = prompt + command
    return {
        "wrapped": env,
        "wrapped-json": json.dumps({"stdout": env, "exit": 0}),
        "wrapped-terminal": f"{line[:width]}\n{line[width:]}\n{prompt}./deploy.sh prod",
        "wrapped-quoted": f'{{\n  "{key.lower()}": "{v[:cut]}\n{v[cut:]}",\n  "retries": 3\n}}',
    }


def needles(kind: Kind) -> list[str]:
    """What may not survive redaction: the secret's own characters and 10-character slices."""
    found: set[str] = set()
    for line in kind.own.replace("\\n", "\n").splitlines():
        line = line.strip()
        if len(line) < 10:
            if line:
                found.add(line)
            continue
        middle = len(line) // 2 - 5
        found.update({line, line[:10], line[middle : middle + 10], line[-10:]})
    return sorted(found)


#: Texts with nothing secret in them that redaction must leave exactly as they are.
BENIGN: tuple[str, ...] = (
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main, origin/main)",
    "git checkout 9fceb02 && git cherry-pick 1a410efbd13591db07496601ebc7a059dd55cfe9",
    "Merge: 7c3a1f2 e5d4b3a\nAuthor: Ada <ada@example.com>",
    "sha256:4d967e1b5ef48a1a9c4f2b3f3c6ef1b2d5a0e9f8c7b6a5d4e3f2a1b0c9d8e7f6",
    "docker pull python@sha256:b0d1f2e3a4c5b6a7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1",
    "sha512 checksum: cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
    "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
    "md5 d41d8cd98f00b204e9800998ecf8427e  empty.txt",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed with 502",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "UUIDs: 550e8400-e29b-41d4-a716-446655440000, 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    '"integrity": "sha512-9tEqGkRZBWxQfQzMxAKyY4sKqgGJWl0hXmDcx3Mxt/9bYw7c3b6j0JwT7Sf2dNf4y'
    '7v2Kk8D5bF0tQ1o8d2cQ=="',
    '"resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz"',
    "version 2.31.0-rc.1+build.20261201.abcdef, python 3.11.7, node v20.11.1",
    "/home/dev/projects/observational-memory/src/obsmem/sources/readers/claude/fixtures/"
    "sessions/2026/11/30/very-long-session-name-with-many-parts-and-more-parts/"
    "another-nested-directory-level/turns.jsonl",
    "https://github.com/example-org/example-repository/blob/main/docs/architecture/"
    "subsystems/capture-and-redaction/design-notes/2026-11-30-follow-up-notes/"
    "section-four/appendix-b/readme.md#L120-L180",
    "https://example.com/api/v2/organisations/engineering-platform/projects/"
    "observational-memory/environments/production/deployments/history/2026/11/30/"
    "items?page=2&per_page=100",
    "GET /v1/users/8c1e7f2a-4b3d-4e5f-9a8b-7c6d5e4f3a2b/sessions?limit=20 200 OK",
    "PASSWORD_MIN_LENGTH=8\nPASSWORD_MAX_AGE_DAYS=90\nTOKEN_TTL_SECONDS=3600",
    "token_type: bearer\nexpires_in: 3600\nscope: read write",
    "SORT_KEY=created_at\nPRIMARY_KEY=id\nCACHE_KEY=user-profile-v2\nPARTITION_KEY=tenant_id",
    "the password field is required and the token is expired",
    "Reset your password from the settings page, then sign in again.",
    "max_tokens=4096 temperature=0.2 top_p=0.9",
    "api_key = os.environ['WEATHER_API_KEY']\ntoken = get_token(user)",
    "DB_PASSWORD=${DB_PASSWORD}\nAPI_TOKEN=<your token here>\nSECRET_KEY=changeme",
    "password = None\ntoken = token\nsecret = ''",
    "def authenticate(self, password: str, token: str | None = None) -> bool:",
    "curl -u $USER:$PASS https://api.example.com && mysql -p -h db app",
    "docker run -u 1000:1000 -p 8080:80 nginx:1.25",
    "ssh -p 2222 deploy@10.0.0.5 'uptime'",
    "ls -la /var/lib/docker/overlay2/"
    "3a1f9e8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f",
    "pip install requests==2.31.0 'urllib3<2' --index-url https://pypi.org/simple",
    "npm install --save-dev typescript@5.3.3 @types/node@20.10.5",
    "[2026-11-30T10:15:42.123Z] INFO server listening on 0.0.0.0:8080 (pid 4242)",
    "Error: ENOENT: no such file or directory, open '/srv/app/config/production.json'",
    "Traceback (most recent call last):\n  File \"app.py\", line 12, in <module>\nKeyError: 'x'",
    "SELECT id, email FROM users WHERE created_at > NOW() - INTERVAL '7 days' LIMIT 50;",
    "The quick brown fox jumps over the lazy dog while the build runs for 42 minutes.",
    "We decided to keep the offline mode and ship it in April; Lena owns the checklist.",
    "AKIA is the prefix of AWS access key ids; ghp_ starts a GitHub token.",
    "ASIAPACIFICREGIONALX is a region code, not a key",
    "x = hashlib.sha256(data).hexdigest()  # 64 hex characters",
    "const key = `${prefix}:${id}`; map.set(key, value);",
    "export PATH=/usr/local/bin:$PATH && export NODE_ENV=production",
    "kubectl get pods -n kube-system -o wide --sort-by=.metadata.creationTimestamp",
    "terraform plan -var 'region=eu-west-1' -out=tfplan",
    "ghcr.io/example-org/observational-memory:2026.11.30-3f78685",
    "test_redaction_keeps_long_identifiers_like_this_one_unchanged_forever passed",
    "public_key: ssh-ed25519 "
    "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev",
    "key: app.kubernetes.io/name\nvalue: observational-memory",
    "Signed-off-by: Ada Lovelace <ada@example.com>\n"
    "Change-Id: I8473b95934b5732ac55d26311a706c9c2bde9940",
    "https://example.com/search?q=password+reset&sort=recent",
    "ISBN 978-3-16-148410-0 and DOI 10.1000/182",
    "v1.2.3-beta.4 released on 2026-11-30 (build 20261130.7)",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.tar",
    "git log --oneline 3f78685..9fceb02 -- obsmem/redact/core.py",
    # Multi-line texts where a key's value (none, a reference, a placeholder, a YAML block of
    # prose) is followed by lone tokens: nothing there is a value's wrapped rest.
    "API_KEY=${API_KEY}\nSECRET_KEY=changeme\nTOKEN=\n\nDEBUG=true\nLm3Rt8ZwQ2v9Hs4N\n",
    "$ export GITHUB_TOKEN=$(gh auth token)\n$ make\nmake: Nothing to be done for 'all'.\n",
    'API_KEY = os.environ["API_KEY"]\nclient\n',
    "token=\n3f786850e387550fdab836ed7e6dc881de23001b\n9fceb02d0ae598e95dc970b74767f19372d61af8\n",
    '    "node_modules/lodash": {\n      "version": "4.17.21",\n      "integrity":\n'
    '        "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1'
    'tvj5FvSg=="\n'
    "    }",
    "icon:\niVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\n",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
    "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\n",
    "$ pip freeze\nrequests==2.31.0\nurllib3==2.1.0\npython-dotenv==1.0.0\n"
    "-e git+https://github.com/org/repo@3f78685#egg=repo\n",
    "$ ls\nrequirements-dev.txt\ndocker-compose.yml\npackage-lock.json\nsecrets.example.env\n"
    "token_store.py\n__pycache__\n",
    "REPOSITORY   TAG       IMAGE ID       CREATED\n"
    "python       3.12      4c01db0b339c   2 weeks ago\n"
    "ghcr.io/example-org/app@sha256:4d967e1b5ef48a1a9c4f2b3f3c6ef1b2d5a0e9f8c7b6a5d4e3f2a1b0c9d8e7f6\n",
    "password: |\n  Ask Lena for the one in the team vault\nhost: db.internal\n",
    "api_token: >-\n  ${GITHUB_TOKEN}\norg: acme\n",
    "description: |\n  Rotates the signing key every 90 days\n"
    "  and keeps the previous one for a day\n",
    "class TokenStore:\n    def refresh(self, token: str) -> None:\n        self.token = token\n"
    "        getElementById\n",
)

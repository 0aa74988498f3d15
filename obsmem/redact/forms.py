"""Secrets that only the command or file around them reveals: CLI password arguments, ``.netrc``
and ``.pgpass`` lines, Docker and npm ``auth`` values, Kubernetes Secret data, JDBC and
``sqlplus`` logins.

Part of :mod:`obsmem.redact`. ``mysql -pS3cret`` or ``curl -u deploy:S3cret`` hold no
``password=`` a key search could find, and the value has no shape of its own; the command name
(or the file's layout) says which argument is the secret. Each form runs only when its trigger,
a plain substring of the lowercased text, occurs; each pattern is bounded, so the pass stays
linear. Only the secret is replaced: ``mysql -p[REDACTED:password] -h db``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter

from obsmem.redact.keys import is_placeholder

__all__ = ["PGPASS_COLONS", "TRIGGERS", "redact_forms"]

_VALUE = r"""(?:"([^"\n]{1,200})"|'([^'\n]{1,200})'|([^\s"'`|;&<>]{1,200}))"""
# The rest of a command up to an option: bounded, and across backslash-continued lines.
_ARGS = r"(?:[^\n|;&\\]|\\\r?\n|\\(?=[^\r\n])){0,300}?"


def _word(*names: str) -> str:
    """``\b(?:name|...)`` written so that ``re`` can skip to the names' first letters: each
    name is matched first and its start checked after (a lookbehind); a leading ``\b`` would
    make the search try every position of the text."""
    return "(?:" + "|".join(f"{re.escape(n)}(?<!\\w{re.escape(n)})" for n in names) + ")"


# (kind, triggers (lowercase substrings, any of them), pattern). The secret is the pattern's
# first group that matched among its quoted / unquoted alternatives.
_FORMS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    # curl -u user:pass, --user=user:pass, -uuser:pass
    ("password", ("curl",), re.compile(
        _word("curl") + r"\b" + _ARGS + r"(?<=\s)(?:-u|--user|--proxy-user)(?:=|[ \t]{1,5})?[\"']?"
        r"[^\s:\"'/@%]{1,100}:(?!//)([^\s\"']{1,200})")),
    # smbclient -U user%pass
    ("password", ("-u",), re.compile(
        r"-U(?<=\s-U)[ \t]{1,5}[\"']?[^\s%\"']{1,100}%([^\s\"']{1,200})")),
    # mysql -pSECRET, mysqldump -p'SECRET' (with no space: "-p" alone asks for it)
    ("password", ("mysql", "mariadb"), re.compile(
        _word("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlsh", "mariadb",
              "mariadb-dump") + r"\b" + _ARGS + r"(?<=\s)-p" + _VALUE)),
    # sshpass -p SECRET / -pSECRET
    ("password", ("sshpass",), re.compile(
        _word("sshpass") + r"\b" + _ARGS + r"(?<=\s)-p[ \t]{0,5}" + _VALUE)),
    # redis-cli -a SECRET
    ("password", ("redis-cli",), re.compile(
        _word("redis-cli") + r"\b" + _ARGS + r"(?<=\s)-a[ \t]{1,5}" + _VALUE)),
    # mongo / mongosh -p SECRET
    ("password", ("mongo",), re.compile(
        _word("mongo") + r"(?:sh|dump|restore|import|export)?\b" + _ARGS
        + r"(?<=\s)-p[ \t]{1,5}" + _VALUE)),
    # docker / podman / helm / oras login -p SECRET
    ("password", ("login",), re.compile(
        _word("login") + r"\b" + _ARGS + r"(?<=\s)-p[ \t]{1,5}" + _VALUE)),
    # az login -p, sqlcmd / bcp -P, zip / unzip -P, mosquitto -P, ssh-keygen -N / -P
    ("password", ("sqlcmd", "bcp ", "zip", "mosquitto", "ssh-keygen"), re.compile(
        _word("sqlcmd", "bcp", "zip", "unzip", "mosquitto_pub", "mosquitto_sub", "ssh-keygen")
        + r"\b" + _ARGS + r""
        r"(?<=\s)-[PN][ \t]{1,5}" + _VALUE)),
    # 7z a -pSECRET, rar -pSECRET
    ("password", ("7z", "rar"), re.compile(
        _word("7z", "7za", "rar", "unrar") + r"\b" + _ARGS + r"(?<=\s)-p(?!\s)" + _VALUE)),
    # ldapsearch -w SECRET
    ("password", ("ldap",), re.compile(
        _word("ldap") + r"\w{0,10}\b" + _ARGS + r"(?<=\s)-w[ \t]{1,5}" + _VALUE)),
    # openssl ... -passin pass:SECRET, -k SECRET
    ("password", ("pass:",), re.compile(r"pass:(?<![\w-]pass:)" + _VALUE)),
    ("password", ("openssl",), re.compile(
        _word("openssl") + r"\b" + _ARGS + r"(?<=\s)-k[ \t]{1,5}" + _VALUE)),
    # xfreerdp /p:SECRET
    ("password", ("/p:",), re.compile(r"/p:(?<=\s/p:)" + _VALUE)),
    # rabbitmqctl add_user NAME SECRET / change_password NAME SECRET
    ("password", ("rabbitmqctl",), re.compile(
        _word("rabbitmqctl") + r"[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+" + _VALUE)),
    # wpa_passphrase SSID SECRET; nmcli ... password SECRET
    ("password", ("wpa_passphrase",), re.compile(
        _word("wpa_passphrase") + r"[ \t]+\S+[ \t]+" + _VALUE)),
    ("password", ("nmcli",), re.compile(
        _word("nmcli") + r"\b" + _ARGS + r"[ \t](?:password|psk)[ \t]+" + _VALUE)),
    # echo SECRET | docker login --password-stdin; echo SECRET | sudo -S
    ("password", ("password-stdin", "sudo -s"), re.compile(
        _word("echo") + r"[ \t]+(?:-n[ \t]+)?" + _VALUE + r"[ \t]*\|[ \t]*[^\n|]{0,100}?"
        r"(?:--password-stdin|sudo[ \t]+-S)")),
    # mc alias set NAME URL ACCESS SECRET
    ("secret", ("mc alias", "mc config"), re.compile(
        _word("mc") + r"[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)"
        r"[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+" + _VALUE)),
    # sqlplus user/SECRET@db, JDBC thin user/SECRET@host
    ("password", ("sqlplus", "thin:"), re.compile(
        r"(?:" + _word("sqlplus") + r"[ \t]+(?:-\w+[ \t]+)*|thin:)"
        r"[\"']?[^\s/@\"']{1,100}/([^\s@\"']{1,200})@")),
    # .netrc: machine HOST login USER password SECRET (on one line or several)
    ("password", ("machine", "default"), re.compile(
        r"(?:" + _word("machine") + r"[ \t]+\S+|" + _word("default") + r")\b"
        r"(?:\s+(?:login|account)\s+\S{1,200}){0,2}\s+password\s+" + _VALUE)),
    # Azure SAS tokens and presigned URLs: the signature is the credential
    ("secret", ("sig=", "signature="), re.compile(
        r"[?&;](?:sig|x-amz-signature|x-goog-signature|signature)=([A-Za-z0-9%+/=_-]{16,600})",
        re.IGNORECASE)),
    # Sidekiq Enterprise gem credentials (BUNDLE_GEMS__CONTRIBSYS__COM=user:pass)
    ("sidekiq", ("contribsys__com",), re.compile(
        r"(?i:contribsys__com)[\"']?[ \t]*[:=][ \t]*[\"']?([0-9a-f]{8}:[0-9a-f]{8})")),
)  # fmt: skip

# .pgpass: hostname:port:database:username:password, one per line.
_PGPASS = re.compile(
    r":(?:\d{1,5}|\*):[^\s:]{1,100}:[^\s:]{1,100}:(\S{1,200})[ \t]*$", re.MULTILINE
)
# The same line as a quoted string holds it (JSON's ", a Python repr's '): from the quote (or an
# escaped line break) to the next. One pattern per quote, so a ' inside a JSON string's value
# does not end it.
_PGPASS_QUOTED = {
    q: re.compile(
        rf":(?:\d{{1,5}}|\*):[^\s:{q}\\]{{1,100}}:[^\s:{q}\\]{{1,100}}:"
        rf"((?:[^\s{q}\\]|\\\\){{1,200}})(?={q}|\\[nr])"
    )
    for q in "\"'"
}
_QUOTED_LINE_START = {
    q: re.compile(rf"(?:{q}|\\[nr])[A-Za-z0-9_.*\-\[\]]{{1,253}}\Z") for q in "\"'"
}
_HOST = re.compile(r"[A-Za-z0-9_.*\-\[\]]{1,253}\Z")

# Docker's config.json "auth" and .npmrc's _auth: base64 of "user:password".
_AUTH = re.compile(
    r"auth(?<![a-z0-9]auth)[\"']?[ \t]*[:=][ \t]*[\"']?([a-z0-9+/]{8,400}={0,2})(?![a-z0-9+/=])"
)

# Kubernetes Secret manifests: every value under data: / stringData:.
_K8S_DATA = re.compile(r"^([ \t]*)(?:data|stringData):[ \t]*$", re.MULTILINE)
_K8S_ITEM = re.compile(r"([ \t]+)[\w.-]{1,253}:[ \t]+[\"']?([^\s\"'#]{1,4000})[\"']?[ \t]*(?:\n|$)")


def _value_span(m: re.Match[str]) -> tuple[int, int] | None:
    for group in range(1, (m.lastindex or 0) + 1):
        if m.group(group) is not None:
            return m.span(group)
    return None


def _is_secret(value: str) -> bool:
    return len(value) >= 3 and not is_placeholder(value) and not value.startswith("[REDACTED")


# htpasswd -b[c] FILE USER SECRET, htpasswd -nb USER SECRET
_HTPASSWD = re.compile(
    r"\bhtpasswd[ \t]+-([a-zA-Z]*b[a-zA-Z]*)[ \t]+(\S{1,400})[ \t]+(\S{1,400})"
    r"(?:[ \t]+(\S{1,400}))?"
)


def _htpasswd(text: str, spans: list[tuple[int, int, str]]) -> None:
    for m in _HTPASSWD.finditer(text):
        group = 3 if "n" in m.group(1) else 4
        if m.group(group) is not None and _is_secret(m.group(group)):
            spans.append((m.start(group), m.end(group), "password"))


def _pgpass(text: str, spans: list[tuple[int, int, str]]) -> None:
    for m in _PGPASS.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _HOST.match(text, line_start, m.start()) and _is_secret(m.group(1)):
            spans.append((m.start(1), m.end(1), "password"))
    for quote, pattern in _PGPASS_QUOTED.items():
        if quote not in text:
            continue
        for m in pattern.finditer(text):
            host = _QUOTED_LINE_START[quote].search(text, max(0, m.start() - 256), m.start())
            if host is not None and _is_secret(m.group(1)):
                spans.append((m.start(1), m.end(1), "password"))


def _auths(text: str, low: str, spans: list[tuple[int, int, str]]) -> None:
    for m in _AUTH.finditer(low):
        value = text[m.start(1) : m.end(1)]
        try:
            decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if b":" in decoded:  # user:password
            spans.append((m.start(1), m.end(1), "basic-auth"))


def _k8s_secrets(text: str, spans: list[tuple[int, int, str]]) -> None:
    for block in _K8S_DATA.finditer(text):
        indent = len(block.group(1))
        pos = block.end() + 1
        while pos < len(text):
            item = _K8S_ITEM.match(text, pos)
            if item is None or len(item.group(1)) <= indent:
                break
            if _is_secret(item.group(2)):
                spans.append((item.start(2), item.end(2), "secret"))
            pos = item.end()


# Every trigger, and for each the forms it lets run (by their place in _FORMS).
_FORMS_OF: dict[str, tuple[int, ...]] = {}
for _i, (_kind, _triggers, _pattern) in enumerate(_FORMS):
    for _trigger in _triggers:
        _FORMS_OF[_trigger] = (*_FORMS_OF.get(_trigger, ()), _i)
for _trigger in ("htpasswd", "pgpass", "auth", "kind: secret", 'kind: "secret"'):
    _FORMS_OF.setdefault(_trigger, ())
_TRIGGERS = tuple(_FORMS_OF)
#: A ``.pgpass`` line has this many colons: a text with fewer holds none.
PGPASS_COLONS = 4
#: Lowercase substrings one of which a text must hold (or :data:`PGPASS_COLONS` colons) for
#: :func:`redact_forms` to find anything in it.
TRIGGERS = (*_TRIGGERS, ":*:")


def redact_forms(
    text: str, low: str, counts: Counter[str], present: set[str] | None = None
) -> list[tuple[int, int, str]]:
    """The spans of the secrets the forms above find in ``text`` (``low`` is its lowercase
    copy, same positions), in order, each counted in ``counts``. ``present``, when given, holds
    every one of :data:`TRIGGERS` that occurs in ``low`` (and may hold other words)."""
    spans: list[tuple[int, int, str]] = []
    if present is None:
        # Each trigger is looked up once, however many forms share it; most texts have none.
        present = {t for t in _TRIGGERS if t in low}
    if present:
        for i in sorted({i for t in present for i in _FORMS_OF.get(t, ())}):
            kind, _, pattern = _FORMS[i]
            for m in pattern.finditer(text):
                span = _value_span(m)
                if span is not None and _is_secret(text[span[0] : span[1]]):
                    spans.append((*span, kind))
        if "htpasswd" in present:
            _htpasswd(text, spans)
        if "auth" in present:
            _auths(text, low, spans)
        if "kind: secret" in present or 'kind: "secret"' in present:
            _k8s_secrets(text, spans)
    if ":*:" in text or "pgpass" in present or text.count(":") >= PGPASS_COLONS:
        _pgpass(text, spans)
    if len(spans) > 1:
        spans.sort()
    kept: list[tuple[int, int, str]] = []
    for found in spans:
        if not kept or found[0] >= kept[-1][1]:
            kept.append(found)
            counts[found[2]] += 1
    return kept

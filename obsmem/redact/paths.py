"""Secrets out of a transcript's own file path, which om keeps as provenance and shows.

Claude Code keeps a project's sessions in a folder named after its working directory, with
every character other than an ASCII letter or digit turned into a dash
(``/home/u/work/ghp_xxx`` becomes ``-home-u-work-ghp-xxx``). A secret in a working directory is
therefore in the path of every transcript of that project. :func:`redact_path` gives the path
as it may be kept: each secret replaced by ``[REDACTED:<kind>]``, as :func:`redact` does in text,
and a path with no secret unchanged, byte for byte.

A path is read as its names (what lies between two ``/``), each one a text of its own:

- redacted as text is, except that long base64-like runs are kept (dropped from text because
  they are never worth remembering, they are no secret, and a deep working directory makes a
  folder name of one); a value is never read across a ``/`` (an assignment's would take the rest
  of the path with it, and make the paths of a whole folder one);
- searched for the token shapes whose ``_``, ``.`` or ``:`` the folder naming turned into dashes
  (``ghp-``, ``github-pat-``, ``npm-``, ``hf-``, ``sk-live-``, ``whsec-``, ``SG-...-...``, JWTs,
  Telegram bot tokens, AWS secret keys after ``secret-access-key-``), and for Google keys
  followed by a dash;
- read again from after each of its dashes: a key glued to the word before it by a dash is
  refused in text ("task-sk-learn" is not a key), but in a folder name the dash was a ``/``.
  Shapes made of letters, digits and dashes (``sk-ant-``, ``sk-proj-``, ``glpat-``, ``xoxb-``,
  ``pypi-``) are found so.

What a folder name cannot keep recognisable is a value only its key reveals: ``DB_PASSWORD=x``
becomes ``DB-PASSWORD-x``, where nothing tells the value from the words around it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from obsmem.redact.core import redact_counts
from obsmem.redact.keys import splice

__all__ = ["redact_path"]

# A token is a run of at least 15 of these (as in text); a name without one holds none.
_RUN = re.compile(r"[A-Za-z0-9_\-.:+=]{15}")


def _mixed(value: str) -> bool:
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


@dataclass(frozen=True)
class _Dashed:
    """A token shape as the folder naming writes it. ``group`` is the secret part; ``judge``
    says whether a match is one (default: always)."""

    kind: str
    pattern: re.Pattern[str]
    group: int = 0
    judge: Callable[[str], bool] | None = None


# Each starts a word: at the start of the name or after a dash (the lookbehinds).
_DASHED: tuple[_Dashed, ...] = (
    _Dashed("github", re.compile(r"(?<![A-Za-z0-9])gh[pousr]-[A-Za-z0-9]{36,255}(?![A-Za-z0-9])")),
    _Dashed("github", re.compile(r"(?<![A-Za-z0-9])github-pat-[A-Za-z0-9-]{22,255}")),
    _Dashed(
        "stripe",
        re.compile(r"(?<![A-Za-z0-9])[sr]k-(?:live|test)-[A-Za-z0-9]{16,247}(?![A-Za-z0-9])"),
    ),
    _Dashed("stripe", re.compile(r"(?<![A-Za-z0-9])whsec-[A-Za-z0-9]{24,}")),
    _Dashed("npm", re.compile(r"(?<![A-Za-z0-9])npm-[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    _Dashed(
        "huggingface",
        re.compile(r"(?<![A-Za-z0-9])hf-[A-Za-z0-9]{34,40}(?![A-Za-z0-9])"),
        judge=_mixed,
    ),
    # In text a Google key must end where base64 ends; here the next folder follows a dash.
    _Dashed("google-api-key", re.compile(r"(?<![A-Za-z0-9])AIza[A-Za-z0-9-]{35}")),
    _Dashed("sendgrid", re.compile(r"(?<![A-Za-z0-9])SG-[A-Za-z0-9-]{22}-[A-Za-z0-9-]{43}")),
    # Header, payload and signature, their dots now dashes (and dashes of their own besides).
    _Dashed(
        "jwt",
        re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9-]{17,}"),
        judge=lambda token: token.count("-") >= 2,
    ),
    # The bot id before the colon is public; the part after it is the secret.
    _Dashed("telegram-bot", re.compile(r"(?<=[0-9]{8}-)AA[A-Za-z0-9-]{33}")),
    _Dashed(
        "aws-secret-key",
        re.compile(r"(?i)secret-?access-?key-([A-Za-z0-9-]{40})(?![A-Za-z0-9])"),
        group=1,
    ),
)


def redact_path(path: str) -> str:
    """``path`` with each secret in its folder and file names replaced by ``[REDACTED:<kind>]``.

    A path with no secret comes back unchanged; applying it twice changes nothing more.
    """
    names = path.split("/")
    for i, name in enumerate(names):
        name, _ = redact_counts(name, blobs=False)
        if _RUN.search(name) is not None:
            name = _after_dashes(_dashed_shapes(name))
        names[i] = name
    return "/".join(names)


def _after_dashes(name: str) -> str:
    """``name`` with the secrets found when each dash is taken as the start of a new word.

    One dash at a time: a mark at every dash at once would also cut the keys that hold dashes
    (``sk-ant-api03-...``) into pieces too short to be recognised.
    """
    at = name.find("-")
    while at != -1:
        probe = name[: at + 1] + "\0" + name[at + 1 :]  # NUL: no word character, no path one
        found, counts = redact_counts(probe, blobs=False)
        if counts:
            name = found.replace("\0", "")
        at = name.find("-", at + 1)
    return name


def _dashed_shapes(name: str) -> str:
    for rule in _DASHED:
        spans: list[tuple[int, int, str]] = []
        for match in rule.pattern.finditer(name):
            secret = match.group(rule.group)
            if rule.judge is None or rule.judge(secret):
                spans.append((*match.span(rule.group), rule.kind))
        name = splice(name, spans)
    return name

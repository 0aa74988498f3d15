"""Token shapes: secrets whose own characters say what they are (``ghp_...``, ``dop_v1_...``).

Part of :mod:`obsmem.redact`. The table covers the vendor prefixes of the public secret
scanning rule sets (gitleaks' rules, detect-secrets' plugins) and a few more recent ones: each
entry is a kind (the redaction label), the literal prefixes its tokens start with, and what
follows the prefix. A match is redacted wherever it appears, whatever surrounds it.

Speed: about 150 prefixes must not cost 150 scans of every text. One pass finds the runs of
20 or more token characters (no token is shorter); inside a run a token can only start at the
run's start or right after ``. / = +`` (``KEY=ghp_...``, ``https://x/glpat-...``; a prefix glued
to a word, as in ``task-sk-learn``, is no token). At each such start the first two characters
look up the few shapes that may start there, and only those are matched. Text without a run
of 20 never gets past the first regex.

Wrapped keys: a token cut by a line break (a terminal's width, a wrapped paste) still matches:
when a shape fails or stops at the end of a line and the next line is one more run of token
characters, the shape is tried on the two joined, and both parts are replaced. The part on the
first line may be shorter than 20 (an AWS key id cut after 14 characters): a run that ends at a
line break is searched too when it and the run the next line starts with make 20 together.
Where the wrap points are, and the runs only joined lines make, is :mod:`obsmem.redact.wraps`.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from obsmem.redact.wraps import (
    CONTINUATION,
    LINE_PART,
    NEWLINE,
    RUN_NEEDLE,
    RUN_TABLE,
    WRAP_MAX,
    Span,
    cut_prefix,
    join_all,
    joins,
    short_tails,
    tail_starts,
)

__all__ = ["SHAPE_KINDS", "has_digit", "mixed", "redact_shapes"]


def has_digit(value: str) -> bool:
    """Whether ``value`` has a digit."""
    return any(c.isdigit() for c in value)


def mixed(value: str) -> bool:
    """Random-looking: upper and lower case letters and digits all present."""
    has_upper = has_lower = has_digit = False
    for c in value:
        if c.isupper():
            has_upper = True
        elif c.islower():
            has_lower = True
        elif c.isdigit():
            has_digit = True
        if has_upper and has_lower and has_digit:
            return True
    return False


def _sk_kind(secret: str) -> str | None:
    if secret.startswith("sk-ant-"):
        return "anthropic"
    if secret.startswith("sk-or-"):
        return "openrouter"
    return "openai" if has_digit(secret[3:]) else None


@dataclass(frozen=True)
class _Shape:
    """``prefixes`` then ``body`` (a regex). ``judge`` sees the whole token and names its kind,
    or None to let it be (default: ``kind`` when the token has a digit)."""

    kind: str
    prefixes: tuple[str, ...]
    body: str
    judge: Callable[[str], str | None] | None = None


def _needs(test: Callable[[str], bool], kind: str) -> Callable[[str], str | None]:
    return lambda secret: kind if test(secret) else None


def _always(kind: str) -> Callable[[str], str | None]:
    return lambda secret: kind


_AN = "A-Za-z0-9"
_W = "A-Za-z0-9_"
_WD = r"A-Za-z0-9_\-"
_B64 = "A-Za-z0-9+/"
_HEX = "a-fA-F0-9"
_END = rf"(?![{_WD}])"  # a token ends where token characters end
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

# (kind, prefixes, body[, judge]). Bodies are bounded, so each match does bounded work.
_TABLE: tuple[_Shape, ...] = (
    # AI providers
    _Shape("openai", ("sk-",), rf"[{_WD}]{{20,}}", _sk_kind),
    _Shape("groq", ("gsk_",), rf"[{_AN}]{{48,56}}{_END}"),
    _Shape("xai", ("xai-",), rf"[{_AN}]{{70,90}}{_END}"),
    _Shape("replicate", ("r8_",), rf"[{_AN}]{{37}}{_END}"),
    _Shape("perplexity", ("pplx-",), rf"[{_AN}]{{48}}{_END}"),
    _Shape("huggingface", ("hf_",), rf"[{_AN}]{{34,40}}{_END}", _needs(mixed, "huggingface")),
    _Shape("huggingface", ("api_org_",), rf"[{_AN}]{{34}}{_END}", _always("huggingface")),
    _Shape("langsmith", ("lsv2_pt_", "lsv2_sk_"), rf"[{_HEX}]{{32}}_[{_HEX}]{{10}}{_END}"),
    _Shape("pinecone", ("pcsk_",), rf"[{_WD}]{{40,120}}{_END}"),
    # Source hosting, CI, packages
    _Shape("github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), rf"[{_AN}]{{36,255}}{_END}",
           _always("github")),
    _Shape("github", ("github_pat_",), rf"[{_W}]{{22,255}}", _always("github")),
    _Shape("gitlab", ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glffct-", "glimt-",
                      "glcbt-", "glagent-", "gloas-", "glptt-", "glsa_", "GR1348941"),
           rf"[{_WD}.]{{20,300}}", _always("gitlab")),
    _Shape("bitbucket", ("ATBB",), rf"[{_AN}]{{32,64}}{_END}"),
    _Shape("npm", ("npm_",), rf"[{_AN}]{{36}}{_END}"),
    _Shape("pypi", ("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"), rf"[{_WD}]{{50,1000}}",
           _always("pypi")),
    _Shape("pypi", ("pypi-AgEI",), rf"[{_WD}]{{50,1000}}", _always("pypi")),
    _Shape("rubygems", ("rubygems_",), rf"[{_HEX}]{{48}}{_END}"),
    _Shape("clojars", ("CLOJARS_",), rf"[{_AN}]{{60}}{_END}"),
    _Shape("docker", ("dckr_pat_", "dckr_oat_"), rf"[{_WD}]{{27,64}}{_END}"),
    _Shape("buildkite", ("bkua_",), rf"[{_HEX}]{{40}}{_END}"),
    _Shape("circleci", ("CCIPAT_",), rf"[{_AN}]{{20,30}}_[{_HEX}]{{40}}{_END}"),
    _Shape("sonar", ("squ_", "sqp_", "sqa_"), rf"[{_HEX}]{{40}}{_END}"),
    _Shape("sourcegraph", ("sgp_",), rf"(?:[{_HEX}]{{16}}_|local_)?[{_HEX}]{{40}}{_END}"),
    _Shape("artifactory", ("AKCp",), rf"[{_AN}]{{69}}{_END}"),
    _Shape("artifactory", ("cmVmd",), rf"[{_AN}]{{59}}{_END}"),
    _Shape("clickhouse", ("4b1d",), rf"[{_AN}]{{38}}{_END}"),
    _Shape("gitlab", ("_gitlab_session=",), r"[0-9a-z]{32}(?![A-Za-z0-9])"),
    _Shape("prefect", ("pnu_",), rf"[{_AN}]{{36}}{_END}"),
    _Shape("readme", ("rdme_",), rf"[a-z0-9]{{70}}{_END}"),
    _Shape("pulumi", ("pul-",), rf"[{_HEX}]{{40}}{_END}"),
    _Shape("infracost", ("ico-",), rf"[{_AN}]{{32}}{_END}"),
    _Shape("scalingo", ("tk-us-",), rf"[{_WD}]{{48}}{_END}"),
    _Shape("octopus-deploy", ("API-",), rf"[A-Z0-9]{{26,32}}{_END}"),
    _Shape("terraform", ("atlasv1-",), rf"[{_WD}]{{60,70}}{_END}"),
    # Cloud and infrastructure
    _Shape("aws-access-key", ("AKIA", "ASIA", "ABIA", "ACCA"), rf"[A-Z0-9]{{16}}(?![{_AN}])"),
    _Shape("aws-access-key", ("A3T",), rf"[A-Z0-9]{{17}}(?![{_AN}])"),
    _Shape("google-api-key", ("AIza",), rf"[{_WD}]{{35}}{_END}", _always("google-api-key")),
    _Shape("google-oauth", ("GOCSPX-",), rf"[{_WD}]{{28}}{_END}"),
    _Shape("google-oauth", ("ya29.",), rf"[{_WD}]{{30,400}}{_END}", _always("google-oauth")),
    _Shape("alibaba", ("LTAI",), rf"[{_AN}]{{20}}{_END}"),
    _Shape("digitalocean", ("dop_v1_", "doo_v1_", "dor_v1_"), rf"[{_HEX}]{{64}}{_END}"),
    _Shape("heroku", ("HRKU-AA",), rf"[{_WD}]{{58}}{_END}"),
    _Shape("fly", ("fo1_",), rf"[{_WD}]{{43}}{_END}"),
    _Shape("fly", ("fm1a_", "fm1r_", "fm2_"), rf"[{_B64}]{{100,2000}}={{0,3}}", _always("fly")),
    _Shape("vault", ("hvs.", "hvb.", "hvr."), rf"[{_WD}]{{24,400}}{_END}"),
    _Shape("vault", ("s.",), rf"[{_AN}]{{24}}{_END}", _needs(mixed, "vault")),
    _Shape("doppler", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
           rf"[{_AN}]{{40,44}}{_END}"),
    _Shape("planetscale", ("pscale_tkn_", "pscale_oauth_", "pscale_pw_"), rf"[{_WD}.=]{{32,64}}",
           _always("planetscale")),
    _Shape("dynatrace", ("dt0c01.",), rf"[{_AN}]{{24}}\.[{_AN}]{{64}}{_END}"),
    _Shape("databricks", ("dapi",), rf"[{_HEX}]{{32}}(?:-\d)?{_END}"),
    _Shape("cloudflare", ("v1.0-",), rf"[{_HEX}]{{24}}-[{_HEX}]{{146}}{_END}"),
    _Shape("tailscale", ("tskey-",),
           rf"(?:auth|api|client|scim|webhook)-[{_AN}]{{10,}}-[{_AN}]{{20,64}}{_END}"),
    _Shape("supabase", ("sbp_",), rf"[{_HEX}]{{40}}{_END}"),
    _Shape("vercel", ("vercel_",), rf"[{_AN}]{{24,64}}{_END}"),
    _Shape("netlify", ("nfp_",), rf"[{_AN}]{{36,40}}{_END}"),
    _Shape("openshift", ("sha256~",), rf"[{_WD}]{{43}}{_END}"),
    _Shape("age", ("AGE-SECRET-KEY-1",), r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}(?![A-Z0-9])",
           _always("age")),
    _Shape("1password", ("A3-",), r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
           r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}(?![A-Z0-9])"),
    _Shape("1password", ("ops_eyJ",), rf"[{_B64}]{{250,4000}}={{0,3}}", _always("1password")),
    _Shape("jfrog", ("AKC",), rf"[{_AN}]{{10,80}}{_END}", _needs(mixed, "jfrog")),
    # Payments and commerce
    _Shape("stripe", ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
           rf"[{_AN}]{{10,247}}(?![{_AN}])"),
    _Shape("stripe", ("whsec_",), rf"[{_AN}]{{24,}}", _always("stripe")),
    _Shape("square", ("sq0atp-", "sq0csp-"), rf"[{_WD}]{{22,60}}{_END}", _always("square")),
    _Shape("square", ("EAAA",), rf"[{_WD}]{{22,60}}{_END}", _needs(mixed, "square")),
    _Shape("shopify", ("shpat_", "shpca_", "shppa_", "shpss_"), rf"[{_HEX}]{{32}}{_END}"),
    _Shape("shippo", ("shippo_live_", "shippo_test_"), rf"[{_HEX}]{{40}}{_END}"),
    _Shape("duffel", ("duffel_test_", "duffel_live_"), rf"[{_WD}=]{{43}}"),
    _Shape("flutterwave", ("FLWSECK_TEST-", "FLWSECK-"), rf"[{_HEX}]{{12,32}}(?:-X)?{_END}"),
    _Shape("easypost", ("EZAK", "EZTK"), rf"[{_AN}]{{54}}{_END}"),
    _Shape("adobe", ("p8e-",), rf"[{_AN}]{{32}}{_END}"),
    # Messaging and mail
    _Shape("slack", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xoxe.xoxb-",
                     "xoxe.xoxp-"), r"[A-Za-z0-9-]{10,}", _needs(has_digit, "slack")),
    _Shape("slack", ("xapp-",), r"\d-[A-Za-z0-9-]{10,400}"),
    _Shape("sendgrid", ("SG.",), rf"[{_WD}]{{22}}\.[{_WD}]{{43}}"),
    _Shape("sendinblue", ("xkeysib-",), rf"[{_HEX}]{{64}}-[{_AN}]{{16}}{_END}"),
    _Shape("mailgun", ("key-",), rf"[{_HEX}]{{32}}{_END}"),
    _Shape("mailersend", ("mlsn.",), rf"[{_HEX}]{{64}}{_END}"),
    _Shape("resend", ("re_",), rf"[{_AN}]{{8}}_[{_AN}]{{24}}{_END}"),
    _Shape("twilio", ("SK",), rf"[{_HEX}]{{32}}{_END}"),
    _Shape("discord", ("M", "N", "O"), rf"[{_WD}]{{23,25}}\.[{_WD}]{{6}}\.[{_WD}]{{27,38}}{_END}",
           _needs(mixed, "discord")),
    _Shape("facebook", ("EAAM", "EAAC", "EAAG"), rf"[{_AN}]{{100,400}}{_END}"),
    _Shape("sentry", ("sntryu_",), rf"[{_HEX}]{{64}}{_END}"),
    _Shape("sentry", ("sntrys_eyJ",), rf"[{_B64}=_]{{60,600}}", _always("sentry")),
    _Shape("postman", ("PMAK-",), rf"[{_HEX}]{{24}}-[{_HEX}]{{34}}{_END}"),
    _Shape("notion", ("ntn_",), rf"\d{{11}}[{_AN}]{{35}}{_END}"),
    _Shape("notion", ("secret_",), rf"[{_AN}]{{43}}{_END}", _needs(mixed, "notion")),
    _Shape("linear", ("lin_api_",), rf"[{_AN}]{{40}}{_END}"),
    _Shape("linear", ("lin_oauth_",), rf"[{_HEX}]{{64}}{_END}"),
    _Shape("atlassian", ("ATATT3", "ATCTT3"), rf"[{_WD}=]{{150,220}}"),
    _Shape("figma", ("figd_",), rf"[{_WD}]{{40,60}}{_END}"),
    _Shape("airtable", ("pat",), rf"[{_AN}]{{14}}\.[{_HEX}]{{64}}{_END}"),
    _Shape("contentful", ("CFPAT-",), rf"[{_WD}]{{43}}{_END}"),
    _Shape("frameio", ("fio-u-",), rf"[{_WD}=]{{64}}"),
    _Shape("typeform", ("tfp_",), rf"[{_WD}.=]{{59}}"),
    _Shape("new-relic", ("NRAK-",), rf"[A-Z0-9]{{27}}{_END}"),
    _Shape("new-relic", ("NRII-",), rf"[{_WD}]{{32}}{_END}"),
    _Shape("new-relic", ("NRJS-",), rf"[{_HEX}]{{19}}{_END}"),
    _Shape("new-relic", ("NRAA-",), rf"[{_HEX}]{{27}}{_END}"),
    _Shape("harness", ("pat.", "sat."), rf"[{_WD}]{{22}}\.[{_AN}]{{24}}\.[{_AN}]{{20}}{_END}"),
    _Shape("settlemint", ("sm_aat_", "sm_pat_", "sm_sat_"), rf"[{_AN}]{{16}}{_END}"),
    _Shape("intra42", ("s-s4t2ud-", "s-s4t2af-"), rf"[{_HEX}]{{64}}{_END}"),
    _Shape("grafana", ("glc_",), rf"[{_B64}]{{32,400}}={{0,3}}", _always("grafana")),
    _Shape("grafana", ("eyJrIjoi",), rf"[{_AN}]{{70,400}}={{0,3}}", _always("grafana")),
    _Shape("mapbox", ("sk.eyJ",), rf"[{_WD}]{{50,}}\.[{_WD}]{{22}}{_END}", _always("mapbox")),
    _Shape("dropbox", ("sl.",), rf"[{_WD}=]{{130,160}}"),
    _Shape("yandex", ("AQVN",), rf"[{_WD}]{{35,38}}{_END}"),
    _Shape("yandex", ("t1.",), rf"[{_WD}]+={{0,2}}\.[{_WD}]{{86}}={{0,2}}"),
    _Shape("plaid", ("access-sandbox-", "access-development-", "access-production-"),
           rf"{_UUID}{_END}"),
    _Shape("jwt", ("ZXlK",), rf"[{_B64}_\-]{{60,4000}}={{0,2}}", _needs(mixed, "jwt")),
    # Tokens of the JOSE family, last so that the shapes above that start with "eyJ" go first.
    _Shape("jwt", ("eyJ",), rf"[{_WD}]{{8,}}\.[{_WD}]{{8,}}\.[{_WD}]*", _always("jwt")),
)  # fmt: skip

# Shapes that do not start a run of token characters (a digit run, a suffix, a character outside
# the run's). Each is searched only when its trigger (a plain substring) occurs, and each
# pattern starts with that literal, for a fast search, and looks back for what comes before it:
# the span starts ``back`` characters before the match (or is the match's group 1 when ``back``
# is -1).
_Gated = tuple[str, str, re.Pattern[str], int]
_GATED: tuple[_Gated, ...] = (
    ("firebase", ":APA91b", re.compile(
        rf":APA91b(?<=AAAA[{_WD}]{{7}}:APA91b)[{_WD}]{{100,200}}"), 11),
    ("mailchimp", "-us", re.compile(rf"-us(?<=[0-9a-f]{{32}}-us)\d{{1,2}}(?![{_AN}])"), 32),
    ("maxmind", "_mmk", re.compile(rf"_mmk(?<=[{_AN}]{{6}}_[{_AN}]{{29}}_mmk)(?![{_AN}])"), 36),
    ("terraform", ".atlasv1.", re.compile(
        rf"\.atlasv1\.(?<=[a-z0-9]{{14}}\.atlasv1\.)[{_WD}=]{{60,70}}"), 14),
    ("azure-ad", "Q~", re.compile(
        rf"Q~(?<=[{_AN}_~.]{{3}}\dQ~)"
        rf"[{_AN}_~.\-]{{31,34}}(?![{_AN}_~.\-])"), 4),
    ("authress", ".acc", re.compile(
        rf"(?<![{_AN}])(?:sc|ext|scauth|authress)_[{_AN}]{{5,30}}\.[{_AN}]{{4,6}}\.acc[_-]"
        rf"[a-z0-9-]{{10,32}}\.[a-z0-9+/_=-]{{30,120}}"), 0),
    # The bot id before the colon is public; the part after it is the secret.
    ("telegram-bot", ":AA", re.compile(
        rf":(AA(?<=[0-9]{{8}}:AA)[{_WD}]{{33}})(?![{_WD}])"), -1),
    ("facebook", "|", re.compile(rf"\|(?<=[0-9]{{15}}\|)([{_WD}]{{27,40}})(?![{_WD}])"), -1),
    ("twitter", "A" * 22, re.compile(r"A{22}(?<![A-Za-z0-9]A{22})[A-Za-z0-9%]{60,120}"), 0),
    ("dropbox", "A" * 10, re.compile(rf"A{{10}}(?<=[a-z0-9]{{11}}A{{10}})[{_WD}=]{{43}}"), 11),
    ("teams-webhook", "webhook.office.com", re.compile(
        r"webhook\.office\.com/webhookb2/([A-Za-z0-9@/-]{40,400})"), -1),
    ("discord-webhook", "/api/webhooks/", re.compile(
        r"discord(?:app)?\.com/api/webhooks/(\d{5,30}/[A-Za-z0-9_-]{30,100})"), -1),
    ("zapier-webhook", "hooks.zapier.com", re.compile(
        r"hooks\.zapier\.com/hooks/catch/(\d{3,20}/[A-Za-z0-9]{4,40})"), -1),
)  # fmt: skip

#: Every label a shape can give.
SHAPE_KINDS: dict[str, tuple[str, ...]] = {}
for _shape in _TABLE:
    SHAPE_KINDS[_shape.kind] = SHAPE_KINDS.get(_shape.kind, ()) + _shape.prefixes
for _kind, _trigger, _pattern, _back in _GATED:
    SHAPE_KINDS.setdefault(_kind, (_trigger,))
SHAPE_KINDS.update({"anthropic": ("sk-ant-",), "openrouter": ("sk-or-",)})

_Entry = tuple[str, re.Pattern[str], _Shape]


def _index(width: int) -> dict[str, tuple[_Entry, ...]]:
    by_key: dict[str, list[_Entry]] = {}
    for shape in _TABLE:
        body = re.compile(shape.body)
        for prefix in shape.prefixes:
            if (len(prefix) >= 2) == (width == 2):
                by_key.setdefault(prefix[:width], []).append((prefix, body, shape))
    # Longer prefixes first: "sk_live_" and "sk.eyJ" before "sk-", "AKCp" before "AKC".
    return {k: tuple(sorted(v, key=lambda e: -len(e[0]))) for k, v in by_key.items()}


_BY_ONE = _index(1)
# Each two-character key also holds the shapes of its first character alone (one lookup).
_BY_TWO = {k: v + _BY_ONE.get(k[0], ()) for k, v in _index(2).items()}
_LONG_RUN = 4096


def _inner(separators: str, firsts: str) -> re.Pattern[str]:
    """Where a shape may start inside a run: right after one of ``separators``, at one of the
    table's first two characters (first ones among ``firsts``). Telling the first two
    characters in the pattern rather than afterwards spares a Python step for every ``/`` of a
    path and ``.`` of a file name."""
    seconds: dict[str, set[str]] = {}
    for key in _BY_TWO:
        seconds.setdefault(key[0], set()).add(key[1])
    ones = "".join(sorted(_BY_ONE))
    branches = [
        re.escape(first) + "[" + "".join(map(re.escape, sorted(more))) + "]"
        for first, more in sorted(seconds.items())
        if first in firsts and first not in ones
    ]
    branches.append(f"[{ones}]")
    return re.compile(f"[{re.escape(separators)}](?={'|'.join(branches)})")


# A shape starts a run or follows one of these (see the module's docstring); in a long run (a
# blob) only after "." or "=".
_ALNUM = string.ascii_letters + string.digits
_INNER = _inner("./=+", _ALNUM + "_")

_INNER_LONG = _inner(".=", _ALNUM)


# A repeat of a body: {m}, {m,n} or {m,} (open-ended), or + and * (outside a class).
_REPEAT = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")
_CLASS = re.compile(r"\[(?:\\.|[^\]])*\]")
_TIGHT_SPREAD = 20  # a repeat of 12 to 32 hex characters (flutterwave) is tight


@cache
def _tight(body: str) -> bool:
    """Whether a shape's body is tight: every repeat bounded, none spread over more than 20
    lengths (``AKIA`` + ``[A-Z0-9]{16}``), unlike ``sk-``'s ``[A-Za-z0-9_-]{20,}``, which a
    branch name or a word with a digit glued to the next line's (``sk-utils`` then
    ``sk-utils-config-v2``) matches too."""
    outside = _CLASS.sub("", body)
    if "+" in outside or "*" in outside:
        return False
    for m in _REPEAT.finditer(body):
        low, comma, high = int(m[1]), m[2], m[3]
        if comma and (not high or int(high) - low > _TIGHT_SPREAD):
            return False
    return True


def _tail_starts() -> re.Pattern[str]:
    """Where the first part of a wrapped token cut into two short parts may start: every key of
    the table (a superset of where _match_at finds one), those whose shapes are none of them
    tight (``sk``) apart, since their token must then be mixed (see _wrapped)."""
    seconds: dict[str, str] = {}
    loose: dict[str, str] = {}
    for key, entries in _BY_TWO.items():
        into = loose if not any(_tight(shape.body) for _, _, shape in entries) else seconds
        into[key[0]] = into.get(key[0], "") + key[1]
    return tail_starts(seconds, "".join(_BY_ONE), loose)


def _wrapped(
    text: str,
    pos: int,
    prefix: str,
    body: re.Pattern[str],
    shape: _Shape,
    whole: bool,
    short: bool = False,
) -> list[Span] | None:
    """The two parts of a token at ``pos`` that goes on at the start of the next line;
    ``short``: the first part is shorter than 20, so a shape that is not tight (see _tight)
    takes the joined token only when it looks random (upper and lower case and digits)."""
    first = LINE_PART.match(text, pos, pos + WRAP_MAX)
    line_end = first.end() if first is not None else pos
    nl = NEWLINE.match(text, line_end)
    if nl is None:
        return None
    cont = CONTINUATION.match(text, nl.end())
    if cont is None:
        return None
    more = cont.group(1)
    if whole and not (len(more) >= 6 and has_digit(more) and any(c.isalpha() for c in more)):
        return None  # the token was whole already; a plain word on the next line is no part
    joined = text[pos:line_end] + more
    if not joined.startswith(prefix):
        return None  # a prefix cut by the break (see cut_prefix) must go on after it
    m = body.match(joined, len(prefix))
    if m is None or m.end() <= line_end - pos:
        return None
    token = joined[: m.end()]
    kind = _judge(shape, token)
    if kind is None or (short and not _tight(shape.body) and not mixed(token)):
        return None
    return [
        (pos, line_end, kind),
        (cont.start(1), cont.start(1) + m.end() - (line_end - pos), kind),
    ]


_TAIL_STARTS = _tail_starts()


def _match_at(text: str, pos: int, end: int, wrapped_only: bool = False) -> list[Span] | None:
    """The span(s) of the token starting at ``pos`` in the run that ends at ``end`` (two when
    it is wrapped), or None; ``wrapped_only``: only a wrapped one (the run at ``pos`` is too
    short for a whole token)."""
    entries = _BY_TWO.get(text[pos : pos + 2])
    if entries is None:
        entries = _BY_ONE.get(text[pos : pos + 1])
        if entries is None:
            return None
    for prefix, body, shape in entries:
        if not text.startswith(prefix, pos):
            if pos + len(prefix) > end and cut_prefix(text, pos, prefix):
                parts = _wrapped(text, pos, prefix, body, shape, False, wrapped_only)
                if parts is not None:
                    return parts
            continue
        m = body.match(text, pos + len(prefix))
        stop = m.end() if m is not None else -1
        if m is None or stop == len(text) or text[stop] in "\r\n\\":
            parts = _wrapped(text, pos, prefix, body, shape, m is not None, wrapped_only)
            if parts is not None:
                return parts
        if m is None or wrapped_only:
            continue
        kind = _judge(shape, text[pos:stop])
        if kind is not None:
            return [(pos, stop, kind)]
    return None


def _wrapped_gated(text: str, counts: Counter[str]) -> list[Span]:
    """The gated shapes found only once the lines are joined: each wrapped token's parts."""
    flat, joined = join_all(text)
    if joined == flat:
        return []
    # A trigger in a partly joined text is in the wholly joined one too (no trigger holds a
    # line break): most texts stop here, before the joins are mapped.
    gated = [entry for entry in _GATED if entry[1] in joined]
    if not gated:
        return []
    spans: list[Span] = []
    seen: set[tuple[tuple[int, int], ...]] = set()
    variants = joins(text)
    for kind, trigger, pattern, back in gated:
        for variant in variants:
            if trigger not in variant.text:
                continue
            for m in pattern.finditer(variant.text):
                start, end = m.span(1) if back < 0 else (m.start() - back, m.end())
                if end - start < 12:
                    continue
                # Mapped back by position: each copy of a token where it is, none looked for.
                parts = tuple(variant.spans(start, end))
                if len(parts) == 1 or parts in seen:
                    continue  # whole in the text (the gated pass has it), or in another join
                seen.add(parts)
                spans.extend((a, b, kind) for a, b in parts)
                counts[kind] += 1
    return spans


def _judge(shape: _Shape, token: str) -> str | None:
    if shape.judge is not None:
        return shape.judge(token)
    return shape.kind if has_digit(token) else None


def _runs(text: str, mask: bytes) -> list[tuple[int, int]]:
    """The spans of the runs of at least 20 token characters in ``text`` (``mask``: the text
    mapped by :data:`RUN_TABLE`)."""
    found: list[tuple[int, int]] = []
    at = mask.find(RUN_NEEDLE)
    while at != -1:
        end = mask.find(b" ", at)
        if end == -1:
            end = len(mask)
        start = mask.rfind(b" ", 0, at) + 1
        if start and text[start - 1] == "\\" and text[start] in "nrt":
            start += 1  # a JSON-escaped line break: the run starts after it
        found.append((start, end))
        at = mask.find(RUN_NEEDLE, end)
    return found


# A key body without its BEGIN/END lines: two or more lines of exactly 64 base64 characters
# (PEM, OpenSSH, PuTTY's Private-Lines), then perhaps a shorter last line.
_PEM_LINE = 64
_PEM_CHARS = re.compile(r"[A-Za-z0-9+/]{64}\Z")
_LINE_GAP = re.compile(r"(?:\r?\n|\\r\\n|\\n)[ \t]*\Z")
_PEM_TAIL = re.compile(r"(?:\r?\n|\\r\\n|\\n)[ \t]*[A-Za-z0-9+/]{1,63}={0,2}(?![A-Za-z0-9+/=])")


def _key_bodies(text: str, runs: list[tuple[int, int]]) -> list[Span]:
    spans: list[Span] = []
    group: list[tuple[int, int]] = []

    def close() -> None:
        if len(group) >= 2 and mixed(text[group[0][0] : group[-1][1]]):
            end = group[-1][1]
            tail = _PEM_TAIL.match(text, end)
            spans.append((group[0][0], tail.end() if tail else end, "private-key"))
        group.clear()

    for start, end in runs:
        if end - start != _PEM_LINE or not _PEM_CHARS.match(text, start, end):
            close()
            continue
        if group and not _LINE_GAP.match(text, group[-1][1], start):
            close()
        group.append((start, end))
    close()
    return spans


def _gated(text: str, counts: Counter[str]) -> list[Span]:
    """The spans of the shapes of _GATED in ``text``, each counted in ``counts``."""
    spans: list[Span] = []
    for guard, entries in _GATED_GUARDS:
        if guard in text:
            for kind, trigger, pattern, back in entries:
                if trigger is guard or trigger in text:
                    for m in pattern.finditer(text):
                        start, end = m.span(1) if back < 0 else (m.start() - back, m.end())
                        spans.append((start, end, kind))
                        counts[kind] += 1
    return spans


def _guards() -> tuple[tuple[str, tuple[_Gated, ...]], ...]:
    """The gated shapes by a part their triggers share ("A" * 10 for "A" * 22 too, ":A", ".a"),
    so that a text without that part is ruled out for all of them with one look."""
    shared = ("A" * 10, ":A", ".a")
    groups: dict[str, list[_Gated]] = {}
    for entry in _GATED:
        guard = next((part for part in shared if part in entry[1]), entry[1])
        groups.setdefault(guard, []).append(entry)
    return tuple((guard, tuple(entries)) for guard, entries in groups.items())


_GATED_GUARDS = _guards()


def _take(found: list[Span], spans: list[Span], counts: Counter[str]) -> int:
    """Add a token's span(s) to ``spans`` and count it once; return where it ends."""
    spans.extend(found)
    counts[found[0][2]] += 1
    return found[-1][1]


def redact_shapes(text: str, counts: Counter[str]) -> list[Span]:
    """The spans of every token shape in ``text``, in order, each token counted in ``counts``.

    A wrapped token gives two spans (its two lines keep their line break) and counts once.
    """
    mask = text.encode("ascii", "replace").translate(RUN_TABLE)
    runs = _runs(text, mask)
    spans = _key_bodies(text, runs) if len(runs) >= 2 else []
    if spans:
        counts["private-key"] += len(spans)
    # The runs, and the short first parts of wrapped tokens (False: only a wrapped token there).
    tails = short_tails(text, mask, _TAIL_STARTS)
    searched = [(start, end, False) for start, end in runs]
    if tails:
        searched = sorted(searched + [(start, end, True) for start, end in tails])
    cursor = 0
    for start, end, short in searched:
        if start < cursor:
            continue
        # Most runs start no shape: told without a call.
        if text[start : start + 2] in _BY_TWO or text[start] in _BY_ONE:
            found = _match_at(text, start, end, short)
            if found is not None:
                cursor = _take(found, spans, counts)
        for m in (_INNER if end - start <= _LONG_RUN else _INNER_LONG).finditer(text, start, end):
            pos = m.end()
            if pos < cursor:
                continue
            found = _match_at(text, pos, end, short)
            if found is not None:
                cursor = _take(found, spans, counts)
    if runs:  # every gated shape holds a run of 20 token characters too
        spans.extend(_gated(text, counts))
    if "\n" in text or "\\n" in text:
        spans.extend(_wrapped_gated(text, counts))
    if len(spans) > 1:
        spans.sort()
    return spans

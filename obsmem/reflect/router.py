"""The router: observations filed by category and by entity into ``vault/``, for markdown viewers.

Every observation of importance ``THRESHOLD`` (0.4) or more, in ``observations.md`` or in an
archive month, gets one line on its category page and on the page of each project and person it
concerns::

    vault/decisions.md  preferences.md  lessons.md  commitments.md  facts.md
    vault/projects/<slug>.md            (the project recorded in the provenance ledger)
    vault/people/<slug>.md              (people named in relationship observations)

A line reads ``- 2026-11-28 10:00 <text> [[projects/atlas]] [[people/maria]] (^k3v9q2m7xa)``:
wiki-links to the related pages, and the observation id in parentheses, so ``parse_sections``
reads it as a citation (``Entry.cites``) rather than as the vault line's own id.

Pages are derived data, but people may write on them: om owns only the block between the marker
comments of ``replace_block`` and keeps everything else byte for byte. A page is rewritten only
when its bytes would change, atomically and under the memory lock; a page with nothing left to
file keeps its hand-written part and an empty block (files are never deleted). ``docs/vault.md``
describes the layout for users.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from obsmem.context.prepare import replace_block
from obsmem.memory.atomic import atomic_write
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore

__all__ = [
    "CATEGORY_TITLES",
    "THRESHOLD",
    "TYPE_CATEGORIES",
    "RouteReport",
    "category_of",
    "find_people",
    "plan_pages",
    "route",
    "slug",
]

THRESHOLD = 0.4

#: Category page (file stem under ``vault/``) -> its title.
CATEGORY_TITLES: dict[str, str] = {
    "decisions": "Decisions",
    "preferences": "Preferences",
    "lessons": "Lessons",
    "commitments": "Commitments and open loops",
    "facts": "Facts",
}

#: Observation type -> category page. Types not listed (and untagged lines of the original tool)
#: go to ``facts``; ``commitment`` and ``task`` go to ``commitments`` only while not completed
#: (see ``category_of``).
TYPE_CATEGORIES: dict[str, str] = {
    "decision": "decisions",
    "preference": "preferences",
    "lesson": "lessons",
    "commitment": "commitments",
    "task": "commitments",
    "fact": "facts",
    "relationship": "facts",
    "project": "facts",
    "milestone": "facts",
    "error": "facts",
    "event": "facts",
}

_SLUG_JUNK = re.compile(r"[^\w-]+")
_DASHES = re.compile(r"-{2,}")
_SLUG_MAX = 80

# A person's name: one or two capitalised words, each ending at a word boundary that is not
# another letter, so CamelCase product names (PostgreSQL, GitHub) never match.
_WORD = r"[A-Z][a-z]+(?:['-][A-Z]?[a-z]+)?(?![A-Za-z])"
_NAMED = re.compile(rf"\b(?:[Ww]ith|[Ff]rom|[Bb]y)\s+(?P<name>{_WORD}(?:\s{_WORD})?)")
_HANDLE = re.compile(r"(?<![\w.@])@(?P<handle>[A-Za-z][A-Za-z0-9_-]{1,38})\b")
# Capitalised words that follow "with/from/by" without being people.
_NOT_NAMES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december today tomorrow yesterday the this that
    these those it its we you they he she his her their our my me us them i a an all both each
    claude codex hermes openclaw obsidian git python""".split()
)


@dataclass
class RouteReport:
    """What one ``route`` run did: the pages rewritten (relative to the memory directory) and
    how many distinct observations the vault files (all of them, not only new ones)."""

    pages_written: list[str] = field(default_factory=list)
    observations_routed: int = 0


@lru_cache(maxsize=4096)
def slug(name: str) -> str | None:
    """A safe file stem for a project or person name, or None when nothing usable is left.

    Lowercase; runs of anything but letters, digits, ``_`` and ``-`` (spaces, slashes, dots)
    become one ``-``, so a name can never climb out of its folder (``../x`` -> ``x``), name a
    hidden file or hold a path separator.
    """
    text = unicodedata.normalize("NFKC", name).lower()
    text = _DASHES.sub("-", _SLUG_JUNK.sub("-", text)).strip("-_")
    text = text[:_SLUG_MAX].rstrip("-_")
    return text or None


def category_of(obs: Observation) -> str:
    """The category page an observation is filed on (``TYPE_CATEGORIES``; done work is a fact)."""
    category = TYPE_CATEGORIES.get(obs.type or "", "facts")
    if category == "commitments" and obs.completed:
        # A promise kept is no longer an open loop; it stays findable as something that happened.
        return "facts"
    return category


def find_people(text: str) -> dict[str, str]:
    """Candidate people in ``text``: ``{slug: name as written}``, in order of appearance.

    Candidates are ``@handles`` and one or two capitalised words right after "with", "from" or
    "by", minus a short list of words that are not names (weekdays, months, pronouns, agents).
    """
    found: dict[str, str] = {}
    for match in _NAMED.finditer(text):
        words = match.group("name").split()
        if words[0].lower() in _NOT_NAMES:
            continue
        if len(words) > 1 and words[1].lower() in _NOT_NAMES:
            words = words[:1]  # "with Maria Monday": the name is Maria
        name = " ".join(words)
        if (key := slug(name)) is not None:
            found.setdefault(key, name)
    for match in _HANDLE.finditer(text):
        handle = match.group("handle")
        if handle.lower() not in _NOT_NAMES and (key := slug(handle)) is not None:
            found.setdefault(key, "@" + handle)
    return found


def _known_people(observations: Iterable[Observation]) -> dict[str, str]:
    """People introduced by relationship observations (whatever their importance).

    Only these count as people elsewhere: "with Docker" in a decision must not make a page, but
    once a relationship observation has named Maria, "agreed with Maria" files under her page.
    """
    known: dict[str, str] = {}
    for obs in observations:
        if obs.type == "relationship":
            for key, name in find_people(obs.text).items():
                known.setdefault(key, name)
    return known


@dataclass
class _Page:
    title: str
    items: list[tuple[Observation, list[str]]] = field(default_factory=list)


def _one_line(text: str) -> str:
    # A line break inside the text would end the bullet and could start a line with a marker.
    return " ".join(text.split())


def plan_pages(
    observations: Iterable[Observation], projects: Mapping[str, str | None]
) -> tuple[dict[str, tuple[str, list[str]]], int]:
    """Every vault page's title and generated block (``{path under vault/: (title, lines)}``),
    and the number of observations filed. ``projects`` maps observation ids to project names."""
    everything = list(observations)
    people = _known_people(everything)
    pages: dict[str, _Page] = {}
    routed = 0
    for obs in everything:
        if obs.importance < THRESHOLD:
            continue
        routed += 1
        category = category_of(obs)
        targets = [category]
        project = projects.get(obs.id)
        project_key = slug(project) if project else None
        if project_key is not None:
            targets.append(f"projects/{project_key}")
            pages.setdefault(f"projects/{project_key}", _Page(project_key))
        for key in find_people(obs.text) if people else ():  # only known people get pages
            if key in people:
                targets.append(f"people/{key}")
                pages.setdefault(f"people/{key}", _Page(people[key]))
        pages.setdefault(category, _Page(CATEGORY_TITLES[category]))
        for target in targets:
            # Each page links to the others the observation is filed on, never to itself.
            pages[target].items.append((obs, [t for t in targets if t != target]))
    return {f"{name}.md": (page.title, _render(page.items)) for name, page in pages.items()}, routed


def _render(items: list[tuple[Observation, list[str]]]) -> list[str]:
    """Block lines: newest first, under one ``## YYYY-MM`` heading per month."""
    # Stable on day and minute: of two lines of one minute, the later in the file is newer (the
    # items come in file order; ids are hashes and would order them at random).
    ordered = sorted(items, key=lambda item: (item[0].date, item[0].time or ""))
    lines: list[str] = []
    month = None
    for obs, links in reversed(ordered):
        if obs.date[:7] != month:
            month = obs.date[:7]
            lines += ["", f"## {month}", ""] if lines else [f"## {month}", ""]
        stamp = f"{obs.date} {obs.time}" if obs.time else obs.date
        parts = [stamp, _one_line(obs.text), *(f"[[{link}]]" for link in links), f"(^{obs.id})"]
        lines.append("- " + " ".join(part for part in parts if part))
    return lines


def _all_observations(store: MemoryStore) -> list[Observation]:
    """``observations.md`` then every archive month, each id once (a move to the archive
    interrupted half-way may leave one in both places)."""
    sources = [store.observations_path]
    archive = store.archive_dir / "observations"
    if archive.is_dir():
        sources += sorted(p for p in archive.glob("*.md") if p.is_file())
    seen: set[str] = set()
    out: list[Observation] = []
    for path in sources:
        for obs in store.read_observations(path, shared=True).observations:
            if obs.id not in seen:
                seen.add(obs.id)
                out.append(obs)
    return out


def _existing_pages(vault: Path) -> list[str]:
    """Pages om may own already (category and entity pages), relative to ``vault/``."""
    out = [f"{name}.md" for name in CATEGORY_TITLES if (vault / f"{name}.md").is_file()]
    for folder in ("projects", "people"):
        if (vault / folder).is_dir():
            out += sorted(
                f"{folder}/{p.name}" for p in (vault / folder).glob("*.md") if p.is_file()
            )
    return out


def _has_block(data: bytes) -> bool:
    return any(line.lstrip().startswith(b"<!-- om:begin") for line in data.splitlines())


def route(store: MemoryStore) -> RouteReport:
    """File observations into ``vault/``, rewriting only the pages whose bytes change."""
    report = RouteReport()
    with store.lock():
        ledger: dict[str, Provenance] = store.provenance()
        projects = {obs_id: prov.project for obs_id, prov in ledger.items()}
        blocks, report.observations_routed = plan_pages(_all_observations(store), projects)
        vault = store.vault_dir
        for name in _existing_pages(vault):
            # A page nothing is filed on any more keeps its hand-written part and an empty
            # block; a page om never wrote (no markers) is not touched at all.
            if name not in blocks and _has_block(store.read_bytes(vault / name)):
                blocks[name] = ("", [])  # the title only serves a file that does not exist
        for name in sorted(blocks):
            path = vault / name
            old = store.read_bytes(path)
            title, lines = blocks[name]
            new = replace_block(old, lines, title)
            if new != old:
                atomic_write(path, new)
                report.pages_written.append(store.relative(path))
    return report

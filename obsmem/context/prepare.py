"""Preparing the startup context after observe and reflect: ``profile.md``, ``active.md`` and
``context.json``.

``profile.md`` holds what is stable (who the user is, their preferences, working style, key
facts); ``active.md`` what is current (projects worked on lately, where the last session stopped,
open loops, decisions, the last days' work). Both are markdown for people, with om's part between
two marker comments: whatever else is in the file (hand edits, the original tool's content) is
kept byte for byte and also feeds the context. Each generated part stays within its token budget
(``OM_PROFILE_TOKENS``, ``OM_ACTIVE_TOKENS``) whatever the memory's size: the lines are chosen by
importance, recency and how many observations confirm them; everything else stays in
reflections.md and search. ``context.json`` is the same material as data, for ``om context``,
bounded too (the best lines of each section and project); ``context.rendered`` holds what
``om context`` prints from it for the requests a session start makes (``obsmem.context.rendered``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from obsmem.context import rendered
from obsmem.context.gather import (
    RECENT_DAYS,
    Candidate,
    completions_in,
    distinct,
    drop_closed,
    from_observations,
    from_sections,
    settled_cites,
    since,
)
from obsmem.context.startup import (
    ABOUT,
    ACTIVE,
    AGENTS,
    CHARS_PER_TOKEN,
    DECISIONS,
    LAST,
    LOOPS,
    RECENT,
    ContextEntry,
    build_context,
    hook_output,
    load_entries,
)
from obsmem.memory.atomic import atomic_write
from obsmem.memory.markdown import blank_generated, body, decode, encode, newline_of, split_lines
from obsmem.memory.store import MemoryStore
from obsmem.paths import ACTIVE_FILE, PROFILE_FILE, REFLECTIONS_FILE
from obsmem.settings import Settings, load_settings

__all__ = ["BEGIN", "END", "PreparedContext", "prepare_context", "replace_block"]

BEGIN = "<!-- om:begin generated: om rewrites what is between these markers; edit elsewhere -->"
END = "<!-- om:end generated -->"
#: context.json keeps this many of the best lines per section and project (what a briefing on
#: one project holds), fewer for projects beyond the few worked on lately ...
PER_GROUP = 10
PER_GROUP_QUIET = 4
PER_GROUP_ABOUT = 30
BUSY_PROJECTS = 5
#: ... and this many in all, so ``om context`` reads a small file whatever the memory's size.
MAX_ENTRIES = 1000
#: Projects listed in active.md's Current Projects.
MAX_PROJECTS = 10
#: Projects the startup context is rendered ahead for (those worked on last), besides "a
#: directory memory knows nothing of" and "no project".
RENDERED_PROJECTS = 12
_PROFILE_HEADINGS = ("Identity", "Preferences", "Working style", "Key facts")


@dataclass
class PreparedContext:
    """What ``prepare_context`` produced, and which files it rewrote."""

    entries: list[ContextEntry] = field(default_factory=list)
    written: list[str] = field(default_factory=list)


def replace_block(existing: bytes, block: list[str], title: str) -> bytes:
    """``existing`` with its generated block replaced by ``block`` (lines without endings).

    A file without markers keeps every line and gets the block appended; a missing file is
    created with ``title``. Only the lines between the markers ever change.
    """
    text, _ = decode(existing)
    lines = split_lines(text)
    nl = newline_of(lines)
    new_block = [BEGIN + nl, *(line + nl for line in block), END + nl]
    starts = [i for i, line in enumerate(lines) if body(line).strip().startswith("<!-- om:begin")]
    ends = [i for i, line in enumerate(lines) if body(line).strip().startswith("<!-- om:end")]
    if starts and ends and ends[-1] > starts[0]:
        return encode("".join(lines[: starts[0]] + new_block + lines[ends[-1] + 1 :]))
    if not lines:
        return encode("".join([f"# {title}{nl}", nl, *new_block]))
    if not lines[-1].endswith("\n"):
        lines[-1] += nl
    return encode("".join([*lines, nl, *new_block]))


def tokens(lines: Iterable[str]) -> int:
    """The tokens ``lines`` take (about four characters a token, as ``om context`` counts)."""
    return sum(len(line) // CHARS_PER_TOKEN + 1 for line in lines)


def _rank(entry: ContextEntry, anchors: Mapping[str | None, str]) -> float:
    """How much a line deserves its place: importance, confirmations, and recency measured from
    its project's last activity (so an old project's last days still rank as recent)."""
    score = entry.importance + 0.05 * min(entry.seen - 1, 4)
    anchor = anchors.get(entry.project) or anchors.get(None)
    if entry.date and anchor:
        try:
            age = (date.fromisoformat(anchor) - date.fromisoformat(entry.date[:10])).days
        except ValueError:
            age = 30
        # What the user is and prefers stays true: there recency only breaks ties.
        weight = 0.15 if entry.section == ABOUT else 0.4
        score += weight * math.exp(-max(age, 0) / 7)
    return score


def _anchors(entries: Iterable[ContextEntry], today: date) -> dict[str | None, str]:
    out: dict[str | None, str] = {}
    for entry in entries:
        day = (entry.date or "")[:10]
        if not day or day > today.isoformat():
            continue
        for key in (entry.project, None):
            if day > out.get(key, ""):
                out[key] = day
    return out


def _group(entry: ContextEntry) -> tuple[str, str]:
    return entry.section, (entry.project or "").casefold()


def _capped(
    candidates: list[Candidate], rank: Mapping[int, float], factor: int = 1
) -> list[Candidate]:
    """The best lines of each section and project, fewer for projects not touched lately (and
    no more than ``MAX_ENTRIES``), so ``om context`` reads a small file at any memory size;
    ``factor`` times as many for a first cut (before de-duplication drops some)."""
    last: dict[str, str] = {}
    for candidate in candidates:
        project, day = _group(candidate.entry)[1], candidate.entry.date or ""
        if project and day > last.get(project, ""):
            last[project] = day
    lately = set(sorted(last, key=lambda p: (last[p], p), reverse=True)[:BUSY_PROJECTS])
    order = sorted(range(len(candidates)), key=lambda i: -rank[i])
    counts: dict[tuple[str, str], int] = {}
    keep: set[int] = set()
    for i in order:
        entry = candidates[i].entry
        group = _group(entry)
        if entry.section == ABOUT:
            limit = PER_GROUP_ABOUT
        elif not group[1] or group[1] in lately:
            limit = PER_GROUP
        else:
            limit = PER_GROUP_QUIET
        if counts.get(group, 0) >= limit * factor or len(keep) >= MAX_ENTRIES * factor:
            continue
        counts[group] = counts.get(group, 0) + 1
        keep.add(i)
    return [c for i, c in enumerate(candidates) if i in keep]


def _fill(groups: list[list[str]], titles: list[str], budget: int) -> list[list[str]]:
    """Lines taken from ``groups`` (each best first, each shown under its title) in turn, one
    at a time, while the block's tokens stay within ``budget``: every group gets its best lines
    before any gets its tenth. A line that does not fit is passed over (a shorter one may)."""
    taken: list[list[str]] = [[] for _ in groups]
    cursors = [0] * len(groups)
    used = 0
    while any(c < len(lines) for c, lines in zip(cursors, groups, strict=True)):
        for g, lines in enumerate(groups):
            if cursors[g] >= len(lines):
                continue
            line = lines[cursors[g]]
            cursors[g] += 1
            # A group's first line brings its heading and the blank lines around it.
            cost = tokens([line] if taken[g] else [line, "", f"## {titles[g]}", "", ""])
            if used + cost <= budget:
                taken[g].append(line)
                used += cost
    return taken


def _render_profile(items: list[Candidate], budget: int) -> list[str]:
    headings = list(dict.fromkeys([*_PROFILE_HEADINGS, *(c.heading for c in items)]))
    groups = [[f"- {c.entry.text}" for c in items if c.heading == h] for h in headings]
    lines: list[str] = []
    for heading, taken in zip(headings, _fill(groups, headings, budget), strict=True):
        if taken:
            lines += ["", f"## {heading}", "", *taken]
    return lines[1:] if lines else ["_Nothing known yet._"]


def _about(first: list[Candidate], anchors: Mapping[str | None, str]) -> list[Candidate]:
    """om's lines about the user for profile.md, best first, each said once among themselves.

    Not the context's cut: there a preference that the last session's active task repeats goes
    (the task is shown), but profile.md does not show the task, so there it must stay."""
    about = [c for c in first if c.entry.section == ABOUT]
    rank = {i: _rank(c.entry, anchors) for i, c in enumerate(about)}
    about = distinct(about, rank)
    return sorted((c for c in about if not c.hand), key=lambda c: -_rank(c.entry, anchors))


def _label(entry: ContextEntry) -> str:
    return f"[{entry.project}] " if entry.project else ""


def _render_active(
    items: list[Candidate], anchors: Mapping[str | None, str], budget: int
) -> list[str]:
    entries = [c.entry for c in items]
    projects = sorted((p for p in anchors if p), key=lambda p: (anchors[p], p), reverse=True)[
        :MAX_PROJECTS
    ]
    listed = [f"- **{p}** (last active {anchors[p]})" for p in projects]
    last = [e for e in entries if e.section == LAST]
    latest = max(last, key=lambda e: e.date or "", default=None)
    last_lines = [f"- {e.text}" for e in last if latest is not None and e.project == latest.project]
    loops = [f"- {e.date}: {_label(e)}{e.text} ^{e.id}" for e in entries if e.section == LOOPS]
    decisions = [f"- {e.date or ''}: {_label(e)}{e.text}".replace("- : ", "- ", 1)
                 for e in entries if e.section == DECISIONS]  # fmt: skip
    recent = [
        f"- {e.date}: {_label(e)}{e.text}"
        for e in entries
        if e.section == RECENT and e.observed and e.date and e.date >= _recent_start(e, anchors)
    ]
    titles = ["Current Projects", "Last Time", "Open Loops", "Decisions", "Last Days"]
    if latest is not None:
        where = f"{latest.project}, " if latest.project else ""
        titles[1] = f"Last Time ({where}{latest.date})"
    groups = [listed, last_lines, loops, decisions, recent]
    lines: list[str] = []
    for title, taken in zip(titles, _fill(groups, titles, budget), strict=True):
        if taken:
            lines += [f"## {title}", "", *taken, ""]
    return lines[:-1] if lines else ["_Nothing active yet._"]


def _recent_start(entry: ContextEntry, anchors: Mapping[str | None, str]) -> str:
    anchor = anchors.get(entry.project) or anchors.get(None) or ""
    return since(anchor, RECENT_DAYS) if anchor else ""


def prepare_context(
    store: MemoryStore, today: date | None = None, settings: Settings | None = None
) -> PreparedContext:
    """Regenerate ``profile.md``, ``active.md`` and ``context.json`` from memory (under the lock).

    Files are rewritten only when their content changes, so an idle run touches nothing.
    """
    today = today or date.today()
    settings = settings or load_settings()
    result = PreparedContext()
    with store.lock():
        profile_path, active_path = store.home / PROFILE_FILE, store.home / ACTIVE_FILE
        profile_bytes, active_bytes = store.read_bytes(profile_path), store.read_bytes(active_path)
        doc = store.read_observations()
        projects = {key: prov.project for key, prov in store.provenance().items()}
        types = {obs.id: obs.type for obs in doc.observations}
        texts = {obs.id: obs.text for obs in doc.observations}
        reflections = store.read_bytes(store.home / REFLECTIONS_FILE)
        candidates = from_sections(
            reflections,
            "reflections",
            (RECENT, 0.4, ""),
            projects,
            types,
        )
        candidates += from_sections(
            blank_generated(profile_bytes), "profile", (ABOUT, 0.8, "Notes"), projects, types
        )
        candidates += from_sections(
            blank_generated(active_bytes), "active", (ACTIVE, 0.6, ""), projects, types
        )
        candidates += from_observations(
            doc, projects, today, settled_cites(reflections, types, texts)
        )
        candidates = drop_closed(candidates, completions_in(doc.observations, projects))
        anchors = _anchors((c.entry for c in candidates), today)
        # A first cut keeps de-duplication's work bounded however many lines memory holds.
        rank = {i: _rank(c.entry, anchors) for i, c in enumerate(candidates)}
        first = _capped(candidates, rank, factor=3)
        rank = {i: _rank(c.entry, anchors) for i, c in enumerate(first)}
        kept = distinct(first, rank)
        rank = {i: _rank(c.entry, anchors) for i, c in enumerate(kept)}
        kept = _capped(kept, rank)
        best = sorted(kept, key=lambda c: -_rank(c.entry, anchors))
        generated = {
            profile_path: replace_block(
                profile_bytes,
                _render_profile(_about(first, anchors), settings.profile_tokens),
                "Profile",
            ),
            active_path: replace_block(
                active_bytes,
                _render_active(
                    [c for c in best if not c.hand],
                    _project_anchors(kept, today),
                    settings.active_tokens,
                ),
                "Active",
            ),
        }
        for path, data in generated.items():
            if data != store.read_bytes(path):
                atomic_write(path, data)
                result.written.append(path.name)
        entries = [c.entry for c in kept]
        payload = {
            "version": 2,
            "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "entries": [_compact(e) for e in entries],
        }
        # Bytes that were not UTF-8 in a memory file (kept there as they are) become U+FFFD here:
        # the context is printed into an agent's session and must be clean text.
        encoded = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "replace"
        )
        old = store.read_bytes(store.context_path)
        ahead = store.rendered_context_path
        if _without_stamp(old) != _without_stamp(encoded):
            # Gone first: a crash between the two writes must not leave it over another source.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ahead)
            atomic_write(store.context_path, encoded)
            result.written.append(store.context_path.name)
        ready = render_ahead(store.context_path)
        if ready is not None and ready != store.read_bytes(ahead):
            atomic_write(ahead, ready)
    result.entries = entries
    return result


def render_ahead(source: Path) -> bytes | None:
    """The ``context.rendered`` file for the ``context.json`` at ``source``: what ``om context``
    prints for each agent at the default budget, today and tomorrow, for the projects worked on
    last, for a directory memory knows nothing of and for no project; None when ``source``
    changed while being read. It is rendered from the file as ``om context`` reads it, so the
    two agree."""
    today = date.fromisoformat(rendered.local_day())
    try:
        identity = rendered.source_identity(str(source))
        entries, _ = load_entries(source)
        if rendered.source_identity(str(source)) != identity:
            return None
    except OSError:
        return None
    last: dict[str, str] = {}
    for entry in entries:
        if entry.project and entry.project != rendered.UNKNOWN:
            last[entry.project] = max(last.get(entry.project, ""), entry.date or "")
    projects: list[str | None] = [None]
    if not any(rendered.UNKNOWN in e.text.casefold() or e.project == rendered.UNKNOWN
               for e in entries):  # fmt: skip
        projects.append(rendered.UNKNOWN)  # (a NUL in memory, never in practice: no stranger's)
    projects += sorted(last, key=lambda p: (last[p], p), reverse=True)[:RENDERED_PROJECTS]
    outputs: dict[tuple[str, str, str | None], str] = {}
    # Tomorrow's too: the first session of a day mostly starts before anything is observed.
    for day in (today, today + timedelta(days=1)):
        for project in projects:
            text = build_context(entries, project=project, today=day)
            for agent in AGENTS:
                outputs[day.isoformat(), agent, project] = hook_output(agent, text)
    return rendered.encode(
        rendered.DEFAULT_BUDGET,
        identity,
        outputs,
        (e.text for e in entries),
        (e.project for e in entries if e.project),
    )


def _project_anchors(kept: list[Candidate], today: date) -> dict[str | None, str]:
    """Each project's last day, from what was observed (reflections' "seen" dates excluded)."""
    return _anchors((c.entry for c in kept if c.entry.observed or c.entry.section == LAST), today)


_DEFAULTS = ContextEntry("", "").as_dict()


_ALWAYS = ("section", "text", "importance", "date", "project", "id")


def _compact(entry: ContextEntry) -> dict[str, object]:
    """The entry as context.json keeps it: the first format's fields always, the others only
    when they differ from their defaults (a smaller file for every session start to read)."""
    data = entry.as_dict()
    return {k: v for k, v in data.items() if k in _ALWAYS or v != _DEFAULTS[k]}


def _without_stamp(data: bytes) -> object:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if isinstance(value, dict):
        value.pop("generated_at", None)
    return value

"""Preparing the startup context after observe and reflect: ``profile.md``, ``active.md`` and
``context.json``.

``profile.md`` holds what is stable (who the user is, their preferences, working style, key
facts); ``active.md`` what is current (projects worked on lately, open loops, the last days'
important observations). Both are markdown for people, with om's part between two marker
comments: whatever else is in the file (hand edits, the original tool's content) is kept byte for
byte and also feeds the context. ``context.json`` is the same material as data, for ``om context``.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta

from obsmem.context.startup import ContextEntry
from obsmem.memory.atomic import atomic_write
from obsmem.memory.markdown import blank_generated, body, decode, encode, newline_of, split_lines
from obsmem.memory.model import Observation
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import MemoryStore
from obsmem.observe.scoring import Deduper
from obsmem.paths import ACTIVE_FILE, PROFILE_FILE, REFLECTIONS_FILE

__all__ = ["BEGIN", "END", "PreparedContext", "prepare_context", "replace_block"]

# The reflector's "(seen 2026-11-28; ^id1, ^id2)" tail: provenance for people, noise in a prompt.
_CITATION = re.compile(r"\s*\((?:seen [^;)]*;\s*)?\^[0-9a-z]{6,16}(?:,\s*\^[0-9a-z]{6,16})*\)\s*$")

BEGIN = "<!-- om:begin generated: om rewrites what is between these markers; edit elsewhere -->"
END = "<!-- om:end generated -->"
RECENT_DAYS = 3
LOOP_DAYS = 14

#: reflections.md sections (the original tool's names) -> (context section, importance, heading)
_REFLECTION_SECTIONS: dict[str, tuple[str, float, str]] = {
    "core identity": ("About the user", 0.9, "Identity"),
    "preferences & opinions": ("About the user", 0.8, "Preferences"),
    "relationship & communication": ("About the user", 0.7, "Working style"),
    "key facts & context": ("About the user", 0.65, "Key facts"),
    "active projects": ("Active projects", 0.7, ""),
    "recent themes": ("Recent", 0.5, ""),
}


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


def _from_sections(
    data: bytes, kind: str, default: tuple[str, float, str]
) -> list[tuple[ContextEntry, str]]:
    """Context entries (with their profile heading) from a sectioned file's lines."""
    out: list[tuple[ContextEntry, str]] = []
    for entry in parse_sections(data, kind=kind).entries:
        top, _, sub = entry.section.partition(" / ")
        if top.strip().lower() in ("archive", "dormant"):
            continue  # what the reflector set aside is not worth a session's attention
        section, importance, heading = _REFLECTION_SECTIONS.get(top.strip().lower(), default)
        project = sub.strip() or None if section == "Active projects" else None
        text = _CITATION.sub("", entry.text.lstrip("🔴🟡🟢✅ ")).strip()
        if not text or text.startswith("<!--"):
            continue
        if section == "Active projects" and project:
            text = f"{project}: {text}"
        out.append(
            (
                ContextEntry(
                    section, text, entry.importance or importance, entry.date, project, entry.id
                ),
                heading or top.strip(),
            )
        )
    return out


def _from_observations(
    observations: list[Observation], projects: dict[str, str | None], today: date
) -> list[ContextEntry]:
    out: list[ContextEntry] = []
    loops_since = (today - timedelta(days=LOOP_DAYS)).isoformat()
    recent_since = (today - timedelta(days=RECENT_DAYS)).isoformat()
    for obs in observations:
        if obs.date < loops_since:
            continue
        project = projects.get(obs.id)
        entry = None
        if obs.type == "preference" and obs.importance >= 0.6:
            entry = ContextEntry(
                "About the user", obs.text, obs.importance, obs.date, None, obs.id, True
            )
        elif obs.type == "commitment" and not obs.completed and obs.importance >= 0.4:
            entry = ContextEntry(
                "Open loops", obs.text, obs.importance, obs.date, project, obs.id, True
            )
        elif obs.importance >= 0.8 or (obs.date >= recent_since and obs.importance >= 0.4):
            entry = ContextEntry(
                "Recent", obs.text, obs.importance, obs.date, project, obs.id, True
            )
        if entry is not None:
            out.append(entry)
    return out


def _distinct(entries: list[ContextEntry]) -> list[ContextEntry]:
    """Entries without near-repeats (the same fact in reflections, profile and observations),
    the most important copy kept, original order otherwise preserved."""
    deduper = Deduper()
    keep: set[int] = set()
    for index in sorted(range(len(entries)), key=lambda i: -entries[i].importance):
        if not deduper.is_duplicate(entries[index].text):
            deduper.remember(entries[index].text)
            keep.add(index)
    return [entry for index, entry in enumerate(entries) if index in keep]


def _render_profile(items: list[tuple[ContextEntry, str]]) -> list[str]:
    groups: dict[str, list[str]] = {}
    for entry, heading in items:
        groups.setdefault(heading, []).append(entry.text)
    lines: list[str] = []
    for heading in ("Identity", "Preferences", "Working style", "Key facts", *groups):
        if groups.get(heading):
            lines += [
                "",
                f"## {heading}",
                "",
                *(f"- {t}" for t in dict.fromkeys(groups.pop(heading))),
            ]
    return lines[1:] if lines else ["_Nothing known yet._"]


def _render_active(entries: list[ContextEntry], today: date) -> list[str]:
    lines: list[str] = []
    projects: dict[str, list[ContextEntry]] = {}
    for entry in entries:
        if entry.project and entry.section in ("Recent", "Open loops", "Active projects"):
            projects.setdefault(entry.project, []).append(entry)
    if projects:
        lines += ["## Current Projects", ""]
        for name, items in sorted(
            projects.items(), key=lambda kv: max(e.date or "" for e in kv[1]), reverse=True
        ):
            last = max((e.date or "" for e in items), default="")
            lines.append(f"- **{name}**" + (f" (last active {last})" if last else ""))
        lines.append("")
    loops = [e for e in entries if e.section == "Open loops"]
    if loops:
        lines += ["## Open Loops", "", *(f"- {e.date}: {e.text} ^{e.id}" for e in loops), ""]
    since = (today - timedelta(days=RECENT_DAYS)).isoformat()
    recent = [e for e in entries if e.section == "Recent" and (e.date or "") >= since]
    if recent:
        lines += ["## Last Days", "", *(f"- {e.date}: {e.text}" for e in recent), ""]
    return lines[:-1] if lines else ["_Nothing active yet._"]


def prepare_context(store: MemoryStore, today: date | None = None) -> PreparedContext:
    """Regenerate ``profile.md``, ``active.md`` and ``context.json`` from memory (under the lock).

    Files are rewritten only when their content changes, so an idle run touches nothing.
    """
    today = today or date.today()
    result = PreparedContext()
    with store.lock():
        profile_path, active_path = store.home / PROFILE_FILE, store.home / ACTIVE_FILE
        profile_bytes, active_bytes = store.read_bytes(profile_path), store.read_bytes(active_path)
        about: list[tuple[ContextEntry, str]] = []
        about += _from_sections(
            store.read_bytes(store.home / REFLECTIONS_FILE), "reflections", ("Recent", 0.4, "")
        )
        hand_profile = _from_sections(
            blank_generated(profile_bytes), "profile", ("About the user", 0.8, "Notes")
        )
        hand_active = [
            e
            for e, _ in _from_sections(
                blank_generated(active_bytes), "active", ("Active projects", 0.6, "")
            )
        ]
        ledger = store.provenance()
        projects = {key: prov.project for key, prov in ledger.items()}
        observed = _from_observations(store.read_observations().observations, projects, today)
        entries = _distinct(
            [e for e, _ in about] + [e for e, _ in hand_profile] + hand_active + observed
        )
        profile_items = [(e, h) for e, h in about if e.section == "About the user"]
        profile_items += [(e, "Preferences") for e in observed if e.section == "About the user"]
        generated = {
            profile_path: replace_block(profile_bytes, _render_profile(profile_items), "Profile"),
            active_path: replace_block(active_bytes, _render_active(observed, today), "Active"),
        }
        for path, data in generated.items():
            if data != store.read_bytes(path):
                atomic_write(path, data)
                result.written.append(path.name)
        payload = {
            "version": 1,
            "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "entries": [asdict(e) for e in entries],
        }
        # Bytes that were not UTF-8 in a memory file (kept there as they are) become U+FFFD here:
        # the context is printed into an agent's session and must be clean text.
        encoded = json.dumps(payload, ensure_ascii=False, indent=0).encode("utf-8", "replace")
        old = store.read_bytes(store.context_path)
        if _without_stamp(old) != _without_stamp(encoded):
            atomic_write(store.context_path, encoded)
            result.written.append(store.context_path.name)
    result.entries = entries
    return result


def _without_stamp(data: bytes) -> object:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if isinstance(value, dict):
        value.pop("generated_at", None)
    return value

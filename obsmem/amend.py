"""Correcting one observation by hand: its importance or its type (the viewer's "edit" form).

The observation keeps its id and its text; only its tag changes (and its priority emoji, which
follows the importance, unless the line is marked done). The line is rewritten where it is, in
``observations.md`` or in an archive month, under the memory lock and atomically, with the same
guard against a file saved meanwhile as every other write of the store. What is derived from
importance and type (the startup context, the vault pages, the index) is brought up to date
afterwards, as after an observe.

An observation that continues over several lines (indented text under its bullet, as people
write them) keeps those lines as they are: the tag is on the bullet's line, so only that line is
rewritten, with its own part of the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from obsmem.derived import update_derived
from obsmem.errors import NotFound, UsageError
from obsmem.memory import guard
from obsmem.memory.atomic import atomic_write
from obsmem.memory.ledger import append_observations
from obsmem.memory.lines import parse_observation, render_observation
from obsmem.memory.markdown import BULLET, body, decode, encode, split_lines
from obsmem.memory.model import OBSERVATION_TYPES, Observation, priority_for
from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore

__all__ = ["Amended", "amend"]


@dataclass
class Amended:
    """What ``amend`` changed: the observation as it now reads, the file and line it is on."""

    id: str
    file: str
    line: int
    before: str
    after: str
    problems: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """False when the line already said what was asked."""
        return self.before != self.after


def _find(store: MemoryStore, entry_id: str) -> tuple[Path, list[str], Observation] | None:
    for path in store.observation_files():
        data = store.read_bytes(path)
        if not data:
            continue
        for obs in parse_observations(data).observations:
            if obs.id == entry_id:
                return path, split_lines(decode(data)[0]), obs
    return None


def _amended(obs: Observation, importance: float | None, type_: str | None) -> Observation:
    new_importance = obs.importance if importance is None else importance
    priority = "✅" if obs.completed else priority_for(new_importance)
    return replace(
        obs,
        importance=new_importance,
        type=type_ or obs.type or "fact",
        priority=priority,
        tagged=True,
    )


def _own_text(line: str, obs: Observation) -> str:
    """The text of ``obs`` that its bullet's ``line`` holds, without the lines continuing it."""
    bullet = BULLET.match(body(line))
    assert bullet is not None  # the parser found an observation on this line
    head, _ = parse_observation(bullet.group("rest"), date=obs.date, depth=0,
                                line=obs.line or 0, raw=line)  # fmt: skip
    return head.text


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def amend(
    store: MemoryStore,
    entry_id: str,
    *,
    importance: float | None = None,
    type: str | None = None,  # the field's name in the data model
) -> Amended:
    """Set the importance and/or the type of the observation ``entry_id``; return what changed.

    Raises ``UsageError`` for nothing to change, an unknown type or an importance outside 0..1,
    ``NotFound`` when no observation has that id (reflections and vault lines are derived: change
    the observation they cite).
    """
    if importance is None and type is None:
        raise UsageError("nothing to change", "give a new importance, a new type, or both")
    if type is not None and type not in OBSERVATION_TYPES:
        raise UsageError(f"unknown type {type!r}", f"use one of {', '.join(OBSERVATION_TYPES)}")
    if importance is not None and not 0.0 <= importance <= 1.0:
        raise UsageError(f"importance {importance:g} is outside 0..1", "give a value from 0 to 1")
    wanted = entry_id.strip()

    def step() -> Amended:
        found = _find(store, wanted)
        if found is None:
            raise NotFound(
                f"no observation has the id {wanted!r}",
                "find ids with `om search`; reflections change with the observations they cite",
            )
        path, lines, obs = found
        assert obs.line is not None
        before = lines[obs.line - 1]
        indent = before[: len(before) - len(before.lstrip())]
        new = _amended(obs, importance, type)
        # The bullet's line with the text it holds itself (all of it, unless lines continue it);
        # a "(meaning ...)" is in that text already, or on a line kept as it is.
        own = replace(new, depth=0, text=_own_text(before, obs), referenced_date=None)
        rendered = render_observation(own)
        after = indent + rendered + _ending(before)
        result = Amended(wanted, store.relative(path), obs.line, before.rstrip("\r\n"),
                         after.rstrip("\r\n"))  # fmt: skip
        if result.changed:
            # The ledger first, as every write of the store: the line it keeps for
            # `om doctor --restore` is then the corrected one, with the same provenance.
            known = store.provenance().get(wanted)
            append_observations(store.ledger_path, [replace(new, provenance=known)])
            lines[obs.line - 1] = after
            atomic_write(path, encode("".join(lines)))
        return result

    with store.lock():
        result = guard.retry_changed(step)
    if result.changed:
        # Importance and type decide what the startup context and the vault pages hold; a
        # failure there loses nothing (the line is written) and is reported.
        result.problems = update_derived(store)
    return result

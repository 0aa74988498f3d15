"""Observations that were written to memory and are gone from it, and putting them back.

No lock keeps an editor from saving a stale buffer over ``observations.md``: the lines om wrote
after the editor loaded the file are then gone. The ledger keeps each observation's day and line
and notes which ids reached the markdown (``obsmem.memory.ledger``), so ``om doctor`` can list
the ids found in neither ``observations.md`` nor ``archive/`` and ``om doctor --restore`` puts
them back where they belong, with their ids and provenance. Ids forgotten on purpose (a
``forgotten`` tombstone in the ledger) are never reported nor restored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from obsmem.memory.ledger import forgotten_ids, read_journal
from obsmem.memory.model import Observation
from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore

__all__ = ["MissingReport", "check_missing", "find_missing", "restore_missing"]

Verdict = Literal["ok", "fail", "repaired"]


@dataclass
class MissingReport:
    """Ids the ledger saw written to memory that memory no longer holds."""

    missing: list[str] = field(default_factory=list)
    restorable: list[str] = field(default_factory=list)  # those whose line the ledger keeps
    restored: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)


def _present(store: MemoryStore) -> set[str]:
    return {i for path in store.observation_files() for i in store.read_observations(path).ids()}


def find_missing(store: MemoryStore) -> MissingReport:
    """The ids written to memory that are in neither ``observations.md`` nor the archive."""
    journal = read_journal(store.ledger_path)
    known = journal.written - set(forgotten_ids(store.ledger_path))
    report = MissingReport()
    if not known:
        return report
    report.missing = sorted(known - _present(store))
    report.restorable = [i for i in report.missing if i in journal.lines]
    return report


def _observation(date: str, line: str) -> Observation | None:
    doc = parse_observations(f"## {date}\n\n### Observations\n\n{line.lstrip()}\n")
    found = doc.observations
    return dataclasses.replace(found[0], depth=0) if found else None


def restore_missing(store: MemoryStore) -> MissingReport:
    """Put every restorable missing observation back into ``observations.md`` (under its day,
    with its id and provenance); the report's ``restored`` lists them."""
    with store.lock():
        report = find_missing(store)
        if not report.restorable:
            return report
        journal = read_journal(store.ledger_path)
        provenance = store.provenance()
        batch: list[Observation] = []
        for obs_id in report.restorable:
            date, line = journal.lines[obs_id]
            obs = _observation(date, line)
            if obs is not None and obs.id == obs_id:
                batch.append(dataclasses.replace(obs, provenance=provenance.get(obs_id)))
        report.restored = [o.id for o in store.add_observations(batch, again=True)]
    return report


def check_missing(store: MemoryStore, *, restore: bool = False) -> tuple[Verdict, str, str]:
    """``om doctor``'s verdict on lost observations: ``(verdict, detail, fix)``; with
    ``restore`` the lost ones are put back first."""
    report = restore_missing(store) if restore else find_missing(store)
    left = len(report.missing) - len(report.restored)
    if report.restored and not left:
        return "repaired", f"put back {len(report.restored)} observation(s) missing from memory", ""
    if not report.missing:
        return "ok", "every observation the ledger saw written is in memory or the archive", ""
    if report.restored:
        detail = f"put back {len(report.restored)}; {left} missing ones have no line to restore"
        return "fail", detail, "they were written before om kept lines in the ledger"
    detail = (
        f"{len(report.missing)} observations known to the ledger are missing from memory: "
        "om doctor --restore puts them back"
    )
    if len(report.restorable) < len(report.missing):
        detail += f" ({len(report.restorable)} of them can be)"
    return "fail", detail, "run: om doctor --restore"

"""Archive, never delete: old days move from ``observations.md`` to ``archive/observations/``.

A day section older than ``OM_ARCHIVE_AFTER_DAYS`` before the memory's last activity (the newest
observation day, in ``observations.md`` or the newest archive month, never after today: the
memory's own clock, ``obsmem.reflect.clock``), with its heading, Current Context, observations,
and any line om could not read) moves whole to ``archive/observations/YYYY-MM.md``, which uses the
same day-section layout and keeps its days in date order. The moved lines are copied byte for
byte; only the blank and ``---`` lines that separate days are layout and are not copied.

Crash safety, under the memory lock: every archive month is written first (atomically), then
``observations.md`` is rewritten without the moved days (atomically). A process killed between the
two leaves the day in both files. The next run finds every content line of that day already in the
archive month and only removes it from ``observations.md``: nothing is duplicated, nothing lost.
When an archived day gains observations later (a backfill of old transcripts), only the lines the
archive lacks are added, as a second section for that day right after the first.

The index covers ``archive/**`` (kind ``archive``), so archived observations stay searchable.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from obsmem.memory.atomic import atomic_write
from obsmem.memory.guard import retry_changed
from obsmem.memory.markdown import body, encode, heading, newline_of
from obsmem.memory.observations import Day, ObservationsDoc, parse_observations, parse_shared
from obsmem.memory.store import MemoryStore
from obsmem.settings import Settings

__all__ = [
    "ArchiveReport",
    "MonthFile",
    "archive_observations",
    "archive_path",
    "archived_ids",
    "insert_day",
    "memory_activity",
    "merge_day",
]

OBSERVATIONS_ARCHIVE = "observations"


@dataclass
class ArchiveReport:
    """What archiving did (or, for a dry run, would do)."""

    cutoff: str = ""  # days before this one are archived
    last_activity: str = ""  # the memory's newest observation day (capped at today)
    days: list[str] = field(default_factory=list)  # moved out of observations.md
    observations: int = 0
    recovered: list[str] = field(default_factory=list)  # already in the archive (a crash)
    files: list[str] = field(default_factory=list)  # archive months written, relative paths

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def archive_path(store: MemoryStore, kind: str, month: str) -> Path:
    """``archive/<kind>/<YYYY-MM>.md``."""
    return store.archive_dir / kind / f"{month}.md"


def archived_ids(store: MemoryStore) -> set[str]:
    """The id of every observation in ``archive/observations/``."""
    folder = store.archive_dir / OBSERVATIONS_ARCHIVE
    out: set[str] = set()
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            out |= store.read_observations(path, shared=True).ids()
    return out


def _is_layout(line: str) -> bool:
    return body(line).strip() in ("", "---")


def _is_structure(line: str) -> bool:
    head = heading(body(line))
    return head is not None and head.level >= 2


def _content(lines: list[str]) -> list[str]:
    """The lines that carry memory (not blank, not a separator, not a heading), without endings."""
    return [body(x) for x in lines if not _is_layout(x) and not _is_structure(x)]


def _block(lines: list[str], day: Day, nl: str) -> list[str]:
    """A day's lines, without the separators after it; the last one ends with a line ending."""
    block = lines[day.start : day.end]
    while block and _is_layout(block[-1]):
        block.pop()
    if block and not block[-1].endswith("\n"):
        block[-1] += nl
    return block


def insert_day(lines: list[str], date_: str, block: list[str], nl: str, title: str) -> list[str]:
    """``lines`` of a day-sectioned file with the day section ``block`` placed in date order.

    It goes before the first later day (with a ``---`` separator), else at the end; a new file
    starts with ``title``.
    """
    doc = parse_observations("".join(lines))
    later = [d for d in doc.days if d.date > date_]
    if later:
        at = later[0].start
        return [*lines[:at], *block, nl, "---" + nl, nl, *lines[at:]]
    return _append(lines, block, nl, title, has_days=bool(doc.days))


def _append(
    lines: list[str], block: list[str], nl: str, title: str, *, has_days: bool
) -> list[str]:
    """``block`` at the end of ``lines``, after a ``---`` separator when days come before it."""
    if lines and not lines[-1].endswith("\n"):
        lines = [*lines[:-1], lines[-1] + nl]
    last = next((body(x).strip() for x in reversed(lines) if body(x).strip()), None)
    if last is None:
        return [*lines, title + nl, nl, *block]
    prefix: list[str] = [] if not body(lines[-1]).strip() else [nl]
    if has_days and last != "---":
        prefix += ["---" + nl, nl]
    return [*lines, *prefix, *block]


class MonthFile:
    """An archive month being edited: day sections merged in date order.

    The usual case, a day later than every day already there, is appended without parsing the
    file again (a year of backlog would otherwise parse each month once per day).
    """

    def __init__(self, lines: list[str], nl: str, title: str) -> None:
        self.original = list(lines)
        self.lines = list(lines)
        self.nl = nl
        self.title = title
        doc = parse_shared(encode("".join(lines)))  # usually the parse the caller just read
        self._dates = {d.date for d in doc.days}
        self._ids = doc.ids()

    @property
    def changed(self) -> bool:
        """True when the lines differ from what was read."""
        return self.lines != self.original

    def merge(self, date_: str, block: list[str], ids: set[str] | None = None) -> str:
        """Merge one day section; returns ``merge_day``'s outcome. ``ids``: its observations'
        ids, when the caller has them (else the block is parsed for them)."""
        if ids is None:
            ids = parse_observations("".join(block)).ids()
        later = not self._dates or (date_ not in self._dates and date_ > max(self._dates))
        if later and not ids & self._ids:
            self.lines = _append(self.lines, block, self.nl, self.title, has_days=bool(self._dates))
            outcome = "added"
        else:
            self.lines, outcome = merge_day(self.lines, date_, block, self.nl, self.title)
        self._dates.add(date_)
        self._ids |= ids
        return outcome


def merge_day(
    lines: list[str], date_: str, block: list[str], nl: str, title: str
) -> tuple[list[str], str]:
    """Merge the day section ``block`` into an archive file's ``lines``.

    Returns the new lines and what happened: ``"added"`` (a new day section), ``"present"``
    (every line already there: nothing to write) or ``"partial"`` (only the missing lines added,
    as a second section for that day). A line is already there when the same text is in that
    day, or when it belongs to an observation whose id the file holds (the same fact observed
    again after its day was archived keeps its first line, as ``with_added`` would).
    """
    doc = parse_observations("".join(lines))
    same = [d for d in doc.days if d.date == date_]
    known = _lines_of_known(block, doc.ids())
    if not same and not known:
        return insert_day(lines, date_, block, nl, title), "added"
    have = Counter(c for d in same for c in _content(lines[d.start : d.end]))
    missing: list[str] = []
    under: int | None = None  # the index of the ### heading the next missing line sits under
    emitted: int | None = None
    for index, line in enumerate(block[1:], start=1):
        if _is_structure(line):
            under = index
            continue
        if _is_layout(line) or index in known:
            continue
        if have[body(line)] > 0:
            have[body(line)] -= 1
            continue
        if under is not None and under != emitted:
            # The subsection heading goes along, so a context line stays a context line.
            missing += [nl, block[under], nl] if missing else [block[under], nl]
            emitted = under
        missing.append(line)
    if not missing:
        return lines, "present"
    extra = [block[0], nl, *missing]
    return insert_day(lines, date_, extra, nl, title), "partial" if same else "added"


def _lines_of_known(block: list[str], ids: set[str]) -> set[int]:
    """Indexes of the block's lines that belong to observations whose id is in ``ids``."""
    out: set[int] = set()
    for obs in parse_observations("".join(block)).observations:
        if obs.id in ids and obs.line is not None and obs.line_end is not None:
            out.update(range(obs.line - 1, obs.line_end))
    return out


def _valid_day(day: str) -> bool:
    try:
        date.fromisoformat(day)
    except ValueError:
        return False
    return True


def memory_activity(store: MemoryStore, doc: ObservationsDoc, today: date) -> date:
    """The memory's last activity: its newest observation day, in ``doc`` (observations.md) or
    in the newest archive month, never after ``today``; ``today`` for an empty memory."""
    days = [d.date for d in doc.days if d.observations and _valid_day(d.date)]
    folder = store.archive_dir / OBSERVATIONS_ARCHIVE
    months = sorted(folder.glob("*.md")) if folder.is_dir() else []
    if months:
        newest = store.read_observations(months[-1], shared=True).days
        days += [d.date for d in newest if d.observations and _valid_day(d.date)]
    if not days:
        return today
    return min(today, date.fromisoformat(max(days)))


def _report(
    store: MemoryStore, doc: ObservationsDoc, settings: Settings, today: date
) -> ArchiveReport:
    since = memory_activity(store, doc, today)
    cutoff = (since - timedelta(days=settings.archive_after_days)).isoformat()
    return ArchiveReport(cutoff=cutoff, last_activity=since.isoformat())


def archive_observations(
    store: MemoryStore, settings: Settings, *, today: date, dry_run: bool = False
) -> ArchiveReport:
    """Move the day sections older than ``OM_ARCHIVE_AFTER_DAYS`` before the memory's last
    activity (``memory_activity``) to the monthly archive files.

    With ``dry_run`` nothing is written; the report says what would move.
    """
    if dry_run:
        doc = store.read_observations(shared=True)
        report = _report(store, doc, settings, today)
        _plan(store, doc, report)
        return report

    def move() -> ArchiveReport:
        # Run again from the start when an editor saved a file meanwhile (guard.retry_changed):
        # the months already written then hold those days, which the merge recognises.
        doc = store.read_observations(shared=True)
        out = _report(store, doc, settings, today)
        months = _plan(store, doc, out)
        if not out.days:
            return out
        # Archive months first: a crash after this point leaves days in both places, which the
        # next run recognises; the other order could lose them.
        for path, data in months.items():
            atomic_write(path, data)
            out.files.append(store.relative(path))
        keep = _without_days(doc, {d.start for d in doc.days if d.date < out.cutoff})
        atomic_write(store.observations_path, encode("".join(keep)))
        return out

    with store.lock():
        return retry_changed(move)


def _without_days(doc: ObservationsDoc, starts: set[int]) -> list[str]:
    drop: set[int] = set()
    for d in doc.days:
        if d.start in starts:
            drop.update(range(d.start, d.end))
    return [line for i, line in enumerate(doc.lines) if i not in drop]


def _plan(store: MemoryStore, doc: ObservationsDoc, report: ArchiveReport) -> dict[Path, bytes]:
    """Fill ``report`` with the days to move; return the archive files' new bytes (changed only)."""
    nl = newline_of(doc.lines)
    old = [d for d in doc.days if d.date < report.cutoff]
    by_month: dict[str, list[Day]] = {}
    for d in old:
        by_month.setdefault(d.date[:7], []).append(d)
        report.days.append(d.date)
        report.observations += len(d.observations)
    out: dict[Path, bytes] = {}
    for month in sorted(by_month):
        path = archive_path(store, OBSERVATIONS_ARCHIVE, month)
        before = store.read_observations(path, shared=True).lines
        month_nl = newline_of(before) if before else nl
        target = MonthFile(before, month_nl, f"# Observations — archive {month}")
        for d in by_month[month]:
            ids = {o.id for o in d.observations}
            if target.merge(d.date, _block(doc.lines, d, month_nl), ids) == "present":
                report.recovered.append(d.date)
        if target.changed:
            out[path] = encode("".join(target.lines))
    return out

"""A month of synthetic observations, deterministic, shaped like an observer's output.

Every day brings a few decisions per project, a shipped milestone, an error, chores that should
not be promoted, and now and then a preference, a fact, a lesson, a pairing session or a note
about how the user likes to work, some of them seen again on later days. One decision is
contradicted later (Alembic, then Aerich). Texts are built from made-up words so that two
different facts never look like the same one to the similarity rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from itertools import product

from obsmem.memory.model import Observation, Provenance
from obsmem.memory.store import MemoryStore, new_observation

PROJECTS = ("atlas", "om", "billing")
_A = ("kal", "zor", "bri", "tes", "mun", "vad", "pel", "qui", "ros", "fen", "gal", "hob")
_B = ("mio", "vex", "dor", "lan", "tix", "rup", "sen", "gow", "bal", "nik")
_C = ("a", "o", "u", "en", "is")
#: Made-up words (600), none used twice in a month: tools, components, features.
WORDS = tuple(a + b + c for c, a, b in product(_C, _A, _B))

PREFERENCES = (
    "Prefers pytest with plain asserts over unittest classes",
    "Likes short imperative commit messages that explain why",
    "Wants type hints on every public function",
    "Prefers small pull requests reviewed within a day",
    "Dislikes ORMs that hide the generated SQL",
    "Prefers tabs for indentation in Makefiles only",
)
FACTS = (
    "The company runs its production services on AWS in eu-central-1",
    "Continuous integration runs on GitHub Actions with four parallel workers",
    "The team holds a standup every weekday at 09:30 CET",
    "Staging databases are reset every Sunday night",
    "Billing invoices are generated on the first day of each month",
)
RELATIONSHIP = (
    "Wants answers that lead with the command or the code",
    "Appreciates being told about risks before a change rather than after",
)
IDENTITY = (
    "User is a backend developer who works mostly in Python",
    "User is based in Berlin and usually starts work around 09:00",
)


@dataclass(frozen=True)
class Item:
    """One synthetic observation and the project it came from."""

    obs: Observation
    project: str | None


def _obs(
    text: str, day: date, time: str, type_: str, importance: float, project: str | None
) -> Item:
    prov = Provenance(path=f"/transcripts/{project or 'misc'}.jsonl", line_start=1, project=project)
    obs = new_observation(
        text,
        date=day.isoformat(),
        time=time,
        type=type_,
        importance=importance,
        confidence=0.9,
        provenance=prov,
    )
    return Item(obs, project)


def day_items(start: date, index: int) -> list[Item]:
    """The observations of the ``index``-th day after ``start`` (0-based)."""
    day = start + timedelta(days=index)
    words = iter(WORDS[index * 12 :])
    items: list[Item] = []
    for slot, project in enumerate(PROJECTS):
        tool, part = next(words), next(words)
        items.append(
            _obs(
                f"Chose {tool.title()} for {part} in {project}",
                day,
                f"09:{10 + slot}",
                "decision",
                0.85,
                project,
            )
        )
    feature = next(words)
    items.append(
        _obs(
            f"Shipped the {feature} feature to staging",
            day,
            "11:00",
            "milestone",
            0.8,
            PROJECTS[index % 3],
        )
    )
    broken = next(words)
    items.append(
        _obs(
            f"Error in {broken} module: connection refused during tests",
            day,
            "12:00",
            "error",
            0.8,
            PROJECTS[(index + 1) % 3],
        )
    )
    chore = next(words)
    items.append(_obs(f"Renamed a variable in {chore}", day, "13:00", "task", 0.3, None))
    items.append(_obs(f"Read the changelog of {next(words)}", day, "13:30", "event", 0.2, None))
    if index % 3 == 0:
        text = PREFERENCES[(index // 3) % len(PREFERENCES)]
        items.append(_obs(text, day, "14:00", "preference", 0.6, None))
    if index % 2 == 1:
        text = FACTS[(index // 2) % len(FACTS)]
        items.append(_obs(text, day, "15:00", "fact", 0.5, None))
    if index % 2 == 0:
        items.append(
            _obs(
                f"Lesson: always pin {next(words)} before upgrading",
                day,
                "16:00",
                "lesson",
                0.85,
                None,
            )
        )
    if index % 4 == 1:
        text = RELATIONSHIP[(index // 4) % len(RELATIONSHIP)]
        items.append(_obs(text, day, "17:00", "relationship", 0.7, None))
    if index % 5 in (0, 1):
        # A theme of two days in a row: promoted 🟡, so it ages out to ## Archive.
        topic = WORDS[-1 - index // 5]
        items.append(
            _obs(
                f"Pairing session about {topic} with the platform team",
                day,
                "18:00",
                "event",
                0.6,
                None,
            )
        )
    if index in (0, 9):
        for n, text in enumerate(IDENTITY):
            items.append(_obs(text, day, f"08:0{n}", "fact", 0.9, None))
    if index == 4:
        items.append(
            _obs(
                "Uses Alembic for database migrations in billing",
                day,
                "10:00",
                "decision",
                0.85,
                "billing",
            )
        )
    if index == 15:
        items.append(
            _obs(
                "Uses Aerich for database migrations in billing",
                day,
                "10:00",
                "decision",
                0.85,
                "billing",
            )
        )
    return items


def add_day(store: MemoryStore, start: date, index: int) -> list[Observation]:
    """Write the ``index``-th day's observations (with provenance) to ``store``."""
    return store.add_observations(item.obs for item in day_items(start, index))

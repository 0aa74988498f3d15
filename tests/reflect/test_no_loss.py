"""No path loses an observation: random sequences of observe, reflect, archive and crashes.

After every step, every observation id ever written is in ``observations.md``, in
``archive/observations/``, or cited by ``reflections.md`` / ``archive/reflections/``; no id is
twice in the archive. After an archive that ran to its end, no day older than its cutoff is left in
``observations.md`` (so nothing stays in both places), and after a reflection that ran to its end
no reflection line exists twice.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from contextlib import suppress
from datetime import date, timedelta
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import obsmem.reflect.archive as archive_module
import obsmem.reflect.offline as offline_module
from obsmem.errors import MemoryFileError
from obsmem.memory.model import Provenance
from obsmem.memory.observations import parse_observations
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.reflect.archive import archive_observations
from obsmem.reflect.offline import reflect
from obsmem.reflect.reflections import ReflectionsDoc
from obsmem.settings import Settings

# A small vocabulary, so the same fact, near-repeats and contradictions come up often.
TEXTS = (
    "Uses Alembic for database migrations",
    "Uses Aerich for database migrations",
    "Prefers tabs for indentation",
    "Prefers spaces for indentation",
    "Deploys go out every Tuesday morning",
    "Deploys go out every Tuesday morning again",
    "User is a backend developer based in Berlin",
    "Nightly build is flaky on ARM runners",
    "Chose Redis for the session cache",
    "Renamed a helper function",
)
TYPES = (None, "decision", "preference", "fact", "event")
_ID = re.compile(r"\^([0-9a-z]{6,16})\b")

observe = st.tuples(
    st.just("observe"),
    st.lists(
        st.tuples(
            st.integers(0, 12),  # days before today
            st.sampled_from(TEXTS) | st.integers(0, 40).map(lambda n: f"Fact {n} about part {n}"),
            st.sampled_from(TYPES),
            st.sampled_from((0.2, 0.5, 0.85)),
            st.sampled_from((None, "atlas", "om")),
        ),
        min_size=1,
        max_size=6,
    ),
)
step = st.one_of(
    observe,
    # Caps below the setting's floor of 50, so that small memories overflow too.
    st.tuples(st.just("reflect"), st.integers(0, 20), st.sampled_from((20, 30, 600))),
    st.tuples(st.just("archive"), st.integers(0, 10)),
    st.tuples(st.just("crash-archive"), st.integers(0, 10)),
    st.tuples(st.just("crash-reflect"), st.integers(0, 20)),
)


def where_ids(store: MemoryStore) -> tuple[Counter[str], Counter[str], set[str], Counter[str]]:
    """Observation ids in observations.md, in the archive (counted), cited ids, reflection ids."""
    live = Counter(o.id for o in store.read_observations().observations)
    archived: Counter[str] = Counter()
    for path in sorted((store.archive_dir / "observations").glob("*.md")):
        archived.update(o.id for o in parse_observations(path.read_bytes()).observations)
    texts = [store.read_bytes(store.home / "reflections.md").decode("utf-8", "replace")]
    rids = Counter(p.line.rid for p in ReflectionsDoc(texts[0].encode()).places())
    for path in sorted((store.archive_dir / "reflections").glob("*.md")):
        texts.append(path.read_text(encoding="utf-8"))
        rids.update(parse_observations(path.read_bytes()).ids())
    cited = {m for text in texts for m in _ID.findall(text)}
    return live, archived, cited, rids


def crash_on(module: object, target: Path) -> mock._patch[object]:
    real = module.atomic_write  # type: ignore[attr-defined]

    def write(path: Path, data: bytes) -> None:
        if path == target:
            raise MemoryFileError("simulated crash")
        real(path, data)

    return mock.patch.object(module, "atomic_write", write)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(step, min_size=1, max_size=12))
def test_every_id_is_always_somewhere(steps: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "mem").ensure()
        today = date(2026, 3, 1)
        written: set[str] = set()
        reflect_crashed = False
        for action, *args in steps:
            cutoff: str | None = None  # set by a step that archived to its end
            if action == "observe":
                batch = []
                for back, text, kind, importance, project in args[0]:  # type: ignore[attr-defined]
                    day = (today - timedelta(days=back)).isoformat()
                    prov = Provenance(path="/t/s.jsonl", project=project)
                    batch.append(
                        new_observation(
                            text, date=day, type=kind, importance=importance, provenance=prov
                        )
                    )
                written |= {o.id for o in store.add_observations(batch)}
            elif action == "reflect":
                advance, cap = args
                today += timedelta(days=int(advance))  # type: ignore[call-overload]
                options = Settings(llm_provider="none", reflections_max_lines=int(cap))  # type: ignore[call-overload]
                cutoff = reflect(store, options, today=today).archive.cutoff
                reflect_crashed = False
            elif action == "archive":
                options = Settings(llm_provider="none", archive_after_days=int(args[0]))  # type: ignore[call-overload]
                cutoff = archive_observations(store, options, today=today).cutoff
            elif action == "crash-archive":
                options = Settings(llm_provider="none", archive_after_days=int(args[0]))  # type: ignore[call-overload]
                # Days end up in both files: the next archive run finishes the move.
                with crash_on(archive_module, store.observations_path), suppress(MemoryFileError):
                    archive_observations(store, options, today=today)
            else:
                today += timedelta(days=int(args[0]))  # type: ignore[call-overload]
                options = Settings(llm_provider="none", reflections_max_lines=20)
                with crash_on(offline_module, store.home / "reflections.md"):
                    try:
                        reflect(store, options, today=today)
                    except MemoryFileError:
                        reflect_crashed = True
            live, archived, cited, rids = where_ids(store)
            missing = written - set(live) - set(archived) - cited
            assert not missing, (action, missing)
            assert max(archived.values(), default=1) == 1, "a line twice in the archive"
            if cutoff is not None:
                # Every day before the cutoff left observations.md, including days a crashed run
                # (or an observation written again after its day was archived) left in both.
                dates = {o.date for o in store.read_observations().observations}
                assert all(d >= cutoff for d in dates), (action, cutoff, dates)
            if not reflect_crashed:
                assert max(rids.values(), default=1) == 1, (action, "a reflection twice")

"""The router: observations filed into ``vault/`` by category and entity, hand edits kept."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from obsmem.context.prepare import BEGIN, END
from obsmem.memory.model import Observation, Provenance
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.run import ObserveReport, _after_writing
from obsmem.reflect.router import category_of, find_people, route, slug
from obsmem.search.bm25 import search


def prov(project: str | None) -> Provenance:
    return Provenance("/t/s.jsonl", 1, 2, "s1", "claude", project)


def obs(text: str, kind: str, importance: float, *, day: str = "2026-11-28", time: str = "10:00",
        project: str | None = "atlas", completed: bool = False) -> Observation:  # fmt: skip
    return new_observation(
        text, date=day, time=time, type=kind, importance=importance, completed=completed,
        provenance=prov(project) if project else None,
    )  # fmt: skip


def vault_bytes(store: MemoryStore) -> dict[str, bytes]:
    return {
        p.relative_to(store.vault_dir).as_posix(): p.read_bytes()
        for p in sorted(store.vault_dir.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def filled(store: MemoryStore) -> dict[str, Observation]:
    items = {
        "pg": obs("Chose PostgreSQL over SQLite for concurrent writes", "decision", 0.9),
        "maria": obs("Works with Maria Lopez, who reviews every migration", "relationship", 0.6,
                     time="09:00"),
        "agreed": obs("Agreed with Maria Lopez to ship on Friday", "decision", 0.8,
                      day="2026-10-02", project=None),
        "tabs": obs("Prefers tabs over spaces", "preference", 0.7, project=None),
        "docs": obs("Will write the migration guide", "commitment", 0.7),
        "done": obs("Finish the importer", "task", 0.6, completed=True),
        "lesson": obs("Run migrations in a transaction", "lesson", 0.5),
        "minor": obs("Looked at the logo colour", "fact", 0.3),
    }  # fmt: skip
    store.add_observations(items.values())
    return items


def test_pages_hold_dated_lines_with_links_and_citations(
    store: MemoryStore, filled: dict[str, Observation]
) -> None:
    report = route(store)
    pages = vault_bytes(store)
    assert set(pages) == {
        "decisions.md", "preferences.md", "lessons.md", "commitments.md", "facts.md",
        "projects/atlas.md", "people/maria-lopez.md",
    }  # fmt: skip
    assert sorted(report.pages_written) == sorted(f"vault/{name}" for name in pages)
    assert report.observations_routed == 7  # everything but the 0.3 one
    decisions = pages["decisions.md"].decode()
    assert decisions.startswith(f"# Decisions\n\n{BEGIN}\n## 2026-11\n\n")
    pg, agreed = filled["pg"], filled["agreed"]
    assert (
        f"- 2026-11-28 10:00 Chose PostgreSQL over SQLite for concurrent writes "
        f"[[projects/atlas]] (^{pg.id})\n" in decisions
    )
    assert "- 2026-10-02 10:00 Agreed with Maria Lopez to ship on Friday " in decisions
    assert f"[[people/maria-lopez]] (^{agreed.id})\n" in decisions
    assert decisions.index("## 2026-11") < decisions.index("## 2026-10")  # newest first
    assert decisions.endswith(END + "\n")
    # Entity pages link back to the category page and to each other.
    atlas = pages["projects/atlas.md"].decode()
    assert atlas.startswith("# atlas\n")
    assert f"Chose PostgreSQL over SQLite for concurrent writes [[decisions]] (^{pg.id})" in atlas
    maria = pages["people/maria-lopez.md"].decode()
    assert maria.startswith("# Maria Lopez\n")
    assert f"[[facts]] [[projects/atlas]] (^{filled['maria'].id})" in maria
    assert f"Agreed with Maria Lopez to ship on Friday [[decisions]] (^{agreed.id})" in maria
    # Open loops only on commitments; done work is a fact.
    assert "Will write the migration guide" in pages["commitments.md"].decode()
    assert "Finish the importer" not in pages["commitments.md"].decode()
    assert "Finish the importer" in pages["facts.md"].decode()
    assert category_of(filled["done"]) == "facts"
    # The sections parser reads the id as a citation, not as the vault line's own id.
    entries = parse_sections(pages["decisions.md"], kind="vault/decisions.md").entries
    # The parser reads the end marker (under the last heading) as an entry too; skip it.
    entries = [e for e in entries if not e.text.startswith("<!--")]
    assert [e.cites for e in entries] == [[pg.id], [agreed.id]]
    assert all(e.id not in (pg.id, agreed.id) for e in entries)
    assert [e.section for e in entries] == ["2026-11", "2026-10"]
    assert [e.date for e in entries] == ["2026-11-28", "2026-10-02"]


def test_threshold_is_inclusive_at_0_4(store: MemoryStore) -> None:
    store.add_observations([obs("At the threshold", "fact", 0.4), obs("Below it", "fact", 0.39)])
    assert route(store).observations_routed == 1
    everything = b"".join(vault_bytes(store).values())
    assert b"At the threshold" in everything and b"Below it" not in everything


def test_second_run_writes_nothing(store: MemoryStore, filled: dict[str, Observation]) -> None:
    route(store)
    before = vault_bytes(store)
    mtimes = {p: p.stat().st_mtime_ns for p in store.vault_dir.rglob("*.md")}
    again = route(store)
    assert again.pages_written == [] and again.observations_routed == 7
    assert vault_bytes(store) == before
    assert {p: p.stat().st_mtime_ns for p in store.vault_dir.rglob("*.md")} == mtimes
    # Only the pages a new observation concerns are rewritten.
    store.add_observations([obs("Prefers short commit messages", "preference", 0.8, project=None)])
    assert route(store).pages_written == ["vault/preferences.md"]


def test_hand_edits_outside_the_block_are_kept(
    store: MemoryStore, filled: dict[str, Observation]
) -> None:
    route(store)
    page = store.vault_dir / "decisions.md"
    head = b"# My decisions\r\n\r\nWritten by hand, before.\r\n\r\n"
    tail = b"\r\n## Notes\r\n\r\n- kept after the block, no newline at end"
    generated = page.read_bytes().split(b"\n", 2)[2]  # the block, after om's title
    page.write_bytes(head + generated.replace(b"\n", b"\r\n") + tail)
    hand_page = store.vault_dir / "people" / "bob.md"
    hand_page.write_bytes(b"# Bob\n\nNo markers: om never touches this page.\n")
    store.add_observations([obs("Chose uv over pip", "decision", 0.9, day="2026-11-29")])
    assert "vault/decisions.md" in route(store).pages_written
    data = page.read_bytes()
    assert data.startswith(head) and data.endswith(tail)
    assert b"Chose uv over pip" in data and b"Chose uv over pip [[projects/atlas]]" in data
    assert hand_page.read_bytes() == b"# Bob\n\nNo markers: om never touches this page.\n"


def test_page_with_nothing_left_keeps_its_hand_part(store: MemoryStore) -> None:
    store.add_observations([obs("Chose Rust for the parser", "decision", 0.9, project="old")])
    route(store)
    page = store.vault_dir / "projects" / "old.md"
    page.write_bytes(page.read_bytes() + b"Hand note after the block.\n")
    # Someone lowers the importance by hand: nothing is filed on the page any more.
    text = store.observations_path.read_text().replace("i=0.90", "i=0.20")
    store.observations_path.write_text(text)
    assert "vault/projects/old.md" in route(store).pages_written
    assert page.read_bytes() == f"# old\n\n{BEGIN}\n{END}\nHand note after the block.\n".encode()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Atlas", "atlas"),
        ("My Project", "my-project"),
        ("../../etc/passwd", "etc-passwd"),
        ("..", None),
        ("a/../b", "a-b"),
        (".hidden", "hidden"),
        ("C:\\Users\\x", "c-users-x"),
        ("  \t ", None),
        ("café--crème", "café-crème"),
        ("x" * 200, "x" * 80),
    ],
)
def test_slug_is_safe(name: str, expected: str | None) -> None:
    assert slug(name) == expected


def test_unsafe_project_names_stay_inside_the_vault(store: MemoryStore) -> None:
    names = ["../../escape", "..", "/abs/path", "Two Words"]
    store.add_observations(
        [obs(f"Decision number {n}", "decision", 0.9, project=p) for n, p in enumerate(names)]
    )
    route(store)
    projects = store.vault_dir / "projects"
    assert sorted(p.name for p in projects.iterdir()) == ["abs-path.md", "escape.md",
                                                          "two-words.md"]  # fmt: skip
    assert not (store.home.parent / "escape.md").exists()
    assert all(p.resolve().parent == projects.resolve() for p in projects.iterdir())
    # The project with no usable name is still filed by category, without a project link.
    assert "Decision number 1 (^" in (store.vault_dir / "decisions.md").read_text()


def test_archived_observations_are_still_filed(store: MemoryStore) -> None:
    archive = store.archive_dir / "observations" / "2026-09.md"
    archive.parent.mkdir(parents=True)
    archive.write_text(
        "# Observations\n\n## 2026-09-03\n\n### Observations\n\n"
        "- 🔴 09:15 [lesson|c=0.90|i=0.85] Never run the migration twice ^k3v9q2m7xa\n"
        "- 🟡 09:20 Legacy line from the original tool\n"
    )
    store.add_observations([obs("Fresh lesson about caching", "lesson", 0.7)])
    assert route(store).observations_routed == 3
    lessons = (store.vault_dir / "lessons.md").read_text()
    assert "- 2026-09-03 09:15 Never run the migration twice (^k3v9q2m7xa)" in lessons
    assert "## 2026-09" in lessons
    legacy = store.read_observations(archive).observations[1]  # untyped, 🟡 = 0.6: a fact
    assert (
        f"- 2026-09-03 09:20 Legacy line from the original tool (^{legacy.id})"
        in (store.vault_dir / "facts.md").read_text()
    )


def test_archiving_moves_nothing_in_the_vault(store: MemoryStore) -> None:
    store.add_observations([obs("Chose Rust for the parser", "decision", 0.9, day="2026-09-03")])
    route(store)
    before = vault_bytes(store)
    archive = store.archive_dir / "observations" / "2026-09.md"
    archive.parent.mkdir(parents=True)
    # A move interrupted half-way leaves the observation in both places: still filed once.
    archive.write_bytes(store.observations_path.read_bytes())
    assert route(store).pages_written == []
    store.observations_path.unlink()
    assert route(store).pages_written == []
    assert vault_bytes(store) == before


def test_people_detection_is_conservative(store: MemoryStore) -> None:
    assert find_people("Paired with Maria on Friday, reviewed by @jdoe") == {
        "maria": "Maria", "jdoe": "@jdoe",
    }  # fmt: skip
    assert find_people("Moved from PostgreSQL by Friday with the team, mail a@b.com") == {}
    assert find_people("Met with Maria Monday") == {"maria": "Maria"}
    # Names count as people only once a relationship observation has introduced them.
    store.add_observations([
        obs("Chose the API with Docker and reviewed it with Maria", "decision", 0.9),
        obs("Maria is the tech lead; pair with Maria on schema work", "relationship", 0.2),
    ])  # fmt: skip
    route(store)
    people = store.vault_dir / "people"
    assert [p.name for p in people.iterdir()] == ["maria.md"]
    assert "Chose the API with Docker" in (people / "maria.md").read_text()


def test_vault_lines_are_indexed_under_their_observation_id(
    store: MemoryStore, filled: dict[str, Observation]
) -> None:
    route(store)
    hits = search(store, "PostgreSQL concurrent writes", limit=10)
    # The observation is found once, from observations.md, not again from each vault page.
    matching = [hit for hit in hits if "PostgreSQL" in hit.text]
    assert len(matching) == 1 and matching[0].file == "observations.md"
    conn = sqlite3.connect(store.index_path)
    rows = conn.execute(
        "SELECT file FROM entries WHERE kind = 'vault' AND id = ?", (matching[0].id,)
    ).fetchall()
    conn.close()
    assert {"vault/decisions.md", "vault/projects/atlas.md"} <= {r[0] for r in rows}


def test_observe_files_into_the_vault_and_survives_a_failure(
    store: MemoryStore, filled: dict[str, Observation], tmp_path: Path
) -> None:
    report = ObserveReport()
    _after_writing(store, report)
    assert report.problems == []
    assert (store.vault_dir / "decisions.md").is_file()
    broken = MemoryStore(tmp_path / "other").ensure()
    broken.add_observations([obs("Anything", "fact", 0.9)])
    broken.vault_dir.write_text("a file where the vault folder should be")
    report = ObserveReport()
    _after_writing(broken, report)
    assert [p for p in report.problems if p.startswith("vault not updated")]


@pytest.mark.parametrize("ids", [("zzzzzzzzzz", "0000000000"), ("0000000000", "zzzzzzzzzz")])
def test_of_one_minute_the_later_line_is_listed_first(
    store: MemoryStore, ids: tuple[str, str]
) -> None:
    first = replace(obs("We use Memcached for the session cache", "decision", 0.9), id=ids[0])
    second = replace(obs("We use Redis for the session cache", "decision", 0.9), id=ids[1])
    store.add_observations([first, second])
    route(store)
    page = (store.vault_dir / "decisions.md").read_text(encoding="utf-8")
    assert page.index("Redis") < page.index("Memcached")  # newest first

"""Forget, change importance or type, remember: each visible in the markdown at once."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from obsmem.memory.ledger import forgotten_ids
from obsmem.memory.store import MemoryStore
from obsmem.ui.security import Guard


def _id_of(client: TestClient, text: str) -> str:
    html = client.get("/").text
    for entry_id, shown in re.findall(
        r'id="e-([0-9a-z]{10})">.*?<span class="text">(.*?)</span>', html, re.S
    ):
        if text in shown:
            return entry_id
    raise AssertionError(f"{text!r} is not on the timeline")


def test_forget_removes_the_line_everywhere(client: TestClient, memory: MemoryStore,
                                            guard: Guard) -> None:  # fmt: skip
    entry_id = _id_of(client, "Redis workers")
    answer = client.post(f"/entry/{entry_id}/forget", data={"csrf": guard.csrf},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/?note=")
    assert "Redis workers" not in memory.observations_path.read_text(encoding="utf-8")
    assert entry_id in forgotten_ids(memory.ledger_path)
    shown = client.get(answer.headers["location"]).text
    assert f"forgot {entry_id}" in shown
    assert "Redis workers" not in shown
    assert client.get(f"/entry/{entry_id}").status_code == 404
    assert "Redis workers" not in client.get("/search?q=redis").text


def test_amend_changes_importance_and_type_in_the_markdown(
    client: TestClient, memory: MemoryStore, guard: Guard
) -> None:
    entry_id = _id_of(client, "Ran the test suite")
    answer = client.post(f"/entry/{entry_id}/amend",
                         data={"csrf": guard.csrf, "importance": "0.9", "type": "milestone"},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303
    text = memory.observations_path.read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if "Ran the test suite" in line)
    assert "[milestone|c=0.90|i=0.90]" in line
    assert line.startswith("- 🔴 11:40")
    assert line.endswith(f"^{entry_id}")
    page = client.get(answer.headers["location"]).text
    assert "changed observations.md:" in page
    assert "i=0.90" in page


def test_amend_changes_a_multi_line_observation_keeping_its_lines(
    client: TestClient, memory: MemoryStore, guard: Guard
) -> None:
    # Written by hand: a bullet whose text goes on over two indented lines.
    lines = memory.observations_path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Ran the test suite" in line) + 1
    added = [
        "- 🟢 12:30 Rollback plan for the billing cutover:\n",
        "  restore the snapshot, then replay\n",
        "  the queue from the last offset\n",
    ]
    memory.observations_path.write_text("".join(lines[:at] + added + lines[at:]),
                                        encoding="utf-8")  # fmt: skip
    entry_id = _id_of(client, "Rollback plan")
    page = client.get(f"/entry/{entry_id}").text
    assert "the queue from the last offset" in page and f"/entry/{entry_id}/amend" in page
    answer = client.post(f"/entry/{entry_id}/amend",
                         data={"csrf": guard.csrf, "importance": "0.9", "type": "decision"},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303
    after = memory.observations_path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = f"- 🔴 12:30 [decision|i=0.90] Rollback plan for the billing cutover: ^{entry_id}\n"
    assert after == [*lines[:at], first, *added[1:], *lines[at:]]
    shown = client.get(answer.headers["location"]).text
    assert f"changed observations.md:{at + 1}" in shown
    assert "i=0.90" in shown and "the queue from the last offset" in shown
    assert _id_of(client, "Rollback plan") == entry_id


def test_amend_with_a_bad_importance_changes_nothing(
    client: TestClient, memory: MemoryStore, guard: Guard
) -> None:
    before = memory.observations_path.read_bytes()
    entry_id = _id_of(client, "Ran the test suite")
    answer = client.post(f"/entry/{entry_id}/amend", data={"csrf": guard.csrf, "importance": "7"})
    assert answer.status_code == 400
    assert "outside 0..1" in answer.text
    assert memory.observations_path.read_bytes() == before


def test_remember_adds_a_redacted_line(client: TestClient, memory: MemoryStore,
                                       guard: Guard) -> None:  # fmt: skip
    secret = "sk-ant-api03-" + "a1B2c3D4" * 12
    answer = client.post("/remember", data={"csrf": guard.csrf, "type": "preference",
                         "importance": "0.8", "text": f"Use tabs, key {secret}"},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303
    text = memory.observations_path.read_text(encoding="utf-8")
    assert "Use tabs, key" in text
    assert secret not in text
    assert "[preference|" in text
    page = client.get(answer.headers["location"])
    assert page.status_code == 200
    assert "remembered " in page.text


def test_remember_twice_adds_once(client: TestClient, memory: MemoryStore, guard: Guard) -> None:
    form = {"csrf": guard.csrf, "type": "fact", "text": "The API is versioned under /v2"}
    client.post("/remember", data=form)
    answer = client.post("/remember", data=form, follow_redirects=False)
    assert "already remembered" in client.get(answer.headers["location"]).text
    text = memory.observations_path.read_text(encoding="utf-8")
    assert text.count("The API is versioned under /v2") == 1


def test_remember_empty_text_is_an_error(client: TestClient, guard: Guard) -> None:
    answer = client.post("/remember", data={"csrf": guard.csrf, "type": "fact", "text": "  "})
    assert answer.status_code == 400
    assert "nothing to remember" in answer.text

"""Per-prompt recall: what a prompt is given from memory, and when it is given nothing."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from fakes.memories import ATLAS, GRAFANA, KAFKA
from fakes.memories import topical_memory as _memory

from obsmem.context.prepare import prepare_context
from obsmem.context.prompt_recall import (
    HEADER,
    MAX_LINES,
    MAX_QUERY_WORDS,
    RECORD_DAYS,
    hook_reply,
    prompt_query,
    recall_for_prompt,
    relevance,
    startup_given,
)
from obsmem.memory.store import MemoryStore
from obsmem.paths import recalled_dir


def _ids(text: str) -> list[str]:
    return re.findall(r"\(id ([0-9a-z]+)\)", text)


@pytest.mark.parametrize(
    "prompt",
    [
        "", "   ", "ok", "OK!", "go on", "yes", "yes please", "thanks", "Thanks, looks good",
        "sounds good, continue", "lgtm", "/compact", "/review src/app.py", "!ls -la",
        "<task-notification>sub-agent finished: atlas migration report</task-notification>",
        "<command-name>/model</command-name>",
    ],
)  # fmt: skip
def test_routine_prompts_ask_for_nothing(prompt: str) -> None:
    query, why = prompt_query(prompt)
    assert query is None and why


def test_mostly_pasted_output_asks_for_nothing() -> None:
    pasted = "again?\n" + "\n".join(
        f'  File "/srv/app/mod{i}.py", line {i}, in run\n    value = call_{i}(x, y)'
        for i in range(8)
    )
    assert prompt_query(pasted)[0] is None
    assert prompt_query(pasted)[1] == "mostly pasted output"


def test_a_question_with_a_short_paste_is_searched_by_its_prose() -> None:
    prompt = (
        "The atlas migration fails again on the billing tables, what did we decide last time?\n"
        "    ERROR 1213 deadlock found when trying to get lock\n"
    )
    query, _ = prompt_query(prompt)
    assert query is not None and "atlas migration" in query and "deadlock" not in query


def test_a_relevant_memory_is_added_with_its_date_and_id() -> None:
    _memory(ATLAS, KAFKA)
    found = recall_for_prompt("where were we with the atlas billing migration?", session="s1")
    assert found.text.startswith(HEADER + "\n")
    lines = found.text.splitlines()[1:]
    assert len(lines) == 1 and ATLAS in lines[0] and lines[0].startswith("- 2026-11-20: ")
    assert _ids(found.text) == found.ids and len(found.ids) == 1


def test_a_prompt_sharing_only_common_words_gets_nothing() -> None:
    _memory(ATLAS, KAFKA)
    found = recall_for_prompt("please review the pull request naming and the tests", session="s")
    assert found.text == "" and found.reason == "nothing relevant enough"
    # The same prompt with the threshold at zero would have been given lines: it is the
    # threshold that holds them back.
    os.environ["OM_PROMPT_RECALL_MIN_SCORE"] = "0"
    try:
        assert recall_for_prompt("please review the pull request naming", session="t").ids
    finally:
        del os.environ["OM_PROMPT_RECALL_MIN_SCORE"]


def test_relevance_is_about_one_per_rare_word_whatever_the_memory_size() -> None:
    import math

    for entries in (100, 10_000):
        assert relevance(math.log((entries - 0.5) / 1.5), entries) == pytest.approx(1.0)
    assert relevance(5.0, 1) == 10.0  # a memory of one entry: no word is rare, no division by 0


def test_the_token_cap_holds_whatever_the_memories(monkeypatch: pytest.MonkeyPatch) -> None:
    long = [f"Atlas billing migration note {n}: " + "postgres switch detail " * 30 for n in "abc"]
    _memory(*long)
    monkeypatch.setenv("OM_PROMPT_RECALL_TOKENS", "80")
    found = recall_for_prompt("atlas billing migration postgres switch", session="s")
    assert found.ids and len(found.text) <= 80 * 4
    monkeypatch.setenv("OM_PROMPT_RECALL_TOKENS", "4000")
    found = recall_for_prompt("atlas billing migration postgres switch", session="other")
    assert len(found.ids) == MAX_LINES and len(found.text) > 80 * 4


def test_no_memory_is_given_twice_in_one_session() -> None:
    _memory(ATLAS, GRAFANA)
    first = recall_for_prompt("atlas billing migration status", session="s1")
    again = recall_for_prompt("atlas billing migration status", session="s1")
    elsewhere = recall_for_prompt("atlas billing migration status", session="s2")
    assert first.ids and again.ids == [] and again.text == ""
    assert again.reason == "what is relevant was given to this session already"
    assert elsewhere.ids == first.ids
    record = next(recalled_dir().glob("*.json"))
    assert "s1" not in record.name  # named by a digest: a session id is never a path
    # The name is kept across versions, so an upgrade mid-session gives nothing twice.
    names = sorted(path.name for path in recalled_dir().glob("*.json"))
    assert names == ["141538f0011900a52.json", "8d1c694a011a00a62.json"]  # s1, s2


def test_what_the_startup_context_gave_is_not_given_again(tmp_path: Path) -> None:
    store = _memory(ATLAS, KAFKA)
    prepare_context(store)
    ids, texts = startup_given(str(tmp_path))
    assert ids and any(ATLAS.casefold() in t for t in texts)
    found = recall_for_prompt("atlas billing migration postgres", session="s", cwd=str(tmp_path))
    assert ATLAS not in found.text
    # Without a startup context (none prepared), the same prompt is given the line.
    (store.state_dir / "context.json").unlink()
    assert ATLAS in recall_for_prompt("atlas billing migration postgres", session="n").text


def test_startup_given_only_reads(tmp_path: Path) -> None:
    store = MemoryStore().ensure()
    assert startup_given(str(tmp_path)) == ([], [])
    assert not (store.state_dir / "context.json").exists()


def test_memories_from_the_session_itself_are_left_out() -> None:
    _memory(ATLAS, session="live-session")
    assert recall_for_prompt("atlas billing migration postgres", session="live-session").ids == []
    assert recall_for_prompt("atlas billing migration postgres", session="another").ids


def test_recall_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    _memory(ATLAS)
    monkeypatch.setenv("OM_PROMPT_RECALL", "off")
    found = recall_for_prompt("atlas billing migration postgres", session="s")
    assert found.text == "" and found.reason == "OM_PROMPT_RECALL=off"


def test_no_memory_directory_is_created_for_a_prompt() -> None:
    from obsmem.paths import memory_dir

    found = recall_for_prompt("atlas billing migration postgres", session="s")
    assert found.text == "" and not memory_dir().exists()


def test_old_session_records_are_pruned() -> None:
    _memory(ATLAS)
    folder = recalled_dir()
    folder.mkdir(parents=True)
    old, recent = folder / "old.json", folder / "recent.json"
    for path in (old, recent):
        path.write_text(json.dumps({"given": []}))
    gone = time.time() - (RECORD_DAYS + 1) * 86_400
    os.utime(old, (gone, gone))
    recall_for_prompt("atlas billing migration postgres", session="new-session")
    assert not old.exists() and recent.exists()


def test_a_damaged_record_reads_as_a_new_session() -> None:
    _memory(ATLAS)
    first = recall_for_prompt("atlas billing migration postgres", session="s")
    record = next(recalled_dir().glob("*.json"))
    record.write_bytes(b"\x00not json")
    assert recall_for_prompt("atlas billing migration postgres", session="s").ids == first.ids


def test_the_reply_is_the_documented_hook_json() -> None:
    reply = json.loads(hook_reply("From om: x"))
    assert reply == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "From om: x",
        }
    }


def test_a_long_prompt_is_searched_by_its_longest_words() -> None:
    prompt = (
        "I want to rework how the observer handles retries when the queue backs up, check the "
        "ledger schema and the budget, then run the tests and tell me when it is done, thanks"
    )
    query, _ = prompt_query(prompt)
    assert query is not None
    words = query.split()
    assert len(words) == MAX_QUERY_WORDS and "observer" in words and "ledger" in words
    assert "run" not in words  # short words go first

"""The per-prompt recall benchmark's prompt mix: its questions about earlier work get memories.

The benchmark (``bench/prompt_recall.py``) times the prompt hook; unless some of its prompts
match the memory above the relevance threshold, it never times writing the lines and the
session record. This builds the benchmark's memory (smaller) and checks that the ``recall``
prompts are given memories and that the other kinds mostly are not.
"""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke.scripts import load_script

B = load_script("prompt_recall")


def test_questions_about_stored_observations_are_given_memories(tmp_path: Path) -> None:
    from search_cold import build

    from obsmem.context.prompt_recall import recall_for_prompt
    from obsmem.index import rebuild

    home = tmp_path / "mem"
    environ = {"OM_HOME": str(home)}
    store = build(home, 2_000)
    rebuild(store)
    prompts = B.recall_prompts(store, 12)
    assert len(prompts) == 12 and len(set(prompts)) == 12
    given = [bool(recall_for_prompt(p, store=store, environ=environ).ids) for p in prompts]
    assert sum(given) >= 8, list(zip(prompts, given, strict=True))
    others = [p for kind in B.KINDS.values() for p in kind]
    fired = sum(bool(recall_for_prompt(p, store=store, environ=environ).ids) for p in others)
    assert fired <= len(others) // 4  # the other kinds ask about what this memory does not hold

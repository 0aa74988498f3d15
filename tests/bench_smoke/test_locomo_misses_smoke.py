"""The miss analysis (``bench/locomo_misses.py``) on a small LoCoMo-shaped conversation.

Its counts mean what docs/benchmarks.md says only if its search is the benchmark's (the same
recall), if what it records as the fused order is the order ``search()`` returns, and if each
cause follows from the ranks: each is checked here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.bench_smoke.scripts import load_script

L = load_script("locomo_recall")
M = load_script("locomo_misses")

# Fourteen lines of Ana's on pottery crowd out the one answer that shares no word with the
# question, and the two that do share one sit among them.
_POTTERY = [f"Pottery class {n} went well, the pottery wheel spun fast." for n in range(14)]
SAMPLE: dict[str, Any] = {
    "sample_id": "misses",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": f"D1:{i + 1}", "text": text}
            for i, text in enumerate(_POTTERY)
        ],
        "session_2_date_time": "9:05 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ana", "dia_id": "D2:1", "text": "I glazed a blue bowl and a vase."},
            {"speaker": "Ben", "dia_id": "D2:2", "text": "My pottery mug cracked in the kiln."},
            {"speaker": "Ana", "dia_id": "D2:3", "text": "Pixel ran the marathon with me."},
        ],
    },
    "qa": [
        {
            "question": "What has Ana made in pottery?",
            "evidence": ["D2:1", "D1:3", "D2:2"],
            "category": 1,
        },
        {"question": "Who ran the marathon?", "evidence": ["D2:3"], "category": 4},
        {"question": "Is Ana adversarial?", "evidence": ["D2:3"], "category": 5},
    ],
}


def test_causes_follow_the_ranks_in_order() -> None:
    none = {name: None for name in M.LIST_NAMES}
    assert M.cause({**none, "fused": 12}, []) == "fused 11-20"
    assert M.cause({**none, "fused": 20, "bm25": 3}, []) == "fused 11-20"
    assert M.cause({**none, "fused": 21}, []) == "fused 21-50"
    assert M.cause({**none, "fused": 51, "centroid": 4}, []) == "in a list, fused below 50"
    assert M.cause({**none, "fused": None}, ["pottery"]) == "in no list, shares a word"
    assert M.cause({**none, "fused": None}, []) == "in no list, no shared word"


def test_the_analysis_is_the_benchmarks_search(tmp_path: Path, hybrid_env: dict[str, str]) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    report = M.analyse([SAMPLE], settings)
    product = L.run([SAMPLE], settings=settings)
    summary = report["summary"]
    assert summary["turn.recall@10"] == product["turn.recall@10"]
    assert summary["questions"] == 2  # category 5 is left out, as the benchmark's overall is
    assert report["misses"], "the fourteen pottery lines should push some evidence out"
    assert summary["missed_turns"] == len(report["misses"])
    assert sum(c["total"] for c in summary["missed_turns_by_cause"].values()) == len(
        report["misses"]
    )
    for miss in report["misses"]:
        assert miss["fused"] is None or miss["fused"] > 10
        shared = miss["shared_words"]
        assert miss["cause"] == M.cause(miss, shared)
        assert "ana" not in shared  # the speaker's name is no shared word


def test_the_recorded_order_is_the_order_search_returns(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.index.db import using_index
    from obsmem.search import search
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    conversation = L.load_conversation(SAMPLE)
    recorder = M.Recorder()
    with L.indexed(conversation, settings) as (store, _):
        with recorder.wrapping():
            hits = search(store, "What has Ana made in pottery?", limit=10, settings=settings)
        ids = using_index(
            store.index_path, lambda conn: dict(conn.execute("SELECT rowid, id FROM entries"))
        )
    assert [ids[rowid] for rowid in recorder.order[:10]] == [hit.id for hit in hits]
    assert {"bm25", "vector", "centroid"} <= set(recorder.lists)  # the query names Ana
    assert recorder.lists["bm25"] and recorder.lists["vector"]

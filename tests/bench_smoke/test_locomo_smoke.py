"""The LoCoMo benchmark's data handling and scoring, on a tiny hand-made conversation.

The full benchmark (``bench/locomo_recall.py``) is not part of the test suite; this checks that
its evidence repair, recall arithmetic and end-to-end run through om's search are right, so a
figure recorded in docs/benchmarks.md cannot come from broken scoring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.bench_smoke.scripts import load_script

L = load_script("locomo_recall")

SAMPLE: dict[str, Any] = {
    "sample_id": "tiny",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started pottery classes."},
            {
                "speaker": "Ana",
                "dia_id": "D1:3",
                "text": "Look at this.",
                "blip_caption": "a photo of a lighthouse on a cliff",
            },
        ],
        "session_2_date_time": "9:05 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery bowl won a prize."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel ran the marathon with me."},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "Great weather for running today."},
        ],
        "session_3_date_time": "10:00 am on 1 July, 2023",  # a date with no turns: ignored
    },
    "qa": [
        {"question": "What is the name of Ana's greyhound?", "evidence": ["D1:1"], "category": 4},
        {"question": "What did Ben make in pottery?", "evidence": ["D1:2; D2:1"], "category": 1},
        {"question": "What did Ana photograph?", "evidence": ["D:1:3"], "category": 3},
        {"question": "Who is the mayor?", "evidence": ["D", "D9:1"], "category": 2},
    ],
}


def test_evidence_is_repaired_as_the_readme_says() -> None:
    assert L.normalise_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert L.normalise_evidence(["D:11:26", "D30:05", "D", "D1:2 D1:3", "D1:2"]) == [
        "D11:26",
        "D30:5",
        "D1:2",
        "D1:3",
    ]


def test_recall_and_session_ranking() -> None:
    assert L.recall_at(["D1:1", "D2:2", "D1:3"], ["D1:3", "D2:9"], 2) == 0.0
    assert L.recall_at(["D1:1", "D2:2", "D1:3"], ["D1:3", "D2:9"], 3) == 0.5
    assert L.recall_at(["D1:1"], ["D1:1", "D1:1"], 5) == 1.0  # duplicates count once
    assert L.rank_sessions(["D2:1", "D1:4", "D2:3", "D3:1"]) == ["2", "1", "3"]
    assert L.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def test_conversation_loading() -> None:
    conv = L.load_conversation(SAMPLE)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert (conv.turns[0].date, conv.turns[0].time) == ("2023-05-08", "13:56")
    assert conv.turns[3].time == "09:05"
    assert "lighthouse" in conv.turns[2].text and conv.turns[2].text.startswith("Ana: ")
    # The last question names no existing turn once repaired, so it is skipped.
    assert conv.skipped == 1
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D1:2", "D2:1"), ("D1:3",)]


def test_tally_averages_by_category() -> None:
    tally = L.Tally()
    tally.add(4, ["D1:1", "D1:2"], ["D1:1"])
    tally.add(1, ["D2:2"] * 1, ["D1:2", "D2:1"])
    tally.add(5, ["D1:1"], ["D1:1"])
    summary = tally.summary()
    assert summary["turn.recall@10.cat4"] == 1.0
    assert summary["turn.recall@10.cat1"] == 0.0
    assert summary["turn.recall@10"] == 0.5  # category 5 is not in the overall figure
    assert summary["session.recall@10.cat1"] == 0.5  # session 2 found, session 1 not
    assert summary["questions"] == 2 and summary["questions.cat5"] == 1


def test_baseline_bm25_prefers_the_rarer_matching_term() -> None:
    docs = [L.tokens(t) for t in ("pottery bowl", "pottery class", "greyhound pixel", "x y z")]
    bm25 = L.OkapiBM25(docs)
    assert bm25.rank(L.tokens("pottery bowl"), 2) == [0, 1]
    assert bm25.rank(L.tokens("Pixel?"), 1) == [2]


@pytest.mark.parametrize("limit", [None, 1])
def test_end_to_end_through_om_search(limit: int | None) -> None:
    report = L.run([SAMPLE, SAMPLE], limit)
    assert report["conversations"] == (1 if limit else 2)
    assert report["turns"] == (6 if limit else 12)
    # Every question's evidence is among six turns, so ten results find all of it.
    assert report["turn.recall@10"] == 1.0
    assert report["baseline_bm25"]["turn.recall@10"] == 1.0
    assert report["turn.recall@5"] >= 2 / 3
    assert "turn, categories 1-4" in L.render(report)


def test_leave_one_conversation_out_chooses_on_the_other_conversations() -> None:
    fold = L.Fold(["1", "2"])
    # (category, R@5, R@10) per question. "2" is far better on c3 alone, "1" a little better on
    # c1 and c2: the best figure over all three would pick "2", each fold picks on the others.
    fold.add("1", "c1", [(1, 0.0, 0.6), (4, 0.0, 0.6)])
    fold.add("2", "c1", [(1, 0.0, 0.5), (4, 0.0, 0.5)])
    fold.add("1", "c2", [(2, 0.0, 0.6), (5, 0.0, 0.0)])  # category 5 is not scored
    fold.add("2", "c2", [(2, 0.0, 0.5), (5, 0.0, 1.0)])
    fold.add("1", "c3", [(3, 0.0, 0.0), (3, 0.0, 0.0)])
    fold.add("2", "c3", [(3, 0.0, 1.0), (3, 0.0, 1.0)])
    summary = fold.summary()
    assert summary["values"]["2"]["turn.recall@10"] > summary["values"]["1"]["turn.recall@10"]
    assert summary["values"]["1"]["conversations"] == {"c1": 0.6, "c2": 0.6, "c3": 0.0}
    assert summary["values"]["2"]["turn.recall@10.cat3"] == 1.0
    loo = summary["loo"]
    # Held out c1: on c2 + c3, "2" (0.833) beats "1" (0.2); held out c2 likewise; held out c3:
    # on c1 + c2, "1" (0.6) beats "2" (0.5).
    assert {sid: f["chosen"] for sid, f in loo["folds"].items()} == {
        "c1": "2",
        "c2": "2",
        "c3": "1",
    }
    assert loo["turn.recall@10"] == round((0.5 * 2 + 0.5 + 0.0 * 2) / 5, 4)
    assert loo["choice"] == "2"


def test_a_sweep_runs_each_value_on_one_index(tmp_path: Path) -> None:
    env = {"OM_SEARCH_BACKEND": "bm25", "OM_HOME": str(tmp_path)}
    report = L.run_sweep([SAMPLE], "OM_SEARCH_CONTEXT_WEIGHT", ["0.3", "0"], env)
    assert set(report["values"]) == {"0.3", "0"}
    assert (
        report["values"]["0.3"]["conversations"]["tiny"]
        == report["loo"]["folds"]["tiny"]["turn.recall@10"]
    )
    assert "leave-one-conversation-out" in L.render_sweep(report)


def _rankings(home: Path, settings: Any) -> list[list[str]]:
    """Index SAMPLE at ``home``, embed it and return each question's ranked dia_ids."""
    from obsmem.memory.store import MemoryStore
    from obsmem.search import search
    from obsmem.search.indexing import embed_index

    conversation = L.load_conversation(SAMPLE)
    mapping = L.index_conversation(home, conversation)
    store = MemoryStore(home, environ={"OM_HOME": str(home)})
    assert not embed_index(store, settings).problem
    return [
        L.expand((h.id for h in search(store, q.text, limit=10, settings=settings)), mapping)
        for q in conversation.questions
    ]


def test_embed_cache_second_run_reads_it_and_ranks_the_same(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.search import embeddings
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    plain = _rankings(tmp_path / "plain", settings)
    folder = tmp_path / "cache"
    original = embeddings.load_embedder
    with L.embed_cache(folder) as cache:
        first = _rankings(tmp_path / "first", settings)
        assert cache.misses > 0 and (folder / "embeddings.sqlite").is_file()
    assert embeddings.load_embedder is original  # put back on leaving
    with L.embed_cache(folder) as cache:
        second = _rankings(tmp_path / "second", settings)
        embedder = embeddings.load_embedder(settings)
        # Everything came from the file: no text embedded, and the model never loaded.
        assert cache.misses == 0 and cache.hits > 0
        assert embedder._inner is None
    assert first == second == plain


def test_the_default_backend_is_hybrid_where_a_model_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from obsmem.search import embeddings

    # make test installs fastembed and the packaged model: the headline (hybrid) figure runs.
    assert L.hybrid_available({}) is True
    monkeypatch.setattr(embeddings, "PACKAGED_MODEL", ("no_such_model_package",))
    assert L.hybrid_available({}) is False
    assert L.hybrid_available({"OM_EMBED_MODEL_PATH": "/models/minilm"}) is True
    monkeypatch.setattr(embeddings, "fastembed_installed", lambda: False)
    assert L.hybrid_available({"OM_EMBED_MODEL_PATH": "/models/minilm"}) is False

"""The query-level signals (``bench/fusion_qtype.py``) on the LoCoMo smoke conversation.

Its rules compare with the product only if the replay at the setting's vector weight is the
product's fusion and "off" is that weight for every question; both are checked here, with the
question forms the rules group by.
"""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

L = load_script("locomo_recall")
R = load_script("fusion_replay")
Q = load_script("fusion_qtype")


def test_question_forms() -> None:
    assert Q.form("When did Caroline go to the LGBTQ support group?") == "when"
    assert Q.form("How long has Nate had his turtles?") == "when"
    assert Q.form("Why did Jon shut down his bank account?") == "why"
    assert Q.form("Would Caroline likely pursue writing?") == "why"
    assert Q.form("What books has Melanie read?") == "list"
    assert Q.form("How many children does Melanie have?") == "list"
    assert Q.form("What did we decide about the cache?") == "one"


def test_the_replay_at_the_settings_weight_is_the_products(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    pickle = tmp_path / "lists.pkl"
    asked = Q.replay([SAMPLE], settings, pickle)
    assert asked and pickle.exists()
    # The pickle read back gives the same figures.
    again = Q.replay([SAMPLE], settings, pickle)
    assert [a.recall for a in again] == [a.recall for a in asked]
    stored = Q.stored_lists([SAMPLE], settings, pickle)
    scored = [s for s in stored if s[1] in L.SCORED_CATEGORIES]
    # The weight reaches the fusion: some question's order changes at 2.0.
    kept = [lists for _, _, _, lists, _, _ in scored if lists]
    assert any(Q.fused_at(li, settings, 2.0) != Q.fused_at(li, settings, 0.3) for li in kept)
    for a, (_, _, evidence, lists, ids, mapping) in zip(asked, scored, strict=True):
        order = R.fuse(lists, settings) if lists else []
        assert not lists or Q.fused_at(lists, settings, 0.3) == order
        want = L.recall_at(L.expand((ids[r] for r in order), mapping)[:10], evidence, 10)
        assert a.recall[0.3] == want
    fold = Q.rule_fold(asked, ["2.0"], lambda a, v: v)
    samples = list(fold.recalls["off"])
    for value, weight in (("off", 0.3), ("2.0", 2.0)):
        assert fold.mean(value, samples) == sum(a.recall[weight] for a in asked) / len(asked)

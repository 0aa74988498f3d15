"""The fusion replay (``bench/fusion_replay.py``) on the LoCoMo smoke test's tiny conversation.

The replay's figures stand for hybrid search only if replaying the fusion gives what
``search()`` gives: ``--check`` asserts it for every question, and this runs that check, then
checks that each idea's value "as the product does" scores the same figure.
"""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

R = load_script("fusion_replay")


def test_the_replay_matches_search_and_each_idea_starts_from_the_product(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    report = R.run([SAMPLE], settings, check=True)  # raises SystemExit on any difference
    assert set(report) == set(R.ideas(settings))
    # Each idea's first value is the product as it is, so all of them score one figure; not
    # so the two whose first value is the product without something (BM25's lift, the date).
    products = {
        name: part["values"][next(iter(part["values"]))]["turn.recall@10"]
        for name, part in report.items()
        if name not in {"fused-nearby-only", "vector-date"}
    }
    assert len(set(products.values())) == 1
    assert "leave-one-conversation-out" in R.render_sweep(report["day-cap"])

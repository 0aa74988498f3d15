"""The replay on top of the speaker centroid (``bench/centroid_replay.py``) on the LoCoMo smoke
conversation.

Its figures compare with the product only if the replay is ``search()`` (``run(check=True)``
stops otherwise, and is run here) and each idea at its first value is the replay; and they mean
what the docs say only if the question-form rule and the word count read what they claim.
"""

from __future__ import annotations

from pathlib import Path

from tests.bench_smoke.scripts import load_script
from tests.bench_smoke.test_locomo_smoke import SAMPLE

R = load_script("centroid_replay")


def test_list_form_reads_a_plural_head_or_has_done() -> None:
    assert R.list_form("What outdoor activities has Melanie done?")
    assert R.list_form("Which cities has Jon visited?")
    assert R.list_form("What kinds of books does Tim read?")
    assert R.list_form("What has Caroline done to help the community?")
    assert not R.list_form("What book did Tim read last?")
    assert not R.list_form("What is Caroline's identity?")
    assert not R.list_form("What does Melanie do on weekends?")
    assert not R.list_form("When did Ben go to the class?")


def test_content_words_leave_out_the_label_and_stopwords() -> None:
    assert R.content_words("Melanie: Wow, that's great!") == 3  # wow, s, great
    assert R.content_words("Ben: I made a bowl in pottery class.") == 4
    assert R.content_words("no label at all") == 1  # "no" and "all" are stopwords


def test_the_replay_is_search_and_each_idea_starts_from_it(
    tmp_path: Path, hybrid_env: dict[str, str]
) -> None:
    from obsmem.settings import load_settings

    settings = load_settings({**hybrid_env, "OM_HOME": str(tmp_path / "h")})
    assert settings.search_speaker_centroid_weight > 0
    report = R.run([SAMPLE], settings, check=True)  # SystemExit if the replay is not search()
    assert set(report["sweeps"]) == set(R.variants())
    firsts = {
        part["values"][next(iter(part["values"]))]["turn.recall@10"]
        for part in report["sweeps"].values()
    }
    assert len(firsts) == 1
    assert set(report["inspect"]) == {"evidence 11-50", "non-evidence 1-10"}

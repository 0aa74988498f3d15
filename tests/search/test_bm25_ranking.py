"""How BM25 search ranks: neighbours' text as a low-weight column, dates named in the query,
the speaker a query names and the matches around an entry."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from obsmem.index import open_index, refresh
from obsmem.index.query import fts_query
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import bm25 as bm25_module
from obsmem.search import search
from obsmem.search.bm25 import NEARBY_LINES, Ranking, bm25_rows, lift_nearby
from obsmem.search.dates import DateSpan
from obsmem.search.recall import Filters, search_entries
from obsmem.search.speakers import LABEL_HEAD, labelled, query_speakers
from obsmem.settings import load_settings

QUESTION_AND_ANSWER = """# Observations

## 2026-03-01

### Observations

- 🟡 09:00 Renewed the TLS certificates of the staging cluster
- 🟡 10:00 How often does the nightly backup of the billing database run?
- 🟡 10:05 Every four hours since the storage move
- 🟡 11:00 Moved the weekly report to Mondays

## 2026-03-02

### Observations

- 🟡 09:00 Wrote the incident review of the outage
"""


def bm25(**env: str) -> dict[str, str]:
    return {"OM_SEARCH_BACKEND": "bm25", **env}


def texts(store: MemoryStore, query: str, **env: str) -> list[str]:
    return [h.text for h in search(store, query, settings=load_settings(bm25(**env)))]


def test_an_answer_is_found_through_the_question_before_it(store: MemoryStore) -> None:
    store.observations_path.write_text(QUESTION_AND_ANSWER, encoding="utf-8")
    found = texts(store, "how often is the billing backup run")
    # The line holding the words first; then the lines around it, the answer among them,
    # though it holds none of the words.
    assert found[0] == "How often does the nightly backup of the billing database run?"
    assert "Every four hours since the storage move" in found[1:]
    # Neighbours are taken within the day: the next day's entry is not one.
    assert "Wrote the incident review of the outage" not in found


def test_context_weight_zero_matches_own_text_only(store: MemoryStore) -> None:
    store.observations_path.write_text(QUESTION_AND_ANSWER, encoding="utf-8")
    found = texts(store, "how often is the billing backup run", OM_SEARCH_CONTEXT_WEIGHT="0")
    assert found == ["How often does the nightly backup of the billing database run?"]
    # Filtered search (the MCP tool's) follows the same setting.
    store_env = {"OM_SEARCH_CONTEXT_WEIGHT": "0"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in store_env.items():
            patch.setenv(key, value)
        entries = search_entries(store, "billing backup", filters=Filters(since="2026-03-01"))
    assert [e["text"] for e in entries] == [found[0]]


def _same_note_on_three_days(store: MemoryStore, days: list[str]) -> None:
    store.add_observations(
        [
            new_observation("Rotated the signing keys of the pipeline", date=d, time="10:00")
            for d in days
        ]
    )


def test_a_named_day_ranks_that_days_entry_first(store: MemoryStore) -> None:
    _same_note_on_three_days(store, ["2026-02-27", "2026-03-03", "2026-03-09"])
    settings = load_settings(bm25())
    hits = search(store, "signing keys on 3 March 2026", settings=settings)
    assert hits[0].date == "2026-03-03"
    assert hits[0].score > 1.9 * hits[1].score  # doubled (OM_SEARCH_DATE_BOOST = 1)
    plain = search(store, "signing keys on 3 March 2026", settings=load_settings(
        bm25(OM_SEARCH_DATE_BOOST="0")))  # fmt: skip
    assert len({h.score for h in plain}) == 1  # equal texts score alike without the date


def test_a_month_of_any_year_and_a_relative_day(store: MemoryStore) -> None:
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    _same_note_on_three_days(store, ["2024-07-10", "2025-01-15", yesterday])
    settings = load_settings(bm25())
    assert search(store, "signing keys rotated in July", settings=settings)[0].date == "2024-07-10"
    assert search(store, "signing keys yesterday", settings=settings)[0].date == yesterday


def test_the_referenced_date_counts_too(store: MemoryStore) -> None:
    # Written on the 10th about the 2nd: "(meaning 2026-03-02)" in the line sets referenced_date.
    store.observations_path.write_text(
        "# Observations\n\n## 2026-03-10\n\n### Observations\n\n"
        "- 🟡 10:00 Rotated the signing keys (meaning 2026-03-05)\n"
        "- 🟡 11:00 Rotated the signing keys (meaning 2026-03-02)\n",
        encoding="utf-8",
    )
    # "2" is not "02": the words of the date match both lines alike, the referenced date one.
    hits = search(store, "signing keys on 2 March 2026", settings=load_settings(bm25()))
    assert hits[0].text == "Rotated the signing keys (meaning 2026-03-02)"


def test_filtered_search_ranks_dates_like_search(store: MemoryStore) -> None:
    _same_note_on_three_days(store, ["2026-02-27", "2026-03-03", "2026-03-09"])
    entries = search_entries(store, "signing keys on March 9, 2026", filters=Filters(type="fact"))
    assert entries == []  # the filter still applies
    entries = search_entries(store, "signing keys on March 9, 2026", filters=Filters())
    assert entries[0]["date"] == "2026-03-09"


def test_ranking_reads_its_settings() -> None:
    settings = load_settings(bm25(OM_SEARCH_CONTEXT_WEIGHT="0.5", OM_SEARCH_DATE_BOOST="0"))
    ranking = Ranking.for_query("what happened on 2026-03-03", settings)
    assert ranking == Ranking(0.5, (), 0.0)
    assert not ranking.dated
    ranking = Ranking.for_query("in May", load_settings(bm25()))
    assert ranking.dates == (DateSpan(month=5),) and ranking.dated
    score, params = ranking.score_sql()
    assert score.count("?") == len(params)


def _conversation(store: MemoryStore, speakers: tuple[str, str], day: list[str]) -> None:
    """Ten days of small talk by both speakers, then ``day``: every entry carries its speaker
    and its neighbours' text both names, so a name alone hardly tells the lines apart."""
    lines = ["# Observations", ""]
    for d in range(1, 11):
        lines += [f"## 2026-03-{d:02d}", "", "### Observations", ""]
        lines += [
            f"- 🟡 09:0{i} {speakers[i % 2]}: Walked the dog along route {d * 4 + i}"
            for i in range(4)
        ]
        lines.append("")
    lines += ["## 2026-04-02", "", "### Observations", ""]
    lines += [f"- 🟡 10:0{i} {text}" for i, text in enumerate(day)]
    store.observations_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_query_speakers_are_capitalised_words_and_roles() -> None:
    assert query_speakers("What did Caroline say about Melanie's pottery?") == [
        "Caroline",
        "Melanie",
    ]
    assert query_speakers("what did the User ask the assistant about the build") == [
        "user",
        "assistant",
    ]
    assert query_speakers("When did she go to the pottery class?") == []  # "When": a stopword


def test_a_named_speakers_lines_rank_above_the_other_speakers(store: MemoryStore) -> None:
    _conversation(
        store,
        ("Caroline", "Melanie"),
        [
            "Caroline: I went to a pottery class on Saturday",
            "Melanie: We went to a pottery fair with the kids and bought a pottery bowl",
            "Caroline: That sounds lovely",
            "Melanie: The kids loved it",
        ],
    )
    question = "Where did Caroline go for pottery?"
    plain = texts(store, question, OM_SEARCH_SPEAKER_BOOST="0")
    # Without the boost, Melanie's line holds "pottery" twice and wins.
    assert plain[0].startswith("Melanie: We went")
    found = texts(store, question)
    assert found[0] == "Caroline: I went to a pottery class on Saturday"
    # Filtered search (the MCP tool's) ranks by speaker too.
    entries = search_entries(store, question, filters=Filters(since="2026-04-01"))
    assert entries[0]["text"] == found[0]


def test_roles_name_speakers_in_coding_sessions(store: MemoryStore) -> None:
    _conversation(
        store,
        ("user", "assistant"),
        [
            "assistant: The flaky test is the cache test; the cache test fails on retry",
            "user: Skip the cache test for now",
            "assistant: Done",
        ],
    )
    question = "what did the user say about the cache test"
    assert texts(store, question, OM_SEARCH_SPEAKER_BOOST="0")[0].startswith("assistant: The")
    assert texts(store, question)[0] == "user: Skip the cache test for now"


CODING = """# Observations

## 2026-03-01

### Observations

- 🟡 09:00 The cache test of the cache layer fails on retry
- 🟡 09:10 Decided to keep the cache warm between runs
- 🟡 09:20 Reviewed the user settings page
"""


def _bm25_run(store: MemoryStore, query: str, **env: str) -> tuple[list[object], list[str]]:
    """The rowids BM25 ranks for ``query`` (refreshed first) and the SQL it ran to rank them."""
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        ran: list[str] = []
        conn.set_trace_callback(ran.append)
        ranking = Ranking.for_query(query, load_settings(bm25(**env)))
        rows = bm25_rows(conn, fts_query(query) or "", 30, ranking)
    finally:
        conn.close()
    return [(row[-1], row[0]) for row in rows], ran


def test_a_role_no_entry_is_labelled_with_takes_the_plain_path(store: MemoryStore) -> None:
    store.observations_path.write_text(CODING, encoding="utf-8")
    query = "what did the user decide about the cache"
    rows, ran = _bm25_run(store, query)
    assert not any("LIKE" in sql for sql in ran)  # no entry's text was tested for a label
    assert rows == _bm25_run(store, query, OM_SEARCH_SPEAKER_BOOST="0")[0]


def test_a_labelled_speaker_is_ranked_as_before(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _conversation(
        store,
        ("Caroline", "Melanie"),
        ["Caroline: I went to a pottery class", "Melanie: We bought a pottery bowl, pottery!"],
    )
    query = "Where did Caroline and Nobody go for pottery?"
    rows, ran = _bm25_run(store, query)
    assert any("LIKE" in sql for sql in ran)
    # The same scores as a boost that looks for every name the query holds.
    monkeypatch.setattr(bm25_module, "labelled", lambda conn, names: tuple(names))
    assert rows == _bm25_run(store, query)[0]
    monkeypatch.undo()
    assert rows != _bm25_run(store, query, OM_SEARCH_SPEAKER_BOOST="0")[0]


def test_a_label_written_later_is_seen(store: MemoryStore) -> None:
    store.observations_path.write_text(CODING, encoding="utf-8")
    query = "what did the user say about the cache test"
    assert texts(store, query)[0] == "The cache test of the cache layer fails on retry"
    with store.observations_path.open("a", encoding="utf-8") as out:
        out.write("- 🟡 09:30 user: Leave the cache alone\n")
    # Without the boost the first line holds "cache" twice and stays first.
    assert texts(store, query, OM_SEARCH_SPEAKER_BOOST="0")[0].startswith("The cache test")
    assert texts(store, query)[0] == "user: Leave the cache alone"


def test_labelled_keeps_the_names_entries_start_with(store: MemoryStore) -> None:
    store.observations_path.write_text(
        CODING + "- 🟡 09:40 USER: ship it\n- 🟡 09:50 Zoë: the users: list\n", encoding="utf-8"
    )
    conn = open_index(store.index_path)
    try:
        refresh(store, conn)
        names = ["user", "assistant", "zoë", "ZOË", "users", "x" * LABEL_HEAD, "The cache test"]
        # ASCII letters in any case, as LIKE matches; "ZOË" is not "Zoë" to LIKE either.
        assert labelled(conn, names) == ("user", "zoë", "x" * LABEL_HEAD)
    finally:
        conn.close()


def test_a_name_with_like_wildcards_is_matched_literally() -> None:
    ranking = Ranking.for_query("Ann_e pottery", load_settings(bm25()))
    assert ranking.speakers == ("Ann",) and ranking.by_speaker  # "_" splits words, as FTS5 does
    ranking = Ranking(speakers=("A_n%",), speaker_boost=1.0)
    score, params = ranking.score_sql()
    assert "A\\_n\\%:%" in params and score.count("?") == len(params)


NEARBY = """# Observations

## 2026-03-01

### Observations

- 🟡 09:00 Hotel booked near the station, hotel paid
- 🟡 09:10 Fixed the flaky login test
- 🟡 09:20 Reviewed the metrics dashboard
- 🟡 09:30 Cleaned up the old branches

## 2026-03-02

### Observations

- 🟡 09:00 Booked the flights to Lisbon for the conference
- 🟡 09:10 Renewed the TLS certificates
- 🟡 09:20 Moved the weekly report to Mondays
- 🟡 09:30 Wrote the incident review
- 🟡 09:40 Hotel booked near the river
"""


def test_a_match_near_a_strong_match_ranks_above_a_lone_one(store: MemoryStore) -> None:
    store.observations_path.write_text(NEARBY, encoding="utf-8")
    question = "which hotel for the Lisbon conference"
    # Alone, the station's line holds "hotel" twice and wins; the river's line is four lines
    # below the conference's (beyond the neighbours column's two), and the lift raises it.
    plain = texts(store, question, OM_SEARCH_NEARBY_WEIGHT="0")
    assert plain[0].startswith("Booked the flights")
    assert plain.index("Hotel booked near the station, hotel paid") < plain.index(
        "Hotel booked near the river"
    )
    found = texts(store, question)
    assert found[0].startswith("Booked the flights")
    assert found.index("Hotel booked near the river") < found.index(
        "Hotel booked near the station, hotel paid"
    )


def _row(score: float, line: int, date: str = "2026-03-01", file: str = "observations.md"):
    """A result row as ``bm25_rows`` gives it: raw score, entry columns, rowid."""
    columns: dict[str, object] = {"file": file, "line": line, "date": date, "section": "Obs"}
    from obsmem.search.bm25 import ENTRY_COLUMNS

    return (score, *(columns.get(name) for name in ENTRY_COLUMNS), line)


def test_lift_nearby_counts_rows_of_the_same_file_day_and_reach_only() -> None:
    strong = _row(-10.0, 10)
    near = _row(-1.0, 10 + NEARBY_LINES)
    far = _row(-1.5, 11 + 2 * NEARBY_LINES)  # out of reach of both
    other_day = _row(-1.2, 11, date="2026-03-02")
    other_file = _row(-1.1, 12, file="vault/page.md")
    lifted = lift_nearby([strong, far, other_day, other_file, near], 0.5)
    assert [row[-1] for row in lifted] == [10, 10 + NEARBY_LINES, 11 + 2 * NEARBY_LINES, 11, 12]
    assert lifted[1][0] == -1.0 + 0.5 * -10.0  # the score carries the lift
    assert lifted[0][0] == -10.0 + 0.5 * -1.0  # the strong row is lifted by its best neighbour
    assert lifted[2][0] == -1.5 and lifted[3][0] == -1.2  # nothing within reach

"""The provenance ledger: append-only JSON lines keyed by observation id."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obsmem.memory.ledger import (
    ForgottenTurns,
    append_forgotten,
    append_forgotten_turns,
    append_provenance,
    forgotten_ids,
    forgotten_turns,
    read_ledger,
    turn_digest,
    turn_key,
)
from obsmem.memory.model import Provenance

PROV = Provenance(
    path="/t/claude/s1.jsonl", line_start=10, line_end=14, session="s1", agent="claude"
)


def test_append_and_read(tmp_path: Path) -> None:
    ledger = tmp_path / "state" / "provenance.jsonl"
    other = Provenance(path="/t/codex/r.jsonl", byte_start=0, byte_end=512, project="om")
    assert append_provenance(ledger, [("a0b1c2d3e4", PROV), ("k3v9q2m7xa", other)]) == 2
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    assert stat.S_IMODE(ledger.parent.stat().st_mode) == 0o700
    lines = ledger.read_bytes().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0]) == {"id": "a0b1c2d3e4", "provenance": PROV.to_dict()}
    assert read_ledger(ledger) == ({"a0b1c2d3e4": PROV, "k3v9q2m7xa": other}, 0)


def test_missing_ledger_is_empty(tmp_path: Path) -> None:
    assert read_ledger(tmp_path / "nope.jsonl") == ({}, 0)


def test_nothing_to_append_creates_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    assert append_provenance(ledger, []) == 0
    assert not ledger.exists()


def test_last_entry_wins(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    newer = Provenance(path="/t/other.jsonl")
    append_provenance(ledger, [("a0b1c2d3e4", newer)])
    assert read_ledger(ledger) == ({"a0b1c2d3e4": newer}, 0)


def test_torn_last_line_does_not_corrupt_the_next_append(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    with ledger.open("ab") as handle:  # a writer killed halfway through its line
        handle.write(b'{"id": "zzzzzzzzzz", "provenance": {"pa')
    # Until something follows it, a last line without its ending may be an append in progress.
    assert read_ledger(ledger) == ({"a0b1c2d3e4": PROV}, 0)
    later = Provenance(path="/t/later.jsonl", line_start=1)
    append_provenance(ledger, [("k3v9q2m7xa", later)])
    entries, bad = read_ledger(ledger)
    assert entries == {"a0b1c2d3e4": PROV, "k3v9q2m7xa": later}
    assert bad == 1
    assert ledger.read_bytes().endswith(b"\n")


def test_a_tombstone_forgets_an_id_without_any_text(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV), ("k3v9q2m7xa", PROV)])
    assert forgotten_ids(ledger) == {}
    assert append_forgotten(ledger, ["a0b1c2d3e4", "a0b1c2d3e4"]) == 1  # repeats once
    last = json.loads(ledger.read_bytes().splitlines()[-1])
    assert set(last) == {"id", "forgotten"} and last["id"] == "a0b1c2d3e4"
    assert list(forgotten_ids(ledger)) == ["a0b1c2d3e4"]
    # Forgotten ids leave the provenance readers see, without counting as unreadable lines;
    # the one that forgets them still finds where they came from.
    assert read_ledger(ledger) == ({"k3v9q2m7xa": PROV}, 0)
    assert read_ledger(ledger, include_forgotten=True)[0]["a0b1c2d3e4"] == PROV


def test_provenance_written_after_a_tombstone_revives_the_id(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    append_forgotten(ledger, ["a0b1c2d3e4"])
    assert "a0b1c2d3e4" in forgotten_ids(ledger)
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])  # remembered again on purpose
    assert forgotten_ids(ledger) == {}
    assert read_ledger(ledger) == ({"a0b1c2d3e4": PROV}, 0)


def test_forgotten_ids_sees_every_new_tombstone(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    assert forgotten_ids(ledger) == {}  # no ledger at all
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    assert forgotten_ids(ledger) == {}
    for number, obs_id in enumerate(("a0b1c2d3e4", "k3v9q2m7xa"), start=1):
        append_forgotten(ledger, [obs_id])
        assert len(forgotten_ids(ledger)) == number  # the cached answer follows the file


def test_a_turn_tombstone_is_a_keyed_hash_of_the_normalised_text(tmp_path: Path) -> None:
    import hashlib

    key_path = tmp_path / "forget.key"
    assert turn_key(key_path) is None  # made only when something is forgotten
    key = turn_key(key_path, create=True)
    assert key is not None and len(key) == 32 and turn_key(key_path, create=True) == key
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    text = "OK, noted zebrafish-cobalt."
    digest = turn_digest(key, text)
    assert turn_digest(key, "  ok,  NOTED\tzebrafish-cobalt. ") == digest  # case, spacing
    assert turn_digest(key, "ok,\u3000noted\u2028zebrafish-cobalt.") == digest  # wide spaces
    assert turn_digest(key, "OK, noted zebrafish-cobalt!") != digest
    assert turn_digest(bytes(32), text) != digest  # another memory's key: another hash
    assert digest != hashlib.blake2b(b"ok, noted zebrafish-cobalt.", digest_size=16).hexdigest()
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    assert append_forgotten_turns(ledger, [digest, digest]) == 1
    assert append_forgotten_turns(ledger, [digest]) == 0  # already there
    assert b"zebrafish" not in ledger.read_bytes()
    assert forgotten_turns(ledger) == {digest}
    # Not an id's tombstone, and not an unreadable line.
    assert forgotten_ids(ledger) == {} and read_ledger(ledger) == ({"a0b1c2d3e4": PROV}, 0)
    asked = [text, "other", "ok, noted zebrafish-cobalt."]
    assert ForgottenTurns(ledger, key_path).keep(asked) == [False, True, False]
    key_path.unlink()  # without the key the hashes match nothing: every turn is kept
    assert ForgottenTurns(ledger, key_path).keep([text]) == [True]


#: Every character ``str.split`` splits on, with letters (full-width, a ligature, sharp s).
_SPACES = [chr(c) for c in range(0x110000) if chr(c).isspace()]


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(["a", "Z", "9", ".", "\uff21", "\ufb01", "\xdf", *_SPACES]))
)
def test_a_turn_digest_normalises_as_str_split_and_ascii_lower_case_do(text: str) -> None:
    """The digest's normal form is made on bytes; it must be the one these two describe."""
    import hashlib

    words = "".join(c.lower() if c.isascii() else c for c in text).split()
    expected = hashlib.blake2b(" ".join(words).encode(), key=b"k" * 32, digest_size=16)
    assert turn_digest(b"k" * 32, text) == expected.hexdigest()


_GARBAGE = [
    b"not json",
    b"{",
    b"[]",
    b"42",
    b'"a string"',
    b"null",
    b'{"id": "x"}',
    b'{"provenance": {"path": "/p"}}',
    b'{"id": "x", "provenance": []}',
    b'{"id": "x", "provenance": "ab"}',
    b'{"id": "x", "provenance": ["ab"]}',
    b'{"id": "x", "provenance": {"line_start": 3}}',
    b"\xff\xfe\x00garbage",
    b"\xef\xbb\xbf{}",
    b"[" * 100_000,  # deep nesting: json raises RecursionError, not ValueError
    b'{"a":' * 50_000,
]


def test_garbage_lines_are_skipped_with_a_count(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    with ledger.open("ab") as handle:
        handle.write(b"\n".join(_GARBAGE) + b"\n\n   \n")
    append_provenance(ledger, [("k3v9q2m7xa", PROV)])
    entries, bad = read_ledger(ledger)
    assert set(entries) == {"a0b1c2d3e4", "k3v9q2m7xa"}
    assert bad == len(_GARBAGE)


def test_paths_that_are_not_utf8_round_trip(tmp_path: Path) -> None:
    # File names with undecodable bytes reach Python as surrogate escapes (os.fsdecode).
    weird = Provenance(path="/t/sessions/caf\udce9.jsonl", session="s\udcff", project="ünï")
    plain = Provenance(path="/t/sessions/café.jsonl", project="ünï")
    ledger = tmp_path / "provenance.jsonl"
    assert append_provenance(ledger, [("a0b1c2d3e4", weird), ("k3v9q2m7xa", plain)]) == 2
    assert read_ledger(ledger) == ({"a0b1c2d3e4": weird, "k3v9q2m7xa": plain}, 0)
    # Text that UTF-8 can hold stays readable in the file.
    assert '"/t/sessions/café.jsonl"'.encode() in ledger.read_bytes()
    ledger.read_bytes().decode("utf-8")  # the ledger itself stays valid UTF-8


ids = st.text(alphabet="0123456789abcdefghjkmnpqrstvwxyz", min_size=10, max_size=10)
provenances = st.builds(
    Provenance,
    path=st.text(min_size=1),
    line_start=st.none() | st.integers(0, 10**6),
    session=st.none() | st.text(),
    byte_end=st.none() | st.integers(0, 10**9),
)
garbage = st.binary(max_size=40).filter(lambda b: b"\n" not in b).map(lambda b: b"!" + b)


@settings(max_examples=100)
@given(st.lists(st.one_of(st.tuples(ids, provenances), garbage), max_size=20))
def test_any_mix_of_entries_and_garbage(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, Provenance] | bytes]
) -> None:
    ledger = tmp_path_factory.mktemp("ledger") / "provenance.jsonl"
    expected: dict[str, Provenance] = {}
    bad = 0
    torn = False
    for item in items:
        if isinstance(item, bytes):
            with ledger.open("ab") as handle:
                handle.write(item)  # no newline: a torn line, the next append must not glue
            bad += not torn  # garbage written after garbage extends the same torn line
            torn = True
        else:
            append_provenance(ledger, [item])
            expected[item[0]] = item[1]
            torn = False
    # A torn last line with nothing after it may still be being written: not counted yet.
    assert read_ledger(ledger) == (expected, bad - torn)


def _counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    import obsmem.memory.ledger as ledger_module

    seen: list[bytes] = []
    real = json.loads

    def loads(raw: bytes) -> object:
        seen.append(raw)
        return real(raw)

    monkeypatch.setattr(ledger_module.json, "loads", loads)
    return seen


def test_a_second_read_parses_only_what_was_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [(f"a0b1c2d3{n:02d}", PROV) for n in range(30)])
    assert len(read_ledger(ledger)[0]) == 30
    parsed = _counting_loads(monkeypatch)
    append_forgotten(ledger, ["a0b1c2d300"])
    append_provenance(ledger, [("k3v9q2m7xa", PROV)])
    entries, bad = read_ledger(ledger)
    assert (len(entries), bad) == (30, 0)
    assert "a0b1c2d300" not in entries and "k3v9q2m7xa" in entries
    assert len(parsed) == 2  # the two new lines, not the thirty before them


def test_a_ledger_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    assert set(read_ledger(ledger)[0]) == {"a0b1c2d3e4"}
    data = ledger.read_bytes()
    with ledger.open("r+b") as handle:  # same inode, same size, other bytes
        handle.write(data.replace(b"a0b1c2d3e4", b"a0b1c2d3e5"))
    assert set(read_ledger(ledger)[0]) == {"a0b1c2d3e5"}
    with ledger.open("r+b") as handle:  # same inode, longer, other bytes before the end
        handle.write(data.replace(b"a0b1c2d3e4", b"a0b1c2d3e6") + data[:-1] + b"\n")
    assert set(read_ledger(ledger)[0]) == {"a0b1c2d3e6", "a0b1c2d3e4"}
    ledger.write_bytes(b"")  # emptied
    assert read_ledger(ledger) == ({}, 0)


def test_the_callers_dict_is_its_own(tmp_path: Path) -> None:
    ledger = tmp_path / "provenance.jsonl"
    append_provenance(ledger, [("a0b1c2d3e4", PROV)])
    read_ledger(ledger)[0].clear()
    assert set(read_ledger(ledger)[0]) == {"a0b1c2d3e4"}


ledger_steps = st.one_of(
    st.tuples(st.just("add"), ids, provenances),
    st.tuples(st.just("forget"), ids),
    st.tuples(st.just("torn"), garbage),
    st.tuples(st.just("read")),
)


@settings(max_examples=100)
@given(st.lists(ledger_steps, max_size=25))
def test_reading_as_it_grows_gives_what_one_full_read_gives(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[object, ...]]
) -> None:
    from obsmem.memory.ledger import _scan

    ledger = tmp_path_factory.mktemp("ledger") / "provenance.jsonl"
    for step in steps:
        if step[0] == "add":
            append_provenance(ledger, [(str(step[1]), step[2])])  # type: ignore[list-item]
        elif step[0] == "forget":
            append_forgotten(ledger, [str(step[1])])
        elif step[0] == "torn":
            with ledger.open("ab") as handle:
                handle.write(step[1])  # type: ignore[arg-type]
        else:
            read_ledger(ledger)
        provenance, forgotten, bad = _scan(ledger.read_bytes() if ledger.exists() else b"")
        for obs_id in forgotten:
            provenance.pop(obs_id, None)
        assert read_ledger(ledger) == (provenance, bad)
        assert read_ledger(ledger, include_forgotten=True)[0].keys() >= provenance.keys()


def test_threads_reading_while_it_grows_see_whole_entries(tmp_path: Path) -> None:
    import threading

    ledger = tmp_path / "provenance.jsonl"
    errors: list[BaseException] = []
    sizes: list[int] = []

    def reader() -> None:
        try:
            for _ in range(30):
                entries, bad = read_ledger(ledger)
                assert bad == 0 and all(isinstance(p, Provenance) for p in entries.values())
                sizes.append(len(entries))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for thread in threads:
        thread.start()
    for n in range(200):
        append_provenance(ledger, [(f"k3v9q2m{n:03d}", PROV)])
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(read_ledger(ledger)[0]) == 200 and max(sizes, default=0) <= 200

"""Planned edits: marker blocks are exact inverses, diffs show changes, apply backs up first."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from obsmem.errors import IntegrationError
from obsmem.integrations.edits import (
    Edit,
    FileTarget,
    apply_edits,
    drop_block,
    has_block,
    render_diff,
    set_block,
)
from obsmem.paths import backups_dir

BEGIN, END = "<!-- om:begin -->", "<!-- om:end -->"

user_text = st.text(alphabet=st.characters(blacklist_characters="\r"), max_size=200).filter(
    lambda t: BEGIN not in t and END not in t
)


@given(user_text, user_text, user_text)  # om's own bodies never hold the markers
def test_set_then_drop_gives_back_the_users_bytes(text: str, body: str, body2: str) -> None:
    once = set_block(text, BEGIN, END, body)
    twice = set_block(once, BEGIN, END, body2)
    assert has_block(twice, BEGIN, END)
    assert twice.count(BEGIN) == 1
    assert drop_block(twice, BEGIN, END) == text


def test_block_is_replaced_in_place_where_the_user_moved_it() -> None:
    text = f"# Notes\n\n{BEGIN}\nold\n{END}\n\n## Mine\nkeep me\n"
    updated = set_block(text, BEGIN, END, "new")
    assert updated == f"# Notes\n\n{BEGIN}\nnew\n{END}\n\n## Mine\nkeep me\n"
    assert drop_block(updated, BEGIN, END) == "# Notes\n\n\n## Mine\nkeep me\n"


def test_markers_quoted_inside_a_line_are_not_a_block() -> None:
    text = f"see `{BEGIN}` in the docs\n"
    assert not has_block(text, BEGIN, END)
    assert drop_block(text, BEGIN, END) == text


def test_diff_names_created_changed_and_removed_files(tmp_path: Path) -> None:
    a, b, c = (FileTarget(tmp_path / n) for n in ("a.json", "b.md", "c.txt"))
    diff = render_diff(
        [
            Edit(a, None, '{"x": 1}\n', why="create a"),
            Edit(b, "one\n", "one\ntwo\n"),
            Edit(c, "gone\n", None),
            Edit(FileTarget(tmp_path / "same"), "x\n", "x\n"),
        ]
    )
    assert "--- /dev/null" in diff and f"+++ {a.label}" in diff and "# create a" in diff
    assert "+two" in diff
    assert f"--- {c.label}" in diff and "+++ /dev/null" in diff and "-gone" in diff
    assert "same" not in diff


def test_apply_backs_up_then_writes_keeping_modes(tmp_path: Path) -> None:
    existing = tmp_path / "settings.json"
    existing.write_text("{}\n")
    existing.chmod(0o644)
    new = tmp_path / "sub" / "hooks.json"
    folder = apply_edits(
        [
            Edit(FileTarget(existing), "{}\n", '{"a": 1}\n'),
            Edit(FileTarget(new), None, "[]\n"),
        ]
    )
    assert folder is not None and folder.parent == backups_dir()
    assert existing.read_text() == '{"a": 1}\n'
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    backups = list(folder.iterdir())
    assert [p.read_text() for p in backups] == ["{}\n"]


def test_apply_refuses_when_a_file_changed_since_planning(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_text("a\n")
    two.write_text("b\n")
    edits = [Edit(FileTarget(one), "a\n", "A\n"), Edit(FileTarget(two), "b\n", "B\n")]
    two.write_text("someone else\n")
    with pytest.raises(IntegrationError, match="changed while om was preparing"):
        apply_edits(edits)
    assert one.read_text() == "a\n"  # nothing was written
    assert two.read_text() == "someone else\n"


def test_apply_with_nothing_to_change_writes_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("x\n")
    assert apply_edits([Edit(FileTarget(path), "x\n", "x\n")]) is None
    assert not backups_dir().exists()


def test_removing_a_file(tmp_path: Path) -> None:
    path = tmp_path / "plist"
    path.write_text("<plist/>\n")
    apply_edits([Edit(FileTarget(path), "<plist/>\n", None)])
    assert not path.exists()


def test_one_backup_folder_keeps_the_first_state_of_a_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("original\n")
    folder = tmp_path / "backup"
    apply_edits([Edit(FileTarget(path), "original\n", "step one\n")], folder=folder)
    apply_edits([Edit(FileTarget(path), "step one\n", "step two\n")], folder=folder)
    assert [p.read_text() for p in folder.iterdir()] == ["original\n"]
    assert path.read_text() == "step two\n"

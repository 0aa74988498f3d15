"""Clean text: no escapes, control characters or bidi controls reach memory, by any path."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from obsmem.cli import cli
from obsmem.errors import UsageError
from obsmem.memory.clean import clean_text
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.observe.remember import remember

DIRTY = (
    "\x1b[31mred\x1b[0m build\x00 failed \x1b]0;title\x07on \u202eevil\u202c main "
    "\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\ \x08\x7f\x9b2Jdone\u2066x\u2069\ufeff"
)


def test_escapes_controls_and_bidi_are_removed() -> None:
    assert clean_text(DIRTY) == "red build failed on evil main link donex"


def test_ordinary_text_is_left_as_it_is() -> None:
    text = "Café naïve 日本語 emoji 👩‍💻 tab\there\nnew line, arrows → and ‘quotes’"
    assert clean_text(text) == text


@pytest.mark.parametrize("char", ["\u202a", "\u202b", "\u202d", "\u2067", "\u2068", "\u200f"])
def test_every_bidi_control_goes(char: str) -> None:
    assert clean_text(f"a{char}b") == "ab"


def test_new_observation_cleans_its_text() -> None:
    obs = new_observation(DIRTY, date="2026-03-01")
    assert obs.text == "red build failed on evil main link donex"


def test_remember_stores_clean_text(store: MemoryStore) -> None:
    text = "Deploys use \x1b[1mblue\x1b[0m\x00 \u202egreen\u202c"
    done = remember(store, text, type="fact", importance=0.6)
    assert done.text == "Deploys use blue green"
    text = store.observations_path.read_text(encoding="utf-8")
    assert "Deploys use blue green" in text
    assert "\x1b" not in text and "\x00" not in text and "\u202e" not in text


def test_text_of_only_control_characters_is_refused(store: MemoryStore) -> None:
    with pytest.raises(UsageError):
        remember(store, "\x00\x1b[2J\u202e", type="fact", importance=0.6)
    path = store.observations_path
    assert not path.exists() or "\x00" not in path.read_text(encoding="utf-8")


def test_om_remember_on_the_command_line_stores_clean_text(store: MemoryStore) -> None:
    result = CliRunner().invoke(
        cli,
        ["remember", "--type", "fact", "Ship \x1b[32mon\x1b[0m Friday\u202e"],
        env={"OM_HOME": str(store.home)},
    )
    assert result.exit_code == 0, result.output
    text = store.observations_path.read_text(encoding="utf-8")
    assert "Ship on Friday" in text and "\x1b" not in text and "\u202e" not in text


def test_current_context_is_cleaned_too() -> None:
    from obsmem.observe.draft import CurrentContext

    ctx = CurrentContext(active_task="Fix \x1b[31mthe\x1b[0m build\x00", key_entities=["\u202e"])
    assert ctx.as_lines() == {"Active task": "Fix the build"}

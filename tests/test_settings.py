"""``Settings`` behaves as the frozen dataclass type checkers see, built without
``dataclasses`` (a cold ``om search`` pays for every module it imports); the search daemon's
settings are validated like the others."""

from __future__ import annotations

import subprocess
import sys

import pytest

from obsmem.errors import SettingsError
from obsmem.settings import SPECS, Settings, SettingSpec, load_settings


def test_the_settings_and_the_search_load_no_dataclasses_module() -> None:
    code = (
        "import sys, obsmem.settings, obsmem.search.mixed, obsmem.cli.quick\n"
        "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_defaults_keywords_and_positions() -> None:
    settings = Settings(llm_provider="none", search_backend="bm25")
    assert settings.llm_provider == "none" and settings.search_backend == "bm25"
    assert settings.embed_batch_size == 64 and settings.sources == {}
    assert Settings().search_daemon == "on" and Settings().search_daemon_idle_minutes == 10.0
    spec = SettingSpec("OM_X", "x", str, "", "help")
    assert (spec.env, spec.attr, spec.default, spec.secret) == ("OM_X", "x", "", False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such'"):
        Settings(no_such=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing required argument: 'help'"):
        SettingSpec("OM_X", "x", str, "")  # type: ignore[call-arg]


def test_frozen_equal_hashable_and_replace() -> None:
    one, two = load_settings({}), load_settings({})
    assert one == two and hash(one) == hash(two)
    assert one != Settings(llm_provider="none")
    # ``sources`` and ``env_file`` say where values came from; they are not compared.
    assert Settings(sources={"OM_X": "file"}) == Settings()
    with pytest.raises(AttributeError, match="cannot assign"):
        one.llm_model = "x"  # type: ignore[misc]
    other = one.replace(search_backend="bm25", rerank_model="")
    assert other.search_backend == "bm25" and one.search_backend == "auto"
    assert other.env_file == one.env_file and other.lock_timeout_seconds == 30.0
    assert {spec.attr for spec in SPECS} <= set(vars(other))


def test_repr_hides_secrets() -> None:
    shown = repr(Settings(openai_api_key="sk-secret", mcp_token="tok-secret", llm_model="m"))
    assert "secret" not in shown and "llm_model='m'" in shown


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OM_SEARCH_DAEMON", "maybe"),
        ("OM_SEARCH_DAEMON_IDLE_MINUTES", "0"),
        ("OM_SEARCH_DAEMON_TIMEOUT_SECONDS", "soon"),
    ],
)
def test_daemon_settings_are_validated(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings({name: value})


def test_daemon_settings_are_read() -> None:
    settings = load_settings(
        {
            "OM_SEARCH_DAEMON": "OFF",
            "OM_SEARCH_DAEMON_IDLE_MINUTES": "2.5",
            "OM_SEARCH_DAEMON_TIMEOUT_SECONDS": "0.5",
        }
    )
    assert settings.search_daemon == "off"
    assert settings.search_daemon_idle_minutes == 2.5
    assert settings.search_daemon_timeout_seconds == 0.5

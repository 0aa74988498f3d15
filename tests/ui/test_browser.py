"""The viewer in a real browser: headless Chromium (Debian's package) driven by Selenium.

One server and one browser for the module; each test opens pages as a user would. Skipped with
a message naming what is missing where Chromium or its driver is not installed (`make test`
installs them as root; CI does). With ``OM_REQUIRE_BROWSER=1`` a missing browser fails instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import browser
from .conftest import XSS, observation

_MISSING = browser.missing()
if _MISSING and os.environ.get("OM_REQUIRE_BROWSER"):
    # Where the browser must be there (CI), its absence is a failure, not a skip.
    pytest.fail(_MISSING, pytrace=False)
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, Any]]:
    from obsmem.memory.store import MemoryStore

    store = MemoryStore(tmp_path_factory.mktemp("browser") / "memory").ensure()
    store.add_observations([
        observation("Chose PostgreSQL over SQLite for concurrent writes", "2026-11-24", "10:05",
                    type_="decision", importance=0.9),
        observation("Redis workers need their own database number", "2026-11-26", "14:30",
                    type_="lesson", importance=0.7),
        observation("Forget me: the staging host is called bluefin", "2026-11-26", "15:00"),
        *(observation(f"hostile {n} {text}", "2026-11-27", f"09:0{n}")
          for n, text in enumerate(XSS)),
    ])  # fmt: skip
    (store.home / "reflections.md").write_text(
        "# Reflections\n\n## Key Facts\n\n- Atlas uses PostgreSQL\n", encoding="utf-8"
    )
    with browser.ServerThread(store) as server, browser.chromium() as driver:
        driver.get(server.login_url)
        yield store, server, driver


def _alerts(driver: Any) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert.dismiss()
        return True
    except NoAlertPresentException:
        return False


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/", "Timeline"),
        ("/search?q=redis", "Redis workers"),
        ("/reflections", "Atlas uses PostgreSQL"),
        ("/vault", "Vault"),
        ("/next", "What om remembers"),
        ("/status", "Doctor"),
    ],
)
def test_each_page_opens(served: tuple[Any, Any, Any], path: str, shown: str) -> None:
    _, server, driver = served
    driver.get(server.url(path))
    assert shown in driver.find_element("tag name", "main").text
    assert not _alerts(driver)


def test_the_login_url_leaves_the_address_bar(served: tuple[Any, Any, Any]) -> None:
    _, server, driver = served
    driver.get(server.login_url)
    assert "token=" not in driver.current_url
    assert driver.current_url == server.url("/")


def test_search_from_the_form(served: tuple[Any, Any, Any]) -> None:
    _, server, driver = served
    driver.get(server.url("/search"))
    field = driver.find_element("name", "q")
    field.send_keys("postgresql")
    field.submit()
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(ready.url_contains("q=postgresql"))
    marks = [m.text for m in driver.find_elements("tag name", "mark")]
    assert "PostgreSQL" in marks
    assert "q=postgresql" in driver.current_url


def test_forget_from_the_entry_page(served: tuple[Any, Any, Any]) -> None:
    store, server, driver = served
    driver.get(server.url("/search?q=bluefin"))
    link = driver.find_element("css selector", "li.hit a.cite")
    href = link.get_attribute("href")
    entry_id = href.rsplit("/", 1)[1]
    driver.get(href)
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element("css selector", "button.danger").click()
    WebDriverWait(driver, 10).until(ready.alert_is_present()).accept()  # the script asks first
    note = (
        WebDriverWait(driver, 10)
        .until(ready.presence_of_element_located(("css selector", ".note")))
        .text
    )
    assert f"forgot {entry_id}" in note
    assert "bluefin" not in Path(store.observations_path).read_text(encoding="utf-8")
    assert "bluefin" not in driver.find_element("tag name", "main").text


def test_hostile_text_stays_text(served: tuple[Any, Any, Any]) -> None:
    _, server, driver = served
    driver.get(server.url("/?since=2026-11-27&until=2026-11-27"))
    assert not _alerts(driver)
    shown = driver.find_element("tag name", "main").text
    assert "<script>alert('xss')</script>" in shown
    assert '<img src=x onerror="alert(1)">' in shown
    assert driver.find_elements("css selector", "main img, main svg, main script") == []
    hrefs = [a.get_attribute("href") or "" for a in driver.find_elements("tag name", "a")]
    assert not [h for h in hrefs if h.startswith("javascript:")]
    entry = re.search(r"/entry/([0-9a-z]{10})", driver.page_source).group(1)
    driver.get(server.url(f"/entry/{entry}"))
    assert not _alerts(driver)
    assert driver.find_elements("css selector", "main img, main svg, main script") == []


def test_without_the_token_nothing_is_shown(served: tuple[Any, Any, Any]) -> None:
    _, server, driver = served
    driver.delete_all_cookies()
    try:
        driver.get(server.url("/"))
        assert "no valid token" in driver.find_element("tag name", "body").text
        assert "PostgreSQL" not in driver.page_source
    finally:
        driver.get(server.login_url)

"""The viewer served for real (uvicorn on a free loopback port, in a thread) and the system's
headless Chromium driven by Selenium: shared by the browser tests and bench/ui_screenshots.py.

Chromium comes from Debian's packages (``apt-get install chromium chromium-driver``); Selenium
is given the driver's path, so Selenium Manager never downloads anything. ``missing()`` names
what is absent, for a test to skip with.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

from obsmem.memory.store import MemoryStore
from obsmem.settings import load_settings

CHROMIUM = os.environ.get("OM_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("OM_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    lacking = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        lacking.append("the selenium package (pip install -e '.[dev]')")
    if lacking:
        return (
            f"browser tests need {', '.join(lacking)} "
            "(Debian: apt-get install -y chromium chromium-driver; `make test` does it as root)"
        )
    return None


class ServerThread:
    """``om ui`` for ``store`` on a free port of 127.0.0.1, until the ``with`` block ends."""

    def __init__(self, store: MemoryStore) -> None:
        import uvicorn

        from obsmem.ui.app import create_app
        from obsmem.ui.security import Guard
        from obsmem.ui.server import bind

        self.sock = bind(0)
        self.guard = Guard(self.sock.getsockname()[1])
        self.app = create_app(store, load_settings(), port=self.guard.port, guard=self.guard)
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def login_url(self) -> str:
        """The URL ``om ui`` prints (with the token)."""
        return self.guard.url()

    def url(self, path: str) -> str:
        """An address on this server (no token)."""
        return f"http://127.0.0.1:{self.guard.port}{path}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the viewer did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        self.app.state.viewer.index.close()


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium (Selenium WebDriver) with a fresh profile, closed afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: never reach the network
    os.environ.setdefault("SE_AVOID_STATS", "true")
    profile = tempfile.mkdtemp(prefix="om-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)

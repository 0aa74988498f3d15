"""Screenshots of every page of ``om ui`` on the demo memory, for docs/ui.md.

Runs ``om demo`` into a temporary directory, serves the viewer on it and photographs each page
with the system's headless Chromium (Debian's ``chromium`` and ``chromium-driver``)::

    .venv/bin/python bench/ui_screenshots.py --out docs/ui
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ui.browser import ServerThread, chromium  # noqa: E402  (tests/ui/browser.py)

PAGES = (
    ("timeline", "/"),
    ("search", "/search?q=redis+workers"),
    ("entry", None),  # the first entry of the timeline
    ("reflections", "/reflections"),
    ("vault", "/vault"),
    ("vault-page", "/vault/decisions"),
    ("next-session", "/next?project=atlas&budget=1500"),
    ("status", "/status"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "ui")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="om-ui-shots-"))
    om = Path(sys.executable).with_name("om")
    subprocess.run([str(om), "demo", "--home", str(root)], check=True, capture_output=True)
    os.environ.update(
        OM_HOME=str(root / "memory"),
        CLAUDE_CONFIG_DIR=str(root / "agents" / "claude"),
        CODEX_HOME=str(root / "agents" / "codex"),
        HERMES_HOME=str(root / "agents" / "hermes"),
        OPENCLAW_HOME=str(root / "agents" / "openclaw"),
    )
    from obsmem.memory.store import MemoryStore

    with ServerThread(MemoryStore()) as server, chromium(args.width, args.height) as driver:
        driver.get(server.login_url)
        for name, path in PAGES:
            if path is None:
                driver.get(server.url("/"))
                # One with a source, so the page shows its provenance and excerpt.
                match = re.search(r'class="chip"[^\n]*?/entry/([0-9a-z]{10})', driver.page_source)
                path = f"/entry/{match.group(1)}" if match else "/"
            driver.get(server.url(path))
            time.sleep(0.2)
            height = driver.execute_script("return document.body.scrollHeight")
            driver.set_window_size(args.width, min(max(args.height, height + 40), 2400))
            target = args.out / f"{name}.png"
            driver.save_screenshot(str(target))
            driver.set_window_size(args.width, args.height)
            print(f"{target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``om ui``: serves until Ctrl-C, says how to install what it lacks, and costs others nothing."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from obsmem.cli import cli

pytest.importorskip("starlette", reason="the viewer needs the ui extra")

OM = [sys.executable, "-m", "obsmem"]


def test_serves_the_token_url_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*OM, "ui", "--port", "0", "--no-open"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OM_HOME": str(tmp_path / "memory")},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", first)
        assert match, first
        port, token = int(match.group(1)), match.group(2)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", f"/?token={token}")
        answer = conn.getresponse()
        assert answer.status == 303
        cookie = answer.getheader("set-cookie", "").split(";")[0]
        answer.read()
        conn.request("GET", "/", headers={"Cookie": cookie})
        page = conn.getresponse()
        assert page.status == 200 and b"Timeline" in page.read()
        conn.request("GET", "/")
        denied = conn.getresponse()
        assert denied.status == 403
        denied.read()
        conn.close()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "om ui: stopped" in out


def test_listens_on_loopback_only_without_delaying_answers() -> None:
    from obsmem.ui.server import bind

    sock = bind(0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        # Answers leave at once, not after the client's delayed acknowledgement.
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


def test_a_port_in_use_is_a_one_line_error() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        result = CliRunner().invoke(cli, ["ui", "--no-open", "--port", str(taken.getsockname()[1])])
    finally:
        taken.close()
    assert result.exit_code == 2
    assert "already in use" in result.output
    assert "Traceback" not in result.output


def test_without_the_extra_it_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import obsmem.ui

    monkeypatch.setattr(obsmem.ui, "_NEEDED", (("jinja2", "no_such_module_for_om_ui"),))
    result = CliRunner().invoke(cli, ["ui", "--no-open"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "om: error: om ui needs jinja2, not installed here "
        "(install the viewer's packages: pip install 'obsmem[ui]')"
    ]


def test_the_viewer_is_not_imported_by_the_library_or_other_commands() -> None:
    code = (
        "import sys, obsmem, obsmem.cli; obsmem.cli.load(); "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""Claude Code's auto-memory in the index: found by its words, with no secret of its path or text.

A project whose working directory holds a secret has it in its folder's name (every character
other than a letter or digit a dash), so in each memory file's path; the file's text can quote
one too. After ``om observe`` and a search, neither form of either secret may be in the index's
bytes or its full-text vocabulary, in ``om search --json``, ``om show``, the MCP tools' output
or any memory file, except ``.om/external-files.json``, which keeps the real paths to read the
files (documented in docs/reliability.md). Files with no secret are indexed as before: under
their real path, their lines as written.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp.shared.memory import create_connected_server_and_client_session

from obsmem.cli import cli
from obsmem.index import refresh
from obsmem.index.db import using_index
from obsmem.mcp.server import build_server
from obsmem.memory.store import MemoryStore
from obsmem.sources.claude_memory import KIND

GITHUB = "ghp_" + "k3Rw9" * 7 + "Zq"
ANTHROPIC = "sk-ant-api03-" + "Vb7_x" * 18 + "Q-3AA"
KEY_BODY = "MIIEowIBAAKCAQEAx" + "Qz7Wb2" * 7 + "Zz9"
SECRET_CWD = f"/home/dev/{GITHUB}"
MEMORY = (
    "---\nname: deploy\ndescription: notes\n---\n# Deploy notes\n\n"
    f"- The zebrafish gateway runs behind Caddy; its API key is {ANTHROPIC}\n"
    f"- The CI token {GITHUB} is rotated every month\n"
    "- Deploy key:\n-----BEGIN RSA PRIVATE KEY-----\n"
    f"{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n"
    "- Staging uses the quokka cluster\n"
)


def dashed(value: str) -> str:
    """``value`` as Claude Code writes it in a folder name (every non-alphanumeric a dash)."""
    return re.sub(r"[^A-Za-z0-9]", "-", value)


def needles() -> list[str]:
    """Each secret, as written and as a folder name writes it, and a slice of each."""
    values = [GITHUB, ANTHROPIC, KEY_BODY]
    out = {v for value in values for v in (value, dashed(value))}
    out |= {value[len(value) // 2 :][:14] for value in values}
    return sorted(out)


def memory_file(cwd: str, name: str, text: str, claude: Path) -> Path:
    path = claude / "projects" / dashed(cwd) / "memory" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def leaks(name: str, data: bytes | str) -> list[str]:
    blob = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return [f"{name}: {n}" for n in needles() if n.encode() in blob]


def fts_terms(path: Path) -> set[str]:
    """Every term of the index's full-text table (its bytes may hold terms prefix-compressed)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, entries_fts, row)")
        return {str(term) for (term,) in conn.execute("SELECT term FROM temp.v")}
    finally:
        conn.close()


def mcp_output(store: MemoryStore, query: str) -> tuple[list[dict[str, Any]], str]:
    """The MCP ``search`` results for ``query`` and the text of search and ``get`` together."""

    async def main() -> tuple[list[dict[str, Any]], str]:
        async with create_connected_server_and_client_session(build_server(store)) as session:
            found = await session.call_tool("search", {"query": query, "limit": 10})
            results = list((found.structuredContent or {}).get("results", []))
            ids = [r["id"] for r in results]
            got = await session.call_tool("get", {"ids": ids, "include_source": True})
            dumped = [r.model_dump(mode="json") for r in (found, got)]
            return results, json.dumps(dumped, ensure_ascii=False)

    return anyio.run(main)


def test_auto_memory_is_found_by_its_words_and_keeps_no_secret(
    isolated_environment: Path,
) -> None:
    claude = isolated_environment / "claude"
    hidden = memory_file(SECRET_CWD, "deploy.md", MEMORY, claude)
    plain = memory_file(
        "/home/dev/atlas", "MEMORY.md", "# Atlas\n\n- Use the otter queue\n", claude
    )
    shown = str(hidden).replace(dashed(GITHUB), "[REDACTED:github]")
    store = MemoryStore()
    env = {"OM_HOME": str(store.home), "OM_LLM_PROVIDER": "none"}
    runner = CliRunner()
    found: list[str] = []

    observed = runner.invoke(cli, ["observe", "--json"], env=env)
    assert observed.exit_code == 0, observed.output
    assert json.loads(observed.output)["auto_memory"]["added"] == [str(plain), shown]
    found += leaks("om observe --json", observed.output)

    searched = runner.invoke(cli, ["search", "zebrafish gateway", "--json"], env=env)
    assert searched.exit_code == 0, searched.output
    hits = json.loads(searched.output)
    hit = next(h for h in hits if "zebrafish" in h["text"])
    assert hit["kind"] == KIND and hit["file"] == shown and hit["line"] == 7
    assert hit["text"] == (
        "The zebrafish gateway runs behind Caddy; its API key is [REDACTED:anthropic]"
    )
    found += leaks("om search --json", searched.output)
    for query in ("quokka", "rotated month", "deploy key"):
        result = runner.invoke(cli, ["search", query, "--json"], env=env)
        assert result.exit_code == 0 and json.loads(result.output), (query, result.output)
        found += leaks(f"om search {query} --json", result.output)
    quokka = json.loads(runner.invoke(cli, ["search", "quokka", "--json"], env=env).output)[0]
    assert quokka["line"] == 13  # the key block's lines are still counted
    shown_entry = runner.invoke(cli, ["show", hit["id"]], env=env)
    assert shown_entry.exit_code == 0 and shown in shown_entry.output, shown_entry.output
    found += leaks("om show", shown_entry.output)

    # A file with no secret: its real path and its lines as written.
    other = json.loads(runner.invoke(cli, ["search", "otter", "--json"], env=env).output)
    assert [(h["file"], h["text"]) for h in other] == [(str(plain), "Use the otter queue")]

    results, text = mcp_output(store, "zebrafish gateway Caddy")
    assert any(r["id"] == hit["id"] and r["file"] == shown for r in results), results
    found += leaks("MCP search and get", text)

    conn = sqlite3.connect(store.index_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    paths = [str(p) for (p,) in conn.execute("SELECT path FROM files")]
    conn.close()
    assert sorted(paths) == sorted([shown, str(plain)])
    runs = [run.lower() for n in needles() for run in re.findall(r"[A-Za-z0-9]{10,}", n)]
    terms = fts_terms(store.index_path)
    found += [f"full-text term {t}" for t in terms if len(t) >= 10 and any(t in r for r in runs)]
    assert "zebrafish" in terms and "quokka" in terms
    for path in sorted(store.home.rglob("*")):
        if path.is_file() and path != store.external_list_path:
            found += leaks(str(path.relative_to(store.home)), path.read_bytes())
    assert found == []
    # The one place that keeps the real path, to read the file (docs/reliability.md says so).
    assert str(hidden) in store.external_files()
    assert hidden.read_text(encoding="utf-8") == MEMORY  # Claude Code's file is left as it was


def test_paths_that_differ_only_in_their_secrets_are_both_indexed(
    isolated_environment: Path,
) -> None:
    claude = isolated_environment / "claude"
    other = "ghp_" + "Tq8Lm" * 7 + "Xv"
    first = memory_file(SECRET_CWD, "MEMORY.md", "# M\n\n- The heron service\n", claude)
    second = memory_file(f"/home/dev/{other}", "MEMORY.md", "# M\n\n- The ibis service\n", claude)
    env = {"OM_LLM_PROVIDER": "none"}
    runner = CliRunner()
    assert runner.invoke(cli, ["observe"], env=env).exit_code == 0
    shown = str(first).replace(dashed(GITHUB), "[REDACTED:github]")
    assert str(second).replace(dashed(other), "[REDACTED:github]") == shown
    files = {}
    for word in ("heron", "ibis"):
        hits = json.loads(runner.invoke(cli, ["search", word, "--json"], env=env).output)
        assert len(hits) == 1, hits
        files[word] = hits[0]["file"]
    assert sorted(files.values()) == [shown, f"{shown} (2)"]


def test_an_unreadable_auto_memory_file_is_reported_by_its_redacted_path(
    isolated_environment: Path,
) -> None:
    store = MemoryStore().ensure()
    folder = isolated_environment / "claude" / "projects" / dashed(SECRET_CWD) / "memory"
    (folder / "notes.md").mkdir(parents=True)  # stats fine, cannot be read as a file
    store.set_external_files({str(folder / "notes.md"): {"kind": KIND, "sha256": ""}})
    report = using_index(store.index_path, lambda conn: refresh(store, conn))
    assert [issue.file for issue in report.issues] == [
        str(folder / "notes.md").replace(dashed(GITHUB), "[REDACTED:github]")
    ]
    assert "is a directory" in report.issues[0].message
    assert leaks("refresh report", json.dumps(report.to_dict())) == []

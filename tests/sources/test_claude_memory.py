"""Claude Code's auto-memory: the scan's list and report, and what the index reads of a file.

A project's folder is named after its working directory, so a secret there is in each memory
file's path; a memory file's text can quote one. The report names files by ``shown_path``
(redacted), the list keeps the real paths it needs to read them, and ``indexable_text`` gives
the index the file's lines with their secrets redacted and every line at its own number.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from obsmem.memory.markdown import split_lines
from obsmem.memory.sections import parse_sections
from obsmem.memory.store import MemoryStore
from obsmem.sources.claude_memory import (
    KIND,
    blank_front_matter,
    indexable_text,
    scan_auto_memory,
    shown_path,
)

GITHUB = "ghp_" + "k3Rw9" * 7 + "Zq"
ANTHROPIC = "sk-ant-api03-" + "Vb7_x" * 18 + "Q-3AA"
KEY_BODY = ["MIIEowIBAAKCAQEAx" + "Qz7Wb2" * 7 + "Zz9", "Hk3Lp9" * 10 + "Aq"]
KEY_BLOCK = "\n".join(
    ["-----BEGIN RSA PRIVATE KEY-----", *KEY_BODY, "-----END RSA PRIVATE KEY-----"]
)


def dashed(value: str) -> str:
    """``value`` as Claude Code writes it in a folder name (every non-alphanumeric a dash)."""
    return re.sub(r"[^A-Za-z0-9]", "-", value)


def memory_file(claude_home: Path, cwd: str, name: str, text: str) -> Path:
    path = claude_home / "projects" / dashed(cwd) / "memory" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def lines_of(data: bytes) -> list[str]:
    return split_lines(data.decode("utf-8", "surrogateescape"))


# --- shown_path ---------------------------------------------------------------------------------


def test_a_path_without_a_secret_is_shown_as_it_is() -> None:
    path = "/home/u/.claude/projects/-home-u-work-atlas/memory/feedback_testing.md"
    assert shown_path(path) == path


def test_a_secret_folder_is_redacted_in_the_shown_path() -> None:
    path = f"/home/u/.claude/projects/{dashed('/home/u/' + GITHUB)}/memory/MEMORY.md"
    shown = shown_path(path)
    assert shown == "/home/u/.claude/projects/-home-u-[REDACTED:github]/memory/MEMORY.md"
    assert dashed(GITHUB) not in shown and GITHUB[4:20] not in shown


# --- indexable_text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"# Notes\n\n- Use Caddy for the proxy\n- Tests run with pytest -q\n",
        b"---\nname: x\ndescription: y\n---\n# Notes\r\n- CRLF line\r\n- no final newline",
        b"- bytes \xff\xfe that are not UTF-8\n- and a long id 0123456789abcdef0123456789\n",
        b"",
    ],
)
def test_a_file_without_a_secret_is_read_byte_for_byte(data: bytes) -> None:
    assert indexable_text(data) == blank_front_matter(data)


def test_a_secret_in_a_line_is_redacted_and_its_words_kept() -> None:
    data = f"# Deploy\n\n- The staging token {GITHUB} was rotated on Friday\n".encode()
    out = indexable_text(data).decode()
    assert GITHUB not in out and GITHUB[4:16] not in out
    assert "- The staging token [REDACTED:github] was rotated on Friday\n" in out


def test_front_matter_is_blanked_before_redaction() -> None:
    data = f"---\ndescription: key {ANTHROPIC}\n---\n# Notes\n- Caddy {ANTHROPIC}\n".encode()
    out = indexable_text(data)
    assert lines_of(out)[:3] == ["\n", "\n", "\n"]
    assert out.endswith(b"- Caddy [REDACTED:anthropic]\n")


def test_a_secret_over_several_lines_keeps_every_line_at_its_number() -> None:
    text = (
        "# Keys\n- deploy key:\n" + KEY_BLOCK + "\n- after the key\n"
        "- note <private>line one\nline two</private> kept\n- last word zebrafish\n"
    )
    want = split_lines(text)
    secret_lines = {i for i, line in enumerate(want) if "KEY" in line or "line" in line}
    secret_lines |= {want.index(part + "\n") for part in KEY_BODY}
    out = indexable_text(text.encode())
    got = lines_of(out)
    assert len(got) == len(want)
    assert not any(part.encode() in out for part in KEY_BODY)
    assert b"line one" not in out and b"line two" not in out
    # Lines that held no secret are where they were; each label is on its secret's first line.
    assert [got[i] for i in range(len(want)) if i not in secret_lines] == [
        want[i] for i in range(len(want)) if i not in secret_lines
    ]
    assert got[2] == "[REDACTED:private-key]\n"
    assert got[want.index("- note <private>line one\n")] == "- note [REDACTED:private] kept\n"
    entries = parse_sections(out).entries
    assert [e.line for e in entries if "zebrafish" in e.text] == [len(want)]
    assert [e.line for e in entries if "after the key" in e.text] == [3 + len(KEY_BODY) + 2]


def test_a_key_block_ending_the_file_keeps_the_line_count() -> None:
    text = "# Keys\n- deploy key:\n" + KEY_BLOCK  # no final newline
    out = indexable_text(text.encode())
    assert len(lines_of(out)) == len(split_lines(text))
    assert not any(part.encode() in out for part in KEY_BODY)


def test_bytes_that_are_not_utf8_survive_redaction() -> None:
    data = b"# N\n- bad \xff byte\n- token " + GITHUB.encode() + b" here\n"
    out = indexable_text(data)
    assert b"\xff" in out and GITHUB.encode() not in out
    assert out.endswith(b"- token [REDACTED:github] here\n")


# --- the scan ------------------------------------------------------------------------------------


def test_the_scan_report_names_files_by_their_redacted_path(
    isolated_environment: Path, store: MemoryStore
) -> None:
    claude = isolated_environment / "claude"
    secret_cwd = f"/home/dev/{GITHUB}"
    hidden = memory_file(claude, secret_cwd, "MEMORY.md", "# M\n- Caddy\n")
    plain = memory_file(claude, "/home/dev/atlas", "MEMORY.md", "# M\n- Nginx\n")
    report = scan_auto_memory(store)
    shown = str(hidden).replace(dashed(GITHUB), "[REDACTED:github]")
    assert sorted(report.added) == sorted([shown, str(plain)]) and report.files == 2
    # The list keeps the real paths: the index reads the files through it.
    assert set(store.external_files()) == {str(hidden), str(plain)}
    hidden.write_text("# M\n- Traefik\n", encoding="utf-8")
    assert scan_auto_memory(store).changed == [shown]
    hidden.unlink()
    report = scan_auto_memory(store)
    assert report.removed == [shown] and report.files == 1
    printed = json.dumps(report.to_dict())
    assert dashed(GITHUB) not in printed and GITHUB not in printed
    digest = hashlib.sha256(plain.read_bytes()).hexdigest()
    assert store.external_files() == {str(plain): {"kind": KIND, "sha256": digest}}

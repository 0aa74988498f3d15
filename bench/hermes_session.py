"""A Hermes Agent session shaped like real ones, for the parsing benchmark (seeded: same bytes
for the same arguments).

Usage: python bench/hermes_session.py OUT.jsonl [--seed 1] [--exchanges 60]

No public Hermes session can be copied into the project, and the test fixtures are short
hand-written lines (about 300 bytes) that exercise the reader's cases rather than weigh like a
session. This writes one session as docs/formats.md describes real ones: a ``session_meta`` line
with the full tools list (every tool's JSON schema and description, about 17 KB), then OpenAI
chat messages. Each exchange is a user request (often with the gateway's ``[Name]`` prefix) and
a few tool rounds: the assistant's words and ``reasoning`` with ``tool_calls``, and the tools'
raw JSON results, most of them routine and large (file reads of 1-12 KB with line numbers,
search matches, listings, build output), some not (a failing test run, a tool error, test
counts). Per-message timestamps are left out on about a third of the messages, as Hermes does.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

__all__ = ["session"]

_TOOLS = (
    ("terminal", "Execute a shell command on the host and return its merged output and exit "
     "code. Use background=true for servers and long jobs; poll them with the process tool.",
     {"command": "string", "background": "boolean", "timeout": "integer", "workdir": "string"}),
    ("process", "Manage background processes started by terminal: list, poll, log, wait, kill.",
     {"action": "string", "session_id": "string", "timeout": "integer"}),
    ("read_file", "Read a text file with line numbers (LINE|content). Supports offset and limit "
     "for large files; binary files are refused.", {"path": "string", "offset": "integer",
                                                     "limit": "integer"}),
    ("write_file", "Write content to a file, creating parent directories. Overwrites the file.",
     {"path": "string", "content": "string"}),
    ("patch", "Replace an exact string in a file (fuzzy whitespace matching), or apply a "
     "V4A multi-file patch.", {"path": "string", "old_string": "string", "new_string": "string",
                               "replace_all": "boolean", "mode": "string"}),
    ("search_files", "Search file contents with a regular expression (ripgrep) or find files by "
     "name glob.", {"pattern": "string", "target": "string", "path": "string",
                    "file_glob": "string", "limit": "integer", "context": "integer"}),
    ("web_search", "Search the web; returns titles, URLs and snippets.", {"query": "string"}),
    ("web_extract", "Fetch pages and return their main text as markdown.", {"urls": "array"}),
    ("browser_navigate", "Open a URL in the browser session.", {"url": "string"}),
    ("browser_snapshot", "The page's accessibility tree with element refs.", {"full": "boolean"}),
    ("browser_click", "Click the element with the given ref.", {"ref": "string"}),
    ("browser_type", "Type text into the element with the given ref.", {"ref": "string",
                                                                        "text": "string"}),
    ("vision_analyze", "Describe an image from a URL or path.", {"image_url": "string",
                                                                  "question": "string"}),
    ("image_generate", "Generate an image from a prompt.", {"prompt": "string",
                                                            "aspect_ratio": "string"}),
    ("skills_list", "List the skills available, with their descriptions.", {"category": "string"}),
    ("skill_view", "Read a skill's SKILL.md or one of its files.", {"name": "string",
                                                                    "file_path": "string"}),
    ("skill_manage", "Create, edit or delete a skill.", {"action": "string", "name": "string",
                                                         "content": "string"}),
    ("memory", "Add, replace or remove an entry of the persistent memory or user profile.",
     {"action": "string", "target": "string", "content": "string", "old_text": "string"}),
    ("session_search", "Search past sessions' messages.", {"query": "string", "limit": "integer"}),
    ("todo", "Manage the session's task list.", {"todos": "array", "merge": "boolean"}),
    ("clarify", "Ask the user a question with optional choices.", {"question": "string",
                                                                   "choices": "array"}),
    ("execute_code", "Run a Python script that can call the other tools.", {"code": "string"}),
    ("delegate_task", "Run a sub-agent on a task with its own context.", {"goal": "string",
                                                                          "context": "string"}),
    ("send_message", "Send a message to a platform channel.", {"target": "string",
                                                               "message": "string"}),
    ("cronjob", "Create, list or remove scheduled jobs.", {"action": "string",
                                                           "schedule": "string",
                                                           "prompt": "string"}),
)  # fmt: skip

_FILES = (
    "src/app/routes.py",
    "src/app/models.py",
    "src/app/auth.py",
    "tests/test_routes.py",
    "src/lib/cache.ts",
    "src/lib/api.ts",
    "README.md",
    "pyproject.toml",
    "docs/setup.md",
)
_WORDS = (
    "config",
    "request",
    "user",
    "token",
    "cache",
    "value",
    "result",
    "error",
    "path",
    "items",
    "session",
    "handler",
    "response",
    "retry",
    "limit",
    "timeout",
    "record",
)
_ASKS = (
    "the login page returns 500 when the session cookie expires, can you find why?",
    "add a retry with backoff to the API client and cover it with a test",
    "why is the cache never invalidated after an update?",
    "rename the `items` field to `entries` everywhere and keep the tests green",
    "write a short section in docs/setup.md about the new environment variables",
)
_NAMES = ("Maya", "Sam", "Lee")


def _tools() -> list[dict[str, Any]]:
    out = []
    for name, description, params in _TOOLS:
        properties = {
            key: {"type": kind, "description": f"The {key.replace('_', ' ')} for {name}. " * 3}
            for key, kind in params.items()
        }
        out.append({"type": "function", "function": {
            "name": name, "description": description * 4,
            "parameters": {"type": "object", "properties": properties,
                           "required": [next(iter(params))]},
        }})  # fmt: skip
    return out


def _code(rng: random.Random, lines: int) -> str:
    body = []
    for n in range(1, lines + 1):
        a, b = rng.sample(_WORDS, 2)
        indent = "    " * rng.randrange(3)
        body.append(f"{n:>6}|{indent}{a}_{b} = get_{b}({a}, default={rng.randrange(100)})")
    return "\n".join(body)


class _Writer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.clock = 9 * 3600
        self.calls = 0

    def put(self, record: dict[str, Any]) -> None:
        self.clock += self.rng.randrange(2, 40)
        if self.rng.random() < 0.66:
            hours, rest = divmod(self.clock, 3600)
            fraction = self.rng.randrange(10**6)
            record["timestamp"] = (
                f"2026-05-14T{hours % 24:02}:{rest // 60:02}:{rest % 60:02}.{fraction:06}"
            )
        self.lines.append(json.dumps(record, ensure_ascii=False))

    def call(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        self.calls += 1
        call_id = f"call_{self.calls:04d}{self.rng.randrange(16**6):06x}"
        body = {"id": call_id, "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip
        return body, call_id

    def result(self, call_id: str, name: str, content: dict[str, Any]) -> None:
        self.put({"role": "tool", "tool_call_id": call_id, "name": name,
                  "content": json.dumps(content, ensure_ascii=False)})  # fmt: skip

    def round(self) -> None:
        """One assistant message with one or two tool calls, and their results."""
        rng = self.rng
        kinds = rng.choices(("read", "search", "terminal", "patch", "test"), (5, 2, 2, 2, 1), k=2)
        calls, results = [], []
        for kind in kinds[: rng.choice((1, 1, 2))]:
            path = rng.choice(_FILES)
            if kind == "read":
                call, cid = self.call("read_file", {"path": path})
                lines = rng.randrange(30, 300)
                content = {"content": _code(rng, lines), "total_lines": lines + 40,
                           "file_size": lines * 48, "truncated": False}  # fmt: skip
                results.append((cid, "read_file", content))
            elif kind == "search":
                word = rng.choice(_WORDS)
                call, cid = self.call("search_files", {"pattern": word, "path": "src"})
                matches = [{"path": rng.choice(_FILES), "line": rng.randrange(1, 400),
                            "content": f"    {word} = load_{word}(request)"}
                           for _ in range(rng.randrange(3, 60))]  # fmt: skip
                results.append((cid, "search_files", {"total_count": len(matches),
                                                      "matches": matches}))  # fmt: skip
            elif kind == "terminal":
                cmd = rng.choice(("git status", "ls -la src/app", "npm run build", "git log -5"))
                call, cid = self.call("terminal", {"command": cmd})
                out = "\n".join(
                    f"{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py  {rng.randrange(9999)}"
                    for _ in range(rng.randrange(5, 80))
                )
                results.append((cid, "terminal", {"output": out, "exit_code": 0, "error": None}))
            elif kind == "patch":
                call, cid = self.call("patch", {"path": path, "old_string": "a = 1",
                                                "new_string": "a = 2"})  # fmt: skip
                diff = f"--- a/{path}\n+++ b/{path}\n@@ -12,3 +12,3 @@\n-a = 1\n+a = 2\n"
                results.append((cid, "patch", {"success": True, "diff": diff * 3}))
            else:
                call, cid = self.call("terminal", {"command": "python -m pytest -q"})
                failed = rng.random() < 0.4
                dots = "." * rng.randrange(40, 200)
                tail = "1 failed, 41 passed in 3.2s" if failed else "42 passed in 3.1s"
                fail = ("FAILED tests/test_routes.py::test_expired - KeyError: 'user'\n"
                        if failed else "")  # fmt: skip
                results.append((cid, "terminal", {"output": f"{dots}\n{fail}{tail}",
                                                  "exit_code": 1 if failed else 0,
                                                  "error": None}))  # fmt: skip
            calls.append(call)
        words = rng.choice(("", "", "Let me look at that.", "I'll check the tests next."))
        self.put({"role": "assistant", "content": words, "reasoning": " ".join(
            rng.choices(_WORDS, k=rng.randrange(10, 60))), "finish_reason": "tool_calls",
            "tool_calls": calls})  # fmt: skip
        for cid, name, content in results:
            if rng.random() < 0.03:
                content = {"error": f"Permission denied: '{rng.choice(_FILES)}'"}
            self.result(cid, name, content)


def session(seed: int = 1, exchanges: int = 60) -> bytes:
    """One session's JSONL: the session_meta line, then ``exchanges`` requests and their work."""
    w = _Writer(seed)
    w.lines.append(json.dumps({"role": "session_meta", "tools": _tools(),
                               "model": "anthropic/claude-sonnet-4", "platform": "telegram",
                               "timestamp": "2026-05-14T09:00:00.000000"}))  # fmt: skip
    for _ in range(exchanges):
        ask = w.rng.choice(_ASKS)
        prefix = f"[{w.rng.choice(_NAMES)}] " if w.rng.random() < 0.5 else ""
        w.put({"role": "user", "content": prefix + ask})
        for _ in range(w.rng.randrange(2, 9)):
            w.round()
        w.put(
            {
                "role": "assistant",
                "content": "Done: "
                + " ".join(w.rng.choices(_WORDS, k=w.rng.randrange(20, 80)))
                + ".",
                "finish_reason": "stop",
            }
        )
    return ("\n".join(w.lines) + "\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--exchanges", type=int, default=60)
    args = parser.parse_args()
    args.out.write_bytes(session(args.seed, args.exchanges))


if __name__ == "__main__":
    main()

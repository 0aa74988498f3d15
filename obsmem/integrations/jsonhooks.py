"""Hook lists in JSON settings: Claude Code's ``settings.json`` and Codex's ``hooks.json``.

Both agents read the same shape::

    {"hooks": {"SessionStart": [
        {"matcher": "...", "hooks": [{"type": "command", "command": "...", "timeout": 15}]}
    ]}}

and other tools' groups share those lists. om's entries are told apart by their command (see
:func:`is_om_command`), not by position or an id, so a re-install finds them even after the om
executable moved, and updates the command in place instead of adding a second entry.

Edits go through :mod:`obsmem.integrations.jsonedit`, so other tools' entries keep their bytes,
and the containers om had to create (the file, ``hooks``, an event's list) are reported so that
uninstall removes them only when om created them and nothing else was put in them since.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from obsmem.doctor import Check
from obsmem.errors import IntegrationError
from obsmem.integrations import jsonedit

__all__ = [
    "OM_SUBCOMMANDS",
    "HookSpec",
    "check_hooks",
    "check_json_text",
    "close_object",
    "is_om_argv",
    "is_om_command",
    "is_om_server",
    "merge_hooks",
    "merged",
    "missing_program",
    "om_argv",
    "om_hook_commands",
    "open_object",
    "recorded",
    "remove_hooks",
    "same_file_record",
]

#: The subcommands om's hooks, servers and scheduled jobs run; a command running one is om's.
OM_SUBCOMMANDS = frozenset({"context", "hook", "mcp", "observe", "reflect"})
_OM_NAMES = frozenset({"om", "obsmem"})
#: Created-container tag for "the file did not exist", and for "it was empty".
FILE = "file"
EMPTY_FILE = "empty-file"
_NEW_FILE = "{\n}\n"


def om_argv(argv: Sequence[str]) -> list[str] | None:
    """The arguments after om's program in ``argv``, or None when ``argv`` does not start om.

    Leading ``NAME=value`` assignments and ``env`` are skipped; the program is ``om`` or
    ``obsmem`` (any directory, ``.exe`` allowed) or a Python interpreter with ``-m obsmem``.
    """
    words = list(argv)
    while words and (words[0] == "env" or _is_assignment(words[0])):
        words.pop(0)
    if not words:
        return None
    name = Path(words[0]).name.lower().removesuffix(".exe")
    if name in _OM_NAMES:
        return words[1:]
    if name.startswith("python") and "-m" in words[1:3]:
        at = words.index("-m")
        if words[at + 1 : at + 2] == ["obsmem"]:
            return words[at + 2 :]
    return None


def _is_assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier()


def is_om_argv(argv: Sequence[str]) -> bool:
    """True when ``argv`` runs one of om's hook, server or job subcommands."""
    rest = om_argv(argv)
    return bool(rest) and rest[0] in OM_SUBCOMMANDS  # type: ignore[index]


def is_om_command(command: object) -> bool:
    """True when the shell command line ``command`` runs om (see :func:`om_argv`)."""
    if not isinstance(command, str):
        return False
    try:
        return is_om_argv(shlex.split(command))
    except ValueError:
        return False


def missing_program(command: str | Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The program a command line (or argv) starts when it does not exist; None when it does."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return command
    else:
        words = list(command)
    while words and (words[0] == "env" or _is_assignment(words[0])):
        words.pop(0)
    if not words:
        return str(command)
    program = os.path.expanduser(words[0])
    if "/" in program:
        return None if os.access(program, os.X_OK) and Path(program).is_file() else program
    return None if shutil.which(program, path=environ.get("PATH")) else program


def is_om_server(value: object) -> TypeGuard[Mapping[str, Any]]:
    """True when an MCP server entry (``command`` and ``args``) starts ``om mcp``."""
    if not isinstance(value, Mapping):
        return False
    command, args = value.get("command"), value.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    return is_om_argv([command, *map(str, args)])


@dataclass(frozen=True)
class HookSpec:
    """One hook om wants: the event, the command line, its timeout (seconds) and matcher."""

    event: str
    command: str
    timeout: int
    #: None leaves the matcher out (events that take none).
    matcher: str | None = ""

    def group(self) -> dict[str, Any]:
        """The matcher group written into the event's list."""
        group: dict[str, Any] = {}
        if self.matcher is not None:
            group["matcher"] = self.matcher
        group["hooks"] = [{"type": "command", "command": self.command, "timeout": self.timeout}]
        return group


def check_json_text(text: str, label: str) -> dict[str, Any]:
    """The parsed settings object; IntegrationError when it is not a JSON object."""
    try:
        data = jsonedit.parse(text)
    except ValueError as exc:
        raise IntegrationError(
            f"{label} is not valid JSON ({exc})",
            "fix or move the file and run om install again; om changed nothing",
        ) from None
    if not isinstance(data, dict):
        raise IntegrationError(
            f"{label} does not hold a JSON object", "fix or move the file; om changed nothing"
        )
    return data


def _check_hooks(data: Mapping[str, Any], label: str, events: Collection[str]) -> None:
    if "hooks" not in data:
        return
    hooks = data["hooks"]
    if not isinstance(hooks, dict):
        raise IntegrationError(
            f'"hooks" in {label} is not an object', "fix the file; om changed nothing"
        )
    for event in events:
        if event in hooks and not isinstance(hooks[event], list):
            raise IntegrationError(
                f'"hooks.{event}" in {label} is not a list', "fix the file; om changed nothing"
            )


def _om_hooks(text: str, event: str) -> list[tuple[int, int, str]]:
    """om's hooks in one event's list: (group index, hook index, command), in file order."""
    found: list[tuple[int, int, str]] = []
    span = jsonedit.locate(text, ["hooks", event])
    if span is None or text[span[0]] != "[":
        return found
    for g, group in enumerate(jsonedit.parse(text[span[0] : span[1]])):
        inner = group.get("hooks") if isinstance(group, dict) else None
        for h, hook in enumerate(inner if isinstance(inner, list) else []):
            command = hook.get("command") if isinstance(hook, dict) else None
            if is_om_command(command):
                found.append((g, h, str(command)))
    return found


def om_hook_commands(text: str | None, events: Sequence[str], label: str) -> dict[str, list[str]]:
    """For each event, the commands of om's hooks in it (empty lists when there are none)."""
    if text is None:
        return {event: [] for event in events}
    check_json_text(text, label)
    return {event: [command for _, _, command in _om_hooks(text, event)] for event in events}


def _span(text: str, path: Sequence[str | int]) -> tuple[int, int]:
    span = jsonedit.locate(text, path)
    if span is None:  # pragma: no cover - callers locate only what they just checked exists
        raise IntegrationError(f"cannot find {'.'.join(map(str, path))}", "run om install again")
    return span


def _drop_hook(text: str, event: str, group: int, hook: int) -> str:
    """Remove one hook; its group too when nothing else is left in it."""
    inner = _span(text, ["hooks", event, group, "hooks"])
    if len(jsonedit.elements(text, inner)) > 1:
        return jsonedit.remove_element(text, inner, hook)
    return jsonedit.remove_element(text, _span(text, ["hooks", event]), group)


def merge_hooks(text: str | None, specs: Sequence[HookSpec], label: str) -> tuple[str, list[str]]:
    """``text`` holding om's hooks, and the containers that had to be created for them.

    Per event: om's first hook gets the wanted command (in place, other fields untouched), any
    further om hook is removed, and when there is none the spec's group is appended.
    """
    text, created = open_object(text)
    data = check_json_text(text, label)
    _check_hooks(data, label, [spec.event for spec in specs])
    root = jsonedit.root_span(text)
    if "hooks" not in data:
        created += ["hooks", *(f"hooks.{spec.event}" for spec in specs)]
        wanted = {spec.event: [spec.group()] for spec in specs}
        return jsonedit.set_member(text, root, "hooks", wanted), created
    for spec in specs:
        found = _om_hooks(text, spec.event)
        if not found:
            hooks = _span(text, ["hooks"])
            event = jsonedit.locate(text, ["hooks", spec.event])
            if event is None:
                created.append(f"hooks.{spec.event}")
                text = jsonedit.set_member(text, hooks, spec.event, [spec.group()])
            else:
                text = jsonedit.append_element(text, event, spec.group())
            continue
        for group, hook, _ in reversed(found[1:]):
            text = _drop_hook(text, spec.event, group, hook)
        group, hook, command = found[0]
        if command != spec.command:
            where = _span(text, ["hooks", spec.event, group, "hooks", hook, "command"])
            text = jsonedit.replace_value(text, where, spec.command)
    return text, created


def remove_hooks(
    text: str | None, events: Sequence[str], label: str, created: Collection[str] | None
) -> str | None:
    """``text`` without om's hooks in ``events`` (None: remove the file om created).

    ``created`` is what :func:`merge_hooks` reported at install; an event list or the ``hooks``
    object is removed only when om created it and it is empty now. With no record (None), only
    om's hooks go: an empty list left behind is harmless, the user's own might have been empty.
    """
    created = created or ()
    if text is None:
        return None
    data = check_json_text(text, label)
    _check_hooks(data, label, events)
    if "hooks" not in data:
        return text
    for event in events:
        for group, hook, _ in reversed(_om_hooks(text, event)):
            text = _drop_hook(text, event, group, hook)
        span = jsonedit.locate(text, ["hooks", event])
        emptied = span is not None and not jsonedit.elements(text, span)
        if emptied and f"hooks.{event}" in created:
            text = jsonedit.remove_member(text, _span(text, ["hooks"]), event)
    hooks = _span(text, ["hooks"])
    if not jsonedit.members(text, hooks) and "hooks" in created:
        text = jsonedit.remove_member(text, jsonedit.root_span(text), "hooks")
    return close_object(text, created)


def open_object(text: str | None) -> tuple[str, list[str]]:
    """The text to edit (an empty object for a missing or blank file) and what was created."""
    if text is None:
        return _NEW_FILE, [FILE]
    if not text.strip():
        return _NEW_FILE, [EMPTY_FILE]
    return text, []


def close_object(text: str, created: Collection[str]) -> str | None:
    """The inverse of :func:`open_object`: no file (or a blank one) when om made it and it is
    empty now."""
    if jsonedit.members(text, jsonedit.root_span(text)):
        return text
    if FILE in created:
        return None
    if EMPTY_FILE in created:
        return ""
    return text


def check_hooks(
    agent: str, path: Path, specs: Sequence[HookSpec], environ: Mapping[str, str], fix: str
) -> list[Check]:
    """``om doctor``'s verdicts on one hooks file: om's hooks in it, what they start, its mode."""
    name = f"{agent}: hooks"
    events = [spec.event for spec in specs]
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
        commands = om_hook_commands(text, events, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        return [Check(name, "fail", f"cannot read {path}: {exc}", fix)]
    except IntegrationError as exc:
        return [Check(name, "fail", exc.message, exc.hint or fix)]
    if text is None:
        return [Check(name, "fail", f"{path} does not exist", fix)]
    missing = [event for event in events if not commands[event]]
    if missing:
        found = [Check(name, "fail", f"no om hook for {', '.join(missing)} in {path}", fix)]
    else:
        found = [Check(name, "ok", f"{', '.join(events)} in {path}")]
    every = [(event, command) for event, listed in commands.items() for command in listed]
    if every:
        found.append(_command_check(agent, every, specs, environ, fix))
    mode = path.stat().st_mode & 0o777
    if mode & 0o022:
        detail = f"{path} is writable by others (mode {mode:o}), so anyone could add a hook"
        found.append(Check(f"{agent}: hooks file mode", "warn", detail, f"chmod 600 {path}"))
    return found


def _command_check(
    agent: str,
    every: Sequence[tuple[str, str]],
    specs: Sequence[HookSpec],
    environ: Mapping[str, str],
    fix: str,
) -> Check:
    name = f"{agent}: hook commands"
    for _, command in every:
        gone = missing_program(command, environ)
        if gone:
            return Check(name, "fail", f"a hook starts {gone}, which does not exist", fix)
    wanted = {spec.event: spec.command for spec in specs}
    stale = sorted({event for event, command in every if command != wanted[event]})
    older = [e for e in stale if _subcommand(dict(every)[e]) != _subcommand(wanted[e])]
    if older:
        detail = f"{', '.join(older)} still start an older om hook command"
        return Check(name, "warn", detail, fix)
    if stale:
        return Check(name, "warn", f"{', '.join(stale)} start another om than this one", fix)
    return Check(name, "ok", "every hook starts this om")


def _subcommand(command: str) -> list[str] | None:
    """What a hook command asks om to do (its arguments after the program)."""
    try:
        return om_argv(shlex.split(command))
    except ValueError:
        return None


def same_file_record(record: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    """What the last install recorded under ``key``, when it was about the file at ``path``.

    A re-install carries it over (containers om created stay om's); a record about another file
    (the agent's home moved) is not this file's history, so it reads as empty.
    """
    section = record.get(key)
    if isinstance(section, dict) and section.get("path") == str(path):
        return dict(section)
    return {}


def recorded(record: Mapping[str, Any], key: str, default: Path) -> tuple[Path, dict[str, Any]]:
    """The file an install recorded under ``key`` (``default`` when none) and its record."""
    section = record.get(key)
    if isinstance(section, dict) and isinstance(section.get("path"), str):
        return Path(section["path"]), dict(section)
    return default, {}


def merged(old: object, new: Sequence[str]) -> list[str]:
    """``old`` (a recorded list) followed by the items of ``new`` it does not hold yet."""
    kept = [str(item) for item in old] if isinstance(old, list) else []
    return kept + [item for item in new if item not in kept]

"""``om search`` without click: an agent asks from a cold process, often several times a session,
so importing click (and the rest of the command line) would cost more than the query itself.

``search_main`` parses the command's options by hand, exactly the ones ``om search`` declares in
``commands.py``, and runs the same ``search_output``. Whatever it does not understand for certain
(``--help``, an unknown option, a missing or bad value) it hands back to click, so
usage errors and help read the same whichever way a command line arrives. Errors while searching
are reported as every command reports them (``entry.report``): one line, status 2.
"""

from __future__ import annotations

import sys

from obsmem.search.client import FILTER_OPTIONS

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Mapping

    from obsmem.memory.store import MemoryStore
    from obsmem.settings import Settings

__all__ = ["FILTER_OPTIONS", "parse_search", "search_main", "search_output"]

#: ``om search``'s options that take a value, by every name they answer to.
_VALUED = {
    "-n": "limit", "--limit": "limit", "--since": "since", "--until": "until", "--type": "type",
    "--min-importance": "min_importance", "--project": "project", "--agent": "agent",
}  # fmt: skip
_FLAGS = {"--json": "json", "--raw": "raw"}
#: What ``--kind`` accepts (``search.mixed.KIND_GROUPS``; repeated, or joined by commas).
KINDS = ("observation", "reflection", "turn")


def split_kinds(values: list[str] | tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``--kind`` values split at commas: (the kinds, the words that name no kind)."""
    parts = [part.strip() for value in values for part in value.split(",") if part.strip()]
    return [p for p in parts if p in KINDS], [p for p in parts if p not in KINDS]


def parse_search(argv: list[str]) -> dict[str, object] | None:
    """``om search``'s arguments as a dict (``query``, ``limit``, ``json``, ``raw`` and the
    filters), or None when click must handle them (help, an unknown option, a bad value)."""
    found: dict[str, object] = {"limit": "10", "json": False, "raw": False}
    kinds: list[str] = []
    words: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            words += args
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, sep, value = arg.partition("=") if arg.startswith("--") else (arg[:2], "", arg[2:])
        if name in _FLAGS and not sep and not value:
            found[_FLAGS[name]] = True
            continue
        if (name not in _VALUED and name != "--kind") or (sep and not name.startswith("--")):
            return None
        if not sep and not value:
            if not args or args[0].startswith("-"):
                return None
            value = args.pop(0)
        if name == "--kind":
            kinds.append(value)
            continue
        found[_VALUED[name]] = value
    kinds, unknown = split_kinds(kinds)
    if not words or unknown:
        return None
    if found["raw"]:
        kinds = [*kinds, "turn"]
    found["kinds"] = sorted(set(kinds)) or None
    try:
        limit = int(str(found["limit"]))
        importance = found.get("min_importance")
        if importance is not None:
            found["min_importance"] = float(str(importance))
    except ValueError:
        return None
    score = found.get("min_importance")
    if not 1 <= limit <= 1000 or (isinstance(score, float) and not 0 <= score <= 1):
        return None
    found["limit"] = limit
    found["query"] = words
    return found


def search_output(
    store: MemoryStore,
    settings: Settings,
    text: str,
    *,
    limit: int,
    as_json: bool,
    filters: Mapping[str, object],
    kinds: list[str] | None = None,
) -> str:
    """What ``om search`` prints for ``text``: the hits as text or JSON.

    What om kept and the transcript turns are searched together (``search.mixed``); ``kinds``
    narrows them (``--kind``; ``--raw`` is ``turn``). ``filters`` holds the values of
    ``FILTER_OPTIONS`` that were given. A cold process loads no model: with hybrid settings the
    search daemon answers, or BM25 with a note on stderr (``search.client.cold_search``).
    """
    from obsmem.search.client import cold_search

    if kinds == ["turn"] and settings.raw_turns == "off":
        print("om: OM_RAW_TURNS=off: new transcript turns are not being kept", file=sys.stderr)
    found = cold_search(store, settings, text, kinds=kinds, filters=filters, limit=limit)
    if as_json:
        import json

        return json.dumps(found, ensure_ascii=False, indent=2)
    from obsmem.cli.render import hits

    return hits(found)


def search_main(argv: list[str]) -> int | None:
    """Run ``om search`` with ``argv`` (the words after ``search``) and return the exit status,
    or None when the full command line must handle them (see ``parse_search``)."""
    parsed = parse_search(argv)
    if parsed is None:
        return None
    try:
        from obsmem.search.entries import LazyStore
        from obsmem.settings import load_settings

        settings = load_settings()
        store: MemoryStore = LazyStore(settings.lock_timeout_seconds)  # type: ignore[assignment]
        words = parsed["query"]
        assert isinstance(words, list)
        limit = parsed["limit"]
        assert isinstance(limit, int)
        kinds = parsed["kinds"]
        assert kinds is None or isinstance(kinds, list)
        out = search_output(store, settings, " ".join(words), limit=limit,
                            as_json=bool(parsed["json"]), filters=parsed,
                            kinds=kinds)  # fmt: skip
    except BrokenPipeError:
        raise  # entry.main ends quietly
    except (KeyboardInterrupt, Exception) as exc:
        from obsmem.cli.entry import report

        return report(exc)
    print(out)
    return 0

"""Whether the index is fresh, from one ``stat`` per path the last refresh recorded.

A refresh that leaves the index in step with the memory writes a stamp (``meta`` key ``stamp``):
the memory directory, and the ``size:mtime_ns`` of every path it looked at: each memory file,
the ledger, the list of external files, and every folder a new memory file could appear in (a
file added or removed moves its folder's mtime). ``unchanged`` stats those paths again. When all
match, nothing a listing could find has moved, so the index is fresh without listing a folder or
loading a parser; this module imports nothing else of om's, so a cold search that finds the index
fresh never loads ``sync`` and the memory modules behind it.

A stat within ``RACY_WINDOW_NS`` of the moment it was taken is not trusted (timestamps are
coarse: a second write in the same tick would not move it), so ``signature`` marks it racy and
``sync`` records no stamp that holds one; the next refresh then does the full check.

Files outside the memory directory (Claude Code's auto-memory) are named by a real path that can
hold a secret (a folder named after a working directory), which the index never stores: the
stamp keeps only their signatures, in the order of their real paths, under the name of the list
that holds those paths (``EXTERNAL`` and the list's path), and ``unchanged`` reads that list.
"""

from __future__ import annotations

import json
import os
import sqlite3

__all__ = ["EXTERNAL", "RACY_WINDOW_NS", "STAMP_KEY", "external_names", "signature", "unchanged"]

#: Files modified less than this long before they were indexed get hashed again next time.
RACY_WINDOW_NS = 2_000_000_000

#: The ``meta`` key of the stamp.
STAMP_KEY = "stamp"

#: The start of the stamp's entry for the external files (no path starts with a NUL).
EXTERNAL = "\0external:"


def signature(path: str | os.PathLike[str], at_ns: int) -> str:
    """``size:mtime_ns`` of ``path``; ``missing``, ``unreadable``, or ``racy:...`` when it was
    modified within ``RACY_WINDOW_NS`` of ``at_ns``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    return of_stat(st, at_ns)


def of_stat(st: os.stat_result, at_ns: int) -> str:
    """``signature`` from a stat already taken."""
    if st.st_mtime_ns > at_ns - RACY_WINDOW_NS:
        return f"racy:{st.st_size}:{st.st_mtime_ns}"
    return f"{st.st_size}:{st.st_mtime_ns}"


def external_names(list_path: str) -> list[str] | None:
    """The real paths in the list of external files, sorted (``[]`` when there is no list, None
    when it cannot be read), as ``MemoryStore.external_files`` reads them."""
    try:
        with open(list_path, "rb") as handle:
            data = json.loads(handle.read())
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return []
    return sorted(str(name) for name, info in data.items() if isinstance(info, dict))


def _external(list_path: str, at_ns: int) -> str | None:
    names = external_names(list_path)
    if names is None:
        return None
    return "|".join(signature(name, at_ns) for name in names)


def unchanged(conn: sqlite3.Connection, home: str | os.PathLike[str]) -> bool:
    """True when the index's stamp is for ``home`` and every path in it has the same stat."""
    import time

    row = conn.execute("SELECT value FROM meta WHERE key = ?", (STAMP_KEY,)).fetchone()
    if row is None:
        return False
    try:
        stamped_home, seen = json.loads(str(row[0]))
        if stamped_home != os.path.abspath(home) or not isinstance(seen, list):
            return False
        now = time.time_ns()
        for path, recorded in seen:
            if path.startswith(EXTERNAL):
                if _external(path[len(EXTERNAL) :], now) != recorded:
                    return False
            elif signature(path, now) != recorded:
                return False
        return True
    except (TypeError, ValueError):
        return False  # not a stamp this version wrote: the full check decides

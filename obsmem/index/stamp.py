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
"""

from __future__ import annotations

import json
import os
import sqlite3

__all__ = ["RACY_WINDOW_NS", "STAMP_KEY", "signature", "unchanged"]

#: Files modified less than this long before they were indexed get hashed again next time.
RACY_WINDOW_NS = 2_000_000_000

#: The ``meta`` key of the stamp.
STAMP_KEY = "stamp"


def signature(path: str | os.PathLike[str], at_ns: int) -> str:
    """``size:mtime_ns`` of ``path``; ``missing``, ``unreadable``, or ``racy:...`` when it was
    modified within ``RACY_WINDOW_NS`` of ``at_ns``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    if st.st_mtime_ns > at_ns - RACY_WINDOW_NS:
        return f"racy:{st.st_size}:{st.st_mtime_ns}"
    return f"{st.st_size}:{st.st_mtime_ns}"


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
        return all(signature(path, now) == recorded for path, recorded in seen)
    except (TypeError, ValueError):
        return False  # not a stamp this version wrote: the full check decides

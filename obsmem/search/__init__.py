"""Search over the memory: ``search(store, query)`` returns ranked ``Hit``s.

BM25 over SQLite FTS5 (``bm25.py``) is always available and imports nothing beyond the standard
library; hybrid search with embeddings lives beside it and imports numpy only when used. A
long-lived process (the MCP server) can keep its own index connection and call ``refresh`` and
``query_index`` itself instead of reopening per query.

The names below are loaded on first use: importing a submodule (``obsmem.search.dates``) does
not load ``bm25`` and the index with it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from obsmem.search.bm25 import Hit, query_index, search

__all__ = ["Hit", "query_index", "search"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'obsmem.search' has no attribute {name!r}")
    from obsmem.search import bm25

    value = getattr(bm25, name)
    globals()[name] = value
    return value

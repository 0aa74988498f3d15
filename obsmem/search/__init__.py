"""Search over the memory: ``search(store, query)`` returns ranked ``Hit``s.

BM25 over SQLite FTS5 (``bm25.py``) is always available and imports nothing beyond the standard
library, so ``import obsmem.search`` stays cheap; hybrid search with embeddings will live beside
it and import numpy only when used. A long-lived process (the MCP server) can keep its own index
connection and call ``refresh`` and ``query_index`` itself instead of reopening per query.
"""

from obsmem.search.bm25 import Hit, query_index, search

__all__ = ["Hit", "query_index", "search"]

"""Entry embeddings computed when the index is updated, never when it is searched.

A search embeds only its query: embedding documents at query time would make the first search
after a large change (a new model, a first hybrid run over a big memory, a slow endpoint) take
minutes. So entry vectors are brought up to date right after the index is, by the commands that
change memory:

- ``update_vectors(conn, settings)``: the hook itself, on an open, refreshed index;
- ``embed_index(store, settings)``: refresh the index, then the hook (``om reindex --embed``);
- ``index_written(store, settings)``: what ``obsmem.derived`` runs after ``om observe`` and ``om
  reflect`` write: ``embed_index``, or with a local model the refresh alone, the embedding left
  to the search daemon (or the MCP server, the watcher) so that the writer stays fast;
- ``reindex(store, settings)``: rebuild the index from scratch, then the hook (``om reindex``).

Only texts without a vector under the current model are embedded (``VectorStore.sync``), so an
unchanged memory costs one read of the entries and no model call. With BM25-only settings (or
``auto`` with nothing configured) the hook does nothing and loads nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from obsmem.errors import OmError, SettingsError
from obsmem.index.db import using_index
from obsmem.index.sync import RefreshReport, rebuild
from obsmem.index.sync import refresh as refresh_index
from obsmem.memory.store import MemoryStore
from obsmem.settings import Settings, load_settings

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from collections.abc import Callable

    from obsmem.search.embeddings import Embedder
    from obsmem.search.vectors import Progress

__all__ = [
    "VectorReport",
    "embed_bridge_vocabulary",
    "embed_index",
    "index_written",
    "reindex",
    "update_vectors",
    "vector_counts",
]


@dataclass(frozen=True)
class VectorReport:
    """What one embedding update did.

    ``model`` is the embedder's name, or None when no embedder is configured (``reason`` says
    why); ``embedded`` is how many texts were embedded; ``problem`` is set when an embedder is
    configured but could not be used (the index itself is fine; searches use BM25 meanwhile);
    ``words`` is how many vocabulary items were embedded (the vocabulary bridge).
    """

    model: str | None
    embedded: int = 0
    reason: str = ""
    problem: str = ""
    words: int = 0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "model": self.model,
            "embedded": self.embedded,
            "reason": self.reason,
            "problem": self.problem,
            "words": self.words,
        }


def update_vectors(
    conn: sqlite3.Connection,
    settings: Settings | None = None,
    progress: Progress | None = None,
    words: Progress | None = None,
) -> VectorReport:
    """Embed the entries of an up-to-date index that have no vector under the configured model,
    then, with the vocabulary bridge on, the vocabulary items that have none
    (``vocabulary.embed_vocabulary``; ``VectorReport.words`` counts them).

    ``progress(done, total)`` is called before the first batch and after each one
    (``vectors.embed_missing``), ``words`` the same for the vocabulary: ``om reindex`` shows
    each as a line on stderr.

    Raises ``SettingsError`` when the embedder cannot be loaded, ``ProviderError`` when an
    endpoint fails and ``IndexError_`` when the vectors cannot be stored.
    """
    from obsmem.search.embeddings import backend_status, hybrid_expected, load_embedder

    settings = settings or load_settings()
    kind, reason = backend_status(settings)
    if kind == "bm25":
        if hybrid_expected(settings):
            raise SettingsError(f"no embeddings: {reason}", "see `om doctor`")
        return VectorReport(None, reason=reason)
    embedder = load_embedder(settings)
    from obsmem.search.vectors import VectorStore

    try:
        count = VectorStore(conn, embedder).sync(progress)
        items = embed_bridge_vocabulary(conn, embedder, settings, words)
    except (OmError, sqlite3.Error):
        raise
    except Exception as exc:  # onnxruntime and numpy raise many kinds; callers expect OmError
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SettingsError(
            f"embedding with {embedder.name} failed: {detail}", "see `om doctor`"
        ) from None
    return VectorReport(embedder.name, count, words=items)


def embed_bridge_vocabulary(
    conn: sqlite3.Connection,
    embedder: Embedder,
    settings: Settings,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> int:
    """``vocabulary.embed_vocabulary`` when the vocabulary bridge is on (its weight and its item
    bound above 0); how many items were embedded. Off, nothing is read or embedded."""
    if settings.search_vocab_bridge_weight <= 0 or settings.search_vocab_max_items <= 0:
        return 0
    from obsmem.search.vocabulary import embed_vocabulary

    limit = settings.search_vocab_max_items
    return embed_vocabulary(conn, embedder, limit, progress=progress, stop=stop)


def _guarded(
    conn: sqlite3.Connection,
    settings: Settings | None,
    progress: Progress | None = None,
    words: Progress | None = None,
) -> VectorReport:
    try:
        return update_vectors(conn, settings, progress, words)
    except OmError as exc:
        return VectorReport(None, problem=str(exc))


def embed_index(
    store: MemoryStore,
    settings: Settings | None = None,
    progress: Progress | None = None,
    words: Progress | None = None,
) -> VectorReport:
    """Refresh the index of ``store``, then embed what has no vector (see the module doc).

    An embedder that cannot be used is reported in ``problem``, not raised: the index is up to
    date and BM25 works. Raises ``IndexError_`` when the index cannot be used at all.
    """
    if not store.home.is_dir():
        return VectorReport(None, reason="no memory directory")

    def work(conn: sqlite3.Connection) -> VectorReport:
        refresh_index(store, conn)
        return _guarded(conn, settings, progress, words)

    return using_index(store.index_path, work)


def index_written(store: MemoryStore, settings: Settings | None = None) -> VectorReport:
    """Bring the index up to date after ``om observe`` or ``om reflect`` wrote, and see that
    what is new gets a vector.

    With a local model (fastembed) and ``OM_SEARCH_DAEMON=on`` the embedding is left to the
    process serving the search socket (a search daemon, the MCP server, the watcher), which is
    told, or started (``client.ask_to_embed``): loading the model here would cost a
    hook-driven observe seconds. Until then searches find the new entries by keyword in the
    fused list. Otherwise (an endpoint, the daemon off, none can start) it is ``embed_index``.
    """
    settings = settings or load_settings()
    if not _left_to_daemon(settings):
        return embed_index(store, settings)
    if not store.home.is_dir():
        return VectorReport(None, reason="no memory directory")
    from obsmem.search.client import ask_to_embed

    using_index(store.index_path, lambda conn: refresh_index(store, conn))
    if ask_to_embed(store, settings):
        return VectorReport(vector_model(settings), reason="left to the search daemon")
    return embed_index(store, settings)


def _left_to_daemon(settings: Settings) -> bool:
    from obsmem.search.embeddings import backend_status

    return (
        settings.search_daemon == "on"
        and settings.embed_provider == "fastembed"
        and backend_status(settings)[0] == "hybrid"
    )


def reindex(
    store: MemoryStore,
    settings: Settings | None = None,
    progress: Progress | None = None,
    words: Progress | None = None,
) -> tuple[RefreshReport, VectorReport]:
    """Rebuild the index of ``store`` from the markdown, then embed what has no vector.

    Vectors survive a rebuild (they are keyed by text, not by entry), so only texts never
    embedded under the current model are embedded. As in ``embed_index``, an embedder problem is
    reported in the ``VectorReport``, not raised.
    """
    report = rebuild(store)
    vectors = using_index(store.index_path, lambda conn: _guarded(conn, settings, progress, words))
    return report, vectors


def vector_model(settings: Settings) -> str:
    """The name the configured embedder stores its vectors under, without loading it."""
    from obsmem.search.embeddings import embed_model_name
    from obsmem.search.endpoint import endpoint_name

    model = embed_model_name(settings)
    if settings.embed_provider == "openai-compatible":
        model = endpoint_name(model, settings.embed_base_url)
    return model


def vector_counts(store: MemoryStore, settings: Settings) -> tuple[str, int, int]:
    """(the model, entries with no vector under it, entries that should have one), without
    loading the model or any vector (``om status``, ``om doctor``). Raises ``IndexError_`` when
    the index cannot be read."""
    from obsmem.search.vectors import count_unembedded

    model = vector_model(settings)
    missing, total = using_index(
        store.index_path, lambda conn: count_unembedded(conn, model), check=False
    )
    return model, missing, total

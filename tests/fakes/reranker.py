"""A cross-encoder stand-in for reranking tests (no model can be loaded in tests)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["FakeReranker"]


class FakeReranker:
    """A cross-encoder stand-in: a text scores 1 when it contains ``favourite``, else 0.

    ``calls`` records each (query, texts) it was asked to score; ``fail`` makes it raise.
    """

    name = "fake-cross-encoder"

    def __init__(self) -> None:
        self.favourite = ""
        self.fail = False
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        if self.fail:
            raise RuntimeError("the fake cross-encoder broke")
        return [1.0 if self.favourite and self.favourite in text else 0.0 for text in texts]

"""Retrieval recall on LoCoMo: om's own index and search against a plain BM25 baseline.

Usage: python bench/locomo_recall.py --data PATH [--json] [--limit-conversations N]
       [--backend auto|bm25|hybrid] [--sweep OM_NAME=v1,v2,...] [--embed-cache DIR]

``--sweep`` measures one setting's sensitivity and chooses its value by leave-one-conversation-
out: each conversation is indexed once and every question asked under each value (turn level,
top 10 only); the report gives turn R@5 / R@10 per value, overall, per category and per
conversation, and for each conversation the value that scores best on the *other* ones, with
the held-out conversation's recall under it. The LOO figure (those held-out recalls, averaged
over all questions) estimates what the chosen value gives on conversations nobody tuned for;
``choice`` is the value most folds chose (ties: the first listed).

``--backend hybrid`` fuses BM25 with embeddings (``obsmem/search/hybrid.py``), from the model
folder ``OM_EMBED_MODEL_PATH`` names, or else from the packaged model (``make test`` installs
it), assembled in a temporary folder. The default, ``auto``, is ``hybrid`` when fastembed and
such a model are installed (the figures ``docs/benchmarks.md`` leads with), else ``bm25`` with
a note on stderr; the report's ``backend`` says which ran. Embedding the turns is part of the
first query of each conversation, so it shows in the p95 latency, not the p50.

``--embed-cache DIR`` keeps every vector the model computes (turns and questions) in one SQLite
file, ``DIR/embeddings.sqlite``, keyed by the model's id (its name and the SHA-256 of its
``model.onnx``) and the exact text embedded, so a later run embeds only texts it has not seen
and loads no model when it has seen them all. It wraps the embedder the product loads
(``EmbedCache``); what is indexed and searched is unchanged, so rankings are the same with and
without it. Query latencies then leave out embedding the query.

For each conversation, every turn becomes one observation (its text, plus the image caption when
there is one) under the day of its session, written with ``MemoryStore.add_observations`` into a
temporary memory directory; each question is then run through ``obsmem.search.search``, the same
path ``om search`` takes (index refresh included). Scoring follows LoCoMo's ``recall_acc`` as
``../shared/eval/README.md`` defines it: Recall@k is the share of a question's evidence turns
found in the top k, at turn level and at session level (sessions ranked by their best turn),
per category, overall over categories 1-4, with category 5 (adversarial) listed separately.

The baseline is a small Okapi BM25 (k1=1.5, b=0.75, lower-cased alphanumeric tokens, no
stopwords, rank-bm25's idf floor) over the same documents, the README's reference method, so the
product's figure can be read against it. No LLM and no network are involved.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from obsmem.index import rebuild
from obsmem.memory.store import MemoryStore, new_observation
from obsmem.search import embeddings, search
from obsmem.search.embeddings import Embedder, embed_model_name, packaged_model_folder
from obsmem.search.indexing import embed_index
from obsmem.settings import Settings, load_settings

KS = (5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: Categories averaged into "overall"; 5 (adversarial) has no true answer and is reported apart.
SCORED_CATEGORIES = (1, 2, 3, 4)
#: How many turns are fetched to rank sessions: ten turns often span fewer than ten sessions.
SESSION_DEPTH = 60

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"^D(\d+):(\d+)$")
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation, as indexed."""

    dia_id: str
    session: int
    date: str  # YYYY-MM-DD, from the session's date_time
    time: str | None  # HH:MM
    text: str


@dataclass(frozen=True)
class Question:
    """One scorable question: its evidence turns are normalised and known to exist."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    """The turns and the scorable questions of one LoCoMo sample."""

    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped: int = 0  # questions left without any valid evidence


@dataclass
class Tally:
    """Sums of per-question recall, by level, k and category, for averaging at the end."""

    sums: dict[tuple[str, int, int], float] = field(default_factory=lambda: defaultdict(float))
    counts: Counter[int] = field(default_factory=Counter)

    def add(
        self,
        category: int,
        turn_ranked: Sequence[str],
        evidence: Sequence[str],
        deep: Sequence[str] | None = None,
    ) -> None:
        """Score one question from its ranked dia_ids (best first, distinct).

        Sessions are ranked from ``deep`` when given: a longer list of the same ranking, since
        ten turns often span fewer than ten sessions.
        """
        self.counts[category] += 1
        sessions = rank_sessions(deep if deep is not None else turn_ranked)
        wanted_sessions = [str(session_of(e)) for e in evidence]
        for k in KS:
            self.sums[("turn", k, category)] += recall_at(turn_ranked, evidence, k)
            self.sums[("session", k, category)] += recall_at(sessions, wanted_sessions, k)

    def summary(self) -> dict[str, Any]:
        """Mean recall per level and k: overall (categories 1-4), per category, and category 5."""
        out: dict[str, Any] = {}
        scored = sum(self.counts[c] for c in SCORED_CATEGORIES)
        for level in ("turn", "session"):
            for k in KS:
                total = sum(self.sums[(level, k, c)] for c in SCORED_CATEGORIES)
                out[f"{level}.recall@{k}"] = round(total / scored, 4) if scored else None
                for c in CATEGORIES:
                    n = self.counts[c]
                    value = round(self.sums[(level, k, c)] / n, 4) if n else None
                    out[f"{level}.recall@{k}.cat{c}"] = value
        out["questions"] = scored
        out["questions.cat5"] = self.counts[5]
        return out


# -- data -------------------------------------------------------------------------------------


def normalise_evidence(raw: Iterable[str]) -> list[str]:
    """Evidence ids as ``D<session>:<turn>``, repairing the README's malformed forms.

    ``"D8:6; D9:17"`` and space-joined lists are split, ``D:11:26`` becomes ``D11:26``, ``D30:05``
    becomes ``D30:5``; anything that still does not name a turn is dropped. Order is kept and
    duplicates removed, so a turn cited twice does not count twice.
    """
    out: dict[str, None] = {}
    for item in raw:
        for piece in re.split(r"[;\s,]+", str(item)):
            piece = piece.strip()
            if piece.startswith("D:"):
                piece = "D" + piece[2:]
            match = _DIA.match(piece)
            if match:
                out.setdefault(f"D{int(match.group(1))}:{int(match.group(2))}", None)
    return list(out)


def session_of(dia_id: str) -> int:
    """The session number of a normalised dia_id (``D3:7`` is session 3)."""
    return int(dia_id[1:].split(":", 1)[0])


def parse_session_time(value: str) -> tuple[str, str | None]:
    """``"1:56 pm on 8 May, 2023"`` as (``"2023-05-08"``, ``"13:56"``)."""
    stamp = datetime.strptime(" ".join(value.split()), "%I:%M %p on %d %B, %Y")
    return stamp.date().isoformat(), stamp.strftime("%H:%M")


def turn_text(turn: Mapping[str, Any]) -> str:
    """What a turn says, as one observation: the speaker, the text and any image caption.

    The speaker is kept because that is how a memory records a conversation ("Caroline: ..."),
    and questions are asked about people by name.
    """
    text = " ".join(str(turn.get("text", "")).split())
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [image: {' '.join(str(caption).split())}]"
    return f"{turn.get('speaker', '')}: {text}".strip()


def load_conversation(sample: Mapping[str, Any]) -> Conversation:
    """Turns (sessions with a non-empty turn list only) and the questions that can be scored."""
    conv = sample["conversation"]
    turns: list[Turn] = []
    sessions = sorted(
        int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key)) and conv[key]
    )
    for number in sessions:
        day, clock = parse_session_time(conv[f"session_{number}_date_time"])
        for turn in conv[f"session_{number}"]:
            dia = normalise_evidence([turn["dia_id"]])
            if dia:
                turns.append(Turn(dia[0], number, day, clock, turn_text(turn)))
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = 0
    for qa in sample["qa"]:
        evidence = tuple(e for e in normalise_evidence(qa.get("evidence", [])) if e in known)
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return Conversation(str(sample.get("sample_id", "?")), turns, questions, skipped)


# -- scoring ----------------------------------------------------------------------------------


def recall_at(ranked: Sequence[str], wanted: Sequence[str], k: int) -> float:
    """The share of the distinct ``wanted`` items found in the first ``k`` of ``ranked``."""
    targets = set(wanted)
    if not targets:
        return 0.0
    return len(targets & set(ranked[:k])) / len(targets)


def rank_sessions(turn_ranked: Sequence[str]) -> list[str]:
    """Sessions in the order of their best turn (session numbers as strings)."""
    seen: dict[str, None] = {}
    for dia in turn_ranked:
        seen.setdefault(str(session_of(dia)), None)
    return list(seen)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` by linear interpolation (0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


# -- the baseline -----------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric runs, the README reference's tokenisation."""
    return _TOKEN.findall(text.lower())


class OkapiBM25:
    """Okapi BM25 as rank-bm25's ``BM25Okapi`` computes it (negative idf floored at 0.25 x mean)."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.freqs = [Counter(doc) for doc in docs]
        self.lengths = [len(doc) for doc in docs]
        self.avgdl = sum(self.lengths) / len(docs) if docs else 0.0
        df: Counter[str] = Counter()
        for freq in self.freqs:
            df.update(freq.keys())
        n = len(docs)
        self.idf = {t: math.log(n - c + 0.5) - math.log(c + 0.5) for t, c in df.items()}
        mean = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0
        floor = 0.25 * mean
        self.idf = {t: (v if v >= 0 else floor) for t, v in self.idf.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        """One score per document, higher is better."""
        out = [0.0] * len(self.freqs)
        for term in query:
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, freq in enumerate(self.freqs):
                tf = freq.get(term)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avgdl)
                    out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def rank(self, query: Sequence[str], limit: int) -> list[int]:
        """Indexes of the best ``limit`` documents; ties go to the earlier document."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:limit]


# -- the embedding cache ----------------------------------------------------------------------


class EmbedCache:
    """Vectors by (model id, exact text) in one SQLite file, shared by every run that names it.

    SQLite, so that two runs using the same folder at once neither corrupt nor lose each other's
    vectors. Its connection may be used from any thread, one at a time (``CachedEmbedder``
    holds a lock), as hybrid search embeds a query beside BM25.
    """

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "embeddings.sqlite"
        self.conn = sqlite3.connect(
            self.path, timeout=60, isolation_level=None, check_same_thread=False
        )
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash TEXT, dim INTEGER, vec BLOB,"
            " PRIMARY KEY (model, hash))"
        )
        self.hits = self.misses = 0

    @staticmethod
    def key(text: str) -> str:
        """The key of a text: SHA-256 of its exact UTF-8 bytes."""
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, model: str, texts: Sequence[str]) -> dict[str, Any]:
        """The stored vectors of ``texts`` (those there are), by text."""
        import numpy as np

        wanted = {self.key(t): t for t in texts}
        found: dict[str, Any] = {}
        keys = list(wanted)
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self.conn.execute(
                f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({marks})",
                [model, *chunk],
            )
            for h, blob in rows:
                found[wanted[str(h)]] = np.frombuffer(blob, dtype="<f4")
        return found

    def put(self, model: str, texts: Sequence[str], matrix: Any) -> None:
        """Store one vector per text (rows of ``matrix``)."""
        import numpy as np

        rows = [
            (model, self.key(t), int(matrix.shape[1]), np.asarray(v, dtype="<f4").tobytes())
            for t, v in zip(texts, matrix, strict=True)
        ]
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def dim(self, model: str) -> int | None:
        """The dimension of any vector stored for ``model``, or None when it has none."""
        row = self.conn.execute("SELECT dim FROM vectors WHERE model = ? LIMIT 1", (model,))
        found = row.fetchone()
        return int(found[0]) if found else None


class CachedEmbedder:
    """An ``Embedder`` that answers from an ``EmbedCache`` and loads its model on a first miss.

    Its ``name`` is the model's, as the product stores vectors under it; ``model_id`` (the name
    and the model file's digest) keys the cache, so two builds of one model never mix.
    """

    #: ``embed`` runs under a lock, so hybrid search may call it from its own thread.
    thread_safe = True

    def __init__(
        self, name: str, model_id: str, load: Callable[[], Embedder], cache: EmbedCache
    ) -> None:
        self._name, self.model_id, self._load, self.cache = name, model_id, load, cache
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def dim(self) -> int:
        """The vector dimension: from the cache when it holds any, else from the model."""
        stored = self.cache.dim(self.model_id)
        return stored if stored is not None else self.inner().dim

    def inner(self) -> Embedder:
        """The real embedder, loaded on first use."""
        if self._inner is None:
            self._inner = self._load()
        return self._inner

    def embed(self, texts: Sequence[str]) -> Any:
        """Vectors of ``texts``, the model run only on those the cache does not hold."""
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        found = self.cache.get(self.model_id, texts)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        self.cache.hits += len(texts) - len(missing)
        self.cache.misses += len(missing)
        if missing:
            matrix = self.inner().embed(missing)
            self.cache.put(self.model_id, missing, matrix)
            found.update(zip(missing, matrix, strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([np.asarray(found[t], dtype=np.float32) for t in texts])


def model_id(settings: Settings) -> str:
    """The cache's key for the configured model: its name and its ``model.onnx``'s digest."""
    name = embed_model_name(settings)
    if settings.embed_model_path:
        graph = Path(settings.embed_model_path).expanduser() / "model.onnx"
        digest = hashlib.sha256(graph.read_bytes()).hexdigest()[:16]
        return f"{name}#{digest}"
    return f"{name}@{settings.embed_provider}:{settings.embed_base_url}"


@contextlib.contextmanager
def embed_cache(folder: Path) -> Iterator[EmbedCache]:
    """Make the product's ``load_embedder`` hand out ``CachedEmbedder``s over ``folder``'s cache.

    The product looks ``load_embedder`` up in its module at each call (indexing and search
    alike), so replacing it there covers both; the original is put back on leaving.
    """
    cache = EmbedCache(folder)
    original = embeddings.load_embedder
    wrapped: dict[str, CachedEmbedder] = {}

    def load(settings: Settings) -> Embedder:
        key = model_id(settings)
        if key not in wrapped:
            wrapped[key] = CachedEmbedder(
                embed_model_name(settings), key, lambda: original(settings), cache
            )
        return wrapped[key]

    embeddings.load_embedder = load
    try:
        yield cache
    finally:
        embeddings.load_embedder = original
        cache.conn.close()


# -- running ----------------------------------------------------------------------------------


def index_conversation(home: Path, conversation: Conversation) -> dict[str, list[str]]:
    """Write the turns as observations into a new memory at ``home`` and build its index.

    Returns observation id -> dia_ids. Two turns with the same text on the same day share an
    observation id (the store de-duplicates them by design), so an id can stand for several turns.
    """
    store = MemoryStore(home, environ={"OM_HOME": str(home)}).ensure()
    observations = []
    mapping: dict[str, list[str]] = defaultdict(list)
    for turn in conversation.turns:
        obs = new_observation(turn.text, date=turn.date, time=turn.time)
        observations.append(obs)
        mapping[obs.id].append(turn.dia_id)
    store.add_observations(observations)
    indexed = rebuild(store).entries
    if indexed != len(mapping):
        # A turn the markdown did not round-trip would silently cap recall: refuse to score.
        raise SystemExit(
            f"{conversation.sample_id}: {indexed} entries indexed, {len(mapping)} written"
        )
    return dict(mapping)


@contextlib.contextmanager
def indexed(
    conversation: Conversation, settings: Settings | None
) -> Iterator[tuple[MemoryStore, dict[str, list[str]]]]:
    """A temporary memory of ``conversation``, indexed and embedded (``index_conversation``):
    the store and its observation id -> dia_ids, removed on leaving."""
    with tempfile.TemporaryDirectory(prefix="om-locomo-") as tmp:
        home = Path(tmp) / "memory"
        mapping = index_conversation(home, conversation)
        store = MemoryStore(home, environ={"OM_HOME": str(home)})
        # As after `om observe`: entries are embedded with the index, searches embed queries.
        if problem := embed_index(store, settings).problem:
            raise SystemExit(f"{conversation.sample_id}: {problem}")
        yield store, mapping


def expand(ids: Iterable[str], mapping: Mapping[str, Sequence[str]]) -> list[str]:
    """Hit ids as distinct dia_ids, in rank order (a shared id yields all of its turns)."""
    out: dict[str, None] = {}
    for entry_id in ids:
        for dia in mapping.get(entry_id, ()):
            out.setdefault(dia, None)
    return list(out)


def run(
    data: list[dict[str, Any]],
    limit_conversations: int | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Score om and the baseline on every conversation; return the report as a dict."""
    product, baseline = Tally(), Tally()
    latencies: list[float] = []
    turns = skipped = 0
    conversations = data[:limit_conversations] if limit_conversations else data
    started = time.perf_counter()
    for sample in conversations:
        conversation = load_conversation(sample)
        turns += len(conversation.turns)
        skipped += conversation.skipped
        bm25 = OkapiBM25([tokens(t.text) for t in conversation.turns])
        with indexed(conversation, settings) as (store, mapping):
            for question in conversation.questions:
                began = time.perf_counter()
                hits = search(store, question.text, limit=max(KS), settings=settings)
                latencies.append((time.perf_counter() - began) * 1000)
                ranked = expand((h.id for h in hits), mapping)[: max(KS)]
                # Untimed: the same ranking, deeper, so that sessions can be ranked ten deep.
                deep = search(store, question.text, limit=SESSION_DEPTH, settings=settings)
                deep_ranked = expand((h.id for h in deep), mapping)
                product.add(question.category, ranked, question.evidence, deep_ranked)
                order = bm25.rank(tokens(question.text), SESSION_DEPTH)
                base_ranked = [conversation.turns[i].dia_id for i in order]
                baseline.add(
                    question.category, base_ranked[: max(KS)], question.evidence, base_ranked
                )
    report: dict[str, Any] = product.summary()
    report["latency_ms.p50"] = round(percentile(latencies, 0.50), 2)
    report["latency_ms.p95"] = round(percentile(latencies, 0.95), 2)
    report["baseline_bm25"] = baseline.summary()
    report["backend"] = settings.search_backend if settings else "default"
    report["conversations"] = len(conversations)
    report["turns"] = turns
    report["questions_skipped_no_evidence"] = skipped
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


@dataclass
class Fold:
    """Per-question turn recall (R@5, R@10) and category, by swept value and conversation."""

    values: list[str]
    recalls: dict[str, dict[str, list[tuple[int, float, float]]]] = field(
        default_factory=lambda: defaultdict(dict)
    )

    def add(self, value: str, sample_id: str, scored: list[tuple[int, float, float]]) -> None:
        """Record one conversation's questions under one value."""
        self.recalls[value][sample_id] = scored

    def mean(
        self, value: str, ids: Iterable[str], k: int = 10, category: int | None = None
    ) -> float:
        """Mean turn R@k under ``value`` over the questions of conversations ``ids``."""
        picked = [
            q
            for sid in ids
            for q in self.recalls[value][sid]
            if (q[0] in SCORED_CATEGORIES if category is None else q[0] == category)
        ]
        at = 1 if k == 5 else 2
        return sum(q[at] for q in picked) / len(picked) if picked else 0.0

    def loo(self) -> dict[str, Any]:
        """Leave-one-conversation-out: each conversation scored under the value best elsewhere."""
        ids = list(self.recalls[self.values[0]])
        folds: dict[str, Any] = {}
        total = count = 0.0
        for held in ids:
            others = [sid for sid in ids if sid != held]
            # Ties go to the first value listed: list the current default first.
            best = max(self.values, key=lambda v: (self.mean(v, others), -self.values.index(v)))
            scored = [q for q in self.recalls[best][held] if q[0] in SCORED_CATEGORIES]
            folds[held] = {"chosen": best, "turn.recall@10": round(self.mean(best, [held]), 4)}
            total += sum(q[2] for q in scored)
            count += len(scored)
        votes = Counter(fold["chosen"] for fold in folds.values())
        choice = max(self.values, key=lambda v: (votes[v], -self.values.index(v)))
        return {
            "folds": folds,
            "turn.recall@10": round(total / count, 4) if count else None,
            "choice": choice,
        }

    def summary(self) -> dict[str, Any]:
        """Per value: overall, per-category and per-conversation turn recall; then the LOO."""
        ids = list(self.recalls[self.values[0]])
        per_value: dict[str, Any] = {}
        for value in self.values:
            row: dict[str, Any] = {
                f"turn.recall@{k}": round(self.mean(value, ids, k), 4) for k in KS
            }
            for c in SCORED_CATEGORIES:
                row[f"turn.recall@10.cat{c}"] = round(self.mean(value, ids, 10, c), 4)
            row["conversations"] = {sid: round(self.mean(value, [sid]), 4) for sid in ids}
            per_value[value] = row
        return {"values": per_value, "loo": self.loo()}


def run_sweep(
    data: list[dict[str, Any]],
    name: str,
    values: Sequence[str],
    env: Mapping[str, str],
    limit_conversations: int | None = None,
) -> dict[str, Any]:
    """Sweep setting ``name`` over ``values`` (module doc): each conversation indexed once."""
    settings = {value: load_settings({**env, name: value}) for value in values}
    fold = Fold(list(values))
    conversations = data[:limit_conversations] if limit_conversations else data
    started = time.perf_counter()
    for sample in conversations:
        conversation = load_conversation(sample)
        with indexed(conversation, settings[values[0]]) as (store, mapping):
            for value in values:
                # What a value embeds beyond the first's (the vocabulary bridge's items), as the
                # background step would under it; nothing when it is the same.
                if problem := embed_index(store, settings[value]).problem:
                    raise SystemExit(f"{conversation.sample_id}: {problem}")
                scored: list[tuple[int, float, float]] = []
                for question in conversation.questions:
                    hits = search(store, question.text, limit=max(KS), settings=settings[value])
                    ranked = expand((h.id for h in hits), mapping)[: max(KS)]
                    scored.append(
                        (
                            question.category,
                            recall_at(ranked, question.evidence, 5),
                            recall_at(ranked, question.evidence, 10),
                        )
                    )
                fold.add(value, conversation.sample_id, scored)
    report = fold.summary()
    report["setting"] = name
    report["backend"] = env.get("OM_SEARCH_BACKEND", "default")
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def render_sweep(report: Mapping[str, Any]) -> str:
    """A sweep's report as tables: per value, per category, per conversation, then the LOO."""
    values = report["values"]
    ids = list(next(iter(values.values()))["conversations"])
    head = f"{'value':<10}{'R@5':>7}{'R@10':>7}" + "".join(
        f"{'c' + str(c):>7}" for c in (1, 2, 3, 4)
    )
    head += "".join(f"{sid:>9}" for sid in ids)
    lines = [f"sweep {report['setting']} ({report['backend']}), turn recall", head]
    for value, row in values.items():
        cells = [row["turn.recall@5"], row["turn.recall@10"]]
        cells += [row[f"turn.recall@10.cat{c}"] for c in (1, 2, 3, 4)]
        text = "".join(f"{v:>7.3f}" for v in cells)
        text += "".join(f"{row['conversations'][sid]:>9.3f}" for sid in ids)
        lines.append(f"{value:<10}{text}")
    loo = report["loo"]
    chosen = ", ".join(
        f"{sid} {f['chosen']} ({f['turn.recall@10']:.3f})" for sid, f in loo["folds"].items()
    )
    lines += [
        "",
        f"leave-one-conversation-out: R@10 {loo['turn.recall@10']:.4f}, choice {loo['choice']}",
        f"folds: {chosen}",
        f"total {report['seconds']} s",
    ]
    return "\n".join(lines)


def render(report: Mapping[str, Any]) -> str:
    """The report as a readable table: om against the BM25 baseline."""
    base = report["baseline_bm25"]
    lines = [
        f"LoCoMo retrieval: {report['conversations']} conversations, {report['turns']} turns, "
        f"{report['questions']} questions (categories 1-4) + {report['questions.cat5']} "
        f"adversarial; {report['questions_skipped_no_evidence']} skipped (no evidence)",
        "",
        f"{'level':<28}{'om R@5':>9}{'om R@10':>9}{'bm25 R@5':>10}{'bm25 R@10':>11}",
    ]
    rows = [("turn, categories 1-4", "")] + [
        (f"turn, {c} {CATEGORIES[c]}", f".cat{c}") for c in CATEGORIES
    ]
    rows += [("session, categories 1-4", "")]
    for label, suffix in rows:
        level = label.split(",", 1)[0]
        cells = [source.get(f"{level}.recall@{k}{suffix}") for source in (report, base) for k in KS]
        text = "".join(
            f"{'-' if v is None else f'{v:.3f}':>{w}}"
            for v, w in zip(cells, (9, 9, 10, 11), strict=True)
        )
        lines.append(f"{label:<28}{text}")
    lines += [
        "",
        f"om query latency: p50 {report['latency_ms.p50']} ms, p95 {report['latency_ms.p95']} ms "
        f"(search() with index freshness check, limit 10); total {report['seconds']} s",
    ]
    return "\n".join(lines)


def hybrid_available(environ: Mapping[str, str]) -> bool:
    """True when hybrid search can run here: fastembed, and a model folder in
    ``OM_EMBED_MODEL_PATH`` or the packaged model's two packages."""
    import importlib.util

    from obsmem.search.embeddings import PACKAGED_MODEL, fastembed_installed

    if not fastembed_installed():
        return False
    if environ.get("OM_EMBED_MODEL_PATH"):
        return True
    return all(importlib.util.find_spec(package) is not None for package in PACKAGED_MODEL)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--backend", choices=("auto", "bm25", "hybrid"), default="auto")
    parser.add_argument(
        "--embed-cache",
        type=Path,
        metavar="DIR",
        help="keep the model's vectors in DIR/embeddings.sqlite and reuse them (module doc)",
    )
    parser.add_argument(
        "--sweep",
        metavar="OM_NAME=V1,V2,...",
        help="measure one setting at several values, chosen by leave-one-conversation-out",
    )
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    backend = args.backend
    if backend == "auto":
        backend = "hybrid" if hybrid_available(os.environ) else "bm25"
        if backend == "bm25":
            print(
                "locomo_recall: no embedding model installed (fastembed and the packaged model, "
                "or OM_EMBED_MODEL_PATH): BM25 alone",
                file=sys.stderr,
            )
    env = dict(os.environ, OM_SEARCH_BACKEND=backend)
    with contextlib.ExitStack() as stack:
        model_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="om-model-"))
        cache = stack.enter_context(embed_cache(args.embed_cache)) if args.embed_cache else None
        if backend == "hybrid" and not env.get("OM_EMBED_MODEL_PATH"):
            env["OM_EMBED_MODEL_PATH"] = str(packaged_model_folder(Path(model_dir)))
        if args.sweep:
            name, _, listed = args.sweep.partition("=")
            values = [v.strip() for v in listed.split(",") if v.strip()]
            if not name.startswith("OM_") or len(values) < 2:
                parser.error("--sweep takes OM_NAME=V1,V2[,...]: a setting and two values or more")
            report = run_sweep(data, name, values, env, args.limit_conversations)
            text = render_sweep(report)
        else:
            report = run(data, args.limit_conversations, load_settings(env))
            text = render(report)
        if cache is not None:
            report["embed_cache"] = {"hits": cache.hits, "misses": cache.misses}
            text += f"\nembedding cache {cache.path}: {cache.hits} hits, {cache.misses} embedded"
    print(json.dumps(report, indent=1, sort_keys=True) if args.json else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Ideas on top of hybrid search with the speaker centroid, replayed on LoCoMo.

Usage: python bench/centroid_replay.py --data PATH --embed-cache DIR [--check] [--json]

The product's fusion, speaker centroid included (``OM_SEARCH_SPEAKER_CENTROID_WEIGHT``, with the
neighbours' cosine ``OM_SEARCH_VECTOR_CONTEXT_WEIGHT``), is replayed over each question's two
candidate lists and every entry's stored vector, as ``list_candidates.py`` reads them
(``collect``); ``--check`` first asserts that the replay gives the same ten entries as
``search()`` for every question. Then, each with one knob (0 or the first value: the product):

- ``prior``: a turn informativeness prior. Each fused score x (1 + w x n / (n + ``HALF``))
  (also with half at 1 word, steeper),
  where n is the entry's own count of content words (its text without the speaker's label,
  words that are not stopwords), not its neighbours': short reactions ("Wow, that's great!",
  "Thanks!") are rarely evidence, and the neighbours column and the neighbours' cosine lend them
  the words and meaning of the lines around them.
- ``list-cap``: for a question asking for a list (``list_form``: a plural head noun after
  What / Which, or "has/have ... done"), at most m hits of one day (file, date, section) in the
  top ten; the others move below. Read from the question's form, not LoCoMo's wording.
- ``list-centroid``: the speaker centroid's weight for list-form questions only (the others keep
  the setting's): they are what it is for.

``inspect`` counts, for multi-hop (1) and open-domain (3) questions, what tells the evidence the
product ranks 11-50 from the non-evidence it ranks 1-10 (content words, "?", the named speaker,
a day the top 10 already holds). Scored like ``locomo_recall.py --sweep``: turn R@5 / R@10 per
value, category and conversation, and leave-one-conversation-out over the values (``Fold``).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusion_replay import Lists, _group, replay_cli, score_found
from list_candidates import (
    Entries,
    Scores,
    centroid_list,
    collected_conversations,
    fused,
    speaker_of,
)
from locomo_recall import KS, Fold, render_sweep

from obsmem.index.query import STOPWORDS
from obsmem.search import hybrid, search
from obsmem.search.bm25 import distinct_rows
from obsmem.settings import Settings

#: Content words at which the prior gives half its weight.
HALF = 4
_TEXT = 11
_WORD = re.compile(r"[^\W_]+")
_HEAD = re.compile(r"\b(?:what|which)\s+((?:[^\W\d_]+\s+){0,3})", re.IGNORECASE)
_DONE = re.compile(r"\b(?:has|have)\b.*\bdone\b", re.IGNORECASE)
# Words that end in "s" but are not plural nouns at the head of a question.
_NOT_PLURAL = frozenset({"does", "was", "is", "has", "his", "hers", "its", "this", "us", "yes"})


def content_words(text: str) -> int:
    """How many words of ``text`` (without a leading ``Speaker:`` label) are not stopwords."""
    label = speaker_of(text)
    body = text.split(":", 1)[1] if label else text
    return sum(w.casefold() not in STOPWORDS for w in _WORD.findall(body))


def list_form(question: str) -> bool:
    """True when ``question`` asks for a list: after What / Which, the noun phrase up to the
    first stopword (at most three words) ends in a plural ("What outdoor activities has ...",
    "Which cities ..."), or it asks what someone has done."""
    if _DONE.search(question):
        return True
    for match in _HEAD.finditer(question):
        phrase: list[str] = []
        for word in match.group(1).split():
            if word.casefold() in STOPWORDS:
                break
            phrase.append(word.casefold())
        if phrase:
            head = phrase[-1]
            plural = head.endswith("s") and not head.endswith(("ss", "us", "is"))
            if plural and len(head) > 3 and head not in _NOT_PLURAL:
                return True
    return False


def product(lists: Lists, settings: Settings, e: Entries) -> tuple[Scores, int | None]:
    """The product's fused scores (with the centroid's list) and its pinned winner."""
    scores, pinned = fused(lists, settings)
    weight = settings.search_speaker_centroid_weight
    if weight <= 0:
        return scores, pinned
    context = settings.search_vector_context_weight
    third = centroid_list(lists, e, scores, pinned, 5, context=context, depth=hybrid.POOL)
    return fused(lists, settings, third, weight) if third else (scores, pinned)


def ranked(lists: Lists, scores: Scores, pinned: int | None, depth: int) -> list[int]:
    """Rowids best first, vault copies dropped, ``depth`` of them."""
    rows = [lists.rows[r] for r in hybrid.fused_order(scores, pinned)]
    return [int(str(row[-1])) for row in distinct_rows(rows, depth)]


def prior(
    lists: Lists, settings: Settings, e: Entries, weight: float, text: str, half: float = HALF
) -> list[int]:
    """The ``prior`` idea (module doc) at ``weight``, half its weight at ``half`` words."""
    scores, pinned = product(lists, settings, e)
    if weight > 0:
        for r in scores:
            n = content_words(str(lists.rows[r][_TEXT]))
            scores[r] *= 1.0 + weight * n / (n + half)
    return ranked(lists, scores, pinned, max(KS))


def list_cap(lists: Lists, settings: Settings, e: Entries, cap: float, text: str) -> list[int]:
    """The ``list-cap`` idea (module doc): at most ``cap`` hits of one day in the top ten."""
    order = ranked(lists, *product(lists, settings, e), 3 * max(KS))
    if cap >= max(KS) or not list_form(text):
        return order[: max(KS)]
    taken: list[int] = []
    later: list[int] = []
    days: Counter[tuple[object, ...]] = Counter()
    for r in order:
        day = _group(lists.rows[r])
        if days[day] < cap and len(taken) < max(KS):
            days[day] += 1
            taken.append(r)
        else:
            later.append(r)
    return (taken + later)[: max(KS)]


def list_weight(lists: Lists, settings: Settings, e: Entries, w: float, text: str) -> list[int]:
    """The ``list-centroid`` idea (module doc): the centroid's weight ``w`` for a question
    asking for a list, the setting's for the others."""
    if list_form(text):
        settings = settings.replace(search_speaker_centroid_weight=w)
    return ranked(lists, *product(lists, settings, e), max(KS))


Variant = Callable[[Lists, Settings, Entries, float, str], list[int]]


def variants() -> dict[str, tuple[Variant, list[str]]]:
    """Every idea with its knob's values (the first: the product)."""
    return {
        "prior (w)": (prior, ["0", "0.1", "0.2", "0.3", "0.5"]),
        # Steeper: only the shortest lines (one content word: x (1 + w/2)) lose much.
        "prior, half at 1 word (w)": (
            lambda li, s, e, v, t: prior(li, s, e, v, t, half=1.0),
            ["0", "0.1", "0.2", "0.3", "0.5"],
        ),
        "list-cap (m)": (list_cap, ["10", "4", "3", "2"]),
        "list-centroid (w)": (list_weight, ["0.15", "0.3", "0.5", "1"]),
    }


def inspect(
    lists: Lists, settings: Settings, e: Entries, evidence: set[int], found: dict[str, list[Any]]
) -> None:
    """Add to ``found`` the features of the evidence at 11-50 and the non-evidence at 1-10."""
    order = ranked(lists, *product(lists, settings, e), 50)
    top_days = {_group(lists.rows[r]) for r in order[:10]}
    for place, r in enumerate(order, start=1):
        text = str(lists.rows[r][_TEXT])
        if place <= 10 and r not in evidence:
            kind = "non-evidence 1-10"
        elif place > 10 and r in evidence:
            kind = "evidence 11-50"
        else:
            continue
        found[kind].append(
            (
                content_words(text),
                text.rstrip().endswith("?"),
                speaker_of(text) in lists.names,
                _group(lists.rows[r]) in top_days,
            )
        )


def summarise(found: Mapping[str, list[Any]]) -> dict[str, Any]:
    """Per kind: how many, median content words, share with at most 3, ending in "?", said by
    a named speaker, of a day the top 10 holds."""
    out: dict[str, Any] = {}
    for kind, rows in found.items():
        words = [row[0] for row in rows]
        share = {
            "count": len(rows),
            "median words": statistics.median(words) if words else None,
            "<=3 words": sum(w <= 3 for w in words),
            "question": sum(row[1] for row in rows),
            "named speaker": sum(row[2] for row in rows),
            "top-10 day": sum(row[3] for row in rows),
        }
        out[kind] = share
    return out


def run(data: list[dict[str, Any]], settings: Settings, check: bool) -> dict[str, Any]:
    """Every idea at every value on every conversation of ``data``, and ``inspect``'s counts."""
    started = time.process_time()
    table = variants()
    folds = {name: Fold(values) for name, (_, values) in table.items()}
    found: dict[str, list[Any]] = {"evidence 11-50": [], "non-evidence 1-10": []}
    forms = Counter[str]()
    for conversation, mapping, collected, ids, entries, store in collected_conversations(
        data, settings
    ):
        questions = conversation.questions
        rowid_of = {dia: r for r, i in ids.items() for dia in mapping.get(i, ())}
        for question, lists in zip(questions, collected, strict=True):
            form = "list" if list_form(question.text) else "other"
            forms[f"c{question.category} {form}"] += 1
            if lists is None:
                continue
            if check:
                got = [ids[r] for r in ranked(lists, *product(lists, settings, entries), 10)]
                result = search(store, question.text, limit=10, settings=settings)
                hits = [h.id for h in result]
                if got != hits:
                    raise SystemExit(f"replay differs from search() on {question.text!r}")
            if question.category in (1, 3):
                evidence = {rowid_of[d] for d in question.evidence if d in rowid_of}
                inspect(lists, settings, entries, evidence, found)
        for name, (variant, values) in table.items():
            for value in values:
                hits_of = (
                    [ids[r] for r in variant(lists, settings, entries, float(value), q.text)]
                    if lists
                    else []
                    for lists, q in zip(collected, questions, strict=True)
                )
                folds[name].add(
                    value, conversation.sample_id, score_found(questions, hits_of, mapping)
                )
    seconds = round(time.process_time() - started, 1)
    sweeps = {
        name: {**fold.summary(), "setting": name, "backend": "hybrid replay", "seconds": seconds}
        for name, fold in folds.items()
    }
    return {"sweeps": sweeps, "inspect": summarise(found), "forms": dict(forms), "cpu": seconds}


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args, report = replay_cli(__doc__ or "", argv, run)
    if args.json:
        print(json.dumps(report, indent=1, sort_keys=True))
    else:
        print("\n\n".join(render_sweep(part) for part in report["sweeps"].values()))
        print(json.dumps({k: report[k] for k in ("inspect", "forms", "cpu")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Retrieval on LoCoMo through the whole pipeline: transcripts in, `om backfill`, then search.

Usage: python bench/locomo_pipeline.py --data PATH [--json] [--limit-conversations N]
       [--om PATH] [--keep DIR]

``bench/locomo_recall.py`` indexes every LoCoMo turn as an observation of its own: it measures
search alone. This benchmark measures what a user gets. Each conversation becomes agent
transcripts, one Claude Code session file per LoCoMo session, written with the session's real
date and time (one minute between turns; the first speaker as the user, the second as the
assistant; each turn's text as ``locomo_recall.turn_text`` gives it, speaker name first, so the
two benchmarks search the same words). Then, in a fresh temporary home that nothing real can
leak into (``memory_quality.isolated_env``):

1. ``om backfill`` (a subprocess of the installed ``om``, offline rules by default) reads them;
2. each question goes through the library path ``om search`` takes: ``obsmem.search.search``
   over what om kept (observations and reflections), and ``search_turns`` over the redacted
   transcript turns om keeps (``om search --raw``).

A hit counts for the evidence turns it stands for: an observation for the transcript lines its
provenance cites (the ledger's ``line_start``..``line_end``), a turn for its own lines. Recall@k
(LoCoMo's ``recall_acc``) is the share of a question's evidence turns that the first k hits stand
for, per category and overall (categories 1-4; 5, adversarial, listed apart). The compression
ratio is the transcript text (the turns' characters) over the observation text om wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_recall import (
    CATEGORIES,
    KS,
    SCORED_CATEGORIES,
    Conversation,
    load_conversation,
)
from memory_quality import (
    _om_command,
    _run,
    isolated_env,
    observation_lines,
    observation_text,
)

from obsmem.search.mixed import TURN_WEIGHT

#: Where the transcripts say the sessions ran: one project per conversation.
PROJECT_ROOT = "/home/user/locomo"

# One LoCoMo turn per transcript line: a JSONL line number names one dia id.
DiaMap = dict[str, dict[int, str]]


def _moment(day: str, clock: str | None) -> datetime:
    start = datetime.fromisoformat(f"{day}T{clock or '12:00'}")
    return start.replace(tzinfo=UTC)


def write_transcripts(conversation: Conversation, claude_home: Path) -> tuple[DiaMap, int]:
    """One Claude Code session file per LoCoMo session; the dia id of every line, text size."""
    project = f"{PROJECT_ROOT}/{conversation.sample_id}"
    folder = claude_home / "projects" / project.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    by_session: dict[int, list[Any]] = defaultdict(list)
    for turn in conversation.turns:
        by_session[turn.session].append(turn)
    lines_of: DiaMap = {}
    chars = 0
    first_speaker = conversation.turns[0].text.split(":", 1)[0] if conversation.turns else ""
    for number, turns in sorted(by_session.items()):
        session_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{conversation.sample_id}/{number}"))
        path = folder / f"{session_id}.jsonl"
        start = _moment(turns[0].date, turns[0].time)
        records = []
        mapping: dict[int, str] = {}
        for offset, turn in enumerate(turns):
            when = start + timedelta(minutes=offset)
            is_user = turn.text.split(":", 1)[0] == first_speaker
            role = "user" if is_user else "assistant"
            content: Any = turn.text if is_user else [{"type": "text", "text": turn.text}]
            records.append(
                {
                    "type": role,
                    "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    "sessionId": session_id,
                    "cwd": project,
                    "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session_id}/{offset}")),
                    "message": {"role": role, "content": content},
                }
            )
            mapping[offset + 1] = turn.dia_id
            chars += len(turn.text)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        last = (start + timedelta(minutes=len(turns))).timestamp()
        os.utime(path, (last, last))
        lines_of[str(path)] = mapping
    return lines_of, chars


def cited(provenance: Mapping[str, Any] | None, lines_of: DiaMap) -> list[str]:
    """The dia ids of the transcript lines a hit's provenance names (none when it has none)."""
    if not provenance:
        return []
    mapping = lines_of.get(str(provenance.get("source_path")))
    start, end = provenance.get("line_start"), provenance.get("line_end")
    if mapping is None or not isinstance(start, int):
        return []
    end = end if isinstance(end, int) else start
    return [mapping[n] for n in range(start, end + 1) if n in mapping]


def recall_of(ranked: Sequence[Sequence[str]], wanted: Sequence[str], k: int) -> float:
    """Share of ``wanted`` covered by what the first ``k`` hits stand for."""
    found = {dia for hit in ranked[:k] for dia in hit}
    targets = set(wanted)
    return len(found & targets) / len(targets) if targets else 0.0


Searcher = Callable[[str], list[list[str]]]


@dataclass
class Tally:
    """Sums of per-question recall by k and category, averaged over questions at the end."""

    sums: dict[tuple[int, int], float] = field(default_factory=lambda: defaultdict(float))
    counts: Counter[int] = field(default_factory=Counter)

    def add(self, category: int, ranked: Sequence[Sequence[str]], wanted: Sequence[str]) -> None:
        self.counts[category] += 1
        for k in KS:
            self.sums[(k, category)] += recall_of(ranked, wanted, k)

    def merge(self, other: Tally) -> None:
        for key, value in other.sums.items():
            self.sums[key] += value
        self.counts.update(other.counts)

    def mean(self, categories: Iterable[int], k: int) -> float | None:
        chosen = tuple(categories)
        n = sum(self.counts[c] for c in chosen)
        return round(sum(self.sums[(k, c)] for c in chosen) / n, 4) if n else None


def score(conversation: Conversation, searcher: Searcher, tally: Tally) -> None:
    for question in conversation.questions:
        tally.add(question.category, searcher(question.text), question.evidence)


def run_conversation(
    conversation: Conversation,
    home: Path,
    om: str | None,
    provider: str,
    weights: Sequence[float] = (TURN_WEIGHT,),
) -> dict[str, Any]:
    """Backfill one conversation into ``home`` and ask its questions both ways."""
    env = isolated_env(home, provider)
    lines_of, chars = write_transcripts(conversation, Path(env["CLAUDE_CONFIG_DIR"]))
    started = time.perf_counter()
    done = _run([*_om_command(om), "backfill"], env, home)
    backfill_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"om backfill failed for {conversation.sample_id}: {done.stderr[-400:]}")
    memory = Path(env["OM_HOME"])
    observed = observation_lines(memory)
    observed_chars = sum(len(observation_text(line)) for line in observed)

    # The library reads its paths from the environment, as the CLI does.
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        from obsmem.index.turns import search_turns
        from obsmem.memory.store import MemoryStore
        from obsmem.search import search
        from obsmem.search.mixed import search_everything
        from obsmem.settings import load_settings

        store = MemoryStore(memory)
        settings = load_settings()
        depth = max(KS)

        def kept(query: str) -> list[list[str]]:
            hits = search(store, query, limit=depth, settings=settings)
            return [cited(hit.provenance, lines_of) for hit in hits]

        def turns(query: str) -> list[list[str]]:
            hits = search_turns(store, query, limit=depth)
            return [cited(hit.get("provenance"), lines_of) for hit in hits]

        tallies = {"observations": Tally(), "turns": Tally()}
        score(conversation, kept, tallies["observations"])
        score(conversation, turns, tallies["turns"])
        for weight in weights:

            def everything(query: str, weight: float = weight) -> list[list[str]]:
                hits = search_everything(
                    store, query, limit=depth, settings=settings, turn_weight=weight
                )
                return [cited(hit.get("provenance"), lines_of) for hit in hits]

            tallies[f"mixed@{weight:g}"] = tally = Tally()
            score(conversation, everything, tally)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {
        "conversation": conversation.sample_id,
        "turn_count": len(conversation.turns),
        "questions": len(conversation.questions),
        "observation_lines": len(observed),
        "transcript_chars": chars,
        "observation_chars": observed_chars,
        "backfill_seconds": round(backfill_s, 2),
        "tallies": tallies,
    }


def summarise(tally: Tally) -> dict[str, Any]:
    """Recall@k per category and overall (categories 1-4), adversarial apart."""
    out: dict[str, Any] = {}
    for k in KS:
        out[f"recall@{k}"] = tally.mean(SCORED_CATEGORIES, k)
        for category in CATEGORIES:
            out[f"{CATEGORIES[category]}.recall@{k}"] = tally.mean((category,), k)
    return out


def leave_one_out(per: Sequence[Mapping[str, Any]], weights: Sequence[float], k: int) -> Any:
    """The turn weight chosen by leave-one-conversation-out, and the recall it gives.

    For each conversation, the weight with the best R@k on the others is applied to it; the
    figure is the question-weighted mean over conversations, never the best dev figure.
    """
    if len(per) < 2 or len(weights) < 2:
        return None
    chosen: list[float] = []
    total = questions = 0.0
    for i, held in enumerate(per):
        others = [r for j, r in enumerate(per) if j != i]

        def pooled(weight: float, rows: Sequence[Mapping[str, Any]] = others) -> float:
            tally = Tally()
            for row in rows:
                tally.merge(row["_tallies"][f"mixed@{weight:g}"])
            return tally.mean(SCORED_CATEGORIES, k) or 0.0

        best = max(weights, key=pooled)
        chosen.append(best)
        mine = held["_tallies"][f"mixed@{best:g}"]
        n = sum(mine.counts[c] for c in SCORED_CATEGORIES)
        total += (mine.mean(SCORED_CATEGORIES, k) or 0.0) * n
        questions += n
    return {"weights_chosen": chosen, f"recall@{k}": round(total / questions, 4)}


def run(
    data: Path,
    *,
    limit: int | None = None,
    om: str | None = None,
    keep: Path | None = None,
    provider: str = "none",
    weights: Sequence[float] = (TURN_WEIGHT,),
) -> dict[str, Any]:
    """The whole benchmark over the conversations of ``data``."""
    samples = json.loads(data.read_text(encoding="utf-8"))
    conversations = [load_conversation(sample) for sample in samples][:limit]
    root = keep or Path(tempfile.mkdtemp(prefix="om-locomo-pipeline-"))
    totals: dict[str, Tally] = defaultdict(Tally)
    per: list[dict[str, Any]] = []
    try:
        for conversation in conversations:
            home = root / conversation.sample_id
            result = run_conversation(conversation, home, om, provider, weights)
            result["_tallies"] = result.pop("tallies")
            for name, tally in result["_tallies"].items():
                totals[name].merge(tally)
            result["searches"] = {n: summarise(t) for n, t in result["_tallies"].items()}
            per.append(result)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    loo = leave_one_out(per, weights, 10)
    for result in per:
        del result["_tallies"]
    chars = sum(r["transcript_chars"] for r in per)
    kept_chars = sum(r["observation_chars"] for r in per)
    return {
        "data": str(data),
        "provider": provider,
        "conversations": per,
        "searches": {name: summarise(tally) for name, tally in totals.items()},
        "turn_weight_leave_one_out": loo,
        "compression": round(chars / kept_chars, 1) if kept_chars else None,
        "observation_lines": sum(r["observation_lines"] for r in per),
        "total_turns": sum(r["turn_count"] for r in per),
    }


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def render(report: Mapping[str, Any]) -> str:
    """A readable table: recall per category for each way of searching."""
    lines = [
        f"LoCoMo through the pipeline ({report['data']}, provider {report['provider']})",
        f"{report['total_turns']} turns -> {report['observation_lines']} observation lines, "
        f"compression {report['compression']}x",
        "",
        f"{'searched':<16}{'category':<14}{'R@5':>7}{'R@10':>7}",
    ]
    for name, figures in report["searches"].items():
        lines.append(
            f"{name:<16}{'overall 1-4':<14}{_fmt(figures['recall@5']):>7}"
            f"{_fmt(figures['recall@10']):>7}"
        )
        for category in CATEGORIES.values():
            lines.append(
                f"{'':<16}{category:<14}{_fmt(figures[f'{category}.recall@5']):>7}"
                f"{_fmt(figures[f'{category}.recall@10']):>7}"
            )
    loo = report.get("turn_weight_leave_one_out")
    if loo:
        lines.append(
            f"\nturn weight by leave-one-conversation-out: {loo['weights_chosen']} "
            f"-> R@10 {loo['recall@10']:.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo JSON file")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--om", default=None, help="the om executable (default: beside python)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the homes in this folder")
    parser.add_argument("--provider", default="none", help="OM_LLM_PROVIDER for the backfill")
    parser.add_argument(
        "--turn-weights",
        type=float,
        nargs="+",
        default=[TURN_WEIGHT],
        help="weights of the turns' ranks in the mixed search (several: sensitivity and LOO)",
    )
    args = parser.parse_args(argv)
    report = run(
        args.data,
        limit=args.limit_conversations,
        om=args.om,
        keep=args.keep,
        provider=args.provider,
        weights=args.turn_weights,
    )
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Plain-text formatting for the ``om`` commands (``--json`` output bypasses this module).

Plain text, aligned, no colour codes: it reads the same on a terminal, in a pipe and in a log.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: see obsmem/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from obsmem.doctor import Check
    from obsmem.observe.run import ObserveReport
    from obsmem.reflect.offline import ReflectReport
    from obsmem.search import Hit
    from obsmem.status import StatusReport

__all__ = [
    "banner",
    "checks",
    "hits",
    "observe_report",
    "reflect_report",
    "shown_scores",
    "status",
]

_MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "repaired": "fixed"}


def banner(title: str) -> str:
    """A section title for multi-part output."""
    return f"\n== {title} =="


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def shown_scores(scores: list[float]) -> list[str]:
    """Scores as printed: each a share of the best one, two decimals (the best hit is 1.00).

    Raw scores mean nothing on their own: BM25's depend on the size of the memory and on how
    common the query's words are (in a small memory every one is near 1e-6 and printed as 0.00),
    hybrid's are fused ranks. A share of the best says how close a hit comes to the top one.
    ``--json`` keeps the raw ``score``. Scores that are not positive are printed as they are.
    """
    top = max(scores, default=0.0)
    if top <= 0:
        return [f"{score:.3g}" for score in scores]
    return [f"{score / top:.2f}" for score in scores]


def hits(found: list[Hit] | list[dict[str, Any]]) -> str:
    """Search hits, one block each: rank, score (``shown_scores``), id, when, priority, type,
    text, file:line.

    Takes ``Hit`` objects (plain search) or entry dicts (filtered search) alike.
    """
    if not found:
        return "no matches"
    lines: list[str] = []
    rows = [item if isinstance(item, dict) else item.to_dict() for item in found]
    scores = shown_scores([float(h["score"]) for h in rows])  # type: ignore[arg-type]
    for hit, score in zip(rows, scores, strict=True):
        if hit.get("kind") == "turn":
            lines += _turn(hit, score)
            continue
        when = " ".join(str(x) for x in (hit.get("date"), hit.get("time")) if x) or "-"
        flags = " ".join(str(x) for x in (hit.get("priority"), hit.get("type")) if x)
        lines.append(f"{hit['rank']:>2}. [{score}] {hit['id']}  {when}  {flags}".rstrip())
        lines.append(f"    {_short(str(hit['text']))}")
        where = f"{hit['file']}:{hit['line']}"
        if hit.get("section"):
            where += f"  ({hit['section']})"
        lines.append(f"    {where}")
    return "\n".join(lines)


def _turn(hit: dict[str, Any], score: str) -> list[str]:
    """A transcript turn among the hits: when, who, where it was said, and the observation
    made from it if there is one."""
    prov = hit.get("provenance") or {}
    when = (hit.get("timestamp") or "")[:16].replace("T", " ") or "-"
    about = " ".join(str(prov[key]) for key in ("agent", "project") if prov.get(key))
    lines = [f"{hit['rank']:>2}. [{score}] turn  {when}  {hit['role']}  {about}".rstrip()]
    lines.append(f"    {_short(str(hit.get('snippet') or hit['text']))}")
    where = f"    {hit['citation']}"
    if hit.get("covered_by"):
        where += f"  (observed as {hit['covered_by']})"
    lines.append(where)
    return lines


def status(report: StatusReport) -> str:
    """``om status`` as aligned text."""
    idx: dict[str, Any] = report.index
    lines = [
        f"memory directory  {report.memory_dir}",
        f"observations      {report.observations}"
        + (
            f"  ({', '.join(f'{p} {n}' for p, n in report.by_priority.items())})"
            if report.by_priority
            else ""
        ),
    ]
    for day, count in list(report.by_day.items())[-7:]:
        lines.append(f"  {day}      {count}")
    if len(report.by_day) > 7:
        lines.append(f"  ... {len(report.by_day) - 7} earlier day(s)")
    lines.append(
        f"reflections       {report.reflection_entries} entries"
        + (f", last reflected {report.last_reflected}" if report.last_reflected else "")
    )
    lines.append("files             " + (", ".join(report.files) or "none yet"))
    if idx.get("exists"):
        state = f"{idx.get('entries', 0)} entries from {idx.get('files', 0)} file(s)"
        if idx.get("stale_files"):
            state += f", {idx['stale_files']} changed file(s) to pick up on the next search"
    else:
        state = "not built yet (built by the first search)"
    lines.append(f"index             {state}")
    lines += _search_lines(report.search)
    prov = report.provider
    shown = (
        prov["effective"]
        if prov["setting"] == prov["effective"]
        else f"{prov['effective']} ({prov['setting']})"
    )
    lines.append(f"llm provider      {shown}, model {prov['model']}")
    usage = report.usage
    if usage.get("month", {}).get("calls"):
        today, month = usage["today"], usage["month"]
        lines.append(
            f"llm usage         today {today['in'] + today['out']} tokens "
            f"({today['calls']} calls), this month {month['in'] + month['out']} tokens "
            f"({month['calls']} calls)"
        )
        cost = report.cost
        if cost:
            from obsmem.llm.usage import cost_text

            lines.append(
                f"llm cost          today {cost_text(cost['today'] | today)}, "
                f"this month {cost_text(cost['month'] | month)}"
            )
    for source in report.sources:
        if not source["files"]:
            continue
        pending = (
            f", {source['pending_bytes']} bytes pending in {source['pending_files']} file(s)"
            if source["pending_files"]
            else ", nothing pending"
        )
        last = f", last turn read {source['last_turn_at']}" if source["last_turn_at"] else ""
        lines.append(f"source {source['agent']:<10} {source['files']} transcript(s){pending}{last}")
    if not any(s["files"] for s in report.sources):
        lines.append("sources           no agent transcripts found")
    lines.append("integrations      " + (", ".join(report.integrations) or "none installed"))
    return "\n".join(lines)


def _search_lines(search: dict[str, Any]) -> list[str]:
    """``om status``'s search lines: backend and vectors, then the daemon when one is used."""
    if not search:
        return []
    if search["backend"] != "hybrid":
        lines = [f"search            keyword (BM25): {search['reason']}"]
        failure = search.get("model_failure")
        if failure:
            import time

            when = time.strftime("%H:%M", time.localtime(failure["retry_at"]))
            lines.append(
                f"                  tried again after {when} or once the model files change; "
                "`om doctor` says how to fix it, `om reindex --embed` tries it now"
            )
        return lines
    line = f"search            hybrid, {search['reason']}"
    if search.get("total") is not None:
        line += f"\nvectors           {search['embedded']:,} of {search['total']:,} embedded"
    lines = [line]
    daemon = search.get("daemon")
    if daemon is not None and daemon.get("running"):
        vectors = daemon.get("vectors") or {}
        doing = (
            f", embedding ({vectors.get('embedded', 0):,} of {vectors.get('total', 0):,})"
            if vectors.get("running")
            else ""
        )
        host = daemon.get("host")
        by = f", the {host}" if host and host != "search daemon" else ""
        lines.append(f"search daemon     running (pid {daemon.get('pid')}{by}){doing}")
    elif daemon is not None:
        lines.append("search daemon     not running (the next `om search` starts it)")
    return lines


def checks(results: list[Check]) -> str:
    """``om doctor`` verdicts, one line each, with the fix indented under what is not ok."""
    lines: list[str] = []
    for check in results:
        lines.append(f"[{_MARKS[check.verdict]}] {check.name}: {check.detail}")
        if check.fix and check.verdict != "ok":
            lines.append(f"       fix: {check.fix}")
    broken = sum(c.broken for c in results)
    lines.append("" if not broken else f"\n{broken} problem(s) need attention")
    return "\n".join(lines).rstrip()


def observe_report(report: ObserveReport) -> str:
    """``om observe``: what was read and written, and anything the user must know."""
    lines = [
        f"observed {report.turns} turn(s) from {report.files_read} of {report.files_seen} "
        f"transcript(s) with {report.provider}: {report.written} new observation(s)"
        + (f", {report.duplicates} duplicate(s) dropped" if report.duplicates else "")
    ]
    if report.chunks_llm and report.chunks_rules:
        lines.append(f"  {report.chunks_llm} chunk(s) by the LLM, {report.chunks_rules} by rules")
    if report.busy:
        lines.append(f"  {report.busy} transcript(s) skipped: another om observe is reading them")
    if report.skipped:
        parts = ", ".join(f"{n} {why}" for why, n in report.skipped.most_common(5))
        lines.append(f"  skipped records: {parts}")
    auto = report.auto_memory
    if auto is not None and (auto.added or auto.changed or auto.removed):
        lines.append(
            f"  claude auto-memory: {auto.files} file(s), {len(auto.added)} new, "
            f"{len(auto.changed)} changed, {len(auto.removed)} removed"
        )
    for problem in report.problems[:3]:
        lines.append(f"  problem: {problem}")
    if report.deferred:
        lines.append(
            f"  {len(report.deferred)} transcript(s) left pending for a later run "
            "(OM_FALLBACK=defer); nothing was lost"
        )
    return "\n".join(lines)


def reflect_report(report: ReflectReport) -> str:
    """``om reflect``: what changed in reflections.md and what moved to the archive.

    A dry run shows the unified diff of reflections.md first, then the same summary in the
    conditional ("would").
    """
    lines: list[str] = []
    if report.dry_run and report.diff:
        lines.append(report.diff.rstrip("\n"))
        lines.append("")
    lines.append(
        f"reflected new observations: {report.considered} looked at, "
        f"{report.promoted} promoted, {report.merged} merged into existing lines"
        + (f", {report.replaced} replacing older facts" if report.replaced else "")
        + (f", {report.covered} already in hand-written lines" if report.covered else "")
    )
    moves = [
        f"{n} {what}"
        for n, what in (
            (report.revived, "revived"),
            (report.demoted, "moved to Dormant"),
            (report.retired, "moved to ## Archive"),
            (report.moved_out, "moved to archive/reflections/"),
        )
        if n
    ]
    if moves:
        lines.append("  lines: " + ", ".join(moves))
    if not report.changed:
        lines.append("  reflections.md is up to date: nothing to write")
    else:
        went = "would go" if report.dry_run else "went"
        lines.append(
            f"  reflections.md {went} from {report.lines_before} to {report.lines_after} "
            f"lines (cap {report.max_lines}); last reflected {report.last_reflected}"
        )
    if report.over_cap:
        lines.append(
            "  hand-written lines alone pass the cap: om moved all of its own lines it could"
        )
    archived = report.archive
    if archived.days:
        shown = ", ".join(archived.days[:10]) + (" ..." if len(archived.days) > 10 else "")
        lines.append(
            f"  {'would archive' if report.dry_run else 'archived'} "
            f"{len(archived.days)} day(s) older than {archived.cutoff} "
            f"({archived.observations} observation(s); last activity {archived.last_activity}): "
            f"{shown}"
        )
    if archived.recovered:
        lines.append(
            f"  {len(archived.recovered)} day(s) were already in the archive (an interrupted "
            "run, or observations written again): removed from observations.md only"
        )
    for note in report.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)

"""The hand-over between hooks and the background worker: one small JSON file per job.

A hook must return at once, so it only writes a job (a transcript to observe, and whether the
session ended) into the queue folder and makes sure a worker is running. Files are written to a
temporary name and renamed, so the worker never reads half a job. Jobs for the same transcript
coalesce: the worker observes each transcript once per pass, with ``--flush`` if any of its jobs
asked for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from obsmem.paths import checksum_name, queue_dir
from obsmem.records import dataclass  # not dataclasses': a hook's cold start

__all__ = ["Batch", "Job", "enqueue", "pending", "take", "throttled"]


@dataclass(frozen=True)
class Job:
    """Observe ``transcript`` (of ``agent``); ``flush`` when the session ended."""

    transcript: str
    agent: str = ""
    flush: bool = False
    queued_at: float = 0.0


class Batch:
    """Jobs taken from the queue, one per transcript, and the files that held them."""

    __slots__ = ("files", "jobs")

    def __init__(self, jobs: list[Job] | None = None, files: list[Path] | None = None) -> None:
        self.jobs: list[Job] = [] if jobs is None else jobs
        self.files: list[Path] = [] if files is None else files

    def __repr__(self) -> str:
        return f"Batch(jobs={self.jobs!r}, files={self.files!r})"

    def done(self) -> None:
        """Remove the job files (after the worker handled them)."""
        for path in self.files:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _key(transcript: str) -> str:
    return checksum_name(transcript.encode("utf-8", "surrogateescape"))


def enqueue(job: Job, environ: Mapping[str, str] | None = None) -> Path:
    """Write ``job`` to the queue; return its file."""
    from obsmem.memory.atomic import ensure_dir  # here: a throttled prompt hook never needs it

    folder = ensure_dir(queue_dir(environ))
    stamp = time.time_ns()
    path = folder / f"{stamp}-{_key(job.transcript)}-{os.getpid()}.json"
    tmp = path.with_name("." + path.name + ".tmp")
    data = {
        "transcript": job.transcript,
        "agent": job.agent,
        "flush": job.flush,
        "queued_at": job.queued_at or time.time(),
    }
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)
    return path


def pending(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The job files waiting, oldest first."""
    try:
        names = os.listdir(queue_dir(environ))
    except FileNotFoundError:
        return []
    folder = queue_dir(environ)
    return sorted(folder / n for n in names if n.endswith(".json") and not n.startswith("."))


def take(environ: Mapping[str, str] | None = None) -> Batch:
    """Read every waiting job, coalesced per transcript (unreadable job files are dropped)."""
    batch = Batch()
    merged: dict[str, Job] = {}
    for path in pending(environ):
        batch.files.append(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            transcript = str(data["transcript"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        earlier = merged.get(transcript)
        merged[transcript] = Job(
            transcript=transcript,
            agent=str(data.get("agent") or (earlier.agent if earlier else "")),
            flush=bool(data.get("flush")) or bool(earlier and earlier.flush),
            queued_at=earlier.queued_at if earlier else float(data.get("queued_at") or 0),
        )
    batch.jobs = list(merged.values())
    return batch


def throttled(
    transcript: str,
    interval: float,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> bool:
    """True when ``transcript`` was checkpointed less than ``interval`` seconds ago.

    Otherwise records this checkpoint (a marker file's mtime) and returns False. Costs one
    ``stat`` when throttled, so prompt hooks stay instant.
    """
    if interval <= 0:
        return False
    marker = queue_dir(environ) / "throttle" / _key(transcript)
    moment = time.time() if now is None else now
    try:
        if moment - marker.stat().st_mtime < interval:
            return True
    except FileNotFoundError:
        from obsmem.memory.atomic import ensure_dir

        ensure_dir(marker.parent)
    marker.touch()
    os.utime(marker, (moment, moment))
    return False

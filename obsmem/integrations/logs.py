"""Logs of the scheduled jobs: where each job writes, and size-based rotation.

Scheduled commands append their output to ``<logs dir>/<job>.log`` through a shell ``>>``, so
om itself never holds a log file open. Rotation happens when a run starts: :func:`rotate` renames
``observe.log`` to ``observe.log.1`` (and so on, keeping ``keep`` old files) once it has reached
``max_bytes``. A job still appending to the renamed file keeps writing into ``.1``, which is fine:
nothing is lost, and the next run starts a fresh file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from obsmem.paths import logs_dir

__all__ = ["DEFAULT_KEEP", "DEFAULT_MAX_BYTES", "job_log", "rotate", "rotate_all", "start_detached"]

DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_KEEP = 3


def job_log(job: str, environ: Mapping[str, str] | None = None) -> Path:
    """The log file a scheduled job appends to (``<logs dir>/<job>.log``)."""
    return logs_dir(environ) / f"{job}.log"


def rotate(path: Path, max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP) -> bool:
    """Rotate ``path`` when it holds ``max_bytes`` or more; True when it was rotated.

    ``path.1`` is the newest old log and ``path.<keep>`` the oldest; older ones are deleted. A
    missing file is not an error, and neither is another process rotating at the same moment
    (each rename either happens once or finds its source already gone).
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if size < max_bytes:
        return False
    if keep <= 0:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return True
    with contextlib.suppress(FileNotFoundError):
        path.with_name(f"{path.name}.{keep}").unlink()
    for number in range(keep - 1, 0, -1):
        with contextlib.suppress(FileNotFoundError):
            os.replace(
                path.with_name(f"{path.name}.{number}"), path.with_name(f"{path.name}.{number + 1}")
            )
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, path.with_name(f"{path.name}.1"))
    return True


def rotate_all(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Rotate every log in the logs folder that is due; return the ones rotated.

    ``om observe`` and ``om reflect`` call this as they start, so scheduled jobs' logs stay
    bounded without a separate job. Costs one directory listing when nothing is due.
    """
    folder = logs_dir(environ)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [folder / n for n in sorted(names) if n.endswith(".log") and rotate(folder / n)]


def start_detached(
    module: str, log_name: str, environ: Mapping[str, str] | None = None, *args: str
) -> bool:
    """Start ``python -P -m module args...`` (this interpreter) in a session of its own, with no
    terminal and output appended to ``<logs dir>/<log_name>`` (rotated first), and return at
    once: True when it started. The background worker and the search daemon start so, and
    outlive whoever started them."""
    import subprocess
    import sys

    from obsmem.errors import MemoryDirError
    from obsmem.memory.atomic import ensure_dir

    env = dict(os.environ if environ is None else environ)
    try:
        # ensure_dir: the logs folder is private (0700) whoever starts first.
        log_path = ensure_dir(logs_dir(env)) / log_name
        with contextlib.suppress(OSError):
            rotate(log_path)
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except (OSError, MemoryDirError):
        fd = subprocess.DEVNULL
    try:
        # -P: not the working directory first on the module path, where a checkout of om (or
        # a file named like one of its modules) would shadow the installed one.
        subprocess.Popen(
            [sys.executable, "-P", "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    finally:
        if fd != subprocess.DEVNULL:
            os.close(fd)
    return True

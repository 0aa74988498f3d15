"""A folder made unreadable (``chmod 000``) the way a process that is not root meets it.

The suite runs as root, which reads and writes through any mode, so ``chmod 000`` proves
nothing there. :func:`deny` gives the same effect to the current process, whoever runs it: the
folder itself can still be stat-ed (as the kernel allows its owner), but listing it, or opening,
creating, renaming, deleting or stat-ing anything inside it fails with ``PermissionError``
(``EACCES``), and SQLite cannot open a database there. ``os.access`` says no as well.

:data:`SHIM` is the same as a few lines of Python for a new ``om`` process
(``python -c SHIM`` reads the folder from ``OM_TEST_DENY`` and the command line from
``OM_TEST_ARGV``), so a real command meets the fault from its first line.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["SHIM", "deny"]

_PATH_CALLS = (
    "stat",
    "lstat",
    "open",
    "listdir",
    "scandir",
    "mkdir",
    "rmdir",
    "unlink",
    "remove",
    "chmod",
    "utime",
    "readlink",
)
_TWO_PATH_CALLS = ("replace", "rename", "link", "symlink")


def _inside(path: Any, root: str) -> bool:
    try:
        text = os.fsdecode(path)
    except TypeError:
        return False  # a file descriptor
    full = os.path.abspath(text)
    return full.startswith(root + os.sep)


def _denied(path: Any) -> PermissionError:
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))


@contextmanager
def deny(folder: Path) -> Iterator[None]:
    """Within the block, this process meets ``folder`` as a ``chmod 000`` folder it does not own
    the right to read (see the module docstring)."""
    root = os.path.abspath(folder)
    saved: dict[tuple[Any, str], Any] = {}

    def patch(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        real = getattr(owner, name)
        saved[(owner, name)] = real
        setattr(owner, name, make(real))

    def one(real: Any, *, listing: bool = False) -> Any:
        def fake(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if _inside(path, root) or (listing and os.path.abspath(os.fsdecode(path)) == root):
                raise _denied(path)
            return real(path, *args, **kwargs)

        return fake

    def two(real: Any) -> Any:
        def fake(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
            for path in (src, dst):
                if _inside(path, root):
                    raise _denied(path)
            return real(src, dst, *args, **kwargs)

        return fake

    def access(real: Any) -> Any:
        def fake(path: Any, mode: int, *args: Any, **kwargs: Any) -> Any:
            if _inside(path, root):
                return False
            if os.path.abspath(os.fsdecode(path)) == root and mode != os.F_OK:
                return False
            return real(path, mode, *args, **kwargs)

        return fake

    def connect(real: Any) -> Any:
        def fake(database: Any, *args: Any, **kwargs: Any) -> Any:
            if _inside(database, root):
                raise sqlite3.OperationalError("unable to open database file")
            return real(database, *args, **kwargs)

        return fake

    for name in _PATH_CALLS:
        patch(os, name, lambda real, n=name: one(real, listing=n in ("listdir", "scandir")))
    for name in _TWO_PATH_CALLS:
        patch(os, name, two)
    patch(os, "access", access)
    patch(builtins, "open", one)
    patch(io, "open", one)
    patch(sqlite3, "connect", connect)
    try:
        yield
    finally:
        for (owner, name), real in saved.items():
            setattr(owner, name, real)


SHIM = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, os.environ.pop("OM_TEST_FAKES"))
from fakes.denied import deny
folder = os.environ.pop("OM_TEST_DENY")
sys.argv = ["om", *json.loads(os.environ.pop("OM_TEST_ARGV"))]
from obsmem.cli.entry import main
with deny(Path(folder)):
    main()
"""

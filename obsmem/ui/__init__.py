"""``om ui``: a local web viewer to see, search and correct what om remembers.

Server-rendered pages (Starlette, Jinja2) on 127.0.0.1 only, behind a per-run token; see
``security.py`` for the safety model and ``docs/ui.md`` for the pages. Nothing here is
imported by ``import obsmem``: the viewer needs the ``ui`` extra (``pip install 'obsmem[ui]'``),
and ``require`` says so in one line when it is missing.
"""

from __future__ import annotations

from obsmem.errors import UsageError

__all__ = ["INSTALL_HINT", "require"]

#: How to get what the viewer needs.
INSTALL_HINT = "install the viewer's packages: pip install 'obsmem[ui]'"

_NEEDED = (("starlette", "starlette"), ("uvicorn", "uvicorn"), ("jinja2", "jinja2"))


def require() -> None:
    """Raise ``UsageError`` naming the packages the viewer lacks (none missing: return)."""
    import importlib.util

    missing = [name for name, module in _NEEDED if importlib.util.find_spec(module) is None]
    if missing:
        raise UsageError(f"om ui needs {', '.join(missing)}, not installed here", INSTALL_HINT)

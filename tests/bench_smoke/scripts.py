"""Loading a benchmark script of ``bench/`` as a module, for the smoke tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_script(name: str) -> ModuleType:
    """``bench/NAME.py`` loaded as the module ``bench_NAME``.

    bench/ is a folder of scripts, not a package, so each is loaded from its file, under a name
    no test uses.
    """
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module

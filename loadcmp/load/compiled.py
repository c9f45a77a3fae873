"""Which closed loop without keep-alive runs: compiled, or pure Python.

The compiled one (`_cloop.pyx`, built by the install when a C compiler is there)
does every request's syscalls and parsing in C: a new connection per request is
otherwise ~60 us of Python per request, which holds a client core to 0.65x ab.
`rawclient.RawClient` is the fallback, kept and tested: when the module did not
build or import, or when LOADCMP_PURE_PYTHON=1 asks for it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Literal

PURE_ENV = "LOADCMP_PURE_PYTHON"
"""Set to 1 to run the pure-Python loop although the compiled one is there."""

EnginePath = Literal["compiled", "python"]


def cloop_module() -> ModuleType | None:
    """The compiled module, or None (not built, not importable, or not wanted)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        return importlib.import_module("loadcmp.load._cloop")
    except ImportError:
        return None


def engine_path(engine: str, keepalive: bool) -> EnginePath:
    """The path that sends a load's requests: only the fast engine's closed loop
    without keep-alive has a compiled one."""
    return "compiled" if engine == "fast" and not keepalive and cloop_module() is not None else "python"


def make_cloop(engine: Any, clients: int, loop: Any) -> Any | None:
    """The compiled loop for `engine`'s closed clients, or None: run RawClient."""
    mod = cloop_module()
    if mod is None:
        return None
    from .recorder import RECORD_DTYPE

    rec = engine.rec
    try:
        return mod.CLoop(engine, clients, loop, RECORD_DTYPE, rec.done_many)
    except ImportError:  # built against another row layout: not this recorder's
        return None

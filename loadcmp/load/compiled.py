"""Which closed loop runs: compiled, or pure Python.

The compiled one (`_cloop.pyx` and `_ctally.pyx`, built by the install when a C
compiler is there) does every request's syscalls, parsing and counting in C, with or
without keep-alive: a new connection per request is otherwise ~60 us of Python per
request, which holds a client core to 0.65x ab, and keep-alive ~6-8 us, which holds it
below wrk once the client's core is the limit. The pure-Python paths are the fallback,
kept and tested (`rawclient.RawClient`, and `http1`'s keep-alive callback path): when
the modules did not build or import, when LOADCMP_PURE_PYTHON=1 asks for them, and
over https.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Literal

PURE_ENV = "LOADCMP_PURE_PYTHON"
"""Set to 1 to run the pure-Python loop although the compiled one is there."""

EnginePath = Literal["compiled", "python"]

CLOOP_INTERFACE = 2
"""The `_cloop` this code drives (its `INTERFACE`): raise both together whenever CLoop's
constructor or what it calls back changes, so a build of older sources (an editable
install not built again) runs the pure-Python loop instead of failing the load."""


def cloop_module() -> ModuleType | None:
    """The compiled module, or None (not built, not importable, or not wanted)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        mod = importlib.import_module("loadcmp.load._cloop")
    except ImportError:
        return None
    return mod if getattr(mod, "INTERFACE", None) == CLOOP_INTERFACE else None


def engine_path(engine: str, closed: bool = True, https: bool = False) -> EnginePath:
    """The path that sends a load's requests: only the fast engine's closed loop over
    http has a compiled one (ramp and rate start each request from a coroutine)."""
    return "compiled" if engine == "fast" and closed and not https and cloop_module() is not None else "python"


def make_cloop(engine: Any, clients: int, loop: Any) -> Any | None:
    """The compiled loop for `engine`'s closed clients, or None: run the pure-Python ones."""
    mod = cloop_module()
    return None if mod is None else mod.CLoop(engine, clients, loop)

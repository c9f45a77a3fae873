"""Which closed loop runs: compiled, or pure Python.

The compiled one (`_cloop.pyx` and `_ctally.pyx` on `_cbase.pyx`, built by the install when
a C compiler is there) does every request's syscalls, parsing and counting in C, with or
without keep-alive: the Python a request costs otherwise is what holds a client below ab and
wrk once the client's core is the limit (docs/benchmark.md measures it). Over https the compiled loop is `_ctls.pyx`
(a subclass of it calling OpenSSL from C), built only where OpenSSL's headers were found.
h2 and h2c run `_ch2.pyx` (with `_ch2conn.pyx`, libnghttp2 from C), or else the `h2` package (`h2py`).
The pure-Python paths are the fallback, kept and tested (`rawclient.RawClient`, and
`http1`'s keep-alive callback path, TLS over uvloop's transports): when the modules did
not build or import, and when LOADCMP_PURE_PYTHON=1 asks for them.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Literal

PURE_ENV = "LOADCMP_PURE_PYTHON"
"""Set to 1 to run the pure-Python loop although the compiled one is there."""

EnginePath = Literal["compiled", "python"]

CLOOP_INTERFACE = 4
"""The `_cloop` this code drives (its `INTERFACE`): raise both together whenever CLoop's
constructor or what it calls back changes, so a build of older sources (an editable
install not built again) runs the pure-Python loop instead of failing the load."""


def cloop_module(https: bool = False) -> ModuleType | None:
    """The compiled module (over https: the one with TLS), or None (not built, not importable, or not wanted)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        mod = importlib.import_module("loadcmp.load._ctls" if https else "loadcmp.load._cloop")
    except ImportError:
        return None
    return mod if getattr(mod, "INTERFACE", None) == CLOOP_INTERFACE else None


H2_INTERFACE = 1
"""The `_ch2` this code drives (its `INTERFACE`), as CLOOP_INTERFACE."""


def h2_module() -> ModuleType | None:
    """The compiled h2 engine (`_ch2.pyx`, over libnghttp2), or None (not built, or not wanted)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        mod = importlib.import_module("loadcmp.load._ch2")
    except ImportError:
        return None
    return mod if getattr(mod, "INTERFACE", None) == H2_INTERFACE else None


def engine_path(engine: str, closed: bool = True, https: bool = False, proto: str = "h1") -> EnginePath:
    """The path that sends a load's requests: only the fast engine's closed loop has a
    compiled one (ramp and rate start each request from a coroutine); h2 and h2c: `_ch2`; h3: Python's QUIC."""
    if proto == "h3":
        return "python"
    if proto in ("h2", "h2c"):
        return "compiled" if engine == "fast" and h2_module() is not None else "python"
    return "compiled" if engine == "fast" and closed and cloop_module(https) is not None else "python"


def make_h2loop(engine: Any, connections: int, loop: Any) -> Any:
    """The h2 engine for `engine`'s connections: compiled, or the pure-Python `h2` package's (`h2py`)."""
    mod = h2_module()
    if mod is not None:
        return mod.H2Loop(engine, connections, loop)
    from .h2py import H2Clients

    return H2Clients(engine, connections)


def make_cloop(engine: Any, clients: int, loop: Any) -> Any | None:
    """The compiled loop for `engine`'s closed clients, or None: run the pure-Python ones."""
    https = engine.target.scheme == "https"
    mod = cloop_module(https)
    if mod is None:
        return None
    return mod.TLSLoop(engine, clients, loop) if https else mod.CLoop(engine, clients, loop)

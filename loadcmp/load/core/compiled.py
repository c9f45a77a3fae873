"""Which closed loop runs: compiled, or pure Python.

The compiled one (`_cloop.pyx` and `_ctally.pyx` on `_cbase.pyx`, built by the install when
a C compiler is there) does every request's syscalls, parsing and counting in C, with or
without keep-alive: the Python a request costs otherwise is what holds a client below ab and
wrk once the client's core is the limit (docs/benchmark.md measures it). Over https the compiled loop is `_ctls.pyx`
(a subclass of it calling OpenSSL from C), built only where OpenSSL's headers were found.
h2 and h2c run `_ch2.pyx` (with `_ch2conn.pyx`, libnghttp2 from C), or else the `h2` package (`h2.engine`).
The pure-Python paths are the fallback, kept and tested (`rawclient.RawClient`, and
`http1`'s keep-alive callback path, TLS over uvloop's transports): when the modules did
not build or import, when they were built from other sources than those beside them
(`current`), and when LOADCMP_PURE_PYTHON=1 asks for them. What Python calls of each
module is typed in its stub (`_cloop.pyi` ...), against the host contract (`host.py`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from asyncio import AbstractEventLoop
from pathlib import Path
from types import ModuleType
from typing import Literal

from .host import ClosedHost, Loop

PURE_ENV = "LOADCMP_PURE_PYTHON"
"""Set to 1 to run the pure-Python loop although the compiled one is there."""

EnginePath = Literal["compiled", "python"]


def pure_wanted() -> bool:
    """LOADCMP_PURE_PYTHON asks for the pure-Python paths."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def current(*mods: ModuleType) -> bool:
    """Were these compiled modules built from the sources in the load package as they are now? Each holds its
    sources' digests (`BUILT_FROM`, `_cbuilt.pxi`, written by setup.py): a build of other sources (an editable
    install not built again) still imports, and this tells it apart, with no number to raise by hand. A
    source that is not there (an install without the sources) is not held against it."""
    return all(_same_sources(str(LOAD), getattr(m, "BUILT_FROM", "")) for m in mods)


LOAD = Path(__file__).resolve().parent.parent
"""The load package: `BUILT_FROM` names each source by its path under it (`h1/_cloop.pyx`, `core/_csys.pxd`)."""


@functools.cache
def _same_sources(folder: str, built_from: str) -> bool:
    if not built_from:  # built before modules said what they were built from
        return False
    for item in built_from.split():
        name, _, digest = item.rpartition(":")
        path = Path(folder, name)
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest()[:16] != digest:
            return False
    return True


def cloop_module(https: bool = False) -> ModuleType | None:
    """The compiled module (over https: the one with TLS), or None (not built, not current, or not wanted)."""
    if pure_wanted():
        return None
    try:
        from . import _cbase, _ctally
        from ..h1 import _cloop

        if https:
            from ..tls import _ctls
    except ImportError:
        return None
    mods = (_cbase, _ctally, _cloop, _ctls) if https else (_cbase, _ctally, _cloop)
    return mods[-1] if current(*mods) else None


def h2_module() -> ModuleType | None:
    """The compiled h2 loop (`_ch2.pyx`, over libnghttp2), or None (not built, not current, or not wanted)."""
    if pure_wanted():
        return None
    try:
        from . import _cbase, _ctally
        from ..h2 import _ch2, _ch2conn
    except ImportError:
        return None
    return _ch2 if current(_cbase, _ctally, _ch2conn, _ch2) else None


def make_cloop(engine: ClosedHost, clients: int, loop: AbstractEventLoop) -> Loop | None:
    """The compiled loop for `engine`'s closed clients, or None: run the pure-Python ones."""
    https = engine.target.scheme == "https"
    if cloop_module(https) is None:
        return None
    if https:
        from ..tls._ctls import TLSLoop

        return TLSLoop(engine, clients, loop)
    from ..h1._cloop import CLoop

    return CLoop(engine, clients, loop)

"""Which HTTP/1 closed loop runs: the compiled one (`_cloop.pyx`; over https `_ctls.pyx`, a CLoop calling
OpenSSL from C, built only where OpenSSL's headers were found), or the pure-Python clients
(`rawclient.RawClient`, and `engine.py`'s keep-alive callback path, TLS over uvloop's transports).
"""

from __future__ import annotations

from asyncio import AbstractEventLoop
from types import ModuleType

from ..core.compiled import current, pure_wanted
from ..core.host import ClosedHost, Loop


def cloop_module(https: bool = False) -> ModuleType | None:
    """The compiled module (over https: the one with TLS), or None (not built, not current, or not wanted)."""
    if pure_wanted():
        return None
    try:
        from ..core import _cbase, _ctally
        from . import _cloop

        if https:
            from . import _ctls
    except ImportError:
        return None
    mods = (_cbase, _ctally, _cloop, _ctls) if https else (_cbase, _ctally, _cloop)
    return mods[-1] if current(*mods) else None


def make_cloop(engine: ClosedHost, clients: int, loop: AbstractEventLoop) -> Loop | None:
    """The compiled loop for `engine`'s closed clients, or None: run the pure-Python ones."""
    https = engine.target.scheme == "https"
    if https and engine.spec.pacing is not None and engine.spec.pacing.paced_io:
        return None  # a paced write or read over TLS: the Python loop's transports pace it (`paced`)
    if cloop_module(https) is None:
        return None
    if https:
        from ._ctls import TLSLoop

        return TLSLoop(engine, clients, loop)
    from ._cloop import CLoop

    return CLoop(engine, clients, loop)

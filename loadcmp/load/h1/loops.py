"""Which HTTP/1 closed loop runs: the compiled one (`_cloop.pyx`; over https `_ctls.pyx`, a CLoop calling
OpenSSL from C, built only where OpenSSL's headers were found, that thinks when `--think` asks (`_cthink.pyx`); with
a client behaviour over http `_cpaced.pyx`, a CLoop that thinks and paces), or the pure-Python clients
(`rawclient.RawClient`, and `engine.py`'s keep-alive callback path, TLS over uvloop's transports). A paced write or
read over https (`Pacing.paced_io`) runs on those transports (`paced.py`).
"""

from __future__ import annotations

from asyncio import AbstractEventLoop
from types import ModuleType

from ..core.compiled import current, pure_wanted
from ..core.host import ClosedHost, TracedLoop


def cloop_module(https: bool = False, paced: bool = False) -> ModuleType | None:
    """The compiled module (over https: the one with TLS; with a client behaviour: `_cpaced`'s), or None (not built,
    not current, or not wanted). Both build on `_cthink`'s loop."""
    if pure_wanted():
        return None
    try:
        from ..core import _cbase, _ctally
        from . import _cloop

        if https or paced:
            from . import _cthink
        if https:
            from . import _ctls
        if paced:
            from . import _cpaced
    except ImportError:
        return None
    mods = (_cbase, _ctally, _cloop, *((_cthink,) if https or paced else ()), *((_ctls,) if https else ()),
            *((_cpaced,) if paced else ()))
    return mods[-1] if current(*mods) else None


def make_cloop(engine: ClosedHost, clients: int, loop: AbstractEventLoop) -> TracedLoop | None:
    """The compiled loop for `engine`'s closed clients, or None: run the pure-Python ones."""
    https, pacing = engine.target.scheme == "https", engine.spec.pacing
    paced = pacing is not None and not https  # over https the TLS loop thinks itself
    if (https and pacing is not None and pacing.paced_io) or cloop_module(https, paced) is None:
        return None  # a paced write or read over TLS: the Python loop's transports run it (`paced`)
    if paced:
        from ._cpaced import PacedLoop

        return PacedLoop(engine, clients, loop)
    if https:
        from ._ctls import TLSLoop

        return TLSLoop(engine, clients, loop)  # with a --think, it thinks
    from ._cloop import CLoop

    return CLoop(engine, clients, loop)

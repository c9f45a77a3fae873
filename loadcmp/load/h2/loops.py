"""Which h2 loop runs: the compiled one (`_ch2.pyx` with `_ch2conn.pyx` and `_ch2link.pyx`, over libnghttp2, built where
nghttp2's and OpenSSL's headers were found), or the `h2` package's (`h2py.H2Clients`, flagged client-bound).
"""

from __future__ import annotations

from asyncio import AbstractEventLoop
from types import ModuleType
from typing import TYPE_CHECKING

from ..core.compiled import current, pure_wanted
from ..core.host import H2Host, TracedLoop

if TYPE_CHECKING:
    from ._ch2 import H2Loop


def h2_module() -> ModuleType | None:
    """The compiled h2 loop (`_ch2.pyx`, over libnghttp2), or None (not built, not current, or not wanted)."""
    if pure_wanted():
        return None
    try:
        from ..core import _cbase, _ctally
        from . import _ch2, _ch2conn, _ch2link
    except ImportError:
        return None
    return _ch2 if current(_cbase, _ctally, _ch2link, _ch2conn, _ch2) else None


def make_h2loop(engine: H2Host, connections: int, loop: AbstractEventLoop) -> TracedLoop:
    """The h2 loop for `engine`'s connections: compiled, or the pure-Python `h2` package's (`h2py`)."""
    if h2_module() is not None:
        from ._ch2 import H2Loop

        return H2Loop(engine, connections, loop)
    from .h2py import H2Clients

    return H2Clients(engine, connections)


def make_h2open(engine: H2Host, connections: int, loop: AbstractEventLoop) -> H2Loop:
    """The compiled h2 loop of an open schedule (rate, replay); the fallback runs none (`H2Engine` refuses it)."""
    from ._ch2 import H2Loop

    return H2Loop(engine, connections, loop)

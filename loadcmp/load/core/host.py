"""The contract between an engine and the loop it hosts: what a loop reads of its engine and calls back
(`Host` and its kinds), and what the engine calls of the loop (`Loop`).

The compiled loops (`_cloop.CLoop`, `_ctls.TLSLoop`, `_ch2.H2Loop`) and the `h2` package's fallback
(`h2py.H2Clients`) are built with their engine and run in its event loop; their stubs (`_cloop.pyi` ...)
name these classes, so mypy checks each engine against what its loop uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import ssl

    from ..record.recorder import Recorder
    from ..spec import LoadSpec
    from ..target import Target
    from ...trace.rows import Tracer


class Host(Protocol):
    """What every loop reads of its engine, and how it stops the load when it fails."""

    spec: LoadSpec
    target: Target
    timeout: float
    rec: Recorder | None
    """The load's recorder (set before the loop is built): the loop counts into it."""

    def crashed(self, e: BaseException) -> None:
        """A bug in a loop's callback: the load stops, and fails."""
        ...


class SocketHost(Host, Protocol):
    """An engine whose loop opens its sockets itself (the compiled ones): the server's address, resolved."""

    family: int
    sockaddr: Any
    """`getaddrinfo`'s address: (host, port) or (host, port, flowinfo, scope_id)."""
    tracer: Tracer | None
    """--trace: the trial's ids (a compiled loop writes the header in C and keeps the rows, `TracedLoop.trace_rows`)."""


class ClosedHost(SocketHost, Protocol):
    """The host of the compiled closed loop over HTTP/1.x (`CLoop`, `TLSLoop`): the requests' bytes too."""

    request_list: tuple[bytes, ...]
    """Each request's bytes, by index (a load of pages: `spec.pages` says their sequence)."""
    is_head: bool

    def local_addr(self) -> tuple[str, int] | None:
        """The next source address when spreading them (None: the kernel picks)."""
        ...


class H2Host(SocketHost, Protocol):
    """The host of the h2 fallback (`H2Clients`), which connects through asyncio and counts each start."""

    host: str
    port: int
    ssl: ssl.SSLContext | None

    def may_start(self, t: float) -> bool:
        """May a stream start at `t` (the window open, a ticket of -n left)?"""
        ...

    def _handshake_seen(self, transport: Any) -> None:
        """Count what a counted connection's TLS handshake negotiated."""
        ...


class Loop(Protocol):
    """A loop an engine hosts: started in the closed schedule, flushed into the recorder once a second and at
    the window's end (`Engine.settle`), aborted when the window closes (`Engine.abort_all`)."""

    def start(self) -> None: ...

    def flush(self) -> None: ...

    def abort(self) -> None: ...


class TracedLoop(Loop, Protocol):
    """A loop that sends --trace's header (h1's compiled loops, h2's both): the rows it kept in C, handed over when
    it stops (a pure-Python loop's go to the engine's tracer as they end: none here)."""

    def trace_rows(self) -> bytes:
        """The rows so far, `trace.rows.row_dtype`'s structs."""
        ...

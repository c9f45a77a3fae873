"""The h2 engine: h2 (over TLS, ALPN "h2") and h2c (cleartext, by prior knowledge), -c connections each
keeping -m streams in flight (the closed schedule), or carrying at most -m streams each (the open ones: a rate, a
replay, compiled loop only); the protocol table's `schedules` says which.

Its loop is the compiled one (`_ch2.H2Loop`, over libnghttp2) where it is built and current
(`h2_module`), else the `h2` package's (`h2py.H2Clients`, flagged client-bound). Either is a
`host.Loop` this engine hosts: started with the schedule, flushed once a second, aborted at the window's end.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from ..core.host import TracedLoop
from ..driver import LiveFn, LoadSpec
from ..traced import Traced
from ..schedules import Closed, Rate, Replay
from ..tls import context as tls
from .loops import make_h2loop, make_h2open


class H2Engine(Traced[None]):
    """HTTP/2 by streams: a loop of -c connections, each with -m streams in flight."""

    name = "h2"

    def __init__(self, spec: LoadSpec, live: LiveFn | None = None) -> None:
        super().__init__(spec, live)
        self.ssl = tls.context(spec.target)
        """https (h2): the fallback's TLS over uvloop's transports; the compiled loop runs OpenSSL from C."""
        self.host = spec.target.host
        self.port = spec.target.port
        self.loop: TracedLoop | None = None
        info = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)[0]
        self.family: int = info[0]
        self.sockaddr: Any = info[4]

    def start_closed(self, schedule: Closed) -> None:
        self.loop = make_h2loop(self, schedule.connections, asyncio.get_running_loop())
        self.loop.start()

    def start_rate(self, schedule: Rate | Replay) -> None:
        loop = make_h2open(self, schedule.connections, asyncio.get_running_loop())
        self.loop = loop
        loop.start_open(schedule, self.t_load0)

    def settle(self) -> None:
        if self.loop is not None:
            self.loop.flush()

    def abort_all(self) -> None:
        if self.loop is not None:
            self.loop.abort()
            if self.tracer is not None:
                self.tracer.c_rows = self.loop.trace_rows()

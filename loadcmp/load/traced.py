"""An engine that traces (`--trace`, docs/tracing.md): the driver's run, with this trial's `Tracer` (a nonce of its
own) made before the load starts and its rows put in the result after it.

The engines that send the header (`h1.engine.FastEngine`, `h2.engine.H2Engine`) subclass `Traced` instead of
`driver.Engine`; their pure-Python paths call the tracer per request, their compiled loops keep the rows in C and
hand them over when they stop (`Tracer.c_rows`).
"""

from __future__ import annotations

import asyncio
from typing import TypeVar

from ..trace.rows import Tracer, proto_of
from .driver import Engine
from .record.recorder import Result

S = TypeVar("S")


class Traced(Engine[S]):
    """`Engine` with --trace: `tracer` is this trial's (None: not traced)."""

    tracer: Tracer | None = None

    async def run(self, t_load0: float, stop: asyncio.Event | None = None) -> Result:
        """The driver's run, traced with a nonce and rows of this trial's own."""
        share = self.spec.trace
        self.tracer = Tracer(share, self.spec.worker_index, proto_of(self.target.proto, self.target.scheme)) \
            if share else None
        result = await super().run(t_load0, stop)
        result.traced = self.tracer.rows() if self.tracer is not None else None
        return result

"""Types of the compiled closed loop's clients that behave like people (`_cpaced.pyx`): what Python calls of it."""

from asyncio import AbstractEventLoop

from ..core.host import ClosedHost

BUILT_FROM: str
"""Its sources and their digests when it was built (`_cbuilt.pxi`; `compiled.current`)."""

class PacedLoop:
    """Every client of one engine's closed loop over http, behaving as `engine.spec.pacing` asks."""

    def __init__(self, engine: ClosedHost, clients: int, loop: AbstractEventLoop) -> None: ...
    def start(self) -> None: ...
    def flush(self) -> None: ...
    def abort(self) -> None: ...
    def trace_rows(self) -> bytes:
        """--trace: the traced requests' rows (a PacedLoop is a CLoop: `_cbase.CBase.trace_rows`)."""

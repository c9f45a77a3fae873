"""Types of the compiled closed loop over http (`_cloop.pyx`): what Python calls of it, checked by mypy."""

from asyncio import AbstractEventLoop

from ..core.host import ClosedHost

BUILT_FROM: str
"""Its sources and their digests when it was built (`_cbuilt.pxi`; `compiled.current`)."""

class CLoop:
    """Every client of one engine's closed loop (over http, with or without keep-alive)."""

    def __init__(self, engine: ClosedHost, clients: int, loop: AbstractEventLoop) -> None: ...
    def start(self) -> None: ...
    def flush(self) -> None: ...
    def abort(self) -> None: ...
    def trace_rows(self) -> bytes:
        """--trace: the traced requests' rows, `trace.rows.row_dtype`'s structs."""

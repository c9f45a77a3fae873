"""Types of the compiled h2 engine's loop (`_ch2.pyx`): what Python calls of it, checked by mypy."""

from asyncio import AbstractEventLoop

from ..core.host import SocketHost
from ..schedules import Rate, Replay

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

class H2Loop:
    """Every connection of one engine's h2 (or h2c) loop: -c connections of -m streams, closed or open (a rate)."""

    def __init__(self, engine: SocketHost, connections: int, loop: AbstractEventLoop) -> None: ...
    def start(self) -> None: ...
    def start_open(self, sched: Rate | Replay, t_load0: float) -> None: ...
    def flush(self) -> None: ...
    def abort(self) -> None: ...
    def trace_rows(self) -> bytes:
        """--trace: the traced streams' rows, `trace.rows.row_dtype`'s structs."""

"""Types of the compiled h2 engine's loop (`_ch2.pyx`): what Python calls of it, checked by mypy."""

from asyncio import AbstractEventLoop

from ..core.host import SocketHost

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

class H2Loop:
    """Every connection of one engine's closed h2 (or h2c) loop: -c connections of -m streams."""

    def __init__(self, engine: SocketHost, connections: int, loop: AbstractEventLoop) -> None: ...
    def start(self) -> None: ...
    def flush(self) -> None: ...
    def abort(self) -> None: ...

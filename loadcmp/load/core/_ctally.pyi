"""Types of the compiled loops' count (`_ctally.pyx`): what Python calls of it, checked by mypy."""

from collections.abc import Iterable, Sequence
from typing import Any

from ..pageset import Pages
from ..record.recorder import Recorder

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

class CTally:
    """What `Recorder.start` and `Recorder.done` do, in C, handed to the recorder on `flush`."""

    def __init__(self, rec: Recorder) -> None: ...
    def flush(self) -> None: ...

class CRequests:
    """A load's requests, the page each is recorded as and the status it expects, and their sequence."""

    def __init__(self, requests: Sequence[bytes], pages: Pages | None) -> None: ...
    def walk(self, n: int) -> list[int]: ...

def tally(rec: Recorder, events: Iterable[float | tuple[Any, ...] | None]) -> list[int]:
    """Count `events` (a start, an end, a hand-over) as the compiled loop does; what each start was answered."""

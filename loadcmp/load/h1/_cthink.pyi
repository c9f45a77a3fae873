"""Types of the compiled closed loop that thinks (`_cthink.pyx`): what Python calls of it, checked by mypy."""

from ._cloop import CLoop

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

class ThinkLoop(CLoop):
    """Every client of one engine's closed loop, idling for its think after each answer (`CLoop`'s calls)."""

"""Types of the compiled closed loop over https (`_ctls.pyx`): what Python calls of it, checked by mypy."""

from ._cthink import ThinkLoop

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

ALPN_NAMES: tuple[str, str, str]

class TLSLoop(ThinkLoop):
    """Every client of one engine's closed loop over https, thinking as `ThinkLoop` (`CLoop`'s calls)."""

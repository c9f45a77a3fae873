"""Types of the compiled closed loop over https (`_ctls.pyx`): what Python calls of it, checked by mypy."""

from ._cloop import CLoop

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

ALPN_NAMES: tuple[str, str, str]

class TLSLoop(CLoop):
    """Every client of one engine's closed loop over https (`CLoop`'s constructor and calls)."""

"""Types of the compiled h2 engine's connection set-up (`_ch2link.pyx`, the base of `_ch2conn.H2Conns`, used from C)."""

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

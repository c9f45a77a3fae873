"""Types of the compiled h2 engine's connections (`_ch2conn.pyx`, the base of `_ch2.H2Loop`, used from C)."""

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

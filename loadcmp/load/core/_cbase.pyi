"""Types of the compiled loops' base (`_cbase.pyx`): Python reads only what it was built from."""

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

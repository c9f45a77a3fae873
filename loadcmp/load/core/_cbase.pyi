"""Types of the compiled loops' base (`_cbase.pyx`): Python reads what it was built from, and the tests its reader."""

from collections.abc import Iterable

BUILT_FROM: str
"""As `_cloop.BUILT_FROM`."""

def parse(chunks: Iterable[bytes], head: bool = ...) -> tuple[int, int, int, int]:
    """(result, status, keepalive, nobody) of a response fed to the HTTP/1 reader in chunks, then an EOF. For the
    tests."""

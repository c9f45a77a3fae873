"""Whether a compiled loop runs, or its pure-Python fallback.

The compiled loops (h1's `_cloop.pyx` and `_ctls.pyx`, h2's `_ch2.pyx`, all on this room's `_cbase.pyx`
and `_ctally.pyx`, built by the install when a C compiler is there) do every request's syscalls,
parsing and counting in C: the Python a request costs otherwise is what holds a client below ab,
wrk and h2load once the client's core is the limit (docs/benchmark.md measures it). Each room picks
its own loop (`h1/loops.py`, `h2/loops.py`), asking `current` of it and of the core's modules. The
pure-Python paths are the fallback, kept and tested: when the modules did not build or import, when
they were built from other sources than those in the package (`current`), and when
LOADCMP_PURE_PYTHON=1 asks for them. What Python calls of each module is typed in its stub
(`_cloop.pyi` ...), against the host contract (`host.py`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Literal


PURE_ENV = "LOADCMP_PURE_PYTHON"
"""Set to 1 to run the pure-Python loop although the compiled one is there."""

EnginePath = Literal["compiled", "python"]


def pure_wanted() -> bool:
    """LOADCMP_PURE_PYTHON asks for the pure-Python paths."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def current(*mods: ModuleType) -> bool:
    """Were these compiled modules built from the sources in the load package as they are now? Each holds its
    sources' digests (`BUILT_FROM`, `_cbuilt.pxi`, written by setup.py): a build of other sources (an editable
    install not built again) still imports, and this tells it apart, with no number to raise by hand. A
    source that is not there (an install without the sources) is not held against it."""
    stale = [m.__name__ for m in mods if not _same_sources(str(LOAD), getattr(m, "BUILT_FROM", ""))]
    for name in stale:
        if name not in _SAID:  # once a process: the user's next load runs as fast as before, or says why not
            _SAID.add(name)
            log.warning("loadcmp: %s was built from other sources than the package holds now: the pure-Python "
                        "path runs, slower (build it again: make setup, or pip install -e .)", name)
    return not stale


_SAID: set[str] = set()
"""The stale modules said so already."""
log = logging.getLogger("loadcmp")


LOAD = Path(__file__).resolve().parent.parent
"""The load package: `BUILT_FROM` names each source by its path under it (`h1/_cloop.pyx`, `core/_csys.pxd`)."""


@functools.cache
def _same_sources(folder: str, built_from: str) -> bool:
    if not built_from:  # built before modules said what they were built from
        return False
    for item in built_from.split():
        name, _, digest = item.rpartition(":")
        path = Path(folder, name)
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest()[:16] != digest:
            return False
    return True

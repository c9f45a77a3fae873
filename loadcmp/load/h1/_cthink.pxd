# The compiled closed loop that thinks (_cthink.pyx): `ThinkLoop`, a CLoop with --think and each client's timers of
# the running loop; _cpaced.pyx's PacedLoop (http) and _ctls.pyx's TLSLoop (https) build on it.

from ..core._csys cimport *
from ._cloop cimport CLoop


cdef class ThinkLoop(CLoop):
    cdef object pacing, think_rng  # `load.pacing.Pacing` (None: no behaviour), the think jitter's generator
    cdef uint32_t *ptok  # by client: the pause its pending timer belongs to (a later one makes it stale)

    cdef void _later(self, Client *c, double at, fn) except *

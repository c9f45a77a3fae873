# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled closed loop's think time (`--think`, `load.pacing`): `ThinkLoop` is `_cloop.CLoop` whose clients idle
between an answer and their next request, over http (`_cpaced.PacedLoop` builds on it) and https (`_ctls.TLSLoop`).

`CLoop` calls `_think` and `_idle_event` only while `think_s` is set (here, when a think is asked), so a load without
one runs the loops' requests as before. A think is a timer of the running loop (`_later`, which `PacedLoop`'s paced
writes and reads use too): a thinking client asks nothing of the loop meanwhile, and a timer a later pause has made
stale does nothing. The next request is the subclass's own `_again` (on the kept connection) or `_start` (a new one,
with its TLS handshake over https), so its latency runs from the end of the think.
"""

from libc.stdlib cimport calloc, free

from ..core._cbase cimport now
from ._cloop cimport *
from ..core._csys cimport *

include "_cbuilt.pxi"


cdef class ThinkLoop(CLoop):
    """Every client of one engine's closed loop, idling for `engine.spec.pacing`'s think after each answer."""

    def __init__(self, engine, int clients, loop):
        CLoop.__init__(self, engine, clients, loop)
        p = self.pacing = engine.spec.pacing
        if p is None:
            return
        self.think_s = p.think_s
        self.think_rng = p.rng(engine.spec.worker_index)  # seeded per worker, as the Python loop draws it
        self.ptok = <uint32_t *>calloc(self.n, sizeof(uint32_t))
        if not self.ptok:
            raise MemoryError()

    def __dealloc__(self):
        free(self.ptok)

    cdef void _later(self, Client *c, double at, fn) except *:
        """`fn(i, gen, tok)` at `at`; a newer pause of the client, or its connection closed, makes it stale."""
        cdef int i = c - self.clients
        self.ptok[i] += 1
        self.loop.call_later(max(0.0, at - now()), fn, i, c.gen, self.ptok[i])

    cdef bint _think(self, Client *c, bint keep) except *:
        """--think after an answer: the client idles (its kept connection open, else closed now), then `_thought`
        sends its next request; False when the load has stopped."""
        if self.stopped:
            return False
        if not keep and c.fd >= 0:
            self._close(c)
            c.gen += 1
        elif c.registered == PAUSED:
            self._watch(c, EPOLLIN)  # a paced reader's idle connection (`PacedLoop`): its close is seen
        c.phase = THINKING
        self._later(c, now() + self.pacing.think_delay(self.think_rng), self._thought)
        return True

    def _thought(self, int i, uint32_t gen, uint32_t tok):
        cdef Client *c = &self.clients[i]
        try:
            if self.stopped or c.phase != THINKING or self.ptok[i] != tok:
                return
            c.phase = IDLE
            if c.fd >= 0:
                self._again(c, now())  # its latency runs from now: the think is not in it
            else:
                self._start(c)
        except BaseException as e:
            self._crash(e)

    cdef void _idle_event(self, Client *c) except *:
        """The server closed (or wrote on) a connection idle in its think: closed (over https with its close_notify);
        the client connects again after."""
        self._close(c)
        c.gen += 1

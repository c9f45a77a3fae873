# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled closed loop's clients that behave like people (`load.pacing`) over http: `PacedLoop` is
`_cthink.ThinkLoop` (a `CLoop` with think time) with a paced write (`--send-rate`, slowloris) and a paced read
(`--read-rate`).

`CLoop` calls these through hooks that are empty there and run only when their fields are set (here), so a load
without a behaviour runs `CLoop` itself, unchanged. A write's next chunk and a read's next chunk are each a timer of
the running loop (`ThinkLoop._later`, as a think is): a paced client sends few bytes a second, so a Python call per
chunk costs nothing beside its wait. A timer that a later pause, or a closed connection, has made stale does nothing.
Over https these run on the Python loop's transports (`paced.py`): a trickle and a held read pace the socket's own
bytes (a chunk's send, a peek), which over TLS are records that OpenSSL writes and reads whole.
"""

from libc.errno cimport errno, EAGAIN, EINTR, ENOTCONN
from libc.math cimport isnan
from libc.stdlib cimport calloc, free

from ..core._cbase cimport now
from ._cloop cimport *
from ._cthink cimport ThinkLoop
from ..core._csys cimport *

cdef extern from "<sys/socket.h>":
    enum: SO_RCVBUF, MSG_PEEK

cdef double RETRY_S = 0.001  # as _cloop.pyx's: a connect's failure tried again this much later
cdef int ONE = 1

include "_cbuilt.pxi"


cdef class PacedLoop(ThinkLoop):
    """Every client of one engine's closed loop over http, behaving as `engine.spec.pacing` asks."""

    cdef double send_gap, read_bps
    cdef Py_ssize_t *sent  # by client: the request's bytes written so far (--send-rate)
    cdef Py_ssize_t *held  # by client: the bytes peeked at and left in its socket until the rate has carried them

    def __init__(self, engine, int clients, loop):
        ThinkLoop.__init__(self, engine, clients, loop)  # the think, when one is asked
        self._pacing()

    def __dealloc__(self):
        free(self.sent); free(self.held)

    cdef void _pacing(self):
        """The paced write and read the spec asks of each client; the per-client arrays only when something is
        asked."""
        p = self.pacing
        if p is None:
            return
        if p.send_bps:
            self.send_chunk, self.send_gap = p.send_step()
        if p.read_bps:
            self.read_bps = p.read_bps
            self.read_chunk, self.rcvbuf = p.read_step()
        self.sent = <Py_ssize_t *>calloc(self.n, sizeof(Py_ssize_t))
        self.held = <Py_ssize_t *>calloc(self.n, sizeof(Py_ssize_t))
        if not (self.sent and self.held):
            raise MemoryError()

    cdef void _paced_socket(self, Client *c) except *:
        """Before the connect: no Nagle delay for a trickle's small writes; a small receive buffer for a slow reader
        (the window it offers is set at the handshake)."""
        if self.send_chunk:
            setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &ONE, sizeof(int))
        if self.rcvbuf:
            setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &self.rcvbuf, sizeof(int))

    cdef bint _trickle(self, Client *c, bint early) except *:
        """--send-rate: the request's first chunk now, the rest `send_gap` apart (`_trickled`), the answer watched for
        meanwhile; False (early only) while the connection is not up yet."""
        cdef int i = c - self.clients
        cdef Py_ssize_t want = c.out_n  # the request as sent: a traced one's copy with its header
        c.t_sent = now()
        cdef ssize_t sent = send(c.fd, c.out, min(want, self.send_chunk), MSG_NOSIGNAL)
        if sent < 0:
            if early and (errno == EAGAIN or errno == ENOTCONN):
                return False
            self._failed(c, errno, RETRY_S if early else 0.0)
            return True
        if isnan(c.t_up):
            c.t_up = c.t_sent
        self.sent[i] = sent
        c.phase = WAITING
        self._watch(c, EPOLLIN)
        self._sent_more(c)
        return True

    cdef void _sent_more(self, Client *c) except *:
        """The request written whole (its `t_written`), or its next chunk `send_gap` later."""
        cdef int i = c - self.clients
        if self.sent[i] >= c.out_n:
            c.t_written = now()
        else:
            self._later(c, now() + self.send_gap, self._trickled)

    def _trickled(self, int i, uint32_t gen, uint32_t tok):
        cdef Client *c = &self.clients[i]
        cdef ssize_t got
        try:
            if self.stopped or c.gen != gen or self.ptok[i] != tok or c.phase != WAITING or c.fd < 0:
                return
            got = send(c.fd, c.out + self.sent[i], min(c.out_n - self.sent[i], self.send_chunk), MSG_NOSIGNAL)
            if got < 0 and errno != EAGAIN and errno != EINTR:
                self._failed(c, errno, 0.0)
                return
            self.sent[i] += max(got, 0)
            self._sent_more(c)
        except BaseException as e:
            self._crash(e)

    cdef void _paced_read(self, Client *c) except *:
        """--read-rate: the bytes come are peeked at and left in the socket for the time the rate takes to carry them
        (the fd out of the epoll set's events meanwhile, so that the small receive buffer fills and the server
        waits), then read and parsed; an event while paused (a reset, a hang-up) reads them at once."""
        cdef int i = c - self.clients
        cdef ssize_t got
        cdef int r
        if c.registered != PAUSED:
            self.held[i] = 0  # peeked at on a connection or an answer since ended
        while True:
            if self.held[i]:
                got, self.held[i] = recv(c.fd, self.buf, self.held[i], 0), 0
                if got <= 0:
                    self._cut(c, got == 0)
                    return
                r = self._feed(c, got)
                if r == READ_ON and c.fd >= 0:
                    self._watch(c, EPOLLIN)  # answered: the server's close is read as fast as it comes
                if r != PARTIAL:
                    return
            got = recv(c.fd, self.buf, self.read_chunk, MSG_PEEK)
            if got > 0:
                self.held[i] = got
                self._pause(c, now() + got / self.read_bps)
            elif got == 0:
                self._cut(c, True)
            elif errno == EAGAIN:
                self._watch(c, EPOLLIN)  # nothing yet: wait for it
            elif errno != EINTR:
                self._cut(c, False)
            if got != -1 or errno != EINTR:
                return

    cdef void _pause(self, Client *c, double at) except *:
        """The fd left in the epoll set for no event until `at` (`_resume`)."""
        cdef int i = c - self.clients
        c.registered = PAUSED
        self._watch_fd(c.fd, 1, 0, (<uint64_t>c.gen << 32) | <uint64_t>i)  # a reset or hang-up still wakes it
        self._later(c, at, self._resume)

    def _resume(self, int i, uint32_t gen, uint32_t tok):
        cdef Client *c = &self.clients[i]
        try:
            if self.stopped or c.gen != gen or self.ptok[i] != tok or c.phase != WAITING or c.fd < 0:
                return
            self._paced_read(c)
        except BaseException as e:
            self._crash(e)

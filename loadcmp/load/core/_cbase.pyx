# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""What every compiled loop shares (`_cbase.pxd` declares it): `CBase`, one epoll set of the loop's own whose fd is
one reader of the running event loop, the deadline tick, the crash that fails the load, and the stop.

A loop (`_cloop.CLoop`, `_ch2conn.H2Conns`) subclasses it and fills in what differs through virtual C methods: a
client's first request (`_first`), one epoll event (`_event`: the client or connection is in the event's data), the
deadlines at a tick (`_deadlines`), and on the stop what was never sent (`_unsent`) and every socket (`_close_all`).
The clock and an HTTP status's kind are inline C functions in the .pxd, so the loops call them without a call.
`--trace`'s state (`tr`: the draw, the rows, `_ctrace.h`) is here once for every loop, with its draw (`_trace_on`),
its rows handed to Python (`trace_rows`) and its memory freed; what a loop writes (the header in a request, or an
h2 field) it sets up itself. `parse` feeds the HTTP/1 response reader by hand, for the tests.
"""

from libc.errno cimport errno
from libc.stdlib cimport free, malloc
from libc.string cimport memset, strerror
from posix.unistd cimport close

from ._csys cimport *
from ._ctrace cimport TROW_SIZE, tracer_free, trows_data

from ..record.outcomes import HTTP_4XX, HTTP_5XX, OK

include "_cbuilt.pxi"

if (K_OK, K_HTTP_4XX, K_HTTP_5XX) != (OK, HTTP_4XX, HTTP_5XX):  # a build of older sources
    raise ImportError("_cbase.pxd's outcome kinds are not outcomes.py's: build it again (make setup)")

cdef double TICK_S = 0.05  # deadlines checked this often


cdef class CBase:
    """One engine's compiled loop: the epoll set, the tick, the crash, the stop; a subclass runs the requests."""

    def __cinit__(self):
        self.epfd = -1  # __dealloc__ runs after a failed __init__ too

    def __init__(self, engine, int n, loop):
        self.engine, self.rec, self.loop = engine, engine.rec, loop
        self.tally = CTally(engine.rec)
        self.n, self.timeout, self.family = n, engine.timeout, engine.family
        set_addr(&self.addr, engine.family, engine.sockaddr[0], engine.sockaddr[1],
                 engine.sockaddr[3] if len(engine.sockaddr) > 3 else 0)
        self.addrlen = sizeof(sockaddr_in6) if self.family == AF_INET6 else sizeof(sockaddr_in)
        self.events = <epoll_event *>malloc(MAXEVENTS * sizeof(epoll_event))
        if not self.events:
            raise MemoryError()
        self.epfd = epoll_create1(EPOLL_CLOEXEC)
        if self.epfd < 0:
            raise OSError(errno, strerror(errno).decode())

    def __dealloc__(self):
        free(self.events)
        if self.epfd >= 0:
            close(self.epfd)
        tracer_free(&self.tr)

    cdef void _trace_on(self, object tracer) except *:
        """--trace: the draw of `tracer`'s ids (`trace.ids.Ids`), every request or those below its limit; what each
        loop writes (the header in a request, or as an h2 field) it sets up itself."""
        self.tr.on, self.tr.all, self.tr.limit = True, tracer.ids.share >= 1.0, min(tracer.ids.limit, (1 << 64) - 1)
        self.tr.seq = tracer.ids.seq  # the first number (1: a parent-id of all zeros is invalid), as Python's

    def trace_rows(self):
        """--trace: the traced requests' rows so far, `trace.rows.row_dtype`'s structs."""
        return trows_data(&self.tr)[:self.tr.rows.n * TROW_SIZE] if self.tr.rows.n else b""

    def start(self):
        """Register our epoll fd with the loop and start every client."""
        self.loop.add_reader(self.epfd, self._drain)
        self.tick_handle = self.loop.call_later(TICK_S, self._tick)
        for i in range(self.n):
            self._first(i)

    def _drain(self):
        cdef int j, got
        try:
            got = epoll_wait(self.epfd, self.events, MAXEVENTS, 0)
            for j in range(got):
                self._event(self.events[j].data.u64, self.events[j].events)
        except BaseException as e:
            self._crash(e)

    def _tick(self):
        """Deadlines (connect_timeout, timeout, a server that never closes), every TICK_S."""
        self.tick_handle = None
        try:
            if self.stopped:
                return
            self._deadlines(now())
            self.tick_handle = self.loop.call_later(TICK_S, self._tick)
        except BaseException as e:
            self._crash(e)

    def _crash(self, e):
        """A bug here must fail the load, not leave it quietly short of clients."""
        self.abort()
        self.engine.crashed(e)

    def abort(self):
        """The window has closed: every socket shut at once, nothing started again. A request not sent yet (its
        connection still opening) is taken back (`Recorder.unsent`)."""
        if self.stopped:
            return
        self.stopped = True
        self._unsent()
        self.loop.remove_reader(self.epfd)
        if self.tick_handle is not None:
            self.tick_handle.cancel()
            self.tick_handle = None
        self._close_all()
        close(self.epfd)
        self.epfd = -1

    cdef int _watch_fd(self, int fd, int registered, uint32_t events, uint64_t data) except -1:
        """Watch `fd` for `events` (in the set already when `registered`), its events carrying `data`; the events."""
        cdef epoll_event ev
        ev.events = events
        ev.data.u64 = data
        if epoll_ctl(self.epfd, EPOLL_CTL_MOD if registered else EPOLL_CTL_ADD, fd, &ev) != 0:
            raise OSError(errno, "epoll_ctl: " + strerror(errno).decode())
        return <int>events

    cdef void _first(self, int i) except *:
        pass

    cdef void _event(self, uint64_t data, uint32_t events) except *:
        pass

    cdef void _deadlines(self, double t) except *:
        pass

    cdef void _unsent(self) except *:
        pass

    cdef void _close_all(self) except *:
        pass


def parse(chunks, bint head=False):
    """Feed `chunks` to the HTTP/1 response reader (`h1/_chttp.h`, which `_csys.pxd` declares for every loop), then
    an EOF: (result, status, keepalive, nobody) after the chunk that ended it (result 1 complete, -1 bad, 0 cut
    short). For the tests."""
    cdef resp_t r
    memset(&r, 0, sizeof(r))
    resp_reset(&r, head)
    got = R_MORE
    for c in chunks:
        if got == R_MORE:
            got = resp_feed(&r, <bytes>c, len(c))
    out = (got if got != R_MORE else int(resp_eof(&r) == R_COMPLETE), r.status, r.keepalive, r.nobody)
    resp_free(&r)
    return out

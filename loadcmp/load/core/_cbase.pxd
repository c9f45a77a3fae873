# The base every compiled loop builds on (_cbase.pyx): the clock, an HTTP status's kind, a socket's
# pending error, and `CBase`, the loop's own epoll set as one reader of the running event loop, the
# deadline tick, the crash and the stop. _cloop.pyx's CLoop and _ch2conn.pyx's H2Conns subclass it.

from libc.stdint cimport uint32_t, uint64_t
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from ._csys cimport addr_set, epoll_event, getsockopt, sockaddr_storage, socklen_t, SOL_SOCKET, SO_ERROR
from ._ctally cimport CTally
from ._ctrace cimport tracer_t

cdef enum:
    MAXEVENTS = 128  # per call of the loop: ~100 us of kernel each, so the loop lags ~13 ms at most

cdef enum:
    K_OK = 0, K_HTTP_4XX = 1, K_HTTP_5XX = 2  # outcomes.OK, HTTP_4XX, HTTP_5XX (_cbase.pyx checks them)


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)  # time.monotonic()'s clock
    return ts.tv_sec + ts.tv_nsec * 1e-9

cdef inline int kind_of_status(int status) noexcept nogil:
    return K_HTTP_5XX if status >= 500 else (K_HTTP_4XX if status >= 400 else K_OK)

cdef inline int so_error(int fd) noexcept nogil:  # a connect's result once its socket is writable: 0 or errno
    cdef int err = 0
    cdef socklen_t n = sizeof(err)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n)
    return err

cdef inline void set_addr(sockaddr_storage *sa, int family, str host, int port, int scope) except *:
    if addr_set(sa, family, host.encode(), port, scope) != 1:
        raise ValueError(f"not a numeric address: {host!r}")


cdef class CBase:
    cdef int n, epfd, family, counted_inflight  # n: the clients (or connections) it runs
    cdef CTally tally  # what is recorded of each request
    cdef epoll_event *events
    cdef sockaddr_storage addr
    cdef socklen_t addrlen
    cdef double timeout
    cdef bint stopped
    cdef object engine, rec, loop, tick_handle
    cdef tracer_t tr  # --trace (docs/tracing.md, `_ctrace.h`): the draw, the header, the rows; freed here

    cdef int _watch_fd(self, int fd, int registered, uint32_t events, uint64_t data) except -1
    cdef void _trace_on(self, object tracer) except *
    # what each loop adds: a client's first request, an epoll event, the deadlines, the stop
    cdef void _first(self, int i) except *
    cdef void _event(self, uint64_t data, uint32_t events) except *
    cdef void _deadlines(self, double t) except *
    cdef void _unsent(self) except *
    cdef void _close_all(self) except *

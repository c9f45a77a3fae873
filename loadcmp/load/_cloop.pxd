# The compiled closed loop's class (_cloop.pyx): its state and its C methods; _ctls.pyx's TLSLoop
# subclasses it (its cdef methods are virtual: plain http runs no TLS branch).

from ._csys cimport *
from ._ctally cimport CRequests, CTally

cdef enum:
    IDLE, CONNECTING, HANDSHAKING, WAITING, DRAINING, BACKOFF  # conn.py's phases (and TLS's), a pause before a retry
    BUFSIZE = 262144


cdef class CLoop:
    cdef Client *clients
    cdef int n, epfd, nretry, counted_inflight
    cdef int *retry  # clients pausing before their next connect, and until when
    cdef double *retry_at
    cdef CTally tally  # what is recorded of each request
    cdef char *buf
    cdef epoll_event *events
    cdef sockaddr_storage addr
    cdef socklen_t addrlen
    cdef int family
    cdef CRequests reqs  # what each request sends and is recorded as, and their sequence
    cdef double timeout
    cdef bint is_head, stopped, spread, keepalive
    cdef object engine, rec, loop, tick_handle, retry_handle

    cdef bint _begin(self, Client *c, double t) except -1
    cdef void _start(self, Client *c) except *
    cdef void _again(self, Client *c, double t) except *
    cdef bint _bind(self, Client *c) except *
    cdef void _watch(self, Client *c, uint32_t events) except *
    cdef bint _send(self, Client *c, bint early) except *
    cdef void _writable(self, Client *c) except *
    cdef void _readable(self, Client *c) except *
    cdef void _handshake(self, Client *c) except *
    cdef void _close(self, Client *c) except *
    cdef void _failed(self, Client *c, int err, double later) except *
    cdef void _end(self, Client *c, int kind, double t, int status, double t_done=*) except *
    cdef void _record(self, Client *c, int kind, double t, int status, double t_done) except *
    cdef void _next(self, Client *c, double later) except *


# The compiled closed loop's class (_cloop.pyx): its state and its C methods, on _cbase.pxd's CBase;
# _ctls.pyx's TLSLoop subclasses it (its cdef methods are virtual: plain http runs no TLS branch).

from ..core._cbase cimport CBase
from ..core._csys cimport *
from ..core._ctally cimport CRequests
from ..core._ctrace cimport *

cdef enum:
    IDLE, CONNECTING, HANDSHAKING, WAITING, DRAINING, BACKOFF  # conn.py's phases (and TLS's), a pause before a retry
    BUFSIZE = 262144

cdef enum:
    WARM = 2  # Client.counted of a warm-up request that counts if it ends in the window (1: counted, 0: not)

cdef enum:
    THINKING = 6  # --think: idle between an answer and the next request (`load.pacing`), its fd kept or closed
    PAUSED = -1  # Client.registered of a paced reader's fd, in the epoll set for no event until its next read

cdef enum:
    READ_ON, ANSWERED, PARTIAL  # what `_feed` made of a read: read on, the client moved on, the answer goes on


cdef class CLoop(CBase):
    cdef Client *clients
    cdef int nretry
    cdef int *retry  # clients pausing before their next connect, and until when
    cdef double *retry_at
    cdef char *buf
    cdef CRequests reqs  # what each request sends and is recorded as, and their sequence
    cdef bint is_head, spread, keepalive
    cdef bint carry  # warm-up requests count where they end in the window (`Recorder.begin`): not under -n
    cdef int64_t warm_n  # warm-up requests begun, less those ended in the warm-up, not handed over yet
    cdef char *answered  # by client: its user had an answer in the window (`Recorder.users_seen`)
    cdef int n_answered
    cdef object retry_handle
    # --trace (docs/tracing.md): the requests with the header (CBase's `tr`, the templates' bytes kept alive in
    # `traced`), and the connections opened (a row's conn)
    cdef CRequests traced
    cdef int32_t nconn
    # the client behaviours (`load.pacing`): set by `_cpaced.PacedLoop` only; 0 here, so no branch of theirs runs
    cdef double think_s
    cdef int send_chunk, read_chunk, rcvbuf

    cdef bint _begin(self, Client *c, double t) except -1
    cdef void _start(self, Client *c) except *
    cdef void _again(self, Client *c, double t) except *
    cdef bint _bind(self, Client *c) except *
    cdef void _watch(self, Client *c, uint32_t events) except *
    cdef bint _send(self, Client *c, bint early) except *
    cdef void _writable(self, Client *c) except *
    cdef void _readable(self, Client *c) except *
    cdef int _feed(self, Client *c, Py_ssize_t got) except -1
    cdef void _cut(self, Client *c, bint eof) except *
    cdef void _handshake(self, Client *c) except *
    cdef void _close(self, Client *c) except *
    cdef void _failed(self, Client *c, int err, double later) except *
    cdef void _end(self, Client *c, int kind, double t, int status, double t_done=*) except *
    cdef void _record(self, Client *c, int kind, double t, int status, double t_done) except *
    cdef void _next(self, Client *c, double later) except *
    cdef void _hand_warm(self) except *
    cdef void _trace_row(self, Client *c, int kind, double t, int status, const double *phases) except *
    cdef void _paced_socket(self, Client *c) except *
    cdef bint _think(self, Client *c, bint keep) except *
    cdef void _idle_event(self, Client *c) except *
    cdef bint _trickle(self, Client *c, bint early) except *
    cdef void _paced_read(self, Client *c) except *


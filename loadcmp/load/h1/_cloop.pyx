# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The fast engine's closed loop over http in C: what `rawclient.RawClient` (a new
connection per request) and the keep-alive callback path of `engine.py` do, minus Python per request.

The kernel's cost per connection is the same in every client, so the Python a request costs on
top is what holds a client below ab and wrk once the client's core is the limit
(docs/benchmark.md measures it). `CLoop` builds on `_cbase.CBase` (the loop's own epoll set,
one reader of the running loop; the tick; the stop): each epoll event connects, sends, reads,
parses (`_chttp.h`), sends again on a kept connection, and closes in C. What the recorder keeps
of each request is counted in C as well (`_ctally.pyx`) and handed over when a second ends and
when the driver asks: no Python runs per request. The class's state is declared in `_cloop.pxd`.
"""

from libc.errno cimport errno, EAGAIN, EINPROGRESS, EINTR, ENOBUFS, ENOTCONN
from libc.math cimport NAN, isnan
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport strerror
from posix.unistd cimport close

from ..core._cbase cimport CBase, K_HTTP_5XX, kind_of_status, now, set_addr, so_error

from ..driver import BACKOFF_S
from ..record.outcomes import CONNECT_REFUSED, CONNECT_TIMEOUT, PROTOCOL_ERROR, RESET, TIMEOUT, kind_of_error

cdef int REFUSED_ = CONNECT_REFUSED, CTIMEOUT_ = CONNECT_TIMEOUT, RESET_ = RESET, TIMEOUT_ = TIMEOUT
cdef int PROTO_ = PROTOCOL_ERROR
cdef double RETRY_S = 0.001  # a refused connect is tried again this much later, not at once
cdef int ONE = 1

include "_cbuilt.pxi"


cdef class CLoop(CBase):
    """Every client of one engine's closed loop (over http, with or without keep-alive)."""

    def __init__(self, engine, int clients, loop):
        CBase.__init__(self, engine, clients, loop)
        self.reqs = CRequests(engine.request_list, engine.spec.pages)
        self.is_head = engine.is_head
        self.keepalive = engine.target.keepalive
        self.spread = engine.spec.spread_sources
        self.carry = engine.carries_warmup and engine.rec.requests is None
        self.clients = <Client *>calloc(clients, sizeof(Client))
        self.retry = <int *>malloc(clients * sizeof(int))
        self.retry_at = <double *>malloc(clients * sizeof(double))
        self.buf = <char *>malloc(BUFSIZE)
        self.answered = <char *>calloc(clients, sizeof(char))
        if not (self.clients and self.retry and self.retry_at and self.buf and self.answered):
            raise MemoryError()
        for i in range(clients):
            self.clients[i].fd = -1
        self._trace_setup(engine.tracer, clients)

    def __dealloc__(self):
        for i in range(self.n if self.clients else 0):
            if self.clients[i].fd >= 0:
                close(self.clients[i].fd)
            resp_free(&self.clients[i].resp)
        free(self.clients); free(self.retry); free(self.retry_at); free(self.buf); free(self.answered)

    # --- what CBase asks of a loop: a client's start, an epoll event, the deadlines, the stop --
    cdef void _first(self, int i) except *:
        self._start(&self.clients[i])

    cdef void _event(self, uint64_t d, uint32_t events) except *:
        cdef Client *c = &self.clients[<uint32_t>d]
        if c.fd < 0 or c.gen != <uint32_t>(d >> 32):
            return
        if c.phase == CONNECTING:
            self._writable(c)
        elif c.phase == WAITING or c.phase == DRAINING:
            self._readable(c)
        elif c.phase == HANDSHAKING:
            self._handshake(c)
        elif c.phase == THINKING:
            self._idle_event(c)

    cdef void _deadlines(self, double t) except *:
        """connect_timeout, timeout, a server that never closes."""
        cdef int i
        cdef Client *c
        for i in range(self.n):
            c = &self.clients[i]
            if CONNECTING <= c.phase <= DRAINING and c.deadline < t:
                if c.phase == CONNECTING:
                    c.t_sent = c.t_intended
                    self._end(c, CTIMEOUT_, t, 0)
                elif c.phase <= WAITING:  # a handshake that stalls is timed out as a request
                    self._end(c, TIMEOUT_, t, 0)
                else:
                    self._next(c, 0.0)

    cdef void _unsent(self) except *:
        """A request still connecting was never sent: the recorder takes it back."""
        cdef int i
        cdef Client *c
        for i in range(self.n):
            c = &self.clients[i]
            if CONNECTING <= c.phase <= HANDSHAKING and c.fd >= 0:
                self.rec.unsent(c.t_intended, <bint>c.counted)
                c.counted = 0

    cdef void _close_all(self) except *:
        cdef int i
        if self.retry_handle is not None:
            self.retry_handle.cancel()
            self.retry_handle = None
        for i in range(self.n):
            if self.clients[i].counted and self.clients[i].traced:  # in flight at the close: unfinished
                self._trace_row(&self.clients[i], -1, now(), 0, NULL)
            if self.clients[i].fd >= 0:
                self._close(&self.clients[i])
            self.clients[i].phase = IDLE

    # --- the Python side: retries, the hand-over ------------------------------------------

    def _retry(self):
        """Start the clients whose pause after a refused connect is over."""
        self.retry_handle = None
        try:
            t, waiting, self.nretry = now(), [(self.retry[k], self.retry_at[k]) for k in range(self.nretry)], 0
            for i, at in waiting:  # those not due yet go back on the list
                if at > t:
                    self.retry[self.nretry], self.retry_at[self.nretry] = i, at
                    self.nretry += 1
                else:
                    self.clients[<int>i].phase = IDLE
                    self._start(&self.clients[<int>i])
            if self.nretry and self.retry_handle is None and not self.stopped:
                self.retry_handle = self.loop.call_later(RETRY_S, self._retry)
        except BaseException as e:
            self._crash(e)

    def flush(self):
        """Hand what was counted so far to the recorder (the driver's `settle`)."""
        self.tally.flush()
        self._hand_warm()
        if self.carry:
            self.rec.users_seen(id(self), self.n, self.n_answered)

    cdef void _hand_warm(self) except *:
        """The warm-up requests begun, less those ended in the warm-up, since last handed (`Recorder.add_warm`)."""
        cdef int64_t n = self.warm_n
        if n:
            self.warm_n = 0
            self.rec.add_warm(n)

    # --- one request, in C ----------------------------------------------------------------
    cdef bint _begin(self, Client *c, double t) except -1:
        """Count the request's start (its -n ticket) and clear its marks; False: no request
        may start at `t` (the driver's cleanup after the close runs with no callback between)."""
        cdef int got
        if self.stopped:
            return False
        got = self.tally.start(t)
        if got < 0:
            return False
        if got == 0 and self.carry:  # a warm-up request: counted if it ends in the window (`_record`)
            c.counted = WARM
            self.warm_n += 1
        else:
            c.counted = got
            self.counted_inflight += got
        c.req = self.reqs.next()  # the next request of the sequence (warm-up's too)
        c.out, c.out_n = self.reqs.data[c.req], self.reqs.size[c.req]
        c.traced = trace_begin(&self.tr, c - self.clients, c.req, c.counted, &c.seq, &c.out, &c.out_n)
        c.t_intended = c.t_sent = c.t_connect = t
        c.deadline = t + self.timeout
        c.t_up = c.t_hs = c.t_written = c.t_first = NAN
        c.nbytes = 0
        resp_reset(&c.resp, self.is_head or self.reqs.head[c.req])
        return True

    cdef void _start(self, Client *c) except *:
        """A request on a new connection."""
        if not self._begin(c, now()):
            return
        c.registered = 0
        c.fd = socket(self.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)
        if c.fd < 0:
            self._failed(c, errno, RETRY_S)
            return
        self.nconn += 1
        c.conn_no = self.nconn
        if self.spread and not self._bind(c):
            return
        if self.keepalive:  # no Nagle delay for the requests that follow on it, as uvloop and wrk do
            setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &ONE, sizeof(int))
        if self.send_chunk or self.rcvbuf:
            self._paced_socket(c)
        c.t_connect = now()
        if connect(c.fd, <sockaddr *>&self.addr, self.addrlen) != 0 and errno != EINPROGRESS:
            self._failed(c, errno, RETRY_S)
        elif not self._send(c, True):
            c.phase = CONNECTING  # on loopback the handshake is mostly done by now; else wait for it
            self._watch(c, EPOLLOUT)

    cdef void _again(self, Client *c, double t) except *:
        """Keep-alive: the next request on the open connection (no connect, no epoll_ctl), as
        wrk sends it; when none may start, the connection is closed."""
        if not self._begin(c, t):
            self._next(c, 0.0)  # closes it; its _start declines too
            return
        c.t_connect = NAN  # a reused connection: no connect phase
        self._send(c, False)

    cdef bint _bind(self, Client *c) except *:
        cdef sockaddr_storage local
        host, port = self.engine.local_addr()
        set_addr(&local, AF_INET, host, port, 0)
        if bind(c.fd, <sockaddr *>&local, sizeof(sockaddr_in)) != 0:
            self._failed(c, errno, RETRY_S)
            return False
        return True

    cdef void _watch(self, Client *c, uint32_t events) except *:
        if c.registered != <int>events:  # else keep-alive: already watched for its answer
            c.registered = self._watch_fd(c.fd, c.registered, events,
                                          (<uint64_t>c.gen << 32) | <uint64_t>(c - self.clients))

    cdef bint _send(self, Client *c, bint early) except *:
        """Write the request; False (early only) while the connection is not up yet."""
        cdef Py_ssize_t want = c.out_n
        if self.send_chunk:
            return self._trickle(c, early)
        c.t_sent = now()
        cdef ssize_t sent = send(c.fd, c.out, want, MSG_NOSIGNAL)
        if sent == want:
            c.t_written = now()
            if isnan(c.t_up):
                c.t_up = c.t_sent
            c.phase = WAITING
            self._watch(c, EPOLLIN)
            return True
        if sent >= 0:  # only a body larger than the socket buffer does this
            self._failed(c, ENOBUFS, RETRY_S if early else 0.0)
        elif early and (errno == EAGAIN or errno == ENOTCONN):
            return False
        else:  # early: still inside _start, so never straight back into it
            self._failed(c, errno, RETRY_S if early else 0.0)
        return True

    cdef void _writable(self, Client *c) except *:
        cdef int err = so_error(c.fd)
        if err:
            self._failed(c, err, 0.0)
            return
        c.t_up = now()
        if not self._send(c, False):
            self._failed(c, EAGAIN, 0.0)

    cdef void _handshake(self, Client *c) except *:
        """A TLS handshake's next step (TLSLoop); plain http has none."""

    cdef void _readable(self, Client *c) except *:
        cdef ssize_t got
        cdef int r
        if self.read_chunk and c.phase == WAITING:
            self._paced_read(c)
            return
        while True:
            got = recv(c.fd, self.buf, BUFSIZE, 0)
            if got > 0:
                r = self._feed(c, got)
                if r == ANSWERED or (r == PARTIAL and got < BUFSIZE):
                    return  # the rest has not come yet (the socket stays readable if it has)
            elif got == 0:
                self._cut(c, True)
                return
            elif errno == EAGAIN:
                return
            elif errno != EINTR:
                self._cut(c, False)
                return

    cdef int _feed(self, Client *c, Py_ssize_t got) except -1:
        """The `got` bytes read into `buf`, given to the client's response; what became of them."""
        cdef double t
        cdef int r
        if c.phase == DRAINING:
            return READ_ON
        t = now()
        if isnan(c.t_first):
            c.t_first = t
        c.nbytes += got
        r = resp_feed(&c.resp, self.buf, got)
        if r == R_BAD:
            self._end(c, PROTO_, t, 0)
            return ANSWERED
        if r != R_COMPLETE:
            return PARTIAL
        self._record(c, kind_of_status(c.resp.status), t, c.resp.status, t)
        if self.think_s > 0.0 and self._think(c, c.resp.keepalive and self.keepalive):
            return ANSWERED
        if c.resp.keepalive and self.keepalive:
            self._again(c, t)
            return ANSWERED
        if c.resp.nobody or c.resp.keepalive:
            self._next(c, 0.0)
            return ANSWERED
        c.phase = DRAINING  # let the server close first, as webbench reads to EOF (and TLS's close_notify)
        c.deadline = t + 1.0
        return READ_ON  # its close is usually there already: one wake-up less

    cdef void _cut(self, Client *c, bint eof) except *:
        """The server closed the connection (`eof`) or it failed, while the client read."""
        cdef double t
        if c.phase == DRAINING:
            self._next(c, 0.0)  # answered in full, then closed (or reset): nothing more to record
        elif eof and resp_eof(&c.resp) == R_COMPLETE:  # a read-to-close body ended
            t = now()
            self._end(c, kind_of_status(c.resp.status), t, c.resp.status, t)
        else:
            self._end(c, RESET_, now(), 0)

    # --- endings --------------------------------------------------------------------------
    cdef void _failed(self, Client *c, int err, double later) except *:
        """A socket error, named as outcomes.kind_of_error names it."""
        kind, name = kind_of_error(OSError(err, strerror(err).decode()))
        if c.counted and name is not None and (c.counted != WARM or now() >= self.tally.t0):
            self.rec.client_error(name)
        if name is not None:
            later = max(later, BACKOFF_S)
        elif kind == REFUSED_:
            later = max(later, RETRY_S)
        c.t_sent = c.t_intended
        self._record(c, kind, now(), 0, NAN)
        self._next(c, later)

    cdef void _end(self, Client *c, int kind, double t, int status, double t_done=NAN) except *:
        self._record(c, kind, t, status, t_done)
        self._next(c, RETRY_S if kind == REFUSED_ else 0.0)

    cdef void _record(self, Client *c, int kind, double t, int status, double t_done) except *:
        """A counted request ended at `t` (`t_done`: its response complete)."""
        cdef double phases[5]
        if not c.counted:
            return
        if c.counted == WARM:  # begun in the warm-up: nothing if it ended there or after the close, else carried
            c.counted = 0
            if t < self.tally.t0:
                self.warm_n -= 1
                return
            if t >= self.tally.t_end:
                self._trace_row(c, -1, t, 0, NULL)
                return
            self._hand_warm()
            self.rec.carry()
        else:
            c.counted = 0
            self.counted_inflight -= 1
        phases[0] = c.t_up - c.t_connect  # NaN propagates: a phase that did not happen
        phases[1] = c.t_hs - c.t_up if not isnan(c.t_hs) else (NAN if isnan(c.t_connect) else 0.0)  # http: 0
        phases[2] = c.t_written - c.t_sent
        phases[3] = c.t_first - c.t_written
        phases[4] = t_done - c.t_first
        if kind <= K_HTTP_5XX and self.tally.t0 <= t < self.tally.t_end and not self.answered[c - self.clients]:
            self.answered[c - self.clients] = 1  # this client's user had an answer in the window
            self.n_answered += 1
        if c.traced:
            self._trace_row(c, kind, t, status, phases)
        self.tally.end(kind, status, c.t_intended, c.t_sent, t, c.nbytes, phases, self.reqs.page_of[c.req],
                       self.reqs.expect[c.req])
        if self.counted_inflight == 0 and self.tally.spent():  # -n: the load ends once the last is recorded
            self.tally.flush()

    cdef void _next(self, Client *c, double later) except *:
        """Close, then the client's next request: now, or after a pause."""
        if c.fd >= 0:
            self._close(c)
            c.gen += 1
        c.phase = IDLE
        if self.stopped:
            return
        if later <= 0.0:
            self._start(c)
            return
        c.phase = BACKOFF
        self.retry[self.nretry] = <int>(c - self.clients)
        self.retry_at[self.nretry] = now() + later
        self.nretry += 1
        if self.retry_handle is None:
            self.retry_handle = self.loop.call_later(later, self._retry)

    cdef void _close(self, Client *c) except *:
        close(c.fd)  # leaves the epoll set by itself
        c.fd = -1

    # --- --trace (docs/tracing.md): the header written in C (`_ctrace.h`), a row a traced request -------------
    def _trace_setup(self, tracer, int clients):
        """Each request's template with the header (`trace.ids.Ids.template`), room for a copy of one per client."""
        if tracer is None:
            return
        made = [tracer.ids.template(raw) for raw in self.reqs.requests]
        self.traced = CRequests([m[0] for m in made], self.engine.spec.pages)
        self.tr.tmpl, self.tr.tmpl_n, self.tr.size = self.traced.data, <int64_t *>self.traced.size, max(len(m[0]) for m in made)
        self._trace_on(tracer)
        self.tr.at, self.tr.buf = <int64_t *>malloc(len(made) * sizeof(int64_t)), <char *>malloc(clients * self.tr.size)
        if not (self.tr.at and self.tr.buf):
            raise MemoryError()
        for i, m in enumerate(made):
            self.tr.at[i] = m[1]

    cdef void _trace_row(self, Client *c, int kind, double t, int status, const double *phases) except *:
        """A traced request's row: ended as `kind` at `t`, or (kind -1, or ended after the close) unfinished."""
        c.traced = 0
        if trace_row(&self.tr, c.seq, kind, c.t_intended, c.t_sent if isnan(c.t_connect) else c.t_connect, t,
                     self.tally.t_end, status, phases, c.nbytes, c.conn_no) < 0:
            raise MemoryError()

    # --- the client behaviours' hooks (`load.pacing`): only `_cpaced.PacedLoop` has them, and sets the fields that
    # call them (think_s, send_chunk, read_chunk, rcvbuf); here they are 0 and these are never called
    cdef void _paced_socket(self, Client *c) except *: pass
    cdef bint _think(self, Client *c, bint keep) except *: return False
    cdef void _idle_event(self, Client *c) except *: pass
    cdef bint _trickle(self, Client *c, bint early) except *: return True
    cdef void _paced_read(self, Client *c) except *: pass

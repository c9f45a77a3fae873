# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled h2 engine's connections' set-up and tear-down (`H2Link`, on which `_ch2conn.H2Conns` adds the
streams): open one (TCP, then TLS with ALPN "h2" and `--tls-resume`'s offers, or h2c by prior knowledge), watch
its socket, and close it or open it again after a failure or a pause. What a connection does once it is up is
`_ready`'s, and what ends with it `_end_all`'s: both `H2Conns`'.

With `--think` (`load.pacing`) each of a connection's -m slots idles between its stream's end and its next request
(`_think`, a timer of the running loop: a thinking client sends a request a second or so); the connection stays
open while its slots idle (`_idle`), and one the server closed meanwhile is opened again by the first to wake.
`think_s` is 0 in a load without it, and none of this runs."""

from libc.errno cimport errno, EINPROGRESS
from libc.math cimport floor
from libc.string cimport strerror
from posix.unistd cimport close

from ..core._cbase cimport CBase, now, so_error

from ...errors import WrongProtocol
from ..driver import BACKOFF_S
from ..record.outcomes import TLS_ERROR, kind_of_error

include "_cbuilt.pxi"

cdef int TLS_ERROR_ = TLS_ERROR
cdef double RETRY_S = 0.001
cdef int ONE = 1


cdef class H2Link(CBase):
    """The connections of one h2 load, opened and closed in C; `_ch2conn.H2Conns` runs their streams."""

    def _reopen_later(self, int i):
        """A connection that failed is opened again after its pause."""
        try:
            if not self.stopped and self.conns[i].phase == IDLE and self.conns[i].fd < 0:
                self._open(&self.conns[i])
        except BaseException as e:
            self.engine.crashed(e)

    cdef void _open(self, h2c_t *c) except *:
        """A new connection: in the closed loop, its first stream counted from now (so its latency holds the connect);
        in an open schedule, with no stream of its own; with every slot thinking, none until one wakes."""
        cdef double t = now()
        cdef h2s_t *s
        c.phase = IDLE
        if self.think_s > 0.0 and not self._first_free(c):
            return
        s = &c.slots[c.first]
        if self.rate:  # none of its own: the arrivals placed on it while it was down wait in its slots
            if self.stopped:
                return
        elif self._begin(s, t) < 0:
            return
        else:
            c.inflight = 1
            s.t_connect = t
        c.nended, c.goaway, c.last_id, c.served, c.out_len, c.fresh = 0, 0, 0, 0, 0, 0
        c.goaway_code = 0
        c.first_read, c.registered = 1, 0
        self.stats.connections += 1
        self.nconn += 1
        c.no = s.conn = self.nconn  # its first stream's connection, whether or not it opens
        c.fd = socket(self.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)
        if c.fd < 0:
            self._failed(c, errno)
            return
        setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &ONE, sizeof(int))
        if connect(c.fd, <sockaddr *>&self.addr, self.addrlen) != 0 and errno != EINPROGRESS:
            self._failed(c, errno)
            return
        c.phase = CONNECTING
        c.deadline = t + self.timeout
        self._watch(c, EPOLLOUT)

    cdef void _watch(self, h2c_t *c, uint32_t events) except *:
        if c.registered != <int>events:
            c.registered = self._watch_fd(c.fd, c.registered, events,
                                          (<uint64_t>c.gen << 32) | <uint64_t>(c - self.conns))

    cdef void _connected(self, h2c_t *c) except *:
        cdef int err = so_error(c.fd)
        if err:
            self._failed(c, err)
            return
        c.slots[c.first].t_up = now()
        if not self.tls_on:
            self._ready(c)
            return
        c.ssl = tls_new(&self.tls, NULL, c.fd, <const char *>self.sni if self.sni is not None else NULL,
                        self._offer())
        if c.ssl == NULL:
            raise MemoryError()
        c.phase = HANDSHAKING
        self._shake(c)

    cdef bint _offer(self) except *:
        """Whether a new connection offers the saved session: of those made while one is saved, the share
        --tls-resume says, spread evenly as the h1 TLS loop spreads them (`_ctls.pyx`), so the counts are exact."""
        cdef long long k
        if self.resume <= 0.0 or self.tls.saved == NULL:
            return False
        k = self.offers
        self.offers += 1
        return floor((k + 1) * self.resume) > floor(k * self.resume)

    cdef void _shake(self, h2c_t *c) except *:
        cdef int err = 0, got
        cdef char alpn[64]
        cdef char why[200]
        cdef h2s_t *s = &c.slots[c.first]
        cdef int r = SSL_do_handshake(c.ssl)
        if r == 1:
            s.t_hs = now()
            if not h2_alpn_ok(c.ssl, alpn, sizeof(alpn)):
                got_alpn = alpn.decode(errors="replace") or "no protocol"
                raise WrongProtocol(f"{self.url} negotiated {got_alpn} by ALPN, not h2: the server does not speak "
                                    "HTTP/2 there (loadcmp does not fall back to another protocol)")
            if self._counts(c, s.t_hs) and s.t_hs < self.tally.t_end:
                tls_count(&self.tls, c.ssl)
            self._ready(c)
            return
        got = tls_result(c.ssl, r, &err)
        if got == TLS_WANT_READ or got == TLS_WANT_WRITE:
            self._watch(c, EPOLLIN if got == TLS_WANT_READ else EPOLLOUT)
        elif got == TLS_SYSCALL:
            self._failed(c, err)
        else:
            tls_reason(why, sizeof(why))
            SSL_set_quiet_shutdown(c.ssl, 1)
            if self._counts(c, now()) and now() < self.tally.t_end:
                self.rec.tls_error("eof during handshake" if got == TLS_CLOSED else why.decode(errors="replace"))
            self._end_all(c, TLS_ERROR_, now())
            self._close(c)
            self.loop.call_later(RETRY_S, self._reopen_later, <int>(c - self.conns))

    cdef bint _counts(self, h2c_t *c, double t) noexcept:
        """Whether what befalls connection `c` at `t` (its handshake, its failure) is counted: in the closed loop when
        its first stream is; in an open schedule, whose connections carry no stream of their own, inside the window."""
        if self.rate:
            return self.tally.t0 <= t < self.tally.t_end
        return c.slots[c.first].counted

    cdef void _failed(self, h2c_t *c, int err) except *:
        """A connect that failed: its stream ends as `kind_of_error` says; a new connection after a pause."""
        kind, name = kind_of_error(OSError(err, strerror(err).decode()))
        if self._counts(c, now()) and name is not None:
            self.rec.client_error(name)
        self._end_all(c, kind, now())
        self._close(c)
        self.loop.call_later(BACKOFF_S if name is not None else RETRY_S, self._reopen_later, <int>(c - self.conns))

    cdef void _close(self, h2c_t *c) except *:
        if c.served > self.stats.max_served:
            self.stats.max_served = c.served
        c.served = 0
        if c.sess != NULL:
            nghttp2_session_del(c.sess)
            c.sess = NULL
        if c.ssl != NULL:
            SSL_free(c.ssl)
            c.ssl = NULL
        if c.fd >= 0:
            close(c.fd)
            c.fd = -1
            c.gen += 1
        c.phase, c.out_len, c.registered = IDLE, 0, 0

    cdef void _reopen(self, h2c_t *c) except *:
        self._close(c)
        if not self.stopped:
            self._open(c)

    cdef void _ended_well(self, h2c_t *c) except *:
        """A connection that ends after a good exchange keeps its TLS session resumable (a quiet shutdown: OpenSSL
        marks a session whose connection is freed without one as not to be resumed), as the h1 TLS loop's
        close_notify does; nothing is sent."""
        if c.ssl != NULL and SSL_is_init_finished(c.ssl):
            SSL_set_quiet_shutdown(c.ssl, 1)
            SSL_shutdown(c.ssl)

    # --- --think: a slot idles between its stream's end and its next request ----------------------------------
    cdef void _think(self, h2c_t *c, h2s_t *s) except *:
        """Slot `s`'s stream was answered (a status, or RST_STREAM): it idles for a think (`Pacing.think_delay`), kept
        from `_fill` until `_woke`. A stream that failed otherwise (cut, timed out, unprocessed) goes again at once."""
        cdef double at
        if self.stopped:
            s.state = S_FREE
            return
        at = now() + self.pacing.think_delay(self.think_rng)
        s.state, s.id, s.deadline = S_THINK, -1, at
        c.thinking += 1
        self.loop.call_later(max(0.0, at - now()), self._woke, <int>(c - self.conns), <int>(s - c.slots), at)

    def _woke(self, int i, int k, double at):
        """A think's end: the slot's next request goes out now (its latency runs from now: the think is not in it),
        on its connection if open, else on a new one (the server closed it meanwhile, or a GOAWAY came)."""
        cdef h2c_t *c = &self.conns[i]
        cdef h2s_t *s = &c.slots[k]
        try:
            if self.stopped or s.state != S_THINK or s.deadline != at:
                return
            s.state = S_FREE
            c.thinking -= 1
            if c.phase == OPEN:
                self._pump(c, now())
            elif c.phase == IDLE and c.fd < 0:
                self._open(c)
        except BaseException as e:
            self._crash(e)

    cdef void _idle(self, h2c_t *c) except *:
        """No stream in flight on `c` and some of its slots thinking: it stays open, idle, as a kept-alive connection
        does. After a GOAWAY, or with its session over, it is closed: a slot ready to send opens a new one now, else
        the first to wake does. A slot ready that could not start (the window closed, -n spent): closed."""
        cdef bint gone = c.goaway or not (nghttp2_session_want_read(c.sess) or nghttp2_session_want_write(c.sess))
        cdef bint ready = c.thinking < c.m
        if ready or gone:
            self._ended_well(c)
            if ready and gone:
                self._reopen(c)
            else:
                self._close(c)

    cdef bint _first_free(self, h2c_t *c) noexcept:
        """The first of `c`'s slots ready to send, as `c.first`; False: every one is thinking."""
        for k in range(c.m):
            if c.slots[k].state == S_FREE:
                c.first = k
                return True
        return False

    # what the streams add (_ch2conn.pyx's H2Conns)
    cdef int _begin(self, h2s_t *s, double t) except -2:
        return -1

    cdef void _ready(self, h2c_t *c) except *:
        pass

    cdef void _end_all(self, h2c_t *c, int kind, double t) except *:
        pass

    cdef void _pump(self, h2c_t *c, double t) except *:
        pass

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled closed loop over https: `TLSLoop`, a `CLoop` whose connections speak TLS through
OpenSSL called from C (`_ctls.h`), with or without keep-alive, and no Python per request. It is a
`_cthink.ThinkLoop`, so its clients think when `--think` asks (a kept connection idles between its
requests, else the next one connects and shakes hands again); without a think none of that runs.

It overrides only what TLS changes (the base's C methods are virtual): `_send` runs the handshake
on a new connection before it writes the request with SSL_write; `_readable` reads with SSL_read
(records OpenSSL already holds are read on before waiting for the socket again); `_close` sends
close_notify after a good exchange, as ab does. SSL_ERROR_WANT_READ / WANT_WRITE become the
socket's epoll interest; a handshake step is the HANDSHAKING phase. Plain http runs none of this.

`--tls-resume F`: of the new connections made while a session is saved, the share F offers it,
spread evenly (the k-th offers when floor((k+1)F) > floor(kF)), so that the counts are exact;
0 is a full handshake each time, as ab. Sessions (TLS 1.3: tickets, after the handshake) are kept
by a new-session callback; a TLS 1.3 ticket is offered once, as browsers use them (the latest again
only when no unused one is left), since nginx with several workers answers some tickets offered on
several connections at once with a full handshake. Each counted handshake is counted full or resumed (SSL_session_reused),
with its version, cipher and ALPN, and handed to the recorder with the loop's other counts
(`flush`). A failed handshake, an alert or a TLS error mid-answer ends as tls_error, its reason
counted (`Recorder.tls_error`); a reset or EOF mid-answer is a reset, as over http.
The certificate check (`_ctls.h`) verifies the chain once and then only a byte-identical leaf.
"""

from libc.errno cimport ENOBUFS, EINTR
from libc.math cimport NAN, floor
from libc.stdlib cimport calloc, free

from ..core._cbase cimport now
from ._cloop cimport *
from ._cthink cimport ThinkLoop
from ..core._csys cimport *
from ..tls._cssl cimport *

from ..record.outcomes import TLS_ERROR

cdef int TLS_ERROR_ = TLS_ERROR
cdef double RETRY_S = 0.001

include "_cbuilt.pxi"


cdef void free_all(SSL **pool, int n) noexcept:
    if pool:
        for i in range(n):
            if pool[i]:
                SSL_free(pool[i])
        free(pool)


cdef class TLSLoop(ThinkLoop):
    """Every client of one engine's closed loop over https."""

    cdef tls_t tls
    cdef SSL **ssl  # each client's connection's TLS, NULL while it has none
    cdef SSL **spare  # the TLS of each client's last connection that ended well, to use again
    cdef bytes sni  # the server's name (None for an IP address: no SNI)
    cdef double resume
    cdef long long offers  # new connections made while a session was saved

    def __init__(self, engine, int clients, loop):
        ThinkLoop.__init__(self, engine, clients, loop)  # the think, when one is asked
        target = engine.target
        self.ssl = <SSL **>calloc(clients, sizeof(SSL *))
        self.spare = <SSL **>calloc(clients, sizeof(SSL *))
        if not (self.ssl and self.spare):
            raise MemoryError()
        self.resume = target.tls_resume
        self.sni = tls_start(&self.tls, target, self.resume > 0, False)

    def __dealloc__(self):
        free_all(self.ssl, self.n)
        free_all(self.spare, self.n)
        tls_close(&self.tls)

    def flush(self):
        """Hand the counts to the recorder: the requests' (CLoop's), then the handshakes'."""
        CLoop.flush(self)
        tls_hand_over(&self.tls, self.rec)

    # --- the steps of one request over TLS ---------------------------------------------------
    cdef bint _send(self, Client *c, bint early) except *:
        """The handshake first on a new connection (False, early only: the socket is not up yet), then
        the request."""
        cdef int i = c - self.clients
        cdef SSL *s = self.ssl[i]
        cdef bint offer = False
        cdef long long k
        if s == NULL:
            if self.resume > 0.0 and self.tls.saved != NULL:
                k = self.offers
                self.offers += 1
                offer = floor((k + 1) * self.resume) > floor(k * self.resume)
            s = tls_new(&self.tls, self.spare[i], c.fd, <const char *>self.sni if self.sni is not None else NULL,
                        offer)
            self.spare[i] = NULL
            if s == NULL:
                raise MemoryError()
            self.ssl[i] = s
            c.t_up = now()  # the TCP handshake is done by now on loopback; else _writable sets it again
        if not SSL_is_init_finished(s):
            return self._shake(c, s, early)
        return self._write(c, s)

    cdef void _handshake(self, Client *c) except *:
        self._shake(c, self.ssl[c - self.clients], False)

    cdef bint _shake(self, Client *c, SSL *s, bint early) except *:
        cdef int err = 0, got
        cdef int r = SSL_do_handshake(s)
        if r == 1:
            c.t_hs = now()
            if c.counted and self.tally.t0 <= c.t_hs < self.tally.t_end:  # not a warm-up's
                tls_count(&self.tls, s)
            return self._write(c, s)
        got = tls_result(s, r, &err)
        if got == TLS_WANT_READ or (got == TLS_WANT_WRITE and not early):
            c.phase = HANDSHAKING
            self._watch(c, EPOLLIN if got == TLS_WANT_READ else EPOLLOUT)
        elif got == TLS_WANT_WRITE:
            return False  # the ClientHello waits for the connect (CONNECTING, then _writable)
        elif got == TLS_SYSCALL:
            self._failed(c, err, RETRY_S if early else 0.0)
        else:
            self._tls_failed(c, s, got == TLS_CLOSED, RETRY_S if early else 0.0)
        return True

    cdef bint _write(self, Client *c, SSL *s) except *:
        cdef int err = 0, got
        cdef int want = <int>c.out_n
        c.t_sent = now()
        cdef int n = SSL_write(s, c.out, want)
        if n == want:
            c.t_written = now()
            c.phase = WAITING
            self._watch(c, EPOLLIN)
            return True
        got = tls_result(s, n, &err)
        if got == TLS_SYSCALL:
            self._failed(c, err, 0.0)
        elif got == TLS_FAILED:
            self._tls_failed(c, s, False, 0.0)
        else:  # a request larger than the socket buffer, or the server gone: as over http
            self._failed(c, ENOBUFS, 0.0)
        return True

    cdef void _readable(self, Client *c) except *:
        """As CLoop's, reading with SSL_read: records OpenSSL holds already are read before the socket again."""
        cdef SSL *s = self.ssl[c - self.clients]
        cdef int got, r, err = 0
        while True:
            got = SSL_read(s, self.buf, BUFSIZE)
            if got > 0:
                r = self._feed(c, got)
                if r == ANSWERED or (r == PARTIAL and not SSL_has_pending(s)):
                    return  # the rest has not come yet (the socket stays readable if it has)
                continue
            got = tls_result(s, got, &err)
            if got == TLS_WANT_READ or got == TLS_WANT_WRITE:
                return
            if got == TLS_SYSCALL and err == EINTR:
                continue
            if got == TLS_FAILED and c.phase != DRAINING:
                self._tls_failed(c, s, False, 0.0)
            else:
                self._cut(c, got == TLS_CLOSED)
            return

    cdef void _tls_failed(self, Client *c, SSL *s, bint eof, double later) except *:
        """A handshake that failed, an alert, a record that does not decrypt: tls_error, and why."""
        cdef char why[200]
        cdef double t = now()
        if eof:
            ERR_clear_error()
        tls_reason(why, sizeof(why))
        SSL_set_quiet_shutdown(s, 1)  # no close_notify after a fatal error
        if c.counted and self.tally.t0 <= t < self.tally.t_end:
            self.rec.tls_error("eof during handshake" if eof else why.decode(errors="replace"))
        c.t_sent = c.t_intended
        self._record(c, TLS_ERROR_, t, 0, NAN)
        self._next(c, later)

    cdef void _close(self, Client *c) except *:
        cdef int i = c - self.clients
        cdef SSL *s = self.ssl[i]
        if s != NULL:
            self.ssl[i] = NULL
            if SSL_is_init_finished(s) and not SSL_get_quiet_shutdown(s):
                SSL_shutdown(s)  # close_notify, one write; the answer is not waited for
                ERR_clear_error()
                self.spare[i] = s  # ended well: the next connection clears it and uses it again
            else:
                SSL_free(s)
        CLoop._close(self, c)

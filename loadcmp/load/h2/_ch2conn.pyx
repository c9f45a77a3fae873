# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled h2 engine's streams (`H2Conns`, which `_ch2.H2Loop` drives from the event loop, on `_ch2link.H2Link`,
which opens and closes the connections): keep a connection's streams full, hand what it reads to nghttp2 and write
what nghttp2 has to send, record each ended stream in C (`_ctally`), and open a new connection when one ends (a
GOAWAY, a close). Every stream started ends in exactly one outcome or stays
unfinished: `ok + failures + unfinished == started` holds for streams.
"""

from libc.errno cimport errno, EAGAIN, EINTR
from libc.math cimport NAN, isnan
from libc.stdint cimport uint8_t
from libc.string cimport memcpy, memmove

from ..core._cbase cimport K_HTTP_5XX, kind_of_status, now

from ..record.outcomes import GOAWAY, PROTOCOL_ERROR, RESET, SENDS, STREAM_RESET

include "_cbuilt.pxi"

cdef extern from "_ch2.h" nogil:
    void h2_count_reset(h2stats_t *, uint32_t)
    int h2_preface_ok(const unsigned char *, size_t)
    int h2_spoke(const h2stats_t *)

cdef int RESET_ = RESET, PROTO_ = PROTOCOL_ERROR
cdef int SRESET_ = STREAM_RESET, GOAWAY_ = GOAWAY, SENDS_ = SENDS


cdef void first_contact(url, const unsigned char *buf, ssize_t got, bint spoke) except *:
    """An h2c connection's first read: bytes that cannot start a SETTINGS frame, or a close before any while no
    connection has had one, mean the server does not speak HTTP/2 there (WrongProtocol), never a load of resets.
    A close before SETTINGS once one came is a server shedding connections: a reset."""
    if (got > 0 and not h2_preface_ok(buf, got)) or (got == 0 and not spoke):
        from .h2py import not_h2c
        raise not_h2c(url, buf[:got if got < 64 else 64])


cdef class H2Conns(H2Link):
    """The streams of one h2 load, in C; `_ch2.H2Loop` adds the Python side."""

    cdef int _begin(self, h2s_t *s, double t) except -2:
        """Count a stream's start; -1: none may start now (the window closed, -n spent)."""
        cdef int got
        if self.stopped:
            return -1
        got = self.tally.start(t)
        if got < 0:
            return -1
        self.counted_inflight += got
        s.state, s.counted, s.end, s.status, s.code, s.id, s.nbytes = S_ACTIVE, got, 0, 0, 0, 0, 0
        s.t_intended = s.t_sent = s.t_counted = t
        s.t_connect = s.t_up = s.t_hs = s.t_written = s.t_first = NAN
        self.stats.streams += got  # the window's streams, as the outcomes count them (not the warm-up's)
        # a request a graceful GOAWAY left unprocessed goes first, as it was, from its first intended start (its
        # latency holds the wait, its deadline runs from there); else the sequence's next (the warm-up's too)
        if got and h2_take_owed(&self.owed, s):
            self.stats.retried += 1
        else:
            s.req, s.sends = self.reqs.next(), 1
        s.traced = trace_draw(&self.tr, got, &s.seq)
        s.deadline = s.t_intended + self.timeout
        return got

    cdef void _ready(self, h2c_t *c) except *:
        """The connection is up (and its TLS): the session, its SETTINGS, the first stream, then the rest (an open
        schedule's: the arrivals that waited for it)."""
        cdef h2s_t *s = &c.slots[c.first]
        if h2_session(c, self.cb) != 0:
            raise MemoryError()
        c.phase = OPEN
        if self.rate:
            self._pump(c, now())
            return
        s.t_sent = now()
        self._submit(c, s)
        c.fresh = 1
        self._pump(c, s.t_sent)

    cdef void _submit(self, h2c_t *c, h2s_t *s) except *:
        """Slot `s`'s request to nghttp2: its header fields and body, by its index."""
        s.conn = c.no
        if s.traced:
            self._submit_traced(c, s)
            return
        s.id = h2_submit(c, s, self.nvas[s.req], self.nvlens[s.req], self.reqs.data[s.req], self.reqs.size[s.req])
        if s.id < 0:
            raise RuntimeError(f"nghttp2: {nghttp2_strerror(s.id).decode()}")

    cdef void _fill(self, h2c_t *c, double t) except *:
        """Start streams until `m` are in flight (fewer when the server allows fewer); none after a GOAWAY."""
        cdef int k = 0, limit = c.m
        cdef uint32_t most = nghttp2_session_get_remote_settings(c.sess, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        cdef h2s_t *s
        if most < <uint32_t>limit:
            limit = <int>most
        if self.rate:
            self._fill_open(c, t, limit)
            return
        while c.inflight < limit and c.inflight + c.thinking < c.m and not c.goaway and not self.stopped:
            while c.slots[k].state != S_FREE:
                k += 1
            s = &c.slots[k]
            if self._begin(s, t) < 0:
                return
            s.t_sent = t
            self._submit(c, s)
            c.inflight += 1
            c.fresh += 1

    cdef void _pump(self, h2c_t *c, double t) except *:
        """After a read or a timer: record what ended, start as many, write; close a finished connection."""
        self._settle(c, t)
        if c.phase != OPEN:
            return
        if self.rate:  # an open schedule's connection stays open with no stream, for the next arrival
            if (self._sent(c) == 0 if c.goaway else c.inflight == 0 and not (nghttp2_session_want_read(c.sess) or
                                                                            nghttp2_session_want_write(c.sess))):
                self._ended_well(c)
                self._reopen(c)  # the arrivals waiting on it go out on the new connection
            return
        if c.inflight == 0 and c.thinking:
            self._idle(c)  # --think: its slots idle, its connection kept alive
        elif c.inflight == 0 and (c.goaway or not (nghttp2_session_want_read(c.sess) or
                                                   nghttp2_session_want_write(c.sess))):
            self._ended_well(c)
            self._reopen(c)  # a GOAWAY, its last stream done: a new connection
        elif c.inflight == 0:
            self._ended_well(c)
            self._close(c)  # none may start: the window closed, or -n is spent

    cdef void _settle(self, h2c_t *c, double t) except *:
        cdef int i, k, n
        cdef h2s_t *s
        while c.phase == OPEN:
            n, c.nended = c.nended, 0
            for i in range(n):
                s = &c.slots[c.ended[i]]
                if s.end == H2_END_DONE:
                    c.served += 1
                    self._record(s, kind_of_status(s.status), t, s.status)
                elif s.end == H2_END_RST:
                    self._record(s, SRESET_, t, 0)
                elif s.end == H2_END_GOAWAY:
                    self._unprocessed(c, s, t)
                elif s.end == H2_END_ERROR:
                    self._record(s, PROTO_, t, 0)
                c.inflight -= 1
                if self.think_s > 0.0 and (s.end == H2_END_DONE or s.end == H2_END_RST):
                    self._think(c, s)  # answered: its client idles before its next request (as h1's after an answer)
                else:
                    s.state = S_FREE
            self._fill(c, t)
            if not self._flush(c):
                return
            if c.fresh:
                t = now()
                k = 0
                while c.fresh and k < c.m:
                    s = &c.slots[k]
                    if s.state == S_ACTIVE and s.id > 0 and isnan(s.t_written):
                        s.t_written = t
                        c.fresh -= 1
                    k += 1
                c.fresh = 0
            if not c.nended:
                return

    cdef bint _flush(self, h2c_t *c) except *:
        """Write what nghttp2 has to send, gathered into one buffer; False: the connection was lost."""
        cdef const uint8_t *data
        cdef ssize_t n
        cdef int err = 0
        if c.out_len == 0:  # a write the socket did not take is sent again as it was, before anything new
            while True:
                n = nghttp2_session_mem_send(c.sess, &data)
                if n < 0:
                    raise RuntimeError(f"nghttp2: {nghttp2_strerror(<int>n).decode()}")
                if n == 0:
                    break
                if h2_keep(c, data, n) != 0:
                    raise MemoryError()
        if c.out_len == 0:
            self._watch(c, EPOLLIN)
            return True
        if self.tls_on:
            n = SSL_write(c.ssl, c.out, <int>c.out_len)
            if n <= 0:
                n = tls_result(c.ssl, <int>n, &err)
                n = 0 if n == TLS_WANT_WRITE or n == TLS_WANT_READ else -1
        else:
            n = send(c.fd, c.out, c.out_len, MSG_NOSIGNAL)
            if n < 0 and (errno == EAGAIN or errno == EINTR):
                n = 0
        if n < 0:
            self._end_all(c, RESET_, now())
            self._reopen(c)
            return False
        if <size_t>n < c.out_len:
            memmove(c.out, c.out + n, c.out_len - n)
            c.out_len -= n
            self._watch(c, EPOLLIN | EPOLLOUT)
        else:
            c.out_len = 0
            self._watch(c, EPOLLIN)
        return True

    cdef void _readable(self, h2c_t *c) except *:
        cdef ssize_t got
        cdef int err = 0, r
        cdef double t
        while True:
            if self.tls_on:
                got = SSL_read(c.ssl, self.buf, BUFSIZE)
                if got <= 0:
                    r = tls_result(c.ssl, <int>got, &err)
                    got = -2 if r == TLS_WANT_READ or r == TLS_WANT_WRITE else (-3 if r == TLS_SYSCALL and err == EINTR
                                                                               else (0 if r == TLS_CLOSED else -1))
            else:
                got = recv(c.fd, self.buf, BUFSIZE, 0)
                if got < 0:
                    got = -2 if errno == EAGAIN else (-3 if errno == EINTR else -1)
            if got == -3:
                continue
            if got == -2:
                break
            t = now()
            if c.first_read and self.h2c:
                first_contact(self.url, self.buf, got if got > 0 else 0, h2_spoke(&self.stats))
            if got <= 0:  # closed, or reset: what ended is recorded, the streams still open were cut
                self._end_all(c, RESET_, t)
                self._reopen(c)
                return
            c.first_read = 0
            c.t_read = t
            if nghttp2_session_mem_recv(c.sess, self.buf, got) < 0:
                self._end_all(c, PROTO_, t)
                self._reopen(c)
                return
            if got < BUFSIZE and not (self.tls_on and SSL_has_pending(c.ssl)):
                break
        self._pump(c, now())

    cdef void _record(self, h2s_t *s, int kind, double t, int status) except *:
        cdef double phases[5]
        if not s.counted:
            return
        s.counted = 0
        self.counted_inflight -= 1
        if t < self.tally.t_end:  # the tally counts what the outcomes count: a counted stream ended in the window
            if kind == SRESET_:
                h2_count_reset(&self.stats, s.code)
            elif kind == GOAWAY_:
                self.stats.unprocessed += 1
        phases[0] = s.t_up - s.t_connect  # NaN but on a connection's first stream
        phases[1] = (s.t_hs - s.t_up) if self.tls_on else (NAN if isnan(s.t_connect) else 0.0)
        phases[2] = s.t_written - s.t_sent
        phases[3] = s.t_first - s.t_written
        phases[4] = (t - s.t_first) if kind <= K_HTTP_5XX else NAN
        if s.traced:
            self._trace_row(s, kind, t, status, phases)
        self.tally.end(kind, status, s.t_intended, s.t_sent, t, s.nbytes, phases, self.reqs.page_of[s.req],
                       self.reqs.expect[s.req])
        if self.counted_inflight == 0 and self.tally.spent():
            self.tally.flush()

    cdef void _unprocessed(self, h2c_t *c, h2s_t *s, double t) except *:
        """A stream a GOAWAY left unprocessed. With NO_ERROR the server closed gracefully and never saw it (RFC
        9113 §6.8): it is sent again on a new connection, as browsers do, its start taken back with its -n ticket
        and the next one counted as `retried`. With an error code, or sent `SENDS` times, it is a `goaway` failure."""
        if c.goaway_code != NGHTTP2_NO_ERROR or not s.counted or t >= self.tally.t_end or s.sends >= SENDS_:
            self._record(s, GOAWAY_, t, 0)
            return
        s.counted = 0
        self.counted_inflight -= 1
        self.stats.unprocessed += 1
        self.stats.streams -= 1
        self.tally.take_back(s.t_counted)  # the second its start was counted in
        h2_owe(&self.owed, s)

    cdef void _end_all(self, h2c_t *c, int kind, double t) except *:
        """The connection is lost: what had ended is recorded as it ended, every other stream as `kind`."""
        cdef int k
        cdef h2s_t *s
        for k in range(c.nended):
            s = &c.slots[c.ended[k]]
            if s.end == H2_END_DONE:
                self._record(s, kind_of_status(s.status), t, s.status)
            elif s.end == H2_END_GOAWAY:
                self._unprocessed(c, s, t)
            elif s.end != H2_END_IGNORE:
                self._record(s, SRESET_ if s.end == H2_END_RST else PROTO_, t, 0)
            s.state = S_FREE
        c.nended = 0
        for k in range(c.m):
            s = &c.slots[k]
            if s.state == S_ACTIVE:
                if isnan(s.t_sent) or s.id <= 0:
                    s.t_sent = s.t_counted
                self._record(s, kind, t, 0)
            if s.state != S_THINK:  # a thinking slot idles on: the first to wake opens a new connection
                s.state = S_FREE
        c.inflight = 0

    # --- an open schedule (rate, replay): arrivals placed on the connections as they are due ---------------------
    cdef int _arrive(self, double due, int req) except -2:
        """An arrival due at `due`, to send request `req`: on a free slot of the least busy open connection, sent at
        once; else on one of a connection still opening (or draining after a GOAWAY), where it waits, its latency from
        `due`; with
        every slot taken (-c x -m in flight), dropped, as the h1 rate loop drops one over its in-flight cap. 1: placed,
        0: dropped, -1: the window has closed."""
        cdef int i, k = 0, best = -1, got
        cdef h2c_t *c
        cdef h2s_t *s
        for i in range(self.n):  # the least busy open connection, else the least busy of the others
            c = &self.conns[i]
            if c.inflight < c.m and (best < 0 or self._rank(c) < self._rank(&self.conns[best])):
                best = i
        if best < 0:
            self.rec.drop(due)
            return 0
        got = self.tally.start(due)
        if got < 0:
            return -1
        c = &self.conns[best]
        while c.slots[k].state != S_FREE:
            k += 1
        s = &c.slots[k]
        self.counted_inflight += got
        self.stats.streams += got
        s.state, s.counted, s.end, s.status, s.code, s.id, s.nbytes, s.req, s.sends = S_ACTIVE, got, 0, 0, 0, 0, 0, req, 1
        s.traced, s.conn = trace_draw(&self.tr, got, &s.seq), c.no
        s.t_intended = s.t_counted = due
        s.t_sent = s.t_connect = s.t_up = s.t_hs = s.t_written = s.t_first = NAN
        s.deadline = due + self.timeout
        c.inflight += 1
        return 1

    cdef void _fill_open(self, h2c_t *c, double t, int limit) except *:
        """An open connection takes the requests a graceful GOAWAY left unprocessed (`_begin` takes the oldest) onto
        its free slots, then sends what waits on it while fewer than `limit` streams are open; none after a GOAWAY."""
        cdef int k = 0, sent = self._sent(c)
        cdef h2s_t *s
        if c.goaway or self.stopped:
            return
        while c.inflight < limit and self.owed.n > 0:
            while c.slots[k].state != S_FREE:
                k += 1
            if self._begin(&c.slots[k], t) < 0:
                break
            c.inflight += 1
        for k in range(c.m):
            s = &c.slots[k]
            if sent < limit and s.state == S_ACTIVE and s.id == 0:
                s.t_sent = t
                self._submit(c, s)
                sent += 1
                c.fresh += 1

    cdef int _sent(self, h2c_t *c) noexcept:
        """Connection `c`'s streams sent and not yet settled (an arrival waiting on it has no id yet)."""
        cdef int k, n = 0
        for k in range(c.m):
            if c.slots[k].state != S_FREE and c.slots[k].id != 0:
                n += 1
        return n

    cdef inline int _rank(self, h2c_t *c) noexcept:
        """Where an arrival goes first: the fewest streams, on an open connection before any other."""
        return c.inflight + (0 if c.phase == OPEN and not c.goaway else c.m + 1)

    # --- --trace (docs/tracing.md): the header as a field of its own, a row a traced stream ----------------------
    cdef void _submit_traced(self, h2c_t *c, h2s_t *s) except *:
        """A traced stream's request: its header fields, then `traceparent` (nghttp2 copies them at the submit)."""
        cdef char value[56]
        cdef size_t n = self.nvlens[s.req]
        memcpy(self.tnv, self.nvas[s.req], n * sizeof(nghttp2_nv))
        trace_value(&self.tr, value, s.seq)
        self.tnv[n].name, self.tnv[n].namelen = <uint8_t *>b"traceparent", 11
        self.tnv[n].value, self.tnv[n].valuelen, self.tnv[n].flags = <uint8_t *>value, 55, NGHTTP2_NV_FLAG_NONE
        s.id = h2_submit(c, s, self.tnv, n + 1, self.reqs.data[s.req], self.reqs.size[s.req])
        if s.id < 0:
            raise RuntimeError(f"nghttp2: {nghttp2_strerror(s.id).decode()}")

    cdef void _trace_row(self, h2s_t *s, int kind, double t, int status, const double *phases) except *:
        """A traced stream's row: ended as `kind` at `t`, or (kind -1, or ended after the close) unfinished."""
        s.traced = 0
        if trace_row(&self.tr, s.seq, kind, s.t_intended, s.t_sent if isnan(s.t_connect) else s.t_connect, t,
                     self.tally.t_end, status, phases, s.nbytes, s.conn) < 0:
            raise MemoryError()
        self.tr.rows.rows[self.tr.rows.n - 1].stream = s.id

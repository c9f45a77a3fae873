# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled h2 engine: `H2Loop`, -c connections each keeping -m streams in flight (h2load's -c and -m),
HTTP/2 framed by libnghttp2 (`_ch2.h`), over TLS by OpenSSL from C (`_ctls.h`, ALPN "h2") or in cleartext by
prior knowledge (h2c); no Python per request.

It builds on `_cbase.CBase`, as `_cloop.CLoop` does: one epoll set of its own holds every socket. Each read is
handed to nghttp2 (`nghttp2_session_mem_recv`), whose callbacks mark the streams that ended, and the loop then
records them (`_ctally`), starts as many new streams as ended, and writes what nghttp2 has to send. A stream's outcome:
its status's kind; `stream_reset` when the server sent RST_STREAM (its code counted); above a GOAWAY's
last-stream-id, unprocessed: after a graceful GOAWAY (NO_ERROR) no outcome, its start taken back and its request
sent again on a new connection (counted as `retried`, timed from its first intended start), `goaway` after one
with an error code or once sent `record.outcomes.SENDS` times;
`reset` when the connection was cut under it; `timeout`. A connection whose session
is over (after a GOAWAY, its last stream done) is closed and a new one opened. The server's own protocol is
checked: ALPN must choose "h2", and an h2c connection's first bytes must start a SETTINGS frame (nor may it
close before one while no connection had one), else the load stops with `errors.WrongProtocol`: never the
wrong protocol measured silently.

The open schedules (a rate, a replay: `start_open`) open the -c connections with no stream, and place each arrival
when it is due, with its intended start (`_arrivals`, once per due time, not per request): on a free stream of an
open connection at once, else waiting on a connection still opening, its latency from its intended start; with all
-c x -m taken, dropped and counted, as the h1 rate loop drops one over its in-flight cap.
"""

from libc.math cimport INFINITY
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from posix.unistd cimport close

from ..core._cbase cimport CBase, now
from ..core._csys cimport *
from ..core._ctally cimport CRequests
from ._ch2conn cimport *

from ..record.outcomes import CONNECT_TIMEOUT, TIMEOUT
from ..record.result import StreamTally

cdef extern from "_ch2.h" nogil:
    ctypedef struct h2other_t:
        uint32_t code
        long long n
    h2other_t *h2_others(h2stats_t *, int *, int)
    enum: H2_OTHER

cdef int TIMEOUT_ = TIMEOUT, CTIMEOUT_ = CONNECT_TIMEOUT

include "_cbuilt.pxi"


cdef class H2Loop(H2Conns):
    """Every connection of one engine's h2 (or h2c) loop: closed, or an open schedule's (`start_open`)."""

    cdef list keep  # the header bytes `nvas` point into
    cdef int nreq  # how many: `nvas` holds one per request
    cdef object proto
    cdef double t_load0, per_s, phase  # an open schedule: the load's start; a rate's arrivals per second, offset
    cdef double[::1] dues  # a replay's due times (`Replay.dues`), this part's every `step`-th from `off`
    cdef long long k, off, step, total  # the next arrival; a replay's part
    cdef bint replay

    def __init__(self, engine, int connections, loop):
        CBase.__init__(self, engine, connections, loop)
        target = engine.target
        self.proto, self.url = target.proto, target.url
        self.h2c = target.scheme == "http"  # h2c: HTTP/2 on a plain port, by prior knowledge
        self.m = target.streams
        p = engine.spec.pacing
        if p is not None and p.think_s > 0.0:  # --think: each slot idles between its streams (`_ch2link.pyx`)
            self.think_s, self.pacing, self.think_rng = p.think_s, p, p.rng(engine.spec.worker_index)
        pages = engine.spec.pages
        targets = pages.targets if pages is not None else (target,)
        self.reqs = CRequests(tuple(t.body for t in targets), pages)  # the bodies: HTTP/2 frames the rest
        self._headers([t.h2_headers() for t in targets])
        self.cb = h2_callbacks()
        self.conns = <h2c_t *>calloc(connections, sizeof(h2c_t))
        self.buf = <unsigned char *>malloc(BUFSIZE)
        if not (self.cb and self.conns and self.buf) or h2_owed_new(&self.owed, connections * self.m) != 0:
            raise MemoryError()
        for i in range(connections):
            c = &self.conns[i]
            c.fd, c.m, c.stats = -1, self.m, &self.stats
            c.slots = <h2s_t *>calloc(self.m, sizeof(h2s_t))
            c.ended = <int *>calloc(self.m * 2 + 2, sizeof(int))
            if not (c.slots and c.ended):
                raise MemoryError()
        self._trace_setup(engine.tracer)
        self.tls_on = target.scheme == "https"
        if self.tls_on:
            self.resume = target.tls_resume
            self.sni = tls_start(&self.tls, target, self.resume > 0, True)

    def _headers(self, requests):
        """Each request's header fields as nghttp2 takes them (`nvas[i]`, `nvlens[i]`), made once per load."""
        cdef nghttp2_nv *nva
        self.keep = [b for fields in requests for kv in fields for b in kv]
        self.nvas = <nghttp2_nv **>calloc(len(requests), sizeof(nghttp2_nv *))
        self.nvlens = <size_t *>calloc(len(requests), sizeof(size_t))
        if not (self.nvas and self.nvlens):
            raise MemoryError()
        self.nreq = len(requests)
        for r, fields in enumerate(requests):
            nva = self.nvas[r] = <nghttp2_nv *>calloc(len(fields), sizeof(nghttp2_nv))
            if not nva:
                raise MemoryError()
            self.nvlens[r] = len(fields)
            for i, (k, v) in enumerate(fields):
                nva[i].name, nva[i].namelen = <unsigned char *><char *>k, len(k)
                nva[i].value, nva[i].valuelen = <unsigned char *><char *>v, len(v)
                nva[i].flags = NGHTTP2_NV_FLAG_NONE

    def __dealloc__(self):
        cdef h2c_t *c
        for i in range(self.n if self.conns else 0):
            c = &self.conns[i]
            if c.fd >= 0:
                close(c.fd)
            if c.ssl:
                SSL_free(c.ssl)
            if c.sess:
                nghttp2_session_del(c.sess)
            free(c.slots); free(c.ended); free(c.out)
        for i in range(self.nreq if self.nvas else 0):
            free(self.nvas[i])
        free(self.conns); free(self.buf); free(self.nvas); free(self.nvlens); free(self.tnv)
        h2_owed_free(&self.owed)
        if self.cb:
            nghttp2_session_callbacks_del(self.cb)
        if self.tls_on:
            tls_close(&self.tls)

    # --- the Python side ----------------------------------------------------------------------
    def start(self):
        self.rec.streams = StreamTally(protocol=self.proto)
        CBase.start(self)

    def start_open(self, sched, double t_load0):
        """An open schedule (`schedules.Rate`, `Replay`; `t_load0`: the load's start, its offsets' zero): every
        connection opened with no stream, then each arrival placed as it is due (`_arrivals`)."""
        self.rate, self.t_load0 = True, t_load0
        if sched.kind == "replay":
            self.replay, self.dues, self.off, self.step, self.total = True, sched.dues, sched.offset, sched.step, sched.total
        else:
            self.per_s, self.phase = sched.rate, sched.phase
        self.start()
        self._arrivals()

    cdef double _due(self, long long k) noexcept:
        """When this part's k-th arrival is due (as `Rate.due`, `Replay.due`), on the clock; after a replay's last: never."""
        if not self.replay:
            return self.t_load0 + self.phase + k / self.per_s
        return self.t_load0 + self.dues[self.off + k * self.step] if k < self.total else INFINITY

    def _arrivals(self):
        """Every arrival due by now placed (`_arrive`), each taking its request from the sequence when due, sent or
        dropped (as the h1 rate loop draws it); what they started written; then a wait for the next one's time."""
        cdef double t = now(), due
        try:
            if self.stopped or t >= self.tally.t_end:
                return
            due = self._due(self.k)
            while due < t + 1e-9:
                if self._arrive(due, self.reqs.next()) < 0:
                    return
                self.k += 1
                due = self._due(self.k)
            for i in range(self.n):
                if self.conns[i].phase == OPEN:
                    self._pump(&self.conns[i], t)
            if due != INFINITY:
                self.loop.call_later(max(0.0005, due - now()), self._arrivals)
        except BaseException as e:
            self._crash(e)

    # --- what CBase asks of a loop: a connection's start, an epoll event, the deadlines, the stop ---
    cdef void _first(self, int i) except *:
        self._open(&self.conns[i])

    cdef void _event(self, uint64_t d, uint32_t events) except *:
        cdef h2c_t *c = &self.conns[<uint32_t>d]
        if c.fd < 0 or c.gen != <uint32_t>(d >> 32):
            return
        if c.phase == CONNECTING:
            self._connected(c)
        elif c.phase == HANDSHAKING:
            self._shake(c)
        elif c.phase == OPEN:
            if events & EPOLLOUT and c.out_len:
                self._flush(c)
            if c.fd >= 0 and events & (EPOLLIN | EPOLLERR | EPOLLHUP):
                self._readable(c)

    cdef void _deadlines(self, double t) except *:
        """A connect or handshake, and each stream (cancelled with RST_STREAM(CANCEL))."""
        cdef int i, k
        cdef h2c_t *c
        cdef h2s_t *s
        for i in range(self.n):
            c = &self.conns[i]
            if c.phase == CONNECTING or c.phase == HANDSHAKING:
                if c.deadline < t:
                    self._end_all(c, CTIMEOUT_ if c.phase == CONNECTING else TIMEOUT_, t)
                    self._reopen(c)
                continue
            if c.phase != OPEN:
                continue
            for k in range(c.m):
                s = &c.slots[k]
                if s.state == S_ACTIVE and not s.end and s.deadline < t:
                    self._record(s, TIMEOUT_, t, 0)
                    s.state = S_CANCELLED
                    if s.id > 0:
                        nghttp2_submit_rst_stream(c.sess, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL)
                    elif s.id == 0:  # an arrival that waited for a stream the server allows: never sent
                        s.state = S_FREE
                        c.inflight -= 1
            self._pump(c, t)

    cdef void _unsent(self) except *:
        """A stream not sent yet (its connection still opening, or an arrival waiting for a stream) is taken back;
        the others in flight stay unfinished."""
        cdef h2c_t *c
        cdef bint opening
        for i in range(self.n):
            c = &self.conns[i]
            opening = c.phase == CONNECTING or c.phase == HANDSHAKING
            if opening or self.rate:
                for k in range(c.m):
                    if c.slots[k].state == S_ACTIVE and c.slots[k].counted and (opening or c.slots[k].id == 0):
                        self.rec.unsent(c.slots[k].t_counted, True)
                        self.stats.streams -= 1
                        c.slots[k].counted = 0
                        self.counted_inflight -= 1

    cdef void _close_all(self) except *:
        cdef h2s_t *s
        for i in range(self.n):
            for k in range(self.conns[i].m if self.tr.on else 0):  # traced, in flight at the close: unfinished
                s = &self.conns[i].slots[k]
                if s.state == S_ACTIVE and s.counted and s.traced:
                    self._trace_row(s, -1, now(), 0, NULL)
            self._close(&self.conns[i])

    def flush(self):
        """Hand the counts to the recorder: the streams' outcomes, the handshakes, the streams' tally."""
        self.tally.flush()
        if self.tls_on:
            tls_hand_over(&self.tls, self.rec)
        st, s = self.rec.streams, &self.stats
        if st is None or self.rec.closed:
            return
        for i in range(self.n):
            if self.conns[i].served > s.max_served:
                s.max_served = self.conns[i].served
        st.add(StreamTally(self.proto, s.connections, s.streams, s.goaways, s.unprocessed, s.retried, self._resets(),
                           s.max_concurrent, 0))
        st.max_concurrent = s.max_concurrent
        st.max_per_connection = max(st.max_per_connection, s.max_served)
        s.connections = s.streams = s.goaways = s.unprocessed = s.retried = 0
        for k in range(H2_CODES):
            s.resets[k] = 0

    cdef dict _resets(self):
        """RST_STREAM counts by code name; a code RFC 9113 does not name by its number, never under another's."""
        cdef int n
        cdef h2other_t *o = h2_others(&self.stats, &n, 1)
        cdef long long *r = self.stats.resets
        got = {nghttp2_http2_strerror(k).decode(): r[k] for k in range(H2_CODES) if r[k]}
        for k in range(n):
            got["other" if o[k].code == H2_OTHER else f"0x{o[k].code:x}"] = o[k].n
        return got

    # --- --trace (docs/tracing.md) ----------------------------------------------------------------------------
    def _trace_setup(self, tracer):
        """The draw and the header's value (`trace.ids.Ids`); room for a traced stream's header fields."""
        if tracer is None:
            return
        value = tracer.ids.value(0).encode()
        self._trace_on(tracer)
        memcpy(self.tr.value, <char *>value, 55)
        self.tnv = <nghttp2_nv *>malloc((max(self.nvlens[r] for r in range(self.nreq)) + 1) * sizeof(nghttp2_nv))
        if not self.tnv:
            raise MemoryError()

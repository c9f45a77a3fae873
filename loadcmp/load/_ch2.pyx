# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled h2 engine: `H2Loop`, -c connections each keeping -m streams in flight (h2load's -c and -m),
HTTP/2 framed by libnghttp2 (`_ch2.h`), over TLS by OpenSSL from C (`_ctls.h`, ALPN "h2") or in cleartext by
prior knowledge (h2c); no Python per request.

One epoll set of its own holds every socket, as `_cloop.CLoop`'s does; each read is handed to nghttp2
(`nghttp2_session_mem_recv`), whose callbacks mark the streams that ended, and the loop then records them
(`_ctally`), starts as many new streams as ended, and writes what nghttp2 has to send. A stream's outcome:
its status's kind; `stream_reset` when the server sent RST_STREAM (its code counted); `goaway` when a GOAWAY's
last-stream-id left it unprocessed (the closed loop sends a new stream in its place on a new connection,
counted as `retried`); `reset` when the connection was cut under it; `timeout`. A connection whose session
is over (after a GOAWAY, its last stream done) is closed and a new one opened. The server's own protocol is
checked: ALPN must choose "h2", and an h2c connection's first bytes must start a SETTINGS frame (nor may it
close before one while no connection had one), else the load stops with `errors.WrongProtocol`: never the
wrong protocol measured silently.
"""

import ipaddress

from libc.errno cimport errno
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport strerror
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec
from posix.unistd cimport close

from ._csys cimport *
from ._ch2conn cimport *
from ._ctally cimport CTally

from .outcomes import CONNECT_TIMEOUT, TIMEOUT
from .result import StreamTally

cdef extern from "_ch2.h" nogil:
    ctypedef struct h2other_t:
        uint32_t code
        long long n
    h2other_t *h2_others(h2stats_t *, int *, int)
    enum: H2_OTHER

cdef enum:
    MAXEVENTS = 128

cdef int TIMEOUT_ = TIMEOUT, CTIMEOUT_ = CONNECT_TIMEOUT
cdef double TICK_S = 0.05

include "_cbuilt.pxi"


cdef inline double now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9

cdef class H2Loop(H2Conns):
    """Every connection of one engine's closed h2 (or h2c) loop."""

    cdef epoll_event *events
    cdef list keep  # the header bytes `nva` points into
    cdef bytes body
    cdef object tick_handle, proto

    def __cinit__(self):
        self.epfd = -1

    def __init__(self, engine, int connections, loop):
        target = engine.target
        self.engine, self.rec, self.loop, self.proto, self.url = engine, engine.rec, loop, target.proto, target.url
        self.h2c = target.proto == "h2c"
        self.tally = CTally(engine.rec)
        self.n, self.m, self.timeout = connections, target.streams, engine.timeout
        self.family = engine.family
        if addr_set(&self.addr, engine.family, engine.sockaddr[0].encode(), engine.sockaddr[1],
                    engine.sockaddr[3] if len(engine.sockaddr) > 3 else 0) != 1:
            raise ValueError(f"not a numeric address: {engine.sockaddr[0]!r}")
        self.addrlen = sizeof(sockaddr_in6) if self.family == AF_INET6 else sizeof(sockaddr_in)
        self.body = target.body
        self._headers(target.h2_headers())
        self.cb = h2_callbacks()
        self.conns = <h2c_t *>calloc(connections, sizeof(h2c_t))
        self.buf = <unsigned char *>malloc(BUFSIZE)
        self.events = <epoll_event *>malloc(MAXEVENTS * sizeof(epoll_event))
        if not (self.cb and self.conns and self.buf and self.events):
            raise MemoryError()
        for i in range(connections):
            c = &self.conns[i]
            c.fd, c.m, c.stats = -1, self.m, &self.stats
            c.body, c.body_len = <const char *>self.body, len(self.body)
            c.slots = <h2s_t *>calloc(self.m, sizeof(h2s_t))
            c.ended = <int *>calloc(self.m * 2 + 2, sizeof(int))
            if not (c.slots and c.ended):
                raise MemoryError()
        self.tls_on = target.scheme == "https"
        if self.tls_on:
            self._tls(target)
        self.epfd = epoll_create1(EPOLL_CLOEXEC)
        if self.epfd < 0:
            raise OSError(errno, strerror(errno).decode())

    def _headers(self, fields):
        self.keep = [b for kv in fields for b in kv]
        self.nvlen = len(fields)
        self.nva = <nghttp2_nv *>calloc(self.nvlen, sizeof(nghttp2_nv))
        if not self.nva:
            raise MemoryError()
        for i, (k, v) in enumerate(fields):
            self.nva[i].name, self.nva[i].namelen = <unsigned char *><char *>k, len(k)
            self.nva[i].value, self.nva[i].valuelen = <unsigned char *><char *>v, len(v)
            self.nva[i].flags = NGHTTP2_NV_FLAG_NONE

    def _tls(self, target):
        try:
            ipaddress.ip_address(target.host)
            is_ip = True
        except ValueError:
            is_ip = False
        self.sni = None if is_ip else target.host.encode("idna")
        cdef bytes host = target.host.encode("idna")
        cdef bytes ca = target.cafile.encode() if target.cafile else b""
        why = tls_open(&self.tls, <const char *>ca if ca else NULL, host, is_ip, not target.insecure, 0, 1)
        if why != NULL:
            raise OSError(f"TLS: {why.decode()}")

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
        free(self.conns); free(self.buf); free(self.events); free(self.nva)
        if self.cb:
            nghttp2_session_callbacks_del(self.cb)
        if self.tls_on:
            tls_close(&self.tls)
        if self.epfd >= 0:
            close(self.epfd)

    # --- the Python side ----------------------------------------------------------------------
    def start(self):
        self.rec.streams = StreamTally(protocol=self.proto)
        self.loop.add_reader(self.epfd, self._drain)
        self.tick_handle = self.loop.call_later(TICK_S, self._tick)
        for i in range(self.n):
            self._open(&self.conns[i])

    def _drain(self):
        cdef int j, got
        cdef uint64_t d
        cdef h2c_t *c
        try:
            got = epoll_wait(self.epfd, self.events, MAXEVENTS, 0)
            for j in range(got):
                d = self.events[j].data.u64
                c = &self.conns[<uint32_t>d]
                if c.fd < 0 or c.gen != <uint32_t>(d >> 32):
                    continue
                if c.phase == CONNECTING:
                    self._connected(c)
                elif c.phase == HANDSHAKING:
                    self._shake(c)
                elif c.phase == OPEN:
                    if self.events[j].events & EPOLLOUT and c.out_len:
                        self._flush(c)
                    if c.fd >= 0 and self.events[j].events & (EPOLLIN | EPOLLERR | EPOLLHUP):
                        self._readable(c)
        except BaseException as e:
            self._crash(e)

    def _tick(self):
        """Deadlines: a connect or handshake, and each stream (cancelled with RST_STREAM(CANCEL))."""
        cdef int i, k
        cdef double t
        cdef h2c_t *c
        cdef h2s_t *s
        self.tick_handle = None
        try:
            if self.stopped:
                return
            t = now()
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
                self._pump(c, t)
            self.tick_handle = self.loop.call_later(TICK_S, self._tick)
        except BaseException as e:
            self._crash(e)

    def _crash(self, e):
        self.abort()
        self.engine.crashed(e)

    def flush(self):
        """Hand the counts to the recorder: the streams' outcomes, the handshakes, the streams' tally."""
        self.tally.flush()
        cdef tls_t *t = &self.tls
        if self.tls_on and (t.full or t.resumed):
            seen = {}
            for i in range(t.nfacts):
                key = (t.facts[i].version.decode(), t.facts[i].cipher.decode(), ("", "http/1.1", "h2")[t.facts[i].alpn])
                seen[key] = seen.get(key, 0) + t.facts[i].n
            full, t.full, t.resumed, t.nfacts = t.full, 0, 0, 0
            self.rec.add_tls(full, 0, seen)
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

    def abort(self):
        """The window has closed: every socket shut; a stream not sent yet (its connection still opening) is
        taken back (`unsent`), the others in flight stay unfinished."""
        cdef h2c_t *c
        if self.stopped:
            return
        self.stopped = True
        for i in range(self.n):
            c = &self.conns[i]
            if c.phase == CONNECTING or c.phase == HANDSHAKING:
                for k in range(c.m):
                    if c.slots[k].state == S_ACTIVE and c.slots[k].counted:
                        self.rec.unsent(c.slots[k].t_intended, True)
                        c.slots[k].counted = 0
                        self.counted_inflight -= 1
        self.loop.remove_reader(self.epfd)
        if self.tick_handle is not None:
            self.tick_handle.cancel()
            self.tick_handle = None
        for i in range(self.n):
            self._close(&self.conns[i])
        close(self.epfd)
        self.epfd = -1


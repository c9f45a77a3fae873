# The compiled h2 engine's C declarations (libnghttp2, _ch2.h; its TLS is _cssl.pxd's) and its connections'
# set-up (_ch2link.pyx's H2Link, on _cbase.pxd's CBase); _ch2conn.pxd's H2Conns and _ch2.pyx's H2Loop build on it.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from ..core._cbase cimport CBase
from ..core._ctally cimport CRequests
from ..core._csys cimport *
from ..tls._cssl cimport *

cdef extern from "_ch2.h" nogil:
    ctypedef struct nghttp2_session:
        pass
    ctypedef struct nghttp2_session_callbacks:
        pass
    ctypedef struct nghttp2_nv:
        uint8_t *name
        uint8_t *value
        size_t namelen
        size_t valuelen
        uint8_t flags
    enum: NGHTTP2_NV_FLAG_NONE, NGHTTP2_FLAG_NONE, NGHTTP2_CANCEL, NGHTTP2_NO_ERROR
    ssize_t nghttp2_session_mem_send(nghttp2_session *, const uint8_t **)
    ssize_t nghttp2_session_mem_recv(nghttp2_session *, const uint8_t *, size_t)
    int nghttp2_session_want_read(nghttp2_session *)
    int nghttp2_session_want_write(nghttp2_session *)
    void nghttp2_session_del(nghttp2_session *)
    void nghttp2_session_callbacks_del(nghttp2_session_callbacks *)
    int nghttp2_submit_rst_stream(nghttp2_session *, uint8_t, int32_t, uint32_t)
    const char *nghttp2_http2_strerror(uint32_t)
    const char *nghttp2_strerror(int)

    enum: S_FREE, S_ACTIVE, S_CANCELLED, S_THINK
    enum: H2_END_DONE, H2_END_RST, H2_END_GOAWAY, H2_END_ERROR, H2_END_IGNORE
    enum: H2_CODES
    ctypedef struct h2stats_t:
        long long connections, streams, goaways, unprocessed, retried
        long long resets[14]
        long long max_concurrent, max_served
    ctypedef struct h2s_t:
        int32_t id
        int state, counted, status, end, req, sends
        uint32_t code
        double t_intended, t_connect, t_up, t_hs, t_sent, t_written, t_first, deadline, t_counted
        int64_t nbytes
        uint64_t seq
        int traced
        int32_t conn
    ctypedef struct h2c_t:
        int fd, phase, registered, m, inflight, nended, goaway, first_read, fresh
        uint32_t gen
        int32_t last_id
        uint32_t goaway_code
        long long served
        double t_read, deadline
        SSL *ssl
        nghttp2_session *sess
        h2s_t *slots
        int *ended
        unsigned char *out
        size_t out_len, out_cap
        h2stats_t *stats
        int32_t no
        int thinking, first
    ctypedef struct h2owed_t:
        int n
    nghttp2_session_callbacks *h2_callbacks()
    int h2_owed_new(h2owed_t *, int)
    void h2_owed_free(h2owed_t *)
    void h2_owe(h2owed_t *, const h2s_t *)
    int h2_take_owed(h2owed_t *, h2s_t *)
    int h2_session(h2c_t *, nghttp2_session_callbacks *)
    int32_t h2_submit(h2c_t *, h2s_t *, const nghttp2_nv *, size_t, const char *, size_t)
    int h2_keep(h2c_t *, const unsigned char *, size_t)
    int h2_alpn_ok(SSL *, char *, size_t)
    uint32_t nghttp2_session_get_remote_settings(nghttp2_session *, int)
    enum: NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS

cdef enum:
    IDLE, CONNECTING, HANDSHAKING, OPEN  # a connection's phases
    BUFSIZE = 262144


cdef class H2Link(CBase):
    cdef h2c_t *conns
    cdef h2stats_t stats
    cdef int m
    cdef unsigned char *buf
    cdef nghttp2_session_callbacks *cb
    cdef CRequests reqs  # each request's body, the page it is recorded as, and their sequence (`pages.Pages`)
    cdef nghttp2_nv **nvas  # each request's header fields, by index
    cdef h2owed_t owed  # the requests a graceful GOAWAY left unprocessed, to send again (`_ch2.h`)
    cdef size_t *nvlens
    cdef bytes sni
    cdef bint tls_on, h2c
    cdef double resume  # --tls-resume: the share of new connections that offer a saved session
    cdef long long offers
    cdef tls_t tls
    cdef object url
    cdef int32_t nconn  # the connections opened (a traced row's conn)
    cdef bint rate  # an open schedule (rate, replay): connections opened with no stream, arrivals placed on them
    cdef double think_s  # --think (`load.pacing`): 0, and no branch of its runs, in a load without it
    cdef object pacing, think_rng

    # the set-up and tear-down of a connection (_ch2link.pyx)
    cdef void _open(self, h2c_t *c) except *
    cdef void _watch(self, h2c_t *c, uint32_t events) except *
    cdef void _connected(self, h2c_t *c) except *
    cdef bint _offer(self) except *
    cdef void _shake(self, h2c_t *c) except *
    cdef bint _counts(self, h2c_t *c, double t) noexcept
    cdef void _failed(self, h2c_t *c, int err) except *
    cdef void _close(self, h2c_t *c) except *
    cdef void _reopen(self, h2c_t *c) except *
    cdef void _ended_well(self, h2c_t *c) except *
    # --think (_ch2link.pyx): a slot idles between its stream's end and its next, its connection kept alive
    cdef void _think(self, h2c_t *c, h2s_t *s) except *
    cdef void _idle(self, h2c_t *c) except *
    cdef bint _first_free(self, h2c_t *c) noexcept
    # what the streams add (_ch2conn.pyx)
    cdef int _begin(self, h2s_t *s, double t) except -2
    cdef void _ready(self, h2c_t *c) except *
    cdef void _end_all(self, h2c_t *c, int kind, double t) except *
    cdef void _pump(self, h2c_t *c, double t) except *

/* libnghttp2 for the compiled h2 engine (_ch2.pyx): a connection's session, its streams' slots, and
 * nghttp2's callbacks, which only mark what happened to a stream; the loop records it (_ctally.h).
 *
 * A connection keeps up to `m` streams in flight (h2load's -m), each in a slot. The callbacks note a
 * stream's status and bytes, and when it ends, how: its answer complete (H2_END_DONE), reset by the
 * server (RST_STREAM, H2_END_RST with its code), left unprocessed by a GOAWAY whose last-stream-id is
 * below it (H2_END_GOAWAY: nghttp2 closes those itself, or never sends their HEADERS; the GOAWAY's code
 * decides whether they are retried or failed), or cut
 * (H2_END_ERROR). An ended slot's index goes on the connection's `ended` list, which the loop empties
 * after each read: no Python runs in a callback.
 */
#ifndef LOADCMP_CH2_H
#define LOADCMP_CH2_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "_ctls.h"

enum { S_FREE = 0, S_ACTIVE = 1, S_CANCELLED = 2, S_THINK = 3 }; /* a slot's state; cancelled: timed out, its close
                                                                  * awaited; think: idle in --think until `deadline` */
enum { H2_END_DONE = 1, H2_END_RST = 2, H2_END_GOAWAY = 3, H2_END_ERROR = 4, H2_END_IGNORE = 5 };
#define H2_CODES 14 /* RST_STREAM codes RFC 9113 names (NO_ERROR .. HTTP_1_1_REQUIRED), counted by name */
#define H2_OTHERS 8  /* other codes, counted by number ("0x1a"); past that many, the last slot is "other" */
#define H2_OTHER 0xffffffffu

typedef struct {
    uint32_t code;
    long long n;
} h2other_t;

typedef struct {
    long long connections, streams, goaways, unprocessed, retried;
    long long resets[H2_CODES];
    long long max_concurrent, max_served;
    h2other_t others[H2_OTHERS]; /* RST_STREAM codes with no name: never counted under a named one's */
    int nothers;
    int spoke; /* a SETTINGS came on some connection: a close before one later is a reset, not h1 */
} h2stats_t;

/* Count an RST_STREAM by its code: a named one in `resets`, another by its number in `others`. */
static void h2_count_reset(h2stats_t *st, uint32_t code) {
    int i;
    if (code < H2_CODES) {
        st->resets[code]++;
        return;
    }
    for (i = 0; i < st->nothers; i++)
        if (st->others[i].code == code)
            break;
    if (i == H2_OTHERS)
        st->others[i = H2_OTHERS - 1].code = H2_OTHER;
    else if (i == st->nothers)
        st->others[st->nothers++].code = code, st->others[i].n = 0;
    st->others[i].n++;
}

/* The codes `h2_count_reset` counted by number, `*n` of them; `clear`: counted anew from now. */
static h2other_t *h2_others(h2stats_t *st, int *n, int clear) {
    *n = st->nothers;
    if (clear)
        st->nothers = 0;
    return st->others;
}

typedef struct {
    int32_t id;
    int state, counted, status, end, req; /* req: the request it sends, by index (a load of pages) */
    int sends; /* how often its request was sent, this send included (a graceful GOAWAY's resends) */
    uint32_t code;
    double t_intended, t_connect, t_up, t_hs, t_sent, t_written, t_first, deadline;
    double t_counted; /* when its start was counted (its -n ticket's second); t_intended: its request's first */
    int64_t nbytes;
    const char *body; /* the request's body, sent from body_off on */
    size_t body_len, body_off;
    uint64_t seq; /* --trace: its number in the loop's trial; traced: it carries the header */
    int traced;
    int32_t conn; /* its connection's number in the loop */
} h2s_t;

/* The requests a graceful GOAWAY left unprocessed, to send again: each one's request, how often it was sent and
 * its first intended start, in a min-heap of -c x -m by that start (never full: at most every slot's stream is
 * owed at once). The oldest goes first: nghttp2 closes a GOAWAY's streams in no set order, and a request sent
 * again behind newer ones could be left unprocessed SENDS times by a server that processes few. */
typedef struct {
    int req, sends;
    double t_intended;
} h2owe_t;

typedef struct {
    h2owe_t *heap;
    int n, cap;
} h2owed_t;

static int h2_owed_new(h2owed_t *o, int cap) {
    o->n = 0;
    o->cap = cap;
    o->heap = (h2owe_t *)calloc((size_t)cap, sizeof(h2owe_t));
    return o->heap ? 0 : -1;
}

static void h2_owed_free(h2owed_t *o) {
    free(o->heap);
    o->heap = NULL;
}

/* Owe stream `s`'s request: sent again later as it was, from its first intended start. */
static void h2_owe(h2owed_t *o, const h2s_t *s) {
    int k = o->n, up;
    if (o->n == o->cap)
        return;
    o->n++;
    for (; k > 0 && o->heap[up = (k - 1) / 2].t_intended > s->t_intended; k = up)
        o->heap[k] = o->heap[up];
    o->heap[k].req = s->req;
    o->heap[k].sends = s->sends;
    o->heap[k].t_intended = s->t_intended;
}

/* The oldest owed request onto stream `s` (its request, its sends so far plus this one, its first intended
 * start); 0: none is owed. */
static int h2_take_owed(h2owed_t *o, h2s_t *s) {
    h2owe_t last;
    int k = 0, c;
    if (o->n == 0)
        return 0;
    s->req = o->heap[0].req;
    s->sends = o->heap[0].sends + 1;
    s->t_intended = o->heap[0].t_intended;
    last = o->heap[--o->n];
    for (; (c = 2 * k + 1) < o->n; k = c) {
        if (c + 1 < o->n && o->heap[c + 1].t_intended < o->heap[c].t_intended)
            c++;
        if (last.t_intended <= o->heap[c].t_intended)
            break;
        o->heap[k] = o->heap[c];
    }
    o->heap[k] = last;
    return 1;
}

typedef struct {
    int fd, phase, registered, m, inflight, nended, goaway, first_read, fresh;
    uint32_t gen;
    int32_t last_id;
    uint32_t goaway_code; /* the GOAWAY's error code: NO_ERROR, its unprocessed streams are retried */
    long long served;
    double t_read, deadline; /* t_read: when the bytes being handed to nghttp2 were read */
    SSL *ssl;
    nghttp2_session *sess;
    h2s_t *slots;
    int *ended;
    unsigned char *out; /* bytes nghttp2 gave that the socket has not taken yet */
    size_t out_len, out_cap;
    h2stats_t *stats;
    int32_t no; /* its number among the loop's connections (a row's conn) */
    int thinking; /* --think: its slots idle in their think (S_THINK), kept from new streams until they wake */
    int first;    /* the slot of its first stream (0 but where --think keeps the others idle) */
} h2c_t;

static h2s_t *h2_slot(h2c_t *c, int32_t id) {
    h2s_t *s = (h2s_t *)nghttp2_session_get_stream_user_data(c->sess, id);
    if (s == NULL)
        for (int i = 0; i < c->m; i++)
            if (c->slots[i].state != S_FREE && c->slots[i].id == id)
                return &c->slots[i];
    return s;
}

static void h2_ended(h2c_t *c, h2s_t *s, int end) {
    if (s->end)
        return;
    s->end = s->state == S_CANCELLED ? H2_END_IGNORE : end;
    c->ended[c->nended++] = (int)(s - c->slots);
}

static int h2_on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                        const uint8_t *value, size_t valuelen, uint8_t flags, void *ud) {
    (void)ss, (void)flags;
    h2s_t *s;
    if (f->hd.type != NGHTTP2_HEADERS || namelen != 7 || memcmp(name, ":status", 7) != 0)
        return 0;
    if ((s = h2_slot((h2c_t *)ud, f->hd.stream_id)) != NULL && valuelen == 3)
        s->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return 0;
}

static int h2_on_begin_frame(nghttp2_session *ss, const nghttp2_frame_hd *hd, void *ud) {
    (void)ss;
    h2s_t *s;
    if ((hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_DATA) && (s = h2_slot((h2c_t *)ud, hd->stream_id))) {
        s->nbytes += (int64_t)hd->length + 9;
        if (s->t_first != s->t_first) /* NaN: the answer's first byte */
            s->t_first = ((h2c_t *)ud)->t_read;
    }
    return 0;
}

static int h2_on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *ud) {
    (void)ss;
    h2c_t *c = (h2c_t *)ud;
    h2s_t *s;
    size_t i;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        c->stats->goaways++;
        c->goaway = 1, c->last_id = f->goaway.last_stream_id, c->goaway_code = f->goaway.error_code;
    } else if (f->hd.type == NGHTTP2_RST_STREAM && (s = h2_slot(c, f->hd.stream_id)) != NULL) {
        s->code = f->rst_stream.error_code; /* counted by its code when its end is recorded */
        h2_ended(c, s, H2_END_RST);
    } else if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
        c->stats->spoke = 1;
        for (i = 0; i < f->settings.niv; i++)
            if (f->settings.iv[i].settings_id == NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                c->stats->max_concurrent = f->settings.iv[i].value;
    }
    return 0;
}

static int h2_on_stream_close(nghttp2_session *ss, int32_t id, uint32_t code, void *ud) {
    (void)ss;
    h2c_t *c = (h2c_t *)ud;
    h2s_t *s = h2_slot(c, id);
    if (s == NULL)
        return 0;
    if (c->goaway && id > c->last_id && !s->status)
        h2_ended(c, s, H2_END_GOAWAY);
    else
        h2_ended(c, s, code == NGHTTP2_NO_ERROR && s->status ? H2_END_DONE : H2_END_ERROR);
    s->id = -1; /* the stream is gone: its slot is free once recorded */
    return 0;
}

/* A request's HEADERS that never went out: after a GOAWAY, the stream is unprocessed. */
static int h2_on_not_send(nghttp2_session *ss, const nghttp2_frame *f, int err, void *ud) {
    (void)ss, (void)err;
    h2c_t *c = (h2c_t *)ud;
    h2s_t *s;
    if (f->hd.type == NGHTTP2_HEADERS && (s = h2_slot(c, f->hd.stream_id)) != NULL) {
        h2_ended(c, s, c->goaway ? H2_END_GOAWAY : H2_END_ERROR);
        s->id = -1;
    }
    return 0;
}

static ssize_t h2_body(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *ud) {
    (void)ss, (void)src;
    h2s_t *s = h2_slot((h2c_t *)ud, id);
    size_t size = s ? s->body_len : 0, off = s ? s->body_off : 0, n = size - off < len ? size - off : len;
    if (n) {
        memcpy(buf, s->body + off, n);
        s->body_off += n;
    }
    if (off + n >= size)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static nghttp2_session_callbacks *h2_callbacks(void) {
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return NULL;
    nghttp2_session_callbacks_set_on_header_callback(cb, h2_on_header);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, h2_on_begin_frame);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2_on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2_on_stream_close);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, h2_on_not_send);
    return cb;
}

/* A client session on connection `c`, its SETTINGS queued: no push, h2load's large windows (2^30 - 1). */
static int h2_session(h2c_t *c, nghttp2_session_callbacks *cb) {
    nghttp2_settings_entry iv[2] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (1U << 30) - 1}};
    if (nghttp2_session_client_new(&c->sess, cb, c) != 0)
        return -1;
    if (nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, 2) != 0 ||
        nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, (1 << 30) - 1) != 0)
        return -1;
    return 0;
}

/* Submit one request on slot `s`, its header fields and body; its stream id, or a negative nghttp2 error. */
static int32_t h2_submit(h2c_t *c, h2s_t *s, const nghttp2_nv *nva, size_t nvlen, const char *body, size_t len) {
    nghttp2_data_provider dp;
    dp.source.ptr = NULL;
    dp.read_callback = h2_body;
    s->body = body; /* three statements: a comma here would assign only the last one */
    s->body_len = len;
    s->body_off = 0;
    return nghttp2_submit_request(c->sess, NULL, nva, nvlen, len ? &dp : NULL, s);
}

/* Keep `n` more bytes to send (the socket took only part); -1: out of memory. */
static int h2_keep(h2c_t *c, const unsigned char *data, size_t n) {
    if (c->out_len + n > c->out_cap) {
        size_t cap = (c->out_len + n) * 2;
        unsigned char *p = (unsigned char *)realloc(c->out, cap);
        if (p == NULL)
            return -1;
        c->out = p, c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, n);
    c->out_len += n;
    return 0;
}

/* Whether the first `n` bytes an h2c server sent can start its preface, a SETTINGS frame: type 4, no ACK,
 * stream 0, a length in whole 6-byte settings within the default frame size. What cannot is not HTTP/2. */
static int h2_preface_ok(const unsigned char *p, size_t n) {
    uint32_t len = n >= 3 ? ((uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]) : 0;
    if ((n >= 3 && (len % 6 || len > 16384)) || (n >= 4 && p[3] != NGHTTP2_SETTINGS) || (n >= 5 && p[4] & 1))
        return 0;
    return n < 9 || ((p[5] & 0x7f) | p[6] | p[7] | p[8]) == 0;
}

/* Whether a SETTINGS frame has come on any connection of this load. */
static int h2_spoke(const h2stats_t *st) {
    return st->spoke;
}

/* "h2" was what ALPN chose; else what it chose goes in `out` ("" for none). */
static int h2_alpn_ok(SSL *s, char *out, size_t size) {
    const unsigned char *p;
    unsigned int n = 0;
    SSL_get0_alpn_selected(s, &p, &n);
    snprintf(out, size, "%.*s", (int)n, n ? (const char *)p : "");
    return n == 2 && memcmp(p, "h2", 2) == 0;
}

#endif

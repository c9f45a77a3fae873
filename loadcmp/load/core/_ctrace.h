/* A traced load in the compiled loops (docs/tracing.md): which requests carry a traceparent header, the header
 * written into a copy of the request, and one row per traced request pushed into a growing array.
 *
 * The draw is loadcmp/trace/ids.py's `splitmix64` (of the request's sequence number) against the share, so
 * the same requests are traced in every run and in either loop. A row is `trow_t`, read by its layout in
 * loadcmp/trace/rows.py (`row_dtype`) after the trial: no Python per request.
 */
#ifndef LOADCMP_CTRACE_H
#define LOADCMP_CTRACE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t seq;
    double t_intended, t_start, t_end; /* CLOCK_MONOTONIC seconds */
    float ph[5];                       /* connect, handshake, write, wait, read in ms; NaN: did not happen */
    int32_t nbytes, conn, stream;
    int16_t status, kind;              /* kind -1: unfinished */
    int32_t pad;
} trow_t;

typedef struct {
    trow_t *rows;
    int64_t n, cap;
} trows_t;

#define TROW_SIZE ((int)sizeof(trow_t))

static inline uint64_t trace_mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Is request `seq` traced: all of them, or its draw below `limit`. */
static inline int trace_sampled(uint64_t seq, int all, uint64_t limit) {
    return all || trace_mix(seq) < limit;
}

/* `v` as 16 lowercase hex digits at `p`. */
static inline void trace_hex16(char *p, uint64_t v) {
    static const char digits[] = "0123456789abcdef";
    int i;
    for (i = 15; i >= 0; i--) {
        p[i] = digits[v & 15];
        v >>= 4;
    }
}

/* A request's template (its bytes with the header of request 0) copied to `out`, request `seq`'s number written
 * in the trace-id's second half (at `at`) and as the parent-id (17 bytes on). */
static inline void trace_fill(char *out, const char *tmpl, int64_t size, int64_t at, uint64_t seq) {
    memcpy(out, tmpl, (size_t)size);
    trace_hex16(out + at, seq);
    trace_hex16(out + at + 17, seq);
}

/* A new row at the end of `t` (zeroed), or NULL when memory ran out. */
static inline trow_t *trows_push(trows_t *t) {
    trow_t *grown;
    if (t->n == t->cap) {
        int64_t cap = t->cap ? t->cap * 2 : 4096;
        grown = (trow_t *)realloc(t->rows, (size_t)cap * sizeof(trow_t));
        if (grown == NULL)
            return NULL;
        t->rows = grown;
        t->cap = cap;
    }
    memset(&t->rows[t->n], 0, sizeof(trow_t));
    return &t->rows[t->n++];
}

/* A loop's traced load: the draw, each request's template (`tmpl`, `tmpl_n` bytes, its number at `at`), each
 * client's copy of its traced request (`size` bytes apart in `buf`), the next number, the rows. */
typedef struct {
    int on, all;
    uint64_t limit, seq;
    char *const *tmpl;
    const int64_t *tmpl_n;
    int64_t *at;
    char *buf;
    int64_t size;
    trows_t rows;
    char value[56]; /* the header's value of request 0 ("00-<nonce>0..0-0..0-01", 55 characters): h2's */
} tracer_t;

static inline void tracer_free(tracer_t *t) {
    free(t->rows.rows);
    free(t->buf);
    free(t->at);
    memset(t, 0, sizeof(*t));
}

/* The next request's number in `*seq`, and whether it is traced: drawn, and `counted` (it may count). */
static inline int trace_draw(tracer_t *t, int counted, uint64_t *seq) {
    *seq = t->seq++;
    return t->on && counted && trace_sampled(*seq, t->all, t->limit);
}

/* Request `seq`'s header value (55 characters, no NUL) at `out`: h2 sends it as a header field of its own. */
static inline void trace_value(const tracer_t *t, char *out, uint64_t seq) {
    memcpy(out, t->value, 55);
    trace_hex16(out + 19, seq);
    trace_hex16(out + 36, seq);
}

/* The next request's number in `*seq`; traced (drawn, and `counted`: it may count): 1, client `client`'s copy of
 * request `req` with its header in `*out` (`*out_n` bytes). Else 0, `*out` left as it was. */
static inline int trace_begin(tracer_t *t, int64_t client, int req, int counted, uint64_t *seq, char **out,
                              int64_t *out_n) {
    char *b;
    if (!trace_draw(t, counted, seq))
        return 0;
    b = t->buf + client * t->size;
    trace_fill(b, t->tmpl[req], t->tmpl_n[req], t->at[req], *seq);
    *out = b;
    *out_n = t->tmpl_n[req];
    return 1;
}

static inline char *trows_data(tracer_t *t) {
    return (char *)t->rows.rows;
}

/* Request `seq`'s row: ended as `kind` at `t_end` with its `phases` (seconds; NULL: none), or unfinished (kind -1,
 * or an end at or after the window's close `t_close`). -1: memory ran out. */
static inline int trace_row(tracer_t *t, uint64_t seq, int kind, double t_intended, double t_start, double t_end,
                            double t_close, int status, const double *phases, int64_t nbytes, int32_t conn) {
    int j;
    trow_t *r = trows_push(&t->rows);
    if (r == NULL)
        return -1;
    if (t_end >= t_close || kind < 0) {
        kind = -1;
        status = 0;
        phases = NULL;
    }
    r->seq = seq;
    r->t_intended = t_intended;
    r->t_start = t_start;
    r->t_end = t_end;
    for (j = 0; j < 5; j++)
        r->ph[j] = phases != NULL ? (float)(phases[j] * 1000.0) : (float)NAN;
    r->nbytes = (int32_t)nbytes;
    r->conn = conn;
    r->status = (int16_t)status;
    r->kind = (int16_t)kind;
    return 0;
}

#endif

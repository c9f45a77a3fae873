/* A traced load in the compiled loops (docs/tracing.md): which requests carry a traceparent header, the header
 * written into a copy of the request, and one row per traced request pushed into a growing array.
 *
 * The draw is loadcmp/trace/ids.py's `mix` (splitmix64 of the request's sequence number) against the share, so
 * the same requests are traced in every run and in either loop. A row is `trow_t`, read by its layout in
 * loadcmp/trace/rows.py (`row_dtype`) after the trial: no Python per request.
 */
#ifndef LOADCMP_CTRACE_H
#define LOADCMP_CTRACE_H

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

static inline void trows_free(trows_t *t) {
    free(t->rows);
    t->rows = NULL;
    t->n = t->cap = 0;
}

#endif

/* What the compiled loop (_cloop.pyx) records of each ended request, counted in C: its
 * outcome, bytes, status code, latency and service time, and its phases, summed over one
 * second of the window until they are handed to the recorder (`Recorder.add_tally`).
 *
 * Per request this is a few additions and a log() per histogram, and a hand-over costs
 * the same whatever the rate: handing over every request as a row (numpy, then folding
 * the raw latencies once a second) cost ~1.4 us a request, and stalled the loop for
 * milliseconds at a time, which a fast server then spent idle. The buckets are
 * histogram.py's: floor(ln(max(us, 1)) / ln(1.01)), dense here, made sparse at the hand-over.
 */
#ifndef LOADCMP_CTALLY_H
#define LOADCMP_CTALLY_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define T_BUCKETS 2400 /* 1 us .. 1.01^2400 us (6.6 hours); a longer value counts in the last bucket */
#define T_KINDS 11     /* outcomes.KINDS */
#define T_HTTP_5XX 2   /* kinds 0..T_HTTP_5XX (ok, http_4xx, http_5xx) had a complete response */
#define T_STATUS 1000  /* recorder.STATUS_SLOTS */
#define T_PHASES 5     /* result.PHASES: connect, handshake, write, wait, read */

typedef struct {
    int64_t cnt[T_BUCKETS];
    int64_t n;
    double total, sq, min, max; /* of the values themselves (seconds), exact */
} hist_t;

typedef struct {
    int64_t sec; /* the window's second the requests ended in; -1 while there are none */
    int64_t ended;
    int64_t counts[T_KINDS];
    int64_t bytes;
    double last_end;
    hist_t lat, svc; /* from the intended start; from the send, when that differs */
    hist_t phase[T_PHASES];
    int64_t status[T_STATUS];
} tally_t;

/* One page's share of a tally's second (a load of several pages, pageset.py): what
 * `Recorder.done` records of a request under its `page`. */
typedef struct {
    int64_t ended, bytes, expected, as_expected;
    int64_t counts[T_KINDS];
    hist_t lat;
    int64_t status[T_STATUS];
} page_t;

static const double T_LOG_BASE = 0.009950330853168092; /* ln(1.01), as math.log(1.01) gives it */

static void hist_reset(hist_t *h) {
    memset(h, 0, sizeof(*h));
    h->min = INFINITY;
}

static void tally_reset(tally_t *t) {
    int j;
    t->sec = -1;
    t->ended = t->bytes = 0;
    t->last_end = 0.0;
    memset(t->counts, 0, sizeof(t->counts));
    memset(t->status, 0, sizeof(t->status));
    hist_reset(&t->lat);
    hist_reset(&t->svc);
    for (j = 0; j < T_PHASES; j++)
        hist_reset(&t->phase[j]);
}

static void page_reset(page_t *p) {
    memset(p, 0, sizeof(*p));
    p->lat.min = INFINITY;
}

static inline int hist_bucket(double v) {
    double us = v * 1e6, b = us > 1.0 ? floor(log(us) / T_LOG_BASE) : 0.0; /* NaN and below 1 us: 0 */
    return b < T_BUCKETS ? (int)b : T_BUCKETS - 1;
}

/* `v` into `h`, in bucket `b` (`hist_bucket(v)`: a value counted twice is bucketed once). */
static inline void hist_add_at(hist_t *h, double v, int b) {
    h->cnt[b]++;
    h->n++;
    h->total += v;
    h->sq += v * v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

static inline void hist_add(hist_t *h, double v) {
    hist_add_at(h, v, hist_bucket(v));
}

/* A phase that happened (not NaN), negative clock steps read as 0 as histogram.py does. */
static inline void phase_add(hist_t *h, double v) {
    if (!isnan(v))
        hist_add(h, v > 0.0 ? v : 0.0);
}

/* One counted request that ended at `t_end` as `kind` (with `status` and its phases when it
 * had a response): what `Recorder.done` records of it. `b`: its latency's bucket, -1 not known yet. */
static inline void tally_add_b(tally_t *t, int kind, int status, double t_intended, double t_sent, double t_end,
                               int64_t nbytes, const double phases[T_PHASES], int b) {
    int j;
    double lat = t_end - t_intended;
    t->ended++;
    t->counts[kind]++;
    t->bytes += nbytes;
    if (t_end > t->last_end)
        t->last_end = t_end;
    if (kind > T_HTTP_5XX)
        return;
    hist_add_at(&t->lat, lat, b >= 0 ? b : hist_bucket(lat));
    if (t_sent != t_intended)
        hist_add(&t->svc, t_end - t_sent);
    if (status > 0 && status < T_STATUS)
        t->status[status]++;
    for (j = 0; j < T_PHASES; j++)
        phase_add(&t->phase[j], phases[j]);
}

static inline void tally_add(tally_t *t, int kind, int status, double t_intended, double t_sent, double t_end,
                             int64_t nbytes, const double phases[T_PHASES]) {
    tally_add_b(t, kind, status, t_intended, t_sent, t_end, nbytes, phases, -1);
}

/* The same request under its page `p` (NULL: the load has one page), expected to answer `expect` (0: any):
 * its latency bucketed once for both. */
static inline void tally_add_page(tally_t *t, page_t *p, int kind, int status, int expect, double t_intended,
                                  double t_sent, double t_end, int64_t nbytes, const double phases[T_PHASES]) {
    double lat = t_end - t_intended;
    int b = -1;
    if (p == NULL) {
        tally_add_b(t, kind, status, t_intended, t_sent, t_end, nbytes, phases, -1);
        return;
    }
    p->ended++;
    p->counts[kind]++;
    p->bytes += nbytes;
    if (expect) {
        p->expected++;
        p->as_expected += status == expect;
    }
    if (kind <= T_HTTP_5XX) {
        b = hist_bucket(lat);
        hist_add_at(&p->lat, lat, b);
        if (status > 0 && status < T_STATUS)
            p->status[status]++;
    }
    tally_add_b(t, kind, status, t_intended, t_sent, t_end, nbytes, phases, b);
}

#endif

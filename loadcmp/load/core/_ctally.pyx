# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""What the recorder keeps of each request, counted in C for the compiled loop (`_cloop.pyx`).

`Recorder.start` and `Recorder.done` are Python calls: once a request each, with the
rows handed over in batches and folded into histograms by numpy once a second, they
cost Python per request and stall the loop while a batch is folded, which a fast server
spends idle (docs/benchmark.md). `CTally` counts the starts and -n tickets itself and sums each ended
request into its second (`_ctally.h`); the recorder gets the sums (`add_started`,
`add_tally`) when a second ends and when the driver asks, at a cost that does not grow
with the rate.
"""

from libc.stdlib cimport calloc, free, malloc

import numpy

from ..record.histogram import _LOG_BASE, MAX_BUCKET, Histogram
from ..record.outcomes import HTTP_5XX, KINDS
from ..record.recorder import PHASES, STATUS_SLOTS, PageSecond, Tally

include "_cbuilt.pxi"

if (T_KINDS != len(KINDS) or T_HTTP_5XX != HTTP_5XX or T_STATUS != STATUS_SLOTS or T_PHASES != len(PHASES)
        or T_BUCKETS != MAX_BUCKET + 1 or T_LOG_BASE != _LOG_BASE):  # a build of older sources
    raise ImportError("_ctally.h does not count what the recorder keeps: build it again (make setup)")

cdef object _hist(hist_t *h):
    return Histogram.from_buckets(numpy.frombuffer((<char *>h.cnt)[:T_BUCKETS * sizeof(int64_t)], numpy.int64),
                                  h.total, h.max, h.min, h.sq)


cdef class CTally:
    """What `Recorder.start` and `Recorder.done` do, in C for the compiled loop: the starts
    and -n tickets, and each ended request summed into its second (`_ctally.h`), handed
    to the recorder (`add_started`, `add_tally`) when a second ends and on `flush`."""

    def __init__(self, rec):
        self.rec = rec
        self.t0, self.t_end, self.nsec = rec.t0, rec.end, rec.nsec
        self.requests = -1 if rec.requests is None else rec.requests
        self.start_sec = -1
        self.t = <tally_t *>malloc(sizeof(tally_t))
        self.npages = len(rec.pages)
        self.pages = <page_t *>calloc(max(self.npages, 1), sizeof(page_t))
        if not self.t or not self.pages:
            raise MemoryError()
        tally_reset(self.t)
        for k in range(self.npages):
            page_reset(&self.pages[k])

    def __dealloc__(self):
        free(self.t)
        free(self.pages)

    cdef int start(self, double t) except -2:
        """A request begins at `t`: 1 it counts, 0 it does not (the warm-up's, sent all the
        same), -1 it may not start (the window has closed, or no -n ticket is left)."""
        cdef int64_t sec
        if t < self.t0:
            self.warm_n += 1
            return 0
        if t >= self.t_end or self.spent():
            return -1
        sec = min(<int64_t>(t - self.t0), self.nsec - 1)
        if sec != self.start_sec and self.start_n:
            self.flush()
        self.start_sec = sec
        if not self.started:
            self.first_start = t
        self.started += 1
        self.start_n += 1
        return 1

    cdef int end(self, int kind, int status, double t_intended, double t_sent, double t, int64_t nbytes,
                 const double *phases, int page, int expect) except -1:
        """A counted request ended at `t`, recorded under `page` too (-1: the load has one), expected to answer
        `expect` (0: any); one that ends after the window stays unfinished."""
        cdef int64_t sec
        if t >= self.t_end:
            return 0
        sec = min(<int64_t>(t - self.t0), self.nsec - 1)
        if sec != self.t.sec and self.t.sec >= 0:
            self.flush()
        self.t.sec = sec
        tally_add_page(self.t, &self.pages[page] if 0 <= page < self.npages else NULL, kind, status, expect,
                       t_intended, t_sent, t, nbytes, phases)
        return 0

    cdef bint spent(self) noexcept:
        """Every -n ticket is taken."""
        return 0 <= self.requests <= self.started

    cdef void take_back(self, double t) except *:
        """A counted start at `t` that never reached the server (h2: a graceful GOAWAY left its stream
        unprocessed, to be sent again): uncounted, and its -n ticket given back (`Recorder.unsent`)."""
        self.started -= 1
        if self.start_n and min(<int64_t>(t - self.t0), self.nsec - 1) == self.start_sec:
            self.start_n -= 1  # not handed over yet
        else:
            self.rec.unsent(t, True)

    cpdef flush(self):
        """Hand what was counted to the recorder: the starts first, so nothing ends before it began."""
        cdef tally_t *t = self.t
        cdef int k
        cdef int64_t start_n = self.start_n, warm_n = self.warm_n
        if start_n or warm_n:
            self.start_n = self.warm_n = 0  # cleared first: a hand-over that raised is not made twice
            self.rec.add_started(self.start_sec, start_n, warm_n, self.first_start)
        if t.ended:
            done = Tally(t.sec, [t.counts[k] for k in range(T_KINDS)], t.bytes, _hist(&t.lat),
                         _hist(&t.svc) if t.svc.n else None, {k: t.status[k] for k in range(T_STATUS) if t.status[k]},
                         [_hist(&t.phase[k]) for k in range(T_PHASES)], t.last_end)
            if self.npages:
                done.pages, done.page_status = self._pages()
            tally_reset(t)
            self.rec.add_tally(done)

    cdef tuple _pages(self):
        """Each page's share of the second handed over, and its status codes; the pages reset."""
        cdef page_t *p
        shares, codes = [], []
        for j in range(self.npages):
            p = &self.pages[j]
            shares.append(PageSecond([p.counts[k] for k in range(T_KINDS)], p.bytes, p.expected, p.as_expected,
                                     lat_h=_hist(&p.lat)) if p.ended else PageSecond())
            codes.append({k: p.status[k] for k in range(T_STATUS) if p.status[k]} if p.ended else {})
            if p.ended:
                page_reset(p)
        return shares, codes


cdef class CRequests:
    """The requests of a load (`FastEngine.request_list`), the page each is recorded as and the status it is
    expected to answer, and their sequence (`pages.Pages`), as C arrays the compiled loop walks (`next`) with
    no Python per request. A load of one page: one request, no page, a sequence of one."""

    def __init__(self, requests, pages):
        cdef Py_ssize_t i, n = len(requests)
        self.requests = tuple(requests)
        order = pages.order if pages is not None else (0,)
        self.norder = len(order)
        self.pos, self.step = (pages.offset % self.norder, pages.step) if pages is not None else (0, 1)
        self.data = <char **>malloc(n * sizeof(char *))
        self.size = <Py_ssize_t *>malloc(n * sizeof(Py_ssize_t))
        self.page_of = <int *>malloc(n * sizeof(int))
        self.expect = <int *>malloc(n * sizeof(int))
        self.head = <char *>malloc(n * sizeof(char))
        self.order = <unsigned int *>malloc(self.norder * sizeof(unsigned int))
        if not (self.data and self.size and self.page_of and self.expect and self.head and self.order):
            raise MemoryError()
        page_of = pages.page_index if pages is not None else (-1,)
        expect = pages.expected if pages is not None else (0,)
        for i in range(n):
            self.data[i] = <char *>(<bytes>self.requests[i])
            self.size[i] = len(self.requests[i])
            self.page_of[i], self.expect[i] = page_of[i], expect[i]
            self.head[i] = (<bytes>self.requests[i]).startswith(b"HEAD ")
        for i in range(self.norder):
            self.order[i] = order[i]

    def __dealloc__(self):
        free(self.data); free(self.size); free(self.page_of); free(self.expect); free(self.head); free(self.order)

    def walk(self, int n):
        """The next `n` requests' indices, as the compiled loop takes them. For the tests."""
        return [self.next() for _ in range(n)]


def tally(rec, events):
    """Count `events` in their order as the loop does, into `rec`: a start at a time (a float),
    an end (kind, status, t_intended, t_sent, t_end, nbytes, (connect, handshake, write, wait, read)),
    or None, a hand-over (the driver's `settle`); an end may add (page, expect). What each start was answered.
    For the tests."""
    cdef CTally tl = CTally(rec)
    cdef double ph[T_PHASES]
    got = []
    for ev in events:
        if ev is None:
            tl.flush()
        elif isinstance(ev, float):
            got.append(tl.start(ev))
        else:
            kind, status, t_intended, t_sent, t_end, nbytes, phases = ev[:7]
            page, expect = ev[7:9] if len(ev) > 7 else (-1, 0)
            for k in range(T_PHASES):
                ph[k] = phases[k]
            tl.end(kind, status, t_intended, t_sent, t_end, nbytes, ph, page, expect)
    tl.flush()
    return got

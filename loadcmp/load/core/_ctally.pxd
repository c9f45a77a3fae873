# What the compiled loop counts of each request (_ctally.pyx, _ctally.h): declared here so
# that _cloop.pyx calls CTally's methods in C.

from libc.stdint cimport int64_t

cdef extern from "_ctally.h" nogil:
    enum: T_BUCKETS, T_KINDS, T_HTTP_5XX, T_STATUS, T_PHASES
    const double T_LOG_BASE
    ctypedef struct hist_t:
        int64_t cnt[T_BUCKETS]
        int64_t n
        double total, sq, min, max
    ctypedef struct tally_t:
        int64_t sec, ended, bytes
        int64_t counts[T_KINDS]
        double last_end
        hist_t lat, svc
        hist_t phase[T_PHASES]
        int64_t status[T_STATUS]
    ctypedef struct page_t:
        int64_t ended, bytes, expected, as_expected
        int64_t counts[T_KINDS]
        hist_t lat
        int64_t status[T_STATUS]
    void tally_reset(tally_t *)
    void page_reset(page_t *)
    void tally_add_page(tally_t *, page_t *, int, int, int, double, double, double, int64_t, const double *)

cdef class CRequests:
    cdef tuple requests  # each request's bytes (`FastEngine.request_list`), kept alive for `data`
    cdef char **data
    cdef Py_ssize_t *size
    cdef int *page_of  # request -> recorded page (-1: a load of one page), and the status it expects (0: any)
    cdef int *expect
    cdef char *head  # request -> its answer is a head alone (HEAD: a replayed log mixes it with GET)
    cdef unsigned int *order  # pages.Pages.order, walked from `pos` (< norder) by `step`, cycled
    cdef Py_ssize_t norder, pos, step

    cdef inline int next(self) noexcept:
        cdef int r = self.order[self.pos]
        self.pos += self.step
        while self.pos >= self.norder:  # no division per request
            self.pos -= self.norder
        return r


cdef class CTally:
    cdef tally_t *t  # the counted requests that ended in one second, not handed to the recorder yet
    cdef page_t *pages  # a load of several pages: each one's share of `t`, by page index
    cdef int npages
    cdef object rec
    cdef int64_t start_sec, start_n, warm_n  # the starts not handed over yet
    cdef int64_t started, requests, nsec  # counted starts in all; -n (-1: no limit)
    cdef double t0, t_end, first_start

    cdef int start(self, double t) except -2
    cdef int end(self, int kind, int status, double t_intended, double t_sent, double t, int64_t nbytes,
                 const double *phases, int page, int expect) except -1
    cdef bint spent(self) noexcept
    cdef void take_back(self, double t) except *
    cpdef flush(self)
    cdef tuple _pages(self)

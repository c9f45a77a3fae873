# --trace in C (_ctrace.h): the draw, the header written into a request (h1) or as its value (h2), a row per
# traced request; cimported by the compiled loops' base (core/_cbase.pxd: CBase.tr) and the loops (h1/_cloop.pxd,
# h2/_ch2conn.pxd).

from libc.stdint cimport int32_t, int64_t, uint64_t

cdef extern from "_ctrace.h" nogil:
    ctypedef struct trow_t:
        int32_t stream
    ctypedef struct trows_t:
        trow_t *rows
        int64_t n
    ctypedef struct tracer_t:
        int on, all
        uint64_t limit, seq
        char **tmpl
        int64_t *tmpl_n
        int64_t *at
        char *buf
        int64_t size
        trows_t rows
        char value[56]
    enum: TROW_SIZE
    void tracer_free(tracer_t *)
    char *trows_data(tracer_t *)
    int trace_draw(tracer_t *, int, uint64_t *)
    void trace_value(const tracer_t *, char *, uint64_t)
    int trace_begin(tracer_t *, int64_t, int, int, uint64_t *, char **, int64_t *)
    int trace_row(tracer_t *, uint64_t, int, double, double, double, double, int, const double *, int64_t, int32_t)

# The compiled h2 engine's streams (_ch2conn.pyx's H2Conns, on _ch2link.pxd's H2Link, whose C declarations it
# passes on); _ch2.pyx's H2Loop subclasses it.

from ._ch2link cimport *
from ..core._ctrace cimport *


cdef class H2Conns(H2Link):
    cdef nghttp2_nv *tnv  # a traced stream's header fields: its request's, then traceparent
    cdef void _submit_traced(self, h2c_t *c, h2s_t *s) except *
    cdef void _trace_row(self, h2s_t *s, int kind, double t, int status, const double *phases) except *
    cdef int _begin(self, h2s_t *s, double t) except -2
    cdef void _ready(self, h2c_t *c) except *
    cdef void _submit(self, h2c_t *c, h2s_t *s) except *
    cdef void _fill(self, h2c_t *c, double t) except *
    cdef void _pump(self, h2c_t *c, double t) except *
    cdef bint _flush(self, h2c_t *c) except *
    cdef void _readable(self, h2c_t *c) except *
    cdef void _settle(self, h2c_t *c, double t) except *
    cdef void _record(self, h2s_t *s, int kind, double t, int status) except *
    cdef void _unprocessed(self, h2c_t *c, h2s_t *s, double t) except *
    cdef void _end_all(self, h2c_t *c, int kind, double t) except *
    cdef int _arrive(self, double due, int req) except -2
    cdef void _fill_open(self, h2c_t *c, double t, int limit) except *
    cdef int _sent(self, h2c_t *c) noexcept
    cdef inline int _rank(self, h2c_t *c) noexcept

# The sources a compiled module was built from, included by each .pyx: setup.py defines LOADCMP_BUILT_FROM
# as "file:digest ..." over the module's own sources (its .pyx and `depends`), and `compiled.py` runs a
# module only while those files still have those digests (an editable install not built again does not).
cdef extern from *:
    """
    #ifndef LOADCMP_BUILT_FROM
    #define LOADCMP_BUILT_FROM ""
    #endif
    """
    const char *LOADCMP_BUILT_FROM

BUILT_FROM = (<bytes>LOADCMP_BUILT_FROM).decode()

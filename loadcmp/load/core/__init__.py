"""The compiled core the loops build on, the contract between an engine and its loop, and whether a build is current.

    compiled.py   whether a compiled loop runs: built from the sources as they are (BUILT_FROM, _cbuilt.pxi) and
                  wanted (not LOADCMP_PURE_PYTHON=1); each room asks it of its own loop
    host.py       the contract between an engine and the loop it hosts (Host ...; Loop), typed; the compiled
                  modules' stubs (_cbase.pyi, _ctally.pyi, and each room's) name it
    _cbase.pyx    CBase (_cbase.pxd): its own epoll set, a reader of the running loop; the deadline tick, the
                  crash, the stop; the clock and a status's kind, inline; C declarations in _csys.pxd, socket
                  addresses in _cnet.h
    _ctally.pyx   what the recorder keeps of each request, counted in C (_ctally.pxd, _ctally.h) and handed
                  over once a second, per page too; CRequests: a load's pages' requests and sequence in C
    _ctrace.h     --trace in C: the share drawn, the traceparent header written into a copy of a request, one row
                  per traced request in a growing array (CBase holds it for h1's and h2's loops; trace/rows.py
                  reads the rows)

Imports go one way: host, compiled; _cbase, _ctally -> ../record; host -> ../spec, ../target (types).
"""

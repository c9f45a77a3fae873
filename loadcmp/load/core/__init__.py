"""The compiled core the loops build on, and which loop runs.

    compiled.py   which loop runs: the compiled one (built from the sources as they are: BUILT_FROM, _cbuilt.pxi)
                  or pure Python (LOADCMP_PURE_PYTHON=1, or not built)
    host.py       the contract between an engine and the loop it hosts (Host ...; Loop), typed; the compiled
                  modules' stubs (_cbase.pyi, _ctally.pyi, and each room's) name it
    _cbase.pyx    CBase (_cbase.pxd): its own epoll set, a reader of the running loop; the deadline tick, the
                  crash, the stop; the clock and a status's kind, inline; C declarations in _csys.pxd, socket
                  addresses in _cnet.h
    _ctally.pyx   what the recorder keeps of each request, counted in C (_ctally.pxd, _ctally.h) and handed
                  over once a second, per page too; CRequests: a load's pages' requests and sequence in C

Imports go one way: compiled -> host -> _cbase, _ctally -> ../record, ../driver.
"""

"""HTTP/2: h2 over TLS (ALPN) and h2c in cleartext (prior knowledge), -c connections x -m streams.

    engine.py     H2Engine: -c connections of -m streams, the closed schedule's only
    loops.py      which loop it hosts: the compiled one (_ch2) or the fallback (h2py)
    _ch2.pyx      H2Loop: the Python side, epoll, deadlines, the hand-over (a CBase of core/)
    _ch2conn.pyx  H2Conns: a connection's nghttp2 session, streams, reads and writes, in C (_ch2conn.pxd, and _ch2.h:
                  nghttp2's callbacks, which only mark a stream's end)
    _ch2link.pyx  H2Link, the base of H2Conns: a connection's TCP and TLS (tls/_cssl.pxd), opened and closed, in C
                  (_ch2link.pxd: the C declarations the three share); stubs _ch2.pyi, _ch2conn.pyi, _ch2link.pyi;
                  built where nghttp2's and OpenSSL's headers are
    h2py.py       the fallback: the `h2` package over asyncio, flagged client-bound wherever it runs

Imports go one way: engine -> loops -> _ch2 -> _ch2conn -> _ch2link -> ../tls, ../core; loops -> h2py.
"""

"""TLS for every engine: one SSL context per load and a handshake before it, and OpenSSL from C for the
compiled loops (h1's TLSLoop, h2's connections).

    context.py    the SSL context (ALPN offers the protocol's row), the handshake before a load (a server whose
                  ALPN says otherwise stops it there)
    _ctls.h       the context, the chain's check, the saved sessions, each step's result, in C; declared once
                  for Cython in _cssl.pxd

Imports go one way: context -> ../target. The rooms that speak TLS import this one, never the other way.
"""

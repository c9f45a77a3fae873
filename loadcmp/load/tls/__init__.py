"""https: one SSL context per load and a handshake before it, and the compiled loop over OpenSSL.

    context.py    the SSL context for both engines (ALPN offers the protocol's row), the handshake before a
                  load (a server whose ALPN says otherwise stops it there)
    _ctls.pyx     TLSLoop, a CLoop (h1/) whose virtual C methods speak TLS: OpenSSL from C (_ctls.h, declared
                  once in _cssl.pxd for it and h2/); built where OpenSSL's headers are; its stub _ctls.pyi

Imports go one way: _ctls -> ../h1/_cloop, ../core; context -> the kernel.
"""

"""HTTP/3 over QUIC (qh3), imported only when an h3 load is made.

    engine.py     H3Engine: -c connections of -m streams, every stream's end counted, every schedule
    altsvc.py     before an h3 load: the server's Alt-Svc read over TCP, one QUIC handshake checked (v1, h3)

Imports go one way: engine -> ../driver; altsvc -> ../tls.
"""

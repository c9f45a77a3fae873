"""HTTP/3 over QUIC (qh3), imported only when an h3 load is made.

    engine.py     H3Engine: -c connections of -m streams, every schedule, one page or a load's pages; its
                  Connections (the journeys' too): a request a GOAWAY left unprocessed sent again on a new one
    conn.py       Conn: one QUIC connection's streams, each stream's end an outcome; opening one, checked
    altsvc.py     before an h3 load: the server's Alt-Svc read over TCP, one QUIC handshake checked (v1, h3)

Imports go one way: engine -> conn -> ../driver; altsvc -> conn, ../tls.
"""

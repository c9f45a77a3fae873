"""HTTP/1.x: how the fast engine and the aiohttp engine send requests.

    engine.py     FastEngine (uvloop + httptools): the closed loop compiled (_cloop) or in Python, ramp and rate
                  from coroutines; with conn.py (Conn, Slot: a keep-alive connection and its slot)
    conn.py       a keep-alive connection and the slot a request waits in
    rawclient.py  the pure-Python closed loop without keep-alive (a new connection per request, no transports)
    aio.py        AiohttpEngine (TLS, redirects)
    loops.py      which closed loop runs: the compiled one (over https the TLS one) or the pure-Python clients
    _cloop.pyx    the compiled closed loop (Cython, with _cloop.pxd and its HTTP/1 response reader _chttp.h), a
                  CBase of core/; its stub _cloop.pyi
    paced.py      the Python loop's client behaviours (`..pacing`): a request trickled, a response held back
    _cthink.pyx   ThinkLoop: a CLoop whose clients think (--think), with each client's timers of the running loop
                  (with _cthink.pxd); PacedLoop and TLSLoop build on it; its stub _cthink.pyi
    _cpaced.pyx   PacedLoop: the compiled loop's behaviours over http, a ThinkLoop that also paces its writes and
                  reads; its stub _cpaced.pyi
    _ctls.pyx     TLSLoop: https in the compiled loop, a ThinkLoop whose virtual C methods speak TLS (OpenSSL from
                  C, ../tls/_ctls.h); built where OpenSSL's headers are; its stub _ctls.pyi

Imports go one way: engine -> conn -> paced, rawclient, loops -> _ctls, _cpaced -> _cthink -> _cloop -> ../tls,
../core.
"""

"""The load generator: schedules (when), engines (how), recorder (what happened).

    workers.py    run_load: one load in this process or several; Stopper
    engines.py    the engine registry: which engine sends which protocol under which --engine name, compiled
                  or not; make_engine, engine_path and the engine problems derived from it
    spec.py       LoadSpec (what an engine is given), Live (what it says once a second)
    driver.py     the Engine base (re-exporting LoadSpec, Live): schedule loops, the window, the
                  once-a-second ticker that samples the load thread itself, `next_request` (a load of pages)
    pages.py      Pages: several pages in one load, their requests and sequence; Cursor walks it
    http1.py      FastEngine (uvloop + httptools), with conn.py (Conn, Slot)
                  and rawclient.py (the closed loop without keep-alive)
    compiled.py   which closed loop runs: the compiled one (built from the sources beside it: BUILT_FROM,
                  _cbuilt.pxi) or pure Python
    host.py       the contract between an engine and the loop it hosts (Host ...; Loop), typed; the compiled
                  modules' stubs (_cloop.pyi, _ctls.pyi, _ch2.pyi, _ch2conn.pyi, _ctally.pyi, _cbase.pyi) name it
    _cbase.pyx    what every compiled loop builds on (_cbase.pxd): its own epoll set, a reader of the running
                  loop; the deadline tick, the crash, the stop; the clock and a status's kind, inline
    _cloop.pyx    the compiled closed loop (Cython, with _cloop.pxd, _csys.pxd, _chttp.h, _cnet.h), a CBase
    _ctally.pyx   what the recorder keeps of each request, counted in C (_ctally.pxd, _ctally.h) and handed
                  over once a second, per page too; CRequests: a load's pages' requests and sequence in C
    _ctls.pyx     https in the compiled loop: TLSLoop, a CLoop over OpenSSL from C (_ctls.h, declared once
                  in _cssl.pxd for it and _ch2); built where OpenSSL's headers are
    _ch2.pyx      the compiled h2 loop: H2Loop, -c connections x -m streams over libnghttp2 (h2 over TLS
                  with ALPN, h2c by prior knowledge); its connections in _ch2conn.pyx (_ch2conn.pxd, _ch2.h);
                  built where nghttp2's and OpenSSL's headers are
    h2engine.py   H2Engine: h2 and h2c, -c connections x -m streams, its loop _ch2's H2Loop or h2py's
    h2py.py       the h2 fallback: the `h2` package over asyncio, flagged client-bound wherever it runs
    aio.py        AiohttpEngine (TLS, redirects)
    h3.py         H3Engine: HTTP/3 over QUIC (qh3), -c connections of -m streams, every stream's end counted
    altsvc.py     before an h3 load: the server's Alt-Svc read over TCP, one QUIC handshake checked (v1, h3)
    tls.py        https for both engines: one SSL context per load, a handshake before it
    target.py     Target, make_target: the URL and the request bytes
    schedules.py  Closed, Ramp, Rate: when requests are due
    outcomes.py   outcome kinds; socket error / HTTP status -> kind
    recorder.py   per-second counts and histograms, filled as responses end
    result.py     Result: a finished measurement's per-second buckets and totals (mergeable)
    journeytally.py  what a load's journeys did: completions, the step each failed at, each step's tally
    histogram.py  latency histograms that merge exactly (sparse, log-bucketed, 1 % wide)
    summary.py    Result -> records.LoadSummary and timeline rows
    limits.py     the open-file limit: check_nofile, raise_nofile
    saturation.py is the client the bottleneck? thresholds, judgement, advice
    cluster.py    a load's shares on a Dask cluster's workers (--cluster), merged as --workers merges

Imports go one way: cluster -> workers -> engines.py -> the engines (altsvc -> h3) -> compiled, host -> driver -> spec
-> schedules, pages -> target, recorder -> result -> histogram, outcomes, saturation -> records (no pandas in a load
process). Nothing here installs
a signal handler in the caller's process: the command owns SIGINT (worker processes, ours, ignore it).
"""

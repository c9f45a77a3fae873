"""The load generator: what to request and when (here), how it is sent (a room per protocol and the compiled
core they build on), what happened (record/) and where it runs (run/).

At the top, the contract every room reads:

    spec.py       LoadSpec (what an engine is given), Live (what it says once a second)
    target.py     Target, make_target: the URL and the request bytes, checked against the protocol's row
    schedules.py  Closed, Ramp, Rate: when requests are due
    pageset.py    Pages: several pages in one load, their requests and sequence; Cursor walks it
    pacing.py     Pacing: clients that behave like people (--think, --send-rate, --read-rate), checked and described
    driver.py     the Engine base (re-exporting LoadSpec, Live): schedule loops, the window, the
                  once-a-second ticker that samples the load thread itself, `next_request` (a load of pages)
    traced.py     Traced, an Engine that traces (--trace): this trial's tracer made, its rows put in the result
    engines.py    the engine registry: which engine sends which protocol under which --engine name, compiled
                  or not; make_engine, engine_path and the engine problems derived from it

The rooms, each with its map in its own docstring:

    h1/           HTTP/1.x: FastEngine (uvloop + httptools, its compiled closed loops _cloop and, over https,
                  _ctls), the aiohttp engine
    tls/          TLS for every engine: the SSL context, the handshake before a load, OpenSSL from C
    h2/           HTTP/2 (h2 over TLS, h2c in cleartext): H2Engine, its compiled loop over libnghttp2, the fallback
    h3/           HTTP/3 over QUIC (qh3), the server's Alt-Svc found first
    core/         what the compiled loops share: the base, the C tally, the host contract, whether a build is current
    record/       what happened: outcomes, the recorder, results, histograms, summaries, the client's own load
    run/          where: one load in this process or several, on a Dask cluster; the open-file limit

Imports go one way between the rooms: run -> engines.py -> h1, h2, h3 -> tls, core -> traced -> driver -> spec -> record
-> schedules, pageset -> target, pacing -> the kernel (no pandas in a load process). Nothing here installs a signal
handler in the caller's process: the command owns SIGINT (worker processes, ours, ignore it).
"""

"""Traffic as a site gets it: weighted page mixes, access-log replay and user journeys.

Each source turns what a user gives (a `--mix`, an access log, a journey file) into what the load
engines send: the pages, and the order and times they are due in. It sits above the load (it hands the
engines plain, prepared data and may build on their base) and below the lab (an app's shipped journeys are
read with it).

    source.py     a run's traffic as one value (`Traffic`: one page, a mix, a replay, journeys): what each kind does
                  for the rest of the house (its schedule, window, `Pages`, primer pages, engine plan, stored
                  result, words), run.json's flat keys written back (`fields`)
    fits.py       what goes with what, decided once: the value from flags and file keys (`traffic_of`: one source,
                  a replay's flags only with a replay, --seed only with a draw), and beside the rest of the run
                  (`problems`: the protocol table's `sources`, the schedule, -n, the page, the warm-up, an app)
    mix.py        weighted mixes: `--mix` and `[mix]` parsed and checked, the seeded draw, the load's `Pages`
    logs.py       access logs read whole (nginx's and Apache's combined and common, JSON lines; detected or
                  given), the first bad line named, a few bad lines counted
    logreplay.py  an access log made a replay (logs -> logreplay): what is sent, in which order, when (the `Replay`
                  schedule's due times at Nx, the closed loop at max), what each expects, its pages (the top
                  ones, the rest as `other`); a trial's replay in figures (`facts.ReplayDoc`) and words
    journeys.py   journey files (TOML steps with extracts, expects and think times) read and checked whole;
                  a weighted mix of them (`--journey reader=80,author=20`), an app's shipped ones by name
    sessions.py   the journey engine: virtual users with a cookie jar each, every step recorded as a request
                  and as the page `journey/step` (with --trace, a traceparent and a row per step); each journey
                  walked once before the load (`prime_journeys`)
    hops.py       a step over h2, h2c or h3 read as aiohttp reads it over HTTP/1.1: the fields it sends, cookies,
                  redirects, decoding, one timeout for the whole step; the stream itself is the engine's (`_hop`)
    h2journeys.py the journey engine over h2 and h2c: an HTTP/2 connection per user (the `h2` package), a graceful
                  GOAWAY's unprocessed stream sent again on a new one
    h3journeys.py the journey engine over HTTP/3: a QUIC connection per user (load.h3)

Imports go one way: fits -> source -> mix, logreplay, journeys, sessions, h2journeys, h3journeys; h2journeys,
h3journeys -> hops -> sessions -> journeys; logreplay -> logs.
"""

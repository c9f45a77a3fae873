"""Reports built from stored results only: tables, sentences and figures, as HTML and Markdown.

    build.py          build(): read the folders, draw every figure in memory, then write report.html,
                      report.md and the figures (nothing written when a figure fails); what could not
                      be read or drawn is said on the console and where it would have been
    documents.py      Report: what the report says, once; as one self-contained HTML page and as Markdown
    story.py          the findings in plain sentences: who served more, where failures begin, what the
                      servers used and why they failed, from their own evidence
    causes.py         the servers' evidence in words: the one place a trial's cause records become sentences
    connects.py       the connects TCP's SYN retry delayed: a trial's and a cell's share of requests that took
                      about 1 s and 3 s to connect (a full listen queue), and what they did to p99
    waiting.py        the users who got no answer in the window: per cell, how many had a request held from
                      before the window opened to its close (a listen backlog, no free worker)
    states.py         the servers' connections by state per level beside their busy workers (their status pages'
                      states, as their stacks name them), for the story and `--json`
    role_usage.py     what the roles measured apart from a server (an app's database) used, per level, and
                      the server's CPU beside theirs, each against the cores they share
    compare.py        B/A ratios with their 95 % intervals, and one comparison line per level and pair
    tables.py         Table 1 (per server x level: means and 95 % intervals), `--json`'s rows, the legend
    jsonrows.py       a `--json` row's keys (the contract's), its `proto` and `page`, and a load of several
                      pages' rows, one per page after the whole
    tls.py            https: the TLS handshakes table (per second, resumed share, per core, handshake time,
                      tls_error) and what each label negotiated
    streams.py        h2/h2c: the streams table (per connection, GOAWAY, RST_STREAM, the server's max
                      concurrent), what each label asked for and negotiated, GOAWAY every N with its tunable;
                      a level in words where a client is a connection carrying -m streams
    mixes.py          a weighted mix: each page's row (requests, share, ok/s, status codes, p50, p99) beside
                      Table 1's for the mix as a whole, and the mix's pages, weights and seed
    journeys.py       --journey: each journey's completion rate and where the others failed, each step as
                      the page journey/step
    handshakes.py     a cell's TLS in words and figures: tls_error by reason, a client-bound cell's CPU per
                      handshake on each side, its facts for `--json`
    events.py         --event: each event's cost from the stored seconds (failures by kind, recovery, p99,
                      memory and processes against the 5 s before), the Events section and `--json`'s `events`
    timeparts.py      --trace: where the time went (each part's share of p50 and p99 per label and level, in
                      sentences, the causes beside the part they explain), what did not match, the slowest
                      traced requests, the parts of p99 stacked per level, `--json`'s `time_parts`
    setup.py          the set-up section (what ran, where, with which settings) and the warnings
    capacity.py       a capacity search's table and lines, from run.json's `capacity`
    tune.py           a tuning study's table and lines and its history figure, from run.json's `tune`
    plots.py          the figures against concurrency (1, 2, 5, 6), a capacity search's probes, and the
                      list of every figure with its caption, or the line said instead
    level_figures.py  the figures at one level: second by second (3) and how latency is spread (4)
    axes.py           what every figure shares: style, colours per server, axes, error bars, legends

Imports go one way: build -> documents -> plots -> level_figures, tune -> axes -> tables -> capacity;
plots -> story -> role_usage, compare -> tables -> causes -> connects;
story -> connects; story -> waiting -> streams;
story, tables -> states -> connects, streams; setup -> tables; documents -> tls -> tables -> handshakes;
role_usage -> tables; documents -> streams; documents -> mixes;
documents -> tables -> journeys; tables -> jsonrows; build, documents, tables -> events;
build, documents, plots, tables -> timeparts;
story -> handshakes; story -> streams; capacity -> streams; compare -> streams. Outside the package: the store (the
folders read through `store.reader`; --trace's parts through `store.traceparts`; a mix's page cells, a trial's
TLS facts, the writer's atomic write), the
load's outcome kinds and its trials' sums (`load.record.summary`), a replay in words (`traffic.logreplay`, for the
story), the parts' names and words (`trace.breakdown`), and the kernel (records, units, errors).
"""

"""Tracing (`--trace`): an id on each traced request, the client's row of it, the servers' own lines of it, and
the two joined into where its time went.

    ids.py         the trace id: a per-trial-per-worker nonce and the request's sequence number, as
                   `traceparent: 00-<trace-id>-<parent-id>-01`
    rows.py        the client's row of each traced request (requests.parquet's columns)
    serverlogs.py  each stack's trace log (/tmp/loadcmp-trace-<program>.log, written by its templates when the
                   override `trace` is on): its lines parsed into the server's own timings; the line a user's own
                   config must add
    breakdown.py   a request's time split into parts, from differences each measured on one side; the parts'
                   names and words
    join.py        after a trial, the servers' lines joined to the client's rows by trace id; what is unmatched
                   on either side counted and named
    otlp.py        the joined requests as OTLP spans (client -> server -> PHP), sent with opentelemetry-sdk

Imports go one way: join -> breakdown -> serverlogs; otlp -> breakdown. Outside the package: the kernel alone
(pandas in join, opentelemetry in otlp, imported there only), so that the engines may use ids and rows.
"""

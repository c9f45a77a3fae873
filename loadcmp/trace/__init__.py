"""Where each request's time went (`--trace`, docs/tracing.md): an id on each traced request, the client's row of
it, the servers' own lines of it, and the two joined into the parts of its time.

    ids.py         the ids a traced request carries (W3C traceparent): a nonce per trial and worker, the request's
                   sequence number, the share sampled (a hash of that number, so a run samples the same requests),
                   the header written into a request, and an id formatted and parsed
    rows.py        one row per traced request: the pure-Python engines' buffer, the compiled loops' rows read from
                   C, the columns a trial keeps, and those as requests.parquet's table (the store writes it)
    serverlogs.py  each stack's trace log (/tmp/loadcmp-trace-<program>.log, written by its templates when the
                   override `trace` is on), and an app's database's (its own time per traced request): its lines
                   parsed into the server's own timings; the line a user's own config must add
    breakdown.py   a request's time split into parts, from differences each measured on one side (the database's
                   out of PHP's, where it is known); the parts' names and words
    join.py        after a trial, the servers' lines joined to the client's rows by trace id; what is unmatched
                   on either side counted and named
    otlp.py        the joined requests as OTLP spans (client -> server -> PHP), sent with opentelemetry-sdk

Imports go one way: rows -> ids; join -> breakdown -> serverlogs; otlp -> breakdown. Outside the package: the
kernel alone (numpy and pyarrow in rows, pandas in join, opentelemetry in otlp, imported where used), so that the
engines may use ids and rows.
"""

"""Where each request's time went: the client's side of a traced load (docs/tracing.md).

    ids.py    the ids a traced request carries (W3C traceparent): a nonce per trial and worker, the request's
              sequence number, the share sampled (a hash of that number, so a run samples the same requests),
              the header written into a request, and an id formatted and parsed
    rows.py   one row per traced request: the pure-Python engines' buffer, the compiled loops' rows read from C,
              the columns a trial keeps, and requests.parquet written after each trial

Imports go one way: rows -> ids -> the kernel. Nothing here imports numpy or pyarrow when the package is imported.
"""

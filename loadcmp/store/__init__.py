"""The results folder: written atomically as trials end, read back as typed records.

    writer.py     RunWriter: run.json, timeline.parquet, server.parquet, summary.csv, each replaced whole
    reader.py     load_results(): one or several results folders -> Results (pandas frames, typed runs)
    pagecells.py  a mix's pages read as cells of their own (`nginx /x`, `nginx mix`), as findings name them
    handshakes.py a trial's TLS facts (`tls_of`) and what a handshake cost the client and the server
    traceparts.py --trace: the client's requests.parquet read by trial, the joined parts (parts.parquet) and
                  what did not match (trace.json) written

Only this package knows the folder's layout; the report reads it through `reader` alone.
"""

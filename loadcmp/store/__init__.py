"""The results folder: written atomically as trials end, read back as typed records.

    writer.py     RunWriter: run.json, timeline.parquet, server.parquet, summary.csv, each replaced whole
    files.py      a file written beside its place and renamed over it (a reader sees it whole or not at all), JSON
                  so written, a name made safe for a file's
    reader.py     load_results(): one or several results folders -> Results (pandas frames, typed runs)
    pagecells.py  a mix's pages read as cells of their own (`nginx /x`, `nginx mix`), as findings name them
    handshakes.py a trial's TLS facts (`tls_of`) and what a handshake cost the client and the server
    traceparts.py --trace: the client's requests.parquet written and read by trial, the joined parts
                  (parts.parquet) and what did not match (trace.json) written
    trialfiles.py a table kept as a folder of one parquet file per trial (requests.parquet, parts.parquet): a
                  trial's file added atomically, the trials read back, an older run's single file read as it is

Only this package knows the folder's layout; the report reads it through `reader` alone.
"""

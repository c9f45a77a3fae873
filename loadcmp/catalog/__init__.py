"""The catalog of stored runs: compare two runs, follow a metric over all of them.

The results folders stay the truth; the catalog reads their run.json and parquet in
place (DuckDB) and keeps only an index that can be rebuilt at any time.

    model.py    the typed answers (RunEntry, Comparison, History, ChangePoint ...)
"""

"""The catalog of stored runs: compare two runs, follow a metric over all of them.

The results folders stay the truth; the catalog reads their run.json and parquet in
place (DuckDB) and keeps only an index that can be rebuilt at any time.

    model.py    the typed answers (RunEntry, Comparison, History, ChangePoint ...)
    words.py    the answers in words (a value and its interval, a verdict, a change, a difference)
    tojson.py   the answers as JSON, one converter for --json and the serve pages
    trend.py    the trend figure (matplotlib): a metric over the runs, change points marked
    gate.py     smoke --history: each change point for the worse at this run a failed smoke check
"""

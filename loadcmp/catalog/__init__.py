"""The catalog of stored runs: compare two runs, follow a metric over all of them.

The results folders stay the truth; the catalog reads their run.json in place (DuckDB) and
keeps only an index that can be deleted and rebuilt at any time. Its statistics are the
findings' (`report.tables.Estimate`, `report.compare.ratio`); its change points proposed by Apache
Otava and decided by one t-test (steps.py).
The CLI, the `serve` pages and `smoke --history` show these answers, said one way by words.py,
tojson.py and trend.py.

    model.py      the typed answers (RunEntry, Comparison, History, ChangePoint ...)
    folder.py     one results folder: its state (the store's), its entry, its trials' figures
    setup.py      what differs between two runs' set-ups (settings, configs, versions, machine ...)
    index.py      the catalog over a results root: every folder listed, the DuckDB index in the cache
    compare.py    two runs cell by cell: ratios, intervals, verdicts
    partsmoved.py two runs' traced cells (--trace): each part's share of p50 and p99 side by side, the part that
                  moved most in a sentence
    steps.py      where a series steps: Otava proposes, Student's t-test decides, a scan finds what it lost
    history.py    a metric over every stored run, its change points; the regressions at one run
    words.py      the answers in words (a value and its interval, a verdict, a change, a difference)
    tojson.py     the answers as JSON, one converter for --json and the serve pages
    trend.py      the trend figure (matplotlib): a metric over the runs, change points marked
    gate.py       smoke --history: each change point for the worse at this run a failed smoke check

Inside the package: model <- folder <- setup, index <- compare, history; model <- partsmoved <- compare;
steps <- history; words, tojson <- model; trend <- words; gate <- history, index, words (and verdicts.smoke's
Verdict). Importing it loads nothing heavy (DuckDB, pandas, scipy, Otava and matplotlib load where used).
"""

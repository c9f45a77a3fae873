"""Where a load runs: in this process, in several, or on a Dask cluster's workers.

    workers.py    run_load: one load in this process or several, merged; Stopper
    cluster.py    a load's shares on a Dask cluster's workers (--cluster), merged as --workers merges
    limits.py     the open-file limit (check_nofile, raise_nofile) and connection-tracking drops

Imports go one way: cluster -> workers -> limits.
"""

"""The server side of a trial: what the servers used and why they failed.

    metrics.py      the 1 Hz sampler: cgroups, `ss`, status pages (and their parsers)
    apimetrics.py   the same figures through the Docker API alone (a remote engine)
    kernel.py       the kernel's listen-queue counters (ListenOverflows, ListenDrops, TCPSynRetrans) of the
                    server's network namespace (the host's, with host networking), read each second by metrics.py
    statuspages.py  what mod_status, stub_status and php-fpm's status say: busy workers; a status read
                    by a command in a role's container (an app's database)
    roles.py        the roles measured apart from the server (an app's database) summed up per trial
    evidence.py     the servers' log lines of the window counted by cause; a cause only from evidence, kept
                    as a record of figures (`records.CauseDoc`)
    ownlogs.py      the error logs a user's own config sends to files, read in their container after a trial
    tracelogs.py    --trace: each role's trace logs read in its container after the window, then emptied
"""

"""Judging measured results: smoke thresholds and a write-up's findings share one grammar.

    checks.py    what a check can look at: metrics, units, operators, a metric over trials
    eventmetrics.py  what an action's events cost as a check's figure (`reload.failed`), per trial
    busymetrics.py   busy workers as a check's figure (`busy_workers`, `busy_share`), per trial
    smoke.py     smoke checks, baselines, JUnit and summaries
    findings.py  the findings grammar (levels, server against server)
    judge.py     findings judged on stored results: verdicts and the rule for few trials
    slo.py       a capacity search's target: a probe against it, a level confirmed, what broke at the edge
    retry.py     a latency check against TCP's SYN retry: a percentile resting on it, a level split on it
    gain.py      a tuning study's answer: the best against the baseline in words, the block to paste
"""

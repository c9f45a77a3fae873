"""Driving trials: the primer, one trial step by step, a sweep of servers x levels x trials.

    primer.py   a few requests first: the page must be the page expected
    trial.py    one trial: plan, start, describe, prime, measure, collect evidence, judge, stop
    runner.py   a sweep: the plan (A B, then B A), limits and pinning up front, each trial stored as it ends
    tracing.py  --trace: the stacks' trace logs turned on, and joined to the client's rows once a trial is stored
    search.py   the capacity search, pure: step up, bisect, confirm (tested on fake probes)
    capacity.py the capacity search driven through the sweep's trials, its path stored after every probe
    tune.py     a tuning study: the baseline, Optuna's trials (pruned by the stack's checks), the comparison
    sampler.py  what a study tells Optuna and reads back: distributions, the target as a constraint, importance

The sweep is the only place that joins the lab (containers), the load and the store.
"""

"""What happened: every request's outcome counted per second, merged exactly, summed up.

    outcomes.py   outcome kinds; socket error / HTTP status -> kind
    recorder.py   per-second counts and histograms, filled as responses end
    result.py     Result: a finished measurement's per-second buckets and totals (mergeable)
    histogram.py  latency histograms that merge exactly (sparse, log-bucketed, 1 % wide)
    journeytally.py  what a load's journeys did: completions, the step each failed at, each step's tally
    summary.py    Result -> records.LoadSummary and timeline rows
    saturation.py is the client the bottleneck? thresholds, judgement, advice

Imports go one way: summary -> saturation, journeytally -> recorder -> result -> histogram, outcomes.
"""

"""The five classic write-ups (the "seeds" of `loadcmp seeds`) re-run within a time budget, their claims
judged, and the page made from them (docs/seeds.md).

    plan.py     the write-ups' files, their wall time estimated from the spec, cut in proportion to a budget
    summary.py  per claim: the write-up's words, what was measured, the verdict, the servers' evidence;
                the summary as JSON and Markdown, and docs/seeds.md with the machine and the date

Imports one way: plan (experiment, load) and summary (verdicts, report, store, lab) do not import each other;
the command (`loadcmp.cli.seeds`) runs the sweeps between them.
"""

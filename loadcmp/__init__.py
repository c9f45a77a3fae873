"""loadcmp: a lab for web server performance under high concurrency.

The shared kernel, which every package may import and which imports nothing else of loadcmp:

    records.py   the documents a run.json holds, as TypedDicts (no pandas: the load workers use them)
    studies.py   run.json's records of a search: a capacity search and a tuning study (re-exported by records)
    facts.py     run.json's records of what a load's protocol and traffic did: TLS, streams, journeys (re-exported
                 by records)
    protocols.py the protocols a load speaks, one row each: scheme, TLS, ALPN, streams, what each runs with,
                 and each refusal's wording
    units.py     the one grammar of the values users type: durations, sizes, rates, levels, CPU sets
    errors.py    the one error hierarchy, with its exit codes; `Problems`, the collector of many problems

    __main__.py  `python -m loadcmp`, the `loadcmp` command (`loadcmp.cli`)

Imports go one way: records -> studies, facts; protocols, units -> errors. The sub-packages (cli, writeups, sweep,
experiment, verdicts, observe, report, store, lab, load) are drawn in ARCHITECTURE.md.
"""

__version__ = "0.1.0"

"""What a run is, before anything starts: the spec from flags or an experiment file.

    spec.py      RunSpec; experiment files read; validation that lists every error at once
    filekeys.py  the keys an experiment file may have, their types, each value converted
    flags.py     a command's flags laid over an experiment file: the RunSpec (and a search's probe) they make
    variants.py  server labels and variants (--server LABEL=STACK, [variants.*]), which --set goes where
    eventspec.py which label fires which event (`LABEL: AT ACTION`, a variant's `events`), and their problems
    protos.py    the protocols a run loads (--proto h1,h2: labels like nginx[h2]) and -m; what each stack speaks
    capacity.py  what a capacity search is: its target, start, limit, resolution (flags over [capacity])
    apps.py      an application behind the chosen stacks (--app, app =): its pages and images
    sources.py   a run's traffic checked with what the lab knows (an app's pages and journeys), by `traffic.fits`
    journeys.py  a run with journeys (--journey, journey =, [journeys]): the file's table as keys, an app's journeys
    tune.py      what a tuning study searches (--param, [tune]), and a stored study read back to resume
    tracing.py   what a run traces (--trace, --trace-sample; trace =, trace_sample =): RunSpec's TraceSpec fields
"""

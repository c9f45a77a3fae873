"""The command line: one module per command group, errors -> exit codes in `app`.

    app.py      the click group, the error -> exit-code mapping, the SIGINT handler
    types.py    click ParamTypes over loadcmp.units (durations, sizes, levels, CPU sets, rates)
    options.py  the options commands share, and their flag groups (LoadFlags, SetupFlags, SearchFlags,
                DockerFlags: what was given, by RunSpec field and as typed); output paths checked first
    flaggroup.py  FlagGroup, the base of every flag group, and `flag`, a field of one
    clientflags.py  how the clients behave and what they keep: --think, --send-rate, --read-rate, --trace,
                --trace-sample (checked as read; their values in options' LoadFlags)
    protocols.py  how the clients talk to the servers: --tls, --tls-resume (TlsFlags), --proto, -m (ProtoFlags)
    display.py  live line, result tables (stderr for progress, stdout for results)
    servers.py  servers, apps, build, up, down
    bench.py    bench URL
    run.py      run (and the sweep display, Table 1)
    capacity.py capacity (a search of short probes per server)
    tune.py     tune (an Optuna study over one server's settings)
    smoke.py    smoke
    seeds.py    seeds (the five write-ups within a budget)
    report.py   report
    logmix.py   mix FILE (an access log's top pages as a [mix] table)
    compare.py  compare A B (two stored runs: what differs, then each shared cell with its verdict)
    history.py  history [RESULTS_DIR] (a metric over the stored runs, its change points, the trend figure)
    export.py   export DIR (stored runs as OpenMetrics or CSV time series: loadcmp.export)
    traffic.py  the traffic flags (--mix, --seed) of the commands that run stacks
    live.py     --live [PORT] on the commands that load (the page's server around the command, its feed laid
                over the sweep's hooks), and serve (stored runs in the browser)
"""

from __future__ import annotations

from . import (bench, capacity, compare, export, history, live, logmix, report, run, seeds, servers,  # noqa: F401
               smoke, tune)  # (registers the commands)
from .app import cli


def main() -> None:
    """The `loadcmp` console script."""
    cli(prog_name="loadcmp")


__all__ = ["cli", "main"]

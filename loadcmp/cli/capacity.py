"""`loadcmp capacity`: where each set-up stops meeting a target, found by a search of short probes."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from ..errors import Problems, UsageError
from .app import cli, emit_json
from .display import err, markup, out, print_rows
from .options import (LoadFlags, SearchFlags, SetupFlags, event_option, load_options_but, search_options,
                      setup_options)
from .live import LiveFlags, LivePage, live_options, watching
from .run import SweepDisplay, raise_for_status, sweep
from .types import COUNT

if TYPE_CHECKING:
    from ..experiment.capacity import CapacitySpec
    from ..experiment.spec import RunSpec
    from ..load.run.workers import Fleet, Stopper
    from ..store.reader import Results
    from ..sweep.runner import SweepOutcome
    from ..sweep.trial import Planned, SweepHooks


class CapacityDisplay(SweepDisplay):
    """The sweep's display without a total (a search does not know how many probes it takes)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.level_name = "r" if unit == "requests/s" else "c"

    def trial_start(self, p: Planned, i: int, n: int, seconds: float) -> None:
        if self.current is not None:
            self.progress.remove_task(self.current)
        self.current = self.progress.add_task(self.description(p), total=seconds, info="starting")

    def say(self, msg: str) -> None:
        if msg.startswith("Step "):
            return
        self.progress.console.print(markup("{}", msg), highlight=False)


REFUSED = {
    "levels": "-c/--clients: the search finds the level itself; give --start and --max",
    "duration": "-t/--time: a probe lasts --probe-time",
    "requests": "-n/--requests: a probe lasts --probe-time",
    "rate": "--rate: with --schedule rate the search finds the rate itself; give --start and --max",
}
"""The load flags a search sets itself, and why (hidden from --help, still read to say so)."""


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True, metavar="[LABEL=]STACK",
              help="Stack to search (repeatable, or 'all'); LABEL=STACK searches a stack under a label of its own.")
@search_options(start="The first level probed (default 10 clients, or 10 requests/s).",
                confirm="Trials at the level found and at the one above (default 3).")
@click.option("--max-confirm", type=COUNT,
              help="Trials an unsure confirmation may grow to (default 5, or --confirm if more).")
@load_options_but(*REFUSED)
@setup_options
@event_option
@live_options
def capacity(experiment: str | None, servers_: tuple[str, ...], as_json: bool, **flags: Any) -> None:
    """Find each set-up's capacity: the most load it holds while meeting a target.

    Steps up geometrically from --start until a probe misses the target, bisects to --resolution,
    then confirms the level found and the one above with --confirm trials each (95 % intervals).
    With --schedule rate the level is a request rate.
    """
    from ..experiment.flags import search_spec

    load, setup, target = LoadFlags.pop(flags), SetupFlags.pop(flags), SearchFlags.pop(flags)
    live, events = LiveFlags.pop(flags), flags.pop("events")
    setup.check_out()
    own = {**target.table(), "max_confirm": flags.pop("max_confirm", None)}  # capacity's own; tune has none
    p = Problems()  # the flags refused and the search's own problems, all at once
    p.attempt(lambda: load.refuse(REFUSED))
    given = {**load.given(), **setup.fields_with(servers_), **({"events": events} if events else {})}
    found = p.attempt(lambda: search_spec(experiment, given, own))
    p.raise_if_any(UsageError)
    assert found is not None
    base, cap, _ = found
    spec = replace(cap.probe_spec(base, cap.start), duration=cap.probe_time)
    with watching(live) as watch:
        outcome = search(spec, cap, as_json, watch)
    raise_for_status(outcome)


def search(spec: RunSpec, cap: CapacitySpec, as_json: bool, live: LivePage | None = None) -> SweepOutcome:
    """The search with the sweep's display and Ctrl-C handler, then its summary (JSON, or the capacity table)."""
    from ..report.tables import summary_doc
    from ..store.reader import load_results

    def drive(s: RunSpec, hooks: SweepHooks, stopper: Stopper, fleet: Fleet | None) -> SweepOutcome:
        from ..sweep.capacity import run_capacity

        return run_capacity(s, cap, hooks, stopper, fleet=fleet)

    err.print(markup("target: {}; from {:,} up to {:,} {} ({}), {:g} s probes, {:.0%} resolution, {} confirmation "
                     "trials (up to {} while unsure)", cap.target, cap.start, cap.max, cap.unit, cap.max_reason,
                     cap.probe_time, cap.resolution, cap.confirm, cap.most_trials), highlight=False)
    outcome = sweep(spec, table=False, drive=drive, display=CapacityDisplay(cap.unit), live=live, command="capacity")
    res = load_results(outcome.path)
    if as_json:
        emit_json(summary_doc(res))
    else:
        print_capacity(res)
    return outcome


def print_capacity(res: Results) -> None:
    """Each label's capacity with its edge and cause, then the judged findings."""
    from ..report.capacity import capacity_rows

    header, rows = capacity_rows(res)
    if not rows:
        return
    print_rows(f"{res.name} — capacity", header, rows, ("server", "what broke at the edge"))
    for label, (_, doc) in res.capacity.items():  # disagreements, undecided confirmations, where it stopped
        for note in doc["notes"]:
            out.print(markup("{}: {}", label, note), highlight=False)
    for f in res.run.get("findings") or []:
        out.print(markup("- {}: {}\n  {} — {}", f["verdict"], f["claim"], f["check"], f["text"]), highlight=False)

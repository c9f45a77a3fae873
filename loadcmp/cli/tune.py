"""`loadcmp tune`: search a stack's settings for the most capacity (or req/s at a level) under a target."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .app import cli, emit_json
from . import capacity
from .capacity import CapacityDisplay
from .display import err, markup, out, print_rows
from .options import (FlagGroup, LoadFlags, SearchFlags, SetupFlags, flag, load_options_but, search_options,
                      setup_options)
from .live import LiveFlags, LivePage, live_options, watching
from .run import raise_for_status, sweep
from .types import COUNT, POSITIVE_DURATION
from ..errors import StoreError, UsageError

if TYPE_CHECKING:
    from ..experiment.capacity import CapacitySpec
    from ..experiment.spec import RunSpec
    from ..experiment.tune import TuneSpec
    from ..load.run.workers import Fleet, Stopper
    from ..store.reader import Results
    from ..sweep.runner import SweepOutcome
    from ..sweep.trial import SweepHooks

REFUSED = {k: why for k, why in capacity.REFUSED.items() if k != "levels"}
"""The load flags a study sets itself, and why (hidden from --help, still read to say so); -c N is its objective."""


@dataclass(frozen=True)
class StudyFlags(FlagGroup):
    """What a study searches and for how long, and the stored study it goes on with."""

    params: tuple[str, ...] = flag("--param", default=())
    study_trials: int | None = flag("--trials", spec="trials")
    budget: float | None = flag("--budget")
    seed: int | None = flag("--seed")
    resume: str | None = flag("--resume")

    def table(self, clients: int | None) -> dict[str, Any]:
        """Every key of the study, None where not given (laid over the file's [tune] table)."""
        return {"params": self.params, "trials": self.study_trials, "budget": self.budget, "clients": clients,
                "seed": self.seed}


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True, metavar="[LABEL=]STACK", help="The one stack to tune.")
@click.option("--param", "params", multiple=True, metavar="KEY=LOW..HIGH|KEY=A,B",
              help="A setting to search (repeatable): fpm.max_children=5..200, fpm.pm=static,dynamic.")
@click.option("--trials", "study_trials", type=COUNT, help="Trials of the study (default 20, or as --budget allows).")
@click.option("--budget", type=POSITIVE_DURATION, metavar="DURATION",
              help="Wall time of the whole study, baseline and comparison included (e.g. 20m).")
@click.option("--seed", type=click.IntRange(min=0), help="The sampler's seed, for a study that can be replayed.")
@click.option("--resume", type=click.Path(file_okay=False), metavar="DIR",
              help="Go on with the study stored in DIR (with --trials or --budget more).")
@search_options(start="The baseline's first level (default 10 clients, or 10 requests/s).",
                confirm="Trials of the best and of the baseline in the comparison (default 3).")
@load_options_but(*REFUSED)
@setup_options
@live_options
def tune(experiment: str | None, servers_: tuple[str, ...], as_json: bool, **flags: Any) -> None:
    """Search a stack's settings for the most capacity under a target (Optuna's TPE).

    The baseline (the defaults, with any --set) runs first; each trial then runs a quick capacity
    search on fresh servers with the settings the study asks for (settings the stack refuses are
    pruned before anything starts). With -c N the objective is the req/s at N clients among the
    settings that meet the target. The best and the baseline are compared at the end, A B A B,
    with --confirm trials each. Prints the best as a ready [variants.tuned] table.
    """
    load, setup, target, st = LoadFlags.pop(flags), SetupFlags.pop(flags), SearchFlags.pop(flags), StudyFlags.pop(flags)
    live = LiveFlags.pop(flags)
    if st.resume is not None:
        besides = [*(["EXPERIMENT"] if experiment else []), *(["--server"] if servers_ else []),
                   *(f for g in (load, setup, target, st) for f in g.given_flags())]
        base, cap, spec = _resumed(st, [f for f in besides if f not in ("--trials", "--budget", "--resume")])
    else:
        setup.check_out()
        base, cap, spec = _new(experiment, servers_, load, setup, target, st)
    with watching(live) as watch:
        outcome = study(base, cap, spec, as_json, st.resume, watch)
    raise_for_status(outcome)


def _new(experiment: str | None, servers_: tuple[str, ...], load: LoadFlags, setup: SetupFlags,
         target: SearchFlags, st: StudyFlags) -> tuple[RunSpec, CapacitySpec, TuneSpec]:
    """A new study: the flags it refuses said first, then the baseline's spec, the search's and the study's."""
    from ..experiment.flags import search_spec
    from ..experiment.tune import tune_spec
    from ..sweep.runner import check_limits

    load.refuse(REFUSED)
    clients = load.levels
    if clients is not None and len(clients) != 1:
        raise UsageError("-c/--clients: give one level (the req/s there is what the study raises), or none to "
                         "raise the capacity")
    if clients is not None and load.schedule == "rate":
        raise UsageError("-c with --schedule rate: the rate fixes the req/s; leave -c out to raise the capacity")
    if setup.reuse_server:
        raise UsageError("--reuse-server: every trial of a study runs on fresh servers, with its own settings")
    if setup.configs:
        raise UsageError("--config: a study sets the server's settings itself; tune the stack's own config, then "
                         "carry the result into your file")
    given = {**replace(load, levels=None).given(), **setup.fields_with(servers_)}
    base, cap, extra = search_spec(experiment, given, target.table())
    if len(base.servers) != 1 or len(base.variants()) != 1:
        raise UsageError(f"tune takes one server, one page, one protocol and one keep-alive setting (given: "
                         f"{', '.join(base.label(*v) for v in base.variants())}); tune them one at a time")
    label = base.servers[0]
    t = tune_spec(label, base.catalog().get(base.stack_of(label)), extra.get("tune", {}),
                  st.table(clients[0] if clients else None),
                  f"{Path(experiment).name}: [tune]" if experiment else "[tune]")
    if t.clients is not None and base.schedule == "rate":
        raise UsageError("a req/s objective at a number of clients with schedule rate: the rate fixes the req/s; "
                         "leave clients out to raise the capacity")
    check_limits(cap.probe_spec(base, t.clients or cap.max))  # the most a study may ask of this machine
    # fresh servers for every trial; the file's findings are about its own labels, not the study's
    return replace(base, reuse_server=False, findings=()), cap, t


def _resumed(st: StudyFlags, besides: list[str]) -> tuple[RunSpec, CapacitySpec, TuneSpec]:
    """The stored study's own settings, with more trials or another budget (and no other flag)."""
    from ..experiment.tune import resumed

    if besides:
        raise UsageError(f"--resume goes on with the stored study's own settings; give only --trials or "
                         f"--budget with it (not {', '.join(besides)})")
    if st.study_trials is None and st.budget is None:
        raise UsageError("--resume: say how much more: --trials N or --budget DURATION")
    path = Path(st.resume or "")
    if not (path / "run.json").is_file():
        raise UsageError(f"--resume {path}: not a results folder (no run.json in it)")
    try:
        run = json.loads((path / "run.json").read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"--resume {path}: its run.json is unreadable ({getattr(e, 'strerror', None) or e})") from None
    return resumed(run, st.study_trials, st.budget, path)


def study(spec: RunSpec, cap: CapacitySpec, t: TuneSpec, as_json: bool, resume: str | None,
          live: LivePage | None = None) -> SweepOutcome:
    """The study with the sweep's display and Ctrl-C handler, then its summary (JSON, or the table)."""
    from ..store.reader import load_results

    def drive(s: RunSpec, hooks: SweepHooks, stopper: Stopper, fleet: Fleet | None) -> SweepOutcome:
        from ..sweep.tune import run_tune

        return run_tune(s, cap, t, hooks, stopper, fleet=fleet, resume=resume)

    budget = f"{t.trials} trial{'' if t.trials == 1 else 's'}" if t.trials else ""
    if t.budget_s:
        m, sec = divmod(round(t.budget_s), 60)
        took = f"{m} min {sec} s" if m and sec else f"{m} min" if m else f"{sec} s"
        budget += f"{' within ' if budget else ''}{took}"
    what = f"the req/s at {t.clients:,} clients" if t.clients else f"the capacity in {cap.unit}"
    err.print(markup("tuning {} ({}) for {} under {}: {}; {}", t.label, t.stack, what, cap.target,
                     "; ".join(p.describe() for p in t.params), budget), highlight=False)
    probe = spec if t.clients is None else replace(spec, levels=(t.clients,))
    outcome = sweep(replace(probe, duration=cap.probe_time), table=False, drive=drive,
                    display=CapacityDisplay(cap.unit), live=live, command="tune")
    res = load_results(outcome.path)
    if as_json:
        emit_json(tune_output(res))
    else:
        print_tune(res)
    return outcome


def tune_output(res: Results) -> dict[str, Any]:
    """`tune --json`: the run's rows and the study (`report.tune.tune_json`)."""
    from ..report.tables import summary_doc
    from ..report.tune import tune_json

    return {**summary_doc(res), "tune": tune_json(res)}


def print_tune(res: Results) -> None:
    """The trials, the best as a ready table, its gain and what mattered."""
    from ..report.tune import tune_lines, tune_rows

    header, rows = tune_rows(res)
    if not rows:
        return
    print_rows(f"{res.name} — tuning", header, rows, ("settings", "state", "what it gave"))
    for line in tune_lines(res):
        out.print(markup("{}", line), highlight=False)

"""`loadcmp tune`: search a stack's settings for the most capacity (or req/s at a level) under a target."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from .app import cli, emit_json
from .capacity import CapacityDisplay, plan
from .display import err, out, print_rows
from .options import LoadFlags, load_options, setup_options
from .run import raise_for_status, sweep
from .types import COUNT, POSITIVE_DURATION
from ..errors import StoreError, UsageError

if TYPE_CHECKING:
    from ..experiment.capacity import CapacitySpec
    from ..experiment.spec import RunSpec
    from ..experiment.tune import TuneSpec
    from ..load.workers import Fleet, Stopper
    from ..store.reader import Results
    from ..sweep.runner import SweepOutcome
    from ..sweep.trial import SweepHooks

FLAG_NOT_HERE = {
    "duration": "-t/--time: a probe lasts --probe-time",
    "requests": "-n/--requests: a probe lasts --probe-time",
    "rate": "--rate: with --schedule rate the search finds the rate itself; give --start and --max",
}


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True, metavar="[LABEL=]STACK", help="The one stack to tune.")
@click.option("--param", "params", multiple=True, metavar="KEY=LOW..HIGH|KEY=A,B",
              help="A setting to search (repeatable): fpm.max_children=5..200, fpm.pm=static,dynamic.")
@click.option("--slo", metavar="CHECKS", help="The target, in smoke's check grammar: 'p99<500ms, failed_rate<1%'.")
@click.option("--trials", "study_trials", type=COUNT, help="Trials of the study (default 20, or as --budget allows).")
@click.option("--budget", type=POSITIVE_DURATION, metavar="DURATION",
              help="Wall time of the whole study, baseline and comparison included (e.g. 20m).")
@click.option("--seed", type=click.IntRange(min=0), help="The sampler's seed, for a study that can be replayed.")
@click.option("--resume", type=click.Path(file_okay=False), metavar="DIR",
              help="Go on with the study stored in DIR (with --trials or --budget more).")
@click.option("--resolution", metavar="PERCENT", help="How close a trial's edge is bracketed (default 10%).")
@click.option("--start", type=COUNT, help="The baseline's first level (default 10 clients, or 10 requests/s).")
@click.option("--max", "max_", type=COUNT, help="The highest level probed (default: what the open-file limit holds).")
@click.option("--probe-time", type=POSITIVE_DURATION, metavar="DURATION", help="Measured time of a probe (default 5s).")
@click.option("--confirm", type=COUNT, help="Trials of the best and of the baseline in the comparison (default 3).")
@load_options
@setup_options
def tune(experiment: str | None, servers_: tuple[str, ...], params: tuple[str, ...], slo: str | None,
         study_trials: int | None, budget: float | None, seed: int | None, resume: str | None,
         resolution: str | None, start: int | None, max_: int | None, probe_time: float | None,
         confirm: int | None, page: str | None, server_cpus: str | None, server_memory: int | None,
         sets: tuple[str, ...], reuse_server: bool | None, out_dir: str | None, name: str | None, as_json: bool,
         **flags: Any) -> None:
    """Search a stack's settings for the most capacity under a target (Optuna's TPE).

    The baseline (the defaults, with any --set) runs first; each trial then runs a quick capacity
    search on fresh servers with the settings the study asks for (settings the stack refuses are
    pruned before anything starts). With -c N the objective is the req/s at N clients among the
    settings that meet the target. The best and the baseline are compared at the end, A B A B,
    with --confirm trials each. Prints the best as a ready [variants.tuned] table.
    """
    load = LoadFlags.pop(flags)
    if resume is not None:
        others = {"EXPERIMENT": experiment, "--server": servers_, "--param": params, "--slo": slo, "--seed": seed,
                  "--resolution": resolution, "--start": start, "--max": max_, "--probe-time": probe_time,
                  "--confirm": confirm, "--page": page, "--server-cpus": server_cpus,
                  "--server-memory": server_memory, "--set": sets, "--reuse-server": reuse_server,
                  "--out": out_dir, "--name": name, **{f"--{k.replace('_', '-')}": v for k, v in load.given().items()},
                  **{f"--{k.replace('_', '-')}": v for k, v in flags.items()}}  # --app, --www, --config, engines
        given = sorted(k.replace("--stack-dirs", "--stacks").replace("--configs", "--config")
                       for k, v in others.items() if v not in (None, (), False))
        if given:
            raise UsageError(f"--resume goes on with the stored study's own settings; give only --trials or "
                             f"--budget with it (not {', '.join(given)})")
        if study_trials is None and budget is None:
            raise UsageError("--resume: say how much more: --trials N or --budget DURATION")
        base, cap, spec = _resumed(resume, study_trials, budget)
    else:
        base, cap, spec = _new(experiment, servers_, params, slo, study_trials, budget, seed, resolution, start,
                               max_, probe_time, confirm, page, server_cpus, server_memory, sets, reuse_server,
                               out_dir, name, load, flags)
    outcome = study(base, cap, spec, as_json, resume)
    raise_for_status(outcome)


def _new(experiment: str | None, servers_: tuple[str, ...], params: tuple[str, ...], slo: str | None,
         trials: int | None, budget: float | None, seed: int | None, resolution: str | None, start: int | None,
         max_: int | None, probe_time: float | None, confirm: int | None, page: str | None,
         server_cpus: str | None, server_memory: int | None, sets: tuple[str, ...], reuse_server: bool | None,
         out_dir: str | None, name: str | None, load: LoadFlags, flags: dict[str, Any]
         ) -> tuple[RunSpec, CapacitySpec, TuneSpec]:
    from ..experiment.tune import tune_spec

    for key, why in FLAG_NOT_HERE.items():
        if getattr(load, key) is not None:
            raise UsageError(why)
    clients = load.levels
    if clients is not None and len(clients) != 1:
        raise UsageError("-c/--clients: give one level (the req/s there is what the study raises), or none to "
                         "raise the capacity")
    if clients is not None and load.schedule == "rate":
        raise UsageError("-c with --schedule rate: the rate fixes the req/s; leave -c out to raise the capacity")
    if reuse_server:
        raise UsageError("--reuse-server: every trial of a study runs on fresh servers, with its own settings")
    if flags.get("configs"):
        raise UsageError("--config: a study sets the server's settings itself; tune the stack's own config, then "
                         "carry the result into your file")
    load = replace(load, levels=None)
    base, cap, extra = plan(experiment, load, flags, servers_, sets, {
        "slo": slo, "resolution": resolution, "start": start, "max": max_, "probe_time": probe_time,
        "confirm": confirm}, {"page": page, "server_cpus": server_cpus, "server_memory": server_memory,
                              "out": out_dir, "name": name})
    if len(base.servers) != 1 or len(base.variants()) != 1:
        raise UsageError(f"tune takes one server, one page and one keep-alive setting (given: "
                         f"{', '.join(base.label(*v) for v in base.variants())}); tune them one at a time")
    label = base.servers[0]
    t = tune_spec(label, base.catalog().get(base.stack_of(label)), extra.get("tune", {}), {
        "params": params, "trials": trials, "budget": budget, "clients": clients[0] if clients else None,
        "seed": seed}, f"{Path(experiment).name}: [tune]" if experiment else "[tune]")
    if t.clients is not None and base.schedule == "rate":
        raise UsageError("a req/s objective at a number of clients with schedule rate: the rate fixes the req/s; "
                         "leave clients out to raise the capacity")
    from ..sweep.runner import check_limits

    check_limits(cap.probe_spec(base, t.clients or cap.max))  # the most a study may ask of this machine
    # fresh servers for every trial; the file's findings are about its own labels, not the study's
    return replace(base, reuse_server=False, findings=()), cap, t


def _resumed(path: str, trials: int | None, budget: float | None) -> tuple[RunSpec, CapacitySpec, TuneSpec]:
    """The stored study's own settings, with more trials or another budget."""
    from ..experiment.tune import resumed

    if not (Path(path) / "run.json").is_file():
        raise UsageError(f"--resume {path}: not a results folder (no run.json in it)")
    try:
        run = json.loads((Path(path) / "run.json").read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"--resume {path}: its run.json is unreadable ({getattr(e, 'strerror', None) or e})") from None
    return resumed(run, trials, budget, Path(path))


def study(spec: RunSpec, cap: CapacitySpec, t: TuneSpec, as_json: bool, resume: str | None) -> SweepOutcome:
    """The study with the sweep's display and Ctrl-C handler, then its summary (JSON, or the table)."""
    from ..report.tables import summary_doc
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
    err.print(f"tuning {escape(t.label)} ({escape(t.stack)}) for {what} under {escape(str(cap.target))}: "
              f"{'; '.join(escape(p.describe()) for p in t.params)}; {budget}", highlight=False)
    probe = spec if t.clients is None else replace(spec, levels=(t.clients,))
    outcome = sweep(replace(probe, duration=cap.probe_time), table=False, drive=drive,
                    display=CapacityDisplay(cap.unit))
    res = load_results(outcome.path)
    if as_json:
        from ..report.tune import tune_json

        emit_json({**summary_doc(res), "tune": tune_json(res)})
    else:
        print_tune(res)
    return outcome


def print_tune(res: Results) -> None:
    """The trials, the best as a ready table, its gain and what mattered."""
    from ..report.tune import tune_lines, tune_rows

    header, rows = tune_rows(res)
    if not rows:
        return
    print_rows(f"{res.name} — tuning", header, rows, ("settings", "state", "what it gave"))
    for line in tune_lines(res):
        out.print(escape(line), highlight=False)

"""`loadcmp run`: the spec from a file and flags, a sweep with progress, Table 1."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from .app import cli, emit_json, stop_on_signals
from .display import PlainTable, edges_note, err, markup, out, p99_text, say, status_text, warn
from .live import LiveFlags, LivePage, live_options, watching, with_feed
from .types import COUNT
from .options import LoadFlags, SetupFlags, event_option, load_options, setup_options, writable
from .traffic import TrafficFlags, traffic_options
from ..errors import Interrupted, LoadcmpError, UsageError, WrongProtocol
from ..records import TrialRecord
from ..experiment.spec import RunSpec
from ..traffic.fits import journey_flag
from ..traffic.logreplay import trial_lines

if TYPE_CHECKING:  # the runner pulls in pandas and docker: imported when a run starts
    from ..trace.otlp import Target
    from ..load.driver import Live
    from ..load.run.workers import Fleet, Stopper
    from ..store.reader import Results
    from ..sweep.runner import SweepOutcome
    from ..sweep.trial import Planned, SweepHooks


class SweepDisplay:
    """A rich progress display on stderr: the sweep, and the trial running now."""

    level_name = "c"
    """What a level is called on its lines: c=50 (clients); a capacity search by rate says r=."""

    def __init__(self) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24),
                                 TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=err, transient=False)
        self.overall: TaskID | None = None
        self.current: TaskID | None = None

    def __enter__(self) -> SweepDisplay:
        self.progress.__enter__()
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.progress.__exit__(typ, exc, tb)

    def hooks(self) -> SweepHooks:
        from ..sweep.trial import SweepHooks

        return SweepHooks(trial_start=self.trial_start, live=self.live, trial_end=self.trial_end, say=self.say)

    def say(self, msg: str) -> None:
        if not msg.startswith("Step "):
            self.progress.console.print(markup("[dim]{}[/dim]", msg))

    def trial_start(self, p: Planned, i: int, n: int, seconds: float) -> None:
        if self.overall is None:
            self.overall = self.progress.add_task("sweep", total=n, info="")
        self.progress.update(self.overall, completed=i, info=f"trial {i + 1} of {n}")
        if self.current is not None:
            self.progress.remove_task(self.current)
        self.current = self.progress.add_task(self.description(p), total=seconds, info="starting")

    def description(self, p: Planned) -> str:
        """The running trial's name on its bar: `nginx[h2] c=50 #1` (the label as it is, not markup)."""
        return markup("{} {}={:,} #{}", p.label, self.level_name, p.level, p.trial)

    def live(self, lv: Live) -> None:
        if self.current is None:
            return
        phase = "" if lv.measuring else "warm-up "
        client, hot = lv.client_text()
        if hot:
            client = f"[yellow]{client}[/yellow]"
        # -n: the bar counts requests, not seconds
        done = (lv.ok + lv.failed if lv.measuring else 0) if lv.requests else max(0.0, lv.elapsed)
        self.progress.update(self.current, total=lv.requests, completed=done,
                             info=f"{phase}{lv.rps:8.0f} req/s  ok {lv.ok:,}  failed {lv.failed:,}  "
                                  f"in flight {lv.inflight:,}  {client}")

    def trial_end(self, p: Planned, rec: TrialRecord) -> None:
        r = rec.get("result")
        msg = markup("{:>16} {}={:<6,} #{}: ", p.label, self.level_name, p.level, p.trial)
        if r:
            msg += f"ok {r['ok']:,}  failed {r['failed']:,}  {r['rps']:,.0f} req/s  p99 {p99_text(r['latency_ms'])}"
        n = r["schedule"].get("requests") if r and "schedule" in r else None
        if r and n:  # -n: say what ended it, and how long the n took
            by = r.get("stopped_by", "time")
            warm = f" (after {r['warmup_requests']:,} warm-up requests)" if r.get("warmup_requests") else ""
            msg += _NEXT + (f"all {n:,} requests in {r['duration_s']:.1f} s{warm}" if by == "requests" else
                            f"[yellow]stopped by {'the time limit' if by == 'time' else 'Ctrl-C'}: "
                            f"{r['started']:,} of {n:,} requests started[/yellow]")
        if rec["status"] != "ok":
            msg += markup("  [yellow]{}[/yellow]", status_text(rec))
        if r and "users_reached" in r:
            msg += _NEXT + (f"[yellow]the ramp started only {r['users_reached']:,} of {p.level:,} users "
                            "in the window[/yellow]")
        if r and r.get("client_bound"):
            msg += _NEXT + markup("[yellow]client-bound: {}[/yellow]", r.get("client_bound_reason"))
        if r and r.get("pages"):  # a mix: each page on its own
            msg += _NEXT + "  ".join(markup("{} {:,} ({:.1%}, p99 {})", pg["page"], pg["completed"], pg["share"],
                                            p99_text(pg["latency_ms"])) for pg in r.get("pages", []))
        edges = edges_note(r) if r else None
        if edges:
            msg += _NEXT + markup("{}", edges)
        for line in trial_lines(r):
            msg += _NEXT + markup("{}", line)
        from ..report.connects import trial_line as slow_line  # the store's reader (pandas): once a trial ended
        if slow := slow_line(r):
            msg += _NEXT + markup("[yellow]{}[/yellow]", slow)
        if r and r["failed"] > r["ok"]:
            failures = ", ".join(f"{k} {v:,}" for k, v in r["failures"].items() if v)
            msg += _NEXT + markup("failures: {}", failures)
        if self.current is not None:
            self.progress.remove_task(self.current)
            self.current = None
        self.progress.console.print(msg)


_NEXT = "\n" + " " * 18
"""A trial's further lines, under its figures."""


def print_table1(path: str) -> None:
    """Table 1 of a stored run, as the write-ups printed it, with its notes (a run stopped before any trial
    ended has no Table 1: that is said instead)."""
    from ..report.compare import comparison_lines
    from ..report.tables import legend, notes, table1
    from ..store.reader import load_results

    res = load_results(path)
    header, rows = table1(res)
    if rows:
        out.print(_table1(res, header, rows))
        out.print(markup("[dim]{}[/dim]", legend(header, rows, res)), highlight=False)
    else:
        out.print(markup("{}: no trial finished, so there is no Table 1", res.name), highlight=False)
    for n in notes(res):
        out.print(markup("* {}", n), highlight=False)
    lines = comparison_lines(res)
    if lines:
        out.print("[bold]Comparison[/bold]")
        for v in lines:
            out.print(markup("- {}", v), highlight=False)
    findings = res.run.get("findings") or []
    if findings:
        out.print("[bold]Findings of the write-up[/bold]")
        for f in findings:
            style = VERDICT_STYLE.get(f["verdict"], "")
            out.print(f"- [{style}]{f['verdict']}[/{style}]: "
                      + markup("{}\n  {} — {}", f["claim"], f["check"], f["text"]), highlight=False)


def _table1(res: Results, header: list[tuple[str, str]], rows: list[list[str]]) -> PlainTable:
    """Table 1 in the paper's layout, or one row per server and level when that is too wide for the terminal."""
    from ..report.tables import long_form

    t = PlainTable(title=f"{res.name} — successful / failed requests per server (Table 1)", title_justify="left")
    wide = sum(3 + max(len(group), len(what), *(len(r[i]) for r in rows)) for i, (group, what) in enumerate(header))
    if len(res.servers) <= 2 and wide <= out.width:
        for group, what in header:
            t.add_column(f"{group}\n{what}" if group else what, justify="right", no_wrap=True)
        for row in rows:
            t.add_row(*row)
        return t
    cols, long = long_form(header, rows, res.servers)
    for what in cols:
        t.add_column(what, justify="left" if what == "server" else "right", no_wrap=what != "server")
    for i, row in enumerate(long):
        t.add_row(*row, end_section=i % len(res.servers) == len(res.servers) - 1)
    return t


Drive = Callable[[RunSpec, "SweepHooks", "Stopper", "Fleet | None"], "SweepOutcome"]
"""What runs the trials (`run_sweep`; `loadcmp capacity` gives its search)."""


def sweep(spec: RunSpec, *, as_json: bool = False, table: bool = True, drive: Drive | None = None,
          display: SweepDisplay | None = None, live: LivePage | None = None, command: str = "run") -> SweepOutcome:
    """Run a sweep with a progress display and the command's Ctrl-C handler (and, with --live, the page
    fed by the same hooks), then print its summary (JSON, or Table 1) and where it is stored."""
    from ..load.run.workers import Stopper
    from ..report.tables import summary_doc
    from ..store.reader import load_results

    from ..load.run.cluster import open_fleet

    writable("--out", spec.out, folder=True)  # before any engine is asked: a bad path found after loses the run
    host = spec.docker()
    warn(host.warning())
    # the cluster first: a scheduler that cannot be reached is said before any container starts
    with open_fleet(spec.cluster, say) as fleet, stop_on_signals(Stopper()) as stopper, \
            (display or SweepDisplay()) as disp:
        if fleet is not None:
            fleet.check_reach(host.address)
        hooks = disp.hooks()
        if live is not None:
            hooks = with_feed(hooks, live.feed(command, f"{command} {spec.name or ' '.join(spec.servers)}"))
        outcome = (drive or _run_sweep)(spec, hooks, stopper, fleet)
    if spec.findings:
        judge_findings(outcome.path, spec)
    if as_json:
        emit_json(summary_doc(load_results(outcome.path)))
    elif table:
        print_table1(outcome.path)
    err.print(markup("results: {} ({})", outcome.path, outcome.status))
    return outcome


def _run_sweep(spec: RunSpec, hooks: SweepHooks, stopper: Stopper, fleet: Fleet | None) -> SweepOutcome:
    from ..sweep.runner import run_sweep

    return run_sweep(spec, hooks, stopper, fleet=fleet)


def judge_findings(path: str, spec: RunSpec) -> None:
    """The experiment's claims judged on what was stored, and stored beside it."""
    from ..verdicts.findings import parse_findings
    from ..verdicts.judge import evaluate
    from ..store.reader import load_results
    from ..store.writer import save_findings

    judged = evaluate(load_results(path), parse_findings(list(spec.findings)))
    save_findings(path, [r.to_doc() for r in judged])


VERDICT_STYLE = {"supported": "green", "not supported": "red", "inconclusive": "yellow"}


def raise_for_status(outcome: SweepOutcome) -> None:
    """An interrupted run is `Interrupted` (exit 128 + the signal), a failed one an error (exit 1)."""
    if outcome.status == "interrupted":
        raise Interrupted(results=Path(outcome.path), signum=outcome.signum)
    if outcome.status == "failed" and outcome.only_wrong_protocol:  # bad usage, as bench says it: exit 2
        raise WrongProtocol(outcome.problems[0].split(": ", 1)[-1] if outcome.problems else "wrong protocol")
    if outcome.status == "failed":
        raise LoadcmpError("; ".join(outcome.problems) or f"the run failed; see {outcome.path}/run.json")


@cli.command()
@click.argument("experiment", required=False, type=click.Path(dir_okay=False))
@click.option("--server", "servers_", multiple=True, metavar="[LABEL=]STACK",
              help="Stack to run (repeatable, or 'all'); LABEL=STACK runs a stack under a label of its own.")
@load_options
@event_option
@click.option("--trials", type=COUNT, help="Repeat every server x level this many times.")
@click.option("--journey", metavar="NAME|FILE|NAME=W,...",
              help="Virtual users walk this journey (the app's by name, or a file), or a weighted mix of them; "
                   "each step is measured as the page journey/step (see docs/traffic.md).")
@click.option("--trace-export", metavar="otlp://HOST:PORT",
              help="With --trace: send the joined requests as OTLP spans (client, server, PHP) to this OTLP/gRPC "
                   "receiver once the run ends (see docs/tracing.md).")
@setup_options
@traffic_options
@live_options
def run(experiment: str | None, servers_: tuple[str, ...], trials: int | None, journey: str | None, as_json: bool,
        trace_export: str | None, **flags: Any) -> None:
    """Start servers, load them at each level, measure both sides, store it all.

    Defaults (unless the experiment file says otherwise): -c 50 -t 30s, 2 s warm-up, /info.php.
    """
    from ..experiment.flags import build_spec
    from ..trace.otlp import parse_target

    target = parse_target(trace_export) if trace_export else None  # a bad target: one line, nothing started
    load, setup, live = LoadFlags.pop(flags), SetupFlags.pop(flags), LiveFlags.pop(flags)
    traffic, events = TrafficFlags.pop(flags), flags.pop("events")
    setup.check_out()
    given = {**load.given(), **setup.fields_with(servers_), **traffic.given(), **({"trials": trials} if trials else {}),
             **journey_flag(journey), **({"events": events} if events else {})}
    spec = build_spec(experiment, given)
    if target is not None:
        check_export_traces(spec, trace_export or "")
    with watching(live) as watch:
        outcome = sweep(spec, as_json=as_json, live=watch)
    if target is not None:
        export_spans(outcome.path, target)
    raise_for_status(outcome)


def check_export_traces(spec: RunSpec, url: str) -> None:
    """--trace-export where no label is traced (no --trace, or every label's `trace = false`): refused up front,
    as it would have nothing to send."""
    from ..experiment.tracing import traced

    if not any(traced(spec, label) for label in spec.servers):
        raise UsageError(f"--trace-export {url}: no label of this run is traced; add --trace (or `trace = true` in "
                         "the file or a label's [variants.LABEL])")


def export_spans(path: str, target: Target) -> None:
    """--trace-export: a run's joined requests sent as spans; a receiver that does not take them is a warning
    (the run is stored)."""
    from ..store.traceparts import read_parts
    from ..trace.otlp import export

    parts = read_parts(Path(path))
    if parts is None or parts.empty:
        warn(f"--trace-export {target.endpoint}: nothing to send (no request of this run was traced)")
        return
    made, taken = export(parts, target)
    if taken < made:
        warn(f"--trace-export {target.endpoint}: the receiver took {taken:,} of {made:,} spans (is it listening, "
             "and does it speak OTLP over gRPC?)")
    else:
        say(f"--trace-export: {made:,} spans sent to {target.endpoint}")

"""`loadcmp run`: build the RunSpec from a file and flags, show progress, print Table 1."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .console import err, out
from .errors import UsageError
from .load.engine import Live
from .load.workers import Stopper
from .runner import Planned, SweepOutcome, run_sweep
from .runner import Progress as Hooks
from .spec import RunSpec, load_experiment, validate
from .store import TrialRecord, load_results


def build_spec(experiment: str | None, flags: dict[str, Any]) -> tuple[RunSpec, dict[str, Any]]:
    """Experiment file values, then the flags the user gave (None = not given)."""
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if experiment:
        fields, extra = load_experiment(experiment)
    for k, v in flags.items():
        if v is None:
            continue
        if k == "settings":
            fields["settings"] = {**fields.get("settings", {}), **v}
        else:
            fields[k] = v
    try:
        spec = RunSpec(**fields)
    except TypeError as e:  # a field the dataclass lacks: our bug, say it plainly
        raise UsageError(str(e)) from None
    return validate(spec), extra


class SweepDisplay:
    """A rich progress display on stderr: the sweep, and the trial running now."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=err,
            transient=False,
        )
        self.overall: Any = None
        self.current: Any = None

    def __enter__(self) -> SweepDisplay:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def hooks(self) -> Hooks:
        return Hooks(trial_start=self.trial_start, live=self.live, trial_end=self.trial_end, say=self.say)

    def say(self, msg: str) -> None:
        if not msg.startswith("Step "):
            self.progress.console.print(f"[dim]{msg}[/dim]")

    def trial_start(self, p: Planned, i: int, n: int, seconds: float) -> None:
        if self.overall is None:
            self.overall = self.progress.add_task("sweep", total=n, info="")
        self.progress.update(self.overall, completed=i, info=f"trial {i + 1} of {n}")
        if self.current is not None:
            self.progress.remove_task(self.current)
        self.current = self.progress.add_task(f"{p.label} c={p.level:,} #{p.trial}", total=seconds, info="starting")

    def live(self, lv: Live) -> None:
        if self.current is None:
            return
        phase = "" if lv.measuring else "warm-up "
        self.progress.update(
            self.current,
            completed=max(0.0, lv.elapsed) + (0 if lv.measuring else 0),
            info=f"{phase}{lv.rps:8.0f} req/s  ok {lv.ok:,}  failed {lv.failed:,}  in flight {lv.inflight:,}",
        )

    def trial_end(self, p: Planned, rec: TrialRecord) -> None:
        r = rec.get("result")
        msg = f"{p.label:>16} c={p.level:<6,} #{p.trial}: "
        if r:
            msg += f"ok {r['ok']:,}  failed {r['failed']:,}  {r['rps']:,.0f} req/s  p99 {r['latency_ms']['p99'] or 0:,.1f} ms"
        if rec["status"] != "ok":
            msg += f"  [yellow]{rec['status']}: {rec.get('reason')}[/yellow]"
        if r and r["failed"] > r["ok"]:
            failures = ", ".join(f"{k} {v:,}" for k, v in r["failures"].items() if v)
            msg += f"\n{'':>18}failures: {failures}"
        if self.current is not None:
            self.progress.remove_task(self.current)
            self.current = None
        self.progress.console.print(msg)


def print_table1(path: str) -> None:
    from .report.tables import notes, table1

    res = load_results(path)
    header, rows = table1(res)
    t = Table(title=f"{res.run.get('name')} — successful / failed requests per server (Table 1)", title_justify="left")
    for group, what in header:
        t.add_column(f"{group}\n{what}" if group else what, justify="right", no_wrap=True)
    for row in rows:
        t.add_row(*row)
    out.print(t)
    for n in notes(res):
        out.print(f"* {n}")


def run(spec: RunSpec, as_json: bool, quiet: bool = False) -> tuple[SweepOutcome, int]:
    """Run the sweep with a progress display; return the outcome and exit code."""
    from .report.tables import summary_doc

    stopper = Stopper()
    import signal

    old = signal.signal(signal.SIGINT, lambda *_: stopper.stop())
    try:
        with SweepDisplay() as disp:
            outcome = run_sweep(spec, disp.hooks(), stopper)
    finally:
        signal.signal(signal.SIGINT, old)
    if as_json:
        out.file.write(json.dumps(summary_doc(load_results(outcome.path)), indent=2, default=str) + "\n")
    elif not quiet:
        print_table1(outcome.path)
    err.print(f"results: {outcome.path} ({outcome.status})")
    code = 130 if outcome.status == "interrupted" else 1 if outcome.status == "failed" else 0
    return outcome, code


def with_out(spec: RunSpec, out_dir: str | None) -> RunSpec:
    return replace(spec, out=out_dir) if out_dir else spec

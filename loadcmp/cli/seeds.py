"""`loadcmp seeds`: the five write-ups run within a time budget, a report each, one summary, docs/seeds.md."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .app import cli
from .display import err, markup
from .live import LiveFlags, LivePage, live_options, watching
from .options import writable
from ..errors import LoadcmpError, UsageError
from ..experiment.spec import RunSpec

if TYPE_CHECKING:
    from ..writeups.plan import Cut
    from ..writeups.summary import SeedRun


@cli.command()
@click.option("--budget", default="30m", show_default=True, metavar="DURATION",
              help="Wall time for all five, reports included: levels and windows are cut in proportion to fit.")
@click.option("--out", "out_dir", default="results", show_default=True,
              help="Where the results folders and the summary (seeds-<time>/) go.")
@click.option("--docs", "page", default="docs/seeds.md", show_default=True, type=click.Path(dir_okay=False),
              help="The page made from the summary.")
@click.option("--format", "fmt", default="html,md,png", show_default=True, help="The reports' formats.")
@click.option("--dry-run", is_flag=True, help="Say what would run and what is cut, then stop.")
@live_options
def seeds(budget: str, out_dir: str, page: str, fmt: str, dry_run: bool, **flags: Any) -> None:
    """Run the five write-ups' experiment files as `loadcmp run FILE` would, cut to fit --budget;
    write a report of each, a summary of their claims (JSON and Markdown) and --docs from it."""
    from ..report.build import parse_formats
    from ..writeups.plan import fit
    from ..units import parse_duration

    if not dry_run:  # first: a bad path found after the runs would lose their summary and the page
        writable("--docs", page, folder=False)
        writable("--out", out_dir, folder=True)
    live = LiveFlags.pop(flags)
    seconds = parse_duration(budget, "--budget", allow_zero=False)
    formats = parse_formats(fmt)
    cuts = fit(seed_files(out_dir), seconds)
    total = sum(c.estimate_s for c in cuts)
    for c in cuts:  # the plan in plain lines on stderr (progress; stdout keeps the outcome)
        click.echo(f"{c.name}: about {c.estimate_s / 60:.1f} min (as the file says: {c.full_s / 60:.1f} min)"
                   + "".join(f"\n  cut: {x}" for x in c.cuts), err=True)
    click.echo(f"the five: about {total / 60:.1f} min within a budget of {seconds / 60:.1f} min", err=True)
    if dry_run:
        return
    with watching(live) as watch:  # first: a port in use is said before anything is built
        build_all(cuts)
        started = time.monotonic()
        runs = [run_seed(c, out_dir, formats, watch) for c in cuts]
    summarize_seeds(runs, f"loadcmp seeds --budget {budget}", seconds, time.monotonic() - started, out_dir, page)
    failed = [f"{r.name}: {r.problem}" for r in runs if r.problem]
    if failed:
        raise LoadcmpError(f"{len(failed)} of the write-ups did not run whole ({'; '.join(failed)}); "
                           f"{page} says so")


def build_all(cuts: list[Cut]) -> None:
    """Every image the five need (an app's too), before the budget's clock starts: a first build on a new
    machine takes minutes that no write-up's estimate holds."""
    from ..experiment.apps import images_needed
    from ..lab.dockerhost import answering, docker_client
    from ..lab.images import build_images

    needed = list(dict.fromkeys(i for c in cuts for i in images_needed(c.spec)))
    host = cuts[0].spec.docker()
    with answering(host):
        build_images(docker_client(host), needed, log=lambda m: click.echo(m, err=True))


def seed_files(out_dir: str) -> list[tuple[str, Path, RunSpec]]:
    """The five files as `loadcmp run FILE` reads them (validated: a bad one is exit 2 before anything starts)."""
    from ..experiment.flags import build_spec
    from ..lab.stacks import configs_dir
    from ..writeups.plan import SEEDS

    out = []
    for name in SEEDS:
        path = configs_dir() / "experiments" / f"{name}.toml"
        if not path.is_file():
            raise UsageError(f"no experiment file {path} for the write-up {name}")
        out.append((name, path, build_spec(str(path), {"out": out_dir})))
    return out


def run_seed(cut: Cut, out_dir: str, formats: set[str], live: LivePage | None = None) -> SeedRun:
    """One write-up through `loadcmp run FILE -c ... -t ...`'s own path (the sweep, its findings
    judged and stored), then its report; a run that fails is written down and the next one goes on."""
    from ..experiment.flags import build_spec
    from ..report.build import build
    from ..writeups.summary import SeedRun
    from .run import raise_for_status, sweep

    err.print(markup("[bold]{}[/bold]{}", cut.name, f" (cut: {'; '.join(cut.cuts)})" if cut.cuts else ""),
              highlight=False)
    spec = build_spec(str(cut.path), {**cut.overrides, "out": out_dir})
    outcome = sweep(spec, table=False, live=live, command="seeds")
    if outcome.status == "interrupted":
        raise_for_status(outcome)
    problem = ("; ".join(outcome.problems) or "the run failed") if outcome.status == "failed" else None
    try:
        build([outcome.path], None, formats)
    except LoadcmpError as e:
        problem = "; ".join(p for p in (problem, f"its report: {e}") if p)
    return SeedRun(cut.name, str(cut.path), Path(outcome.path), cut.cuts, cut.estimate_s, problem)


def summarize_seeds(runs: list[SeedRun], command: str, budget_s: float, wall_s: float, out_dir: str,
                    page: str) -> None:
    """The summary beside the runs, and the page made from it."""
    from ..writeups.summary import summarize, write_page, write_summary

    summary = summarize(runs, command, budget_s, wall_s)
    js, md = write_summary(summary, Path(out_dir) / f"seeds-{time.strftime('%Y%m%d-%H%M%S')}")
    write_page(summary, Path(page))
    counts = ", ".join(f"{n} {v}" for v, n in summary["verdicts"].items())
    click.echo(f"{counts}\nsummary: {js} and {md}\npage: {page}")

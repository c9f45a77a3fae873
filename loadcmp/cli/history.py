"""`loadcmp history [RESULTS_DIR]`: one metric over every stored run, its change points, and the folders that
gave no point (with their state: none is skipped without a word)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from .app import cli
from .display import PlainTable, markup, out
from .options import json_option, writable

if TYPE_CHECKING:
    from ..catalog.model import History, RunEntry, Series

METRIC_CHOICES = ("rps", "p50", "p99", "failed_rate", "cpu_per_request", "mem_peak")
"""model.METRICS's keys (tests/test_catalog_faces.py keeps them equal): click needs them before the catalog
is imported, so that `--help` answers at once."""


@cli.command()
@click.argument("results", default="results", type=click.Path(path_type=Path))
@click.option("--metric", default="rps", show_default=True, type=click.Choice(METRIC_CHOICES),
              help="The metric to follow.")
@click.option("--label", help="Only this server label.")
@click.option("--stack", help="Only labels that ran this stack.")
@click.option("--level", type=int, help="Only this level (clients or rate).")
@click.option("--page", help="Only this page, e.g. /index.html.")
@click.option("--protocol", help="Only this protocol (http, https: HTTP/1.1 without and with TLS; h2, h2c, h3).")
@click.option("--figure", type=click.Path(dir_okay=False, path_type=Path), help="Write the trend figure (PNG) here.")
@click.option("--rebuild", is_flag=True, help="Rebuild the index of RESULTS_DIR from the folders first.")
@json_option
def history(results: Path, metric: str, label: str | None, stack: str | None, level: int | None, page: str | None,
            protocol: str | None, figure: Path | None, rebuild: bool, as_json: bool) -> None:
    """A metric over every stored run in RESULTS_DIR, oldest first, with the runs where it changed."""
    from ..catalog.history import history as history_of
    from ..catalog.model import HistoryQuery
    from ..catalog.tojson import dumps

    writable("--figure", str(figure) if figure else None, folder=False)
    q = HistoryQuery(metric=metric, label=label, stack=stack, level=level, page=page, protocol=protocol)
    h = history_of(results, q, rebuild=rebuild)
    if figure is not None:
        from ..catalog.trend import write_trend

        write_trend(h, figure)
    if as_json:
        click.echo(dumps(h))
        return
    show_history(h)
    if figure is not None:
        out.print(markup("figure: {}", figure))


def show_history(h: History) -> None:
    """Each series as a table, oldest first, its change points under the run they start at; then the folders
    that gave no point."""
    from ..catalog.words import change_text, differences_text

    for s in h.series:
        out.print(series_table(h.query.metric, s))
        if any(p.value.client_bound for p in s.points):
            out.print(BOUND_LEGEND, soft_wrap=True)
        for cp in s.change_points:
            colour = "red" if cp.direction == "worse" else "green"
            out.print(markup("  [{0}]change point[/{0}] at {1}: {2}, p = {3:.3g}; set-up: {4}", colour,
                             cp.run.path.name, change_text(h.query.metric, cp), cp.pvalue,
                             differences_text(cp.differences, most=5)), soft_wrap=True)
        if not s.change_points:
            out.print("  no change point")
    if not h.series:
        out.print("no series matches")
    pointless = without_point(h)
    unread = [r for r in pointless if r.state in ("broken", "abandoned", "running")]
    if unread:
        out.print(f"\n[bold]Folders that gave no point ({len(unread)}):[/bold]")
        for r in unread:
            why = f": {r.reason}" if r.reason else ""
            out.print(markup("  {}  {}{}", r.path, r.state, why), soft_wrap=True)
    if len(pointless) > len(unread):
        out.print(f"{len(pointless) - len(unread)} other stored run(s) have no cell these filters match")


def series_table(metric: str, s: Series) -> PlainTable:
    """One row per run: when, which, the value with its interval, the trials; a change point marked at its run."""
    from ..catalog.words import NAMES, change_percent, number, plus_minus

    t = PlainTable(title=f"{s.cell.text()}: {NAMES[metric]}, oldest first", title_justify="left")
    for col, just in (("", "left"), ("time", "left"), ("run", "left"), (NAMES[metric], "right"), ("n", "right"),
                      ("change", "left")):
        t.add_column(col, justify=just)
    starts = {cp.index: cp for cp in s.change_points}
    for i, p in enumerate(s.points):
        cp = starts.get(i)
        mark, change = Text(), Text()
        if cp is not None:
            colour = "red" if cp.direction == "worse" else "green"
            mark = Text("▶", style=colour)
            change = Text(f"{number(metric, cp.before)} → {number(metric, cp.after)} ({change_percent(cp)})",
                          style=colour)
        t.add_row(mark, p.run.started, p.run.path.name, plus_minus(metric, p.value) + BOUND_MARK * p.value.client_bound,
                  str(p.value.n), change)
    return t


BOUND_MARK = " ‡"
"""After a run's value where its client limited the cell (`Value.client_bound`), as compare marks its rows."""
BOUND_LEGEND = ("  ‡ client-bound: the client limited that run's req/s, a lower bound (docs/client-bound.md); a change "
                "to or from it may be the client's")


def without_point(h: History) -> list[RunEntry]:
    """The folders found that no series has a point of (broken, abandoned, running, or not matching)."""
    used = {p.run.path for s in h.series for p in s.points}
    return [r for r in h.runs if r.path not in used]

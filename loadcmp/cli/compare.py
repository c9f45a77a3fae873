"""`loadcmp compare A B`: two stored runs, what differs in their set-up first, then every shared cell."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from .app import cli
from .display import PlainTable, markup, out
from .options import json_option
from ..errors import UsageError

if TYPE_CHECKING:
    from ..catalog.model import Comparison, Difference, RunEntry

DIFF_LINES = 8
"""A rendered config's diff is cut to this many lines unless --diff is given."""
VERDICT_STYLE = {"better": "green", "worse": "red", "no difference": "", "too few trials": "yellow",
                 "not measured": "dim",
                 "client-bound": "yellow"}


@cli.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--diff", "full_diff", is_flag=True, help="Show the rendered configs' diffs whole.")
@click.option("--pair", metavar="LABEL_A=LABEL_B",
              help="Compare A's label LABEL_A with B's LABEL_B as one server (a tuned variant against the defaults).")
@json_option
def compare(a: Path, b: Path, full_diff: bool, pair: str | None, as_json: bool) -> None:
    """Compare two stored runs: the set-up differences first, then each shared cell with its verdict."""
    from ..catalog.compare import compare as compare_runs
    from ..catalog.tojson import dumps

    c = compare_runs(a, b, pair=pair_of(pair))
    if as_json:
        click.echo(dumps(c))
        return
    show_comparison(c, full_diff)


def pair_of(text: str | None) -> tuple[str, str] | None:
    """--pair nginx=tuned -> ("nginx", "tuned")."""
    if text is None:
        return None
    a, eq, b = text.partition("=")
    if not eq or not a.strip() or not b.strip():
        raise UsageError(f"--pair {text!r}: write it as LABEL_A=LABEL_B, e.g. --pair nginx=tuned")
    return a.strip(), b.strip()


def show_comparison(c: Comparison, full_diff: bool = False) -> None:
    """The comparison on stdout: the runs, what differs, one table per metric, the cells only one has."""
    out.print(markup("A  {}  {}", c.a.path, _said(c.a)), soft_wrap=True)
    out.print(markup("B  {}  {}", c.b.path, _said(c.b)), soft_wrap=True)
    show_differences(c.differences, full_diff)
    for table in metric_tables(c):
        out.print(table)
    if not c.rows:
        from ..catalog.words import NO_ROW

        out.print("\n" + NO_ROW, soft_wrap=True)
    if any(r.setup_differs for r in c.rows):
        out.print("* the set-up of this cell differs between the runs (above)")
    if any(r.client_bound for r in c.rows):
        out.print("client-bound: the client limited that side's req/s, a lower bound: judged one-sided, as the "
                  "findings are (docs/client-bound.md)", soft_wrap=True)
    for side, cells in (("A", c.only_a), ("B", c.only_b)):
        if cells:
            out.print(markup("only in {}: {}", side, ", ".join(k.text() for k in cells)), soft_wrap=True)
    show_parts(c)


def show_parts(c: Comparison) -> None:
    """Where the time went in each cell both runs traced (--trace): each part's share of p50 and p99 in A and in
    B, then the part that moved most."""
    if not c.parts:
        return
    out.print("\n[bold]Where the time went (--trace), A against B:[/bold]")
    for m in c.parts:
        t = PlainTable(title=f"{m.label} @ {m.level:,}", title_justify="left")
        for col, just in (("part", "left"), ("A p50", "right"), ("B p50", "right"), ("A p99", "right"),
                          ("B p99", "right")):
            t.add_column(col, justify=just)
        t.add_row("latency", *(f"{x:,.1f} ms" for x in (m.a_p50_ms, m.b_p50_ms, m.a_p99_ms, m.b_p99_ms)))
        for r in m.parts:
            t.add_row(r.name, *(f"{x:.0%}" for x in (r.a_p50, r.b_p50, r.a_p99, r.b_p99)))
        out.print(t)
        out.print(markup("{}", m.sentence), soft_wrap=True)


def _said(r: RunEntry) -> str:
    bits = [r.state, r.kind, r.started]
    return "(" + ", ".join(b for b in bits if b) + ")"


def show_differences(diffs: list[Difference], full_diff: bool) -> None:
    """What differs, one line each; a rendered config's unified diff under it, whole or cut with a hint."""
    from ..catalog.words import difference_text

    if not diffs:
        out.print("\n[bold]What differs:[/bold] nothing in the set-up")
        return
    out.print(f"\n[bold]What differs ({len(diffs)}):[/bold]")
    cut = False
    for d in diffs:
        out.print(markup("  {:8} {}", d.kind, difference_text(d)), soft_wrap=True)
        lines = [x for x in d.diff.splitlines() if not x.startswith(("--- a/", "+++ b/"))]  # the file is named above
        shown = lines if full_diff else lines[:DIFF_LINES]
        for line in shown:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            out.print(markup("           [{0}]{1}[/{0}]", style, line), soft_wrap=True)
        if len(shown) < len(lines):
            cut = True
            more = len(lines) - len(shown)
            out.print(f"           … {more} more line{'s' if more != 1 else ''}")
    if cut:
        out.print("  (--diff shows the configs' diffs whole)")


def metric_tables(c: Comparison) -> list[PlainTable]:
    """One table per metric: each shared cell's A, B, B against A with its interval, and the verdict."""
    from ..catalog.model import METRICS
    from ..catalog.words import NAMES, cell_text, delta_text, plus_minus, verdict_text

    tables = []
    for metric in METRICS:
        rows = [(r, d) for r in c.rows for d in r.deltas if d.metric == metric]
        if not rows:
            continue
        better = "higher" if METRICS[metric][1] else "lower"
        t = PlainTable(title=f"{NAMES[metric]} ({better} is better)", title_justify="left")
        for col, just in (("cell", "left"), ("A", "right"), ("B", "right"), ("B against A", "right"),
                          ("verdict", "left")):
            t.add_column(col, justify=just)
        for r, d in rows:
            style = VERDICT_STYLE.get(d.verdict, "")
            t.add_row(cell_text(r, metric), plus_minus(metric, d.a),
                      plus_minus(metric, d.b), delta_text(d), Text(verdict_text(d), style=style))
        tables.append(t)
    return tables

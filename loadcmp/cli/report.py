"""`loadcmp report`: tables and figures from stored results folders only."""

from __future__ import annotations

import click

from .app import cli
from .options import writable


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--out", "out_dir", help="Where to write (default: RESULTS/report).")
@click.option("--format", "fmt", default="html,md,png", show_default=True, help="Any of html, md, png, svg.")
@click.option("--level", type=int, help="Level for the timeline and latency figures (default: highest common).")
@click.option("--open", "open_", is_flag=True, help="Open report.html in a browser.")
def report(results: tuple[str, ...], out_dir: str | None, fmt: str, level: int | None, open_: bool) -> None:
    """Build report.html and report.md from one or more results folders.

    Prints every file it wrote, one per line (the report first)."""
    from ..report.build import build, parse_formats
    from .display import warn

    writable("--out", out_dir, folder=True)  # first, as every command's output path
    written = build(list(results), out_dir, parse_formats(fmt), level, warn=warn)
    first = [n for n in ("report.html", "report.md") if n in written]
    for name in first + sorted(n for n in written if n not in first):
        click.echo(str(written[name]))
    if open_ and "report.html" in written:
        import webbrowser

        webbrowser.open(written["report.html"].resolve().as_uri())

"""`loadcmp mix FILE`: an access log's top pages as a `[mix]` table to paste into an experiment file."""

from __future__ import annotations

import json

import click

from .app import cli


def mix_table(file: str, fmt: str | None, top: int, methods: str) -> str:
    """The `[mix]` table of a log's `top` pages by their requests (integer weights: the counts), after a
    comment saying the share of the log's sent requests it covers."""
    from ..errors import UsageError
    from ..traffic.logs import MIX_WORDS, read_log
    from ..traffic.logreplay import parse_methods, top_pages
    from ..units import check_count

    check_count(top, "--top")
    log = read_log(file, fmt, MIX_WORDS)  # type: ignore[arg-type]  # click's Choice gave one of logs.FORMATS
    allowed = parse_methods(methods, "--methods")
    pages, sent, distinct, failed = top_pages(log, top, allowed)
    if not pages:
        raise UsageError(f"{file}: the log says every {'/'.join(allowed)} request failed (>= 400): no page for a mix")
    covered = sum(n for _, n in pages)
    lines = [f"# loadcmp mix {file}: the top {len(pages)} of {distinct:,} pages, {covered:,} of the {sent:,} answered "
             f"{'/'.join(allowed)} requests ({100.0 * covered / sent:.1f} %); {log.format} log, {log.lines:,} lines"
             + (f"; {failed:,} the log says failed (>= 400) left out: a mix's pages must answer" if failed else "")
             + (f"; {len(log.bad):,} unreadable line{'s' * (len(log.bad) > 1)} left out" if log.bad else ""),
             "[mix]"]
    width = max(len(json.dumps(p)) for p, _ in pages)
    for path, n in pages:
        lines.append(f"{json.dumps(path):<{width}} = {n}  # {100.0 * n / sent:.1f} %")
    return "\n".join(lines)


@cli.command("mix")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--top", default=10, show_default=True, type=int, help="How many pages the table holds.")
@click.option("--log-format", "fmt", type=click.Choice(["combined", "common", "json"]),
              help="The log's format (default: told by its first lines).")
@click.option("--methods", default="GET,HEAD", show_default=True,
              help="The requests counted, as run's --replay-methods (a mix sends GET: a HEAD counts for its path).")
def mix(file: str, fmt: str | None, top: int, methods: str) -> None:
    """Print the [mix] table of an access log's top pages by weight.

    Reads nginx's or Apache's combined or common log, or JSON lines; the weights are the pages' request
    counts, and the first line says the share of the log the table covers."""
    click.echo(mix_table(file, fmt, top, methods))

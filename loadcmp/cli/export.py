"""`loadcmp export DIR --format openmetrics|csv`: stored runs as time series for Prometheus or anything else."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import click
from ..export import FORMATS, Format
from .app import cli
from .display import err, markup


@cli.command()
@click.argument("results", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="openmetrics",
              show_default=True, help="OpenMetrics text with timestamps (promtool tsdb create-blocks-from "
                                      "openmetrics loads it), or CSV with one row per sample.")
@click.option("-o", "--out", "out_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write to this file (atomically) instead of stdout.")
def export(results: Path, fmt: str, out_file: Path | None) -> None:
    """Export a stored run (or every run under RESULTS) as the series `/metrics` serves, each at its second."""
    from ..export.stored import collect, render
    from ..store.writer import _atomic_write
    from .options import writable

    if out_file is not None:
        writable("--out", str(out_file), folder=False)
    ex = collect(results)
    data = render(ex, cast(Format, fmt))
    if out_file is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        _atomic_write(out_file, lambda tmp: Path(tmp).write_bytes(data))
    for why in ex.skipped:
        err.print(markup("skipped {}", why), highlight=False, soft_wrap=True)
    if ex.laid_out:
        err.print(f"{len(ex.laid_out)} run(s) predate per-trial start times: their trials are laid end to end "
                  "from the run's start", highlight=False, soft_wrap=True)
    series, samples = ex.counts()
    err.print(markup("exported {} run(s): {:,} series, {:,} samples{}", len(ex.runs), series, samples,
                     f" to {out_file}" if out_file is not None else ""), highlight=False, soft_wrap=True)

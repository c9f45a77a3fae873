"""Write report.html (self-contained), report.md and the figures from results folders.

Everything is drawn and rendered in memory first (`Report`), then written, so
a figure that fails to draw leaves no half-written report behind.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt

from ..errors import ReportError, StoreError, UsageError
from ..records import FindingDoc
from ..store.reader import Results, Run, load_results
from ..store.writer import _atomic_write
from . import compare, documents, plots, timeparts
from .capacity import capacity_lines, capacity_rows
from .tune import tune_lines, tune_rows
from .documents import Report
from .setup import settings, setup_rows, warnings
from .story import story
from .tables import CLIENT_BOUND_MARK, legend, table1
from .streams import stream_lines, stream_rows
from .journeys import journey_rows, step_rows
from .events import event_lines, event_rows
from .tls import tls_lines, tls_rows
from .mixes import mix_lines, mix_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = {"html", "md", "png", "svg"}


def parse_formats(text: str) -> set[str]:
    fmts = {f.strip().lower() for f in text.split(",") if f.strip()}
    bad = fmts - FORMATS
    if bad or not fmts:
        raise UsageError(f"bad --format {text!r}: use a list of {', '.join(sorted(FORMATS))}")
    return fmts


def findings(data: Results) -> list[FindingDoc]:
    """The write-ups' claims as judged after each run (run.json's `findings`)."""
    return [f for r in data.runs for f in r.doc.get("findings", [])]


def build(paths: list[str] | list[Path], out_dir: str | Path | None = None, formats: set[str] | None = None,
          level: int | None = None, warn: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Build the report; returns what was written (file name -> path). `warn` is told, once the report is
    written, of each figure a per-second table that could not be read took from (the report says it too).

    Raises StoreError (a folder unreadable, nothing stored in it, the output not
    writable), UsageError (a level not run, --out naming a file, a folder given
    twice) and ReportError (a figure failed: nothing is written), one line each."""
    formats = formats or {"html", "md", "png"}
    seen: dict[Path, str] = {}
    for p in map(str, paths):
        key = Path(p).resolve()
        if key in seen:
            raise UsageError(f"{p} is given twice (as {seen[key]}): a run compared with itself says nothing")
        seen[key] = p
    data = load_results(*paths)
    if not data.trials:
        raise StoreError("; ".join(map(nothing_stored, data.runs)))
    if level is not None and level not in data.levels:
        raise UsageError(f"--level {level} was not run; levels: {', '.join(map(str, data.levels))}")
    out = Path(out_dir) if out_dir else data.path / "report"
    created = not out.exists()
    _out_dir(out)
    try:
        report = compose(data, level, svg="svg" in formats)
    except Exception:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    try:
        written = _write(report, out, formats)
    except OSError as e:
        raise StoreError(f"cannot write the report to {out}: {e.strerror or e}") from None
    for i, d in enumerate(report.figures, 1):
        if d.lacking and warn is not None:
            warn(f"figure {i} ({d.stem}) {d.lacking}")
    return written


def nothing_stored(run: Run) -> str:
    """Why a folder holds no trial, in one line: its process ended first (abandoned), still runs, ran where
    it cannot be seen from here, or the run stopped before a trial ended."""
    owner = run.owner if run.doc.get("status") == "running" else None
    if owner is None:
        return f"{run.path}: no trial was stored (the run stopped before the first one ended)"
    process = f"its process {owner.pid} on {owner.machine}"
    if owner.state == "gone":
        return f"{run.path}: the run was abandoned: {process} ended before the first trial was stored"
    if owner.state == "running":
        return f"{run.path}: no trial is stored yet: {process} is still running (report it once a trial has ended)"
    return (f"{run.path}: no trial is stored: {process} wrote it from another machine, boot or container, so "
            "whether it still runs cannot be told from here")


def _out_dir(out: Path) -> Path:
    """Create the output folder first, so a bad --out fails before any figure is drawn."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create the report folder {out}: {e.strerror or e}") from None
    return out


def _save(fig: Figure, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, bbox_inches="tight")
    return buf.getvalue()


def _draw(data: Results, level: int | None, svg: bool) -> tuple[list[plots.Drawn], dict[str, bytes], dict[str, bytes]]:
    """Every figure drawn into bytes; a failure is one ReportError naming the figure."""
    try:
        figs = plots.figures(data, level)
    except Exception as e:  # matplotlib raises many types; say which and write nothing
        plt.close("all")
        raise ReportError(f"a figure could not be drawn ({type(e).__name__}: {e}); no report file was written") from e
    png: dict[str, bytes] = {}
    svgs: dict[str, bytes] = {}
    try:
        for d in figs:
            if d.figure is not None:
                png[d.stem] = _save(d.figure, "png")
                if svg:
                    svgs[d.stem] = _save(d.figure, "svg")
    except Exception as e:
        raise ReportError(f"figure {d.stem} could not be saved ({type(e).__name__}: {e}); "
                          "no report file was written") from e
    finally:
        plt.close("all")
    return figs, png, svgs


def compose(data: Results, level: int | None = None, svg: bool = False) -> Report:
    """The whole report in memory."""
    figs, png, svgs = _draw(data, level, svg)
    header, rows = table1(data)
    base, ratios = compare.ratio_table(data)
    return Report(title="loadcmp report — " + data.name, data=data, claims=findings(data), story=story(data),
                  setup=setup_rows(data), settings=settings(data), header=header, rows=rows,
                  legend=legend(header, rows, data), warnings=warnings(data), comparison=compare.comparison_lines(data),
                  baseline=base, ratios=ratios, figures=figs, png=png, svg=svgs, capacity=capacity_rows(data),
                  capacity_lines=tuple(capacity_lines(data)), tune=tune_rows(data), tune_lines=tuple(tune_lines(data)),
                  tls=tls_rows(data), tls_lines=tuple(tls_lines(data)), streams=stream_rows(data),
                  stream_lines=tuple(stream_lines(data)), mix=mix_rows(data), mix_lines=tuple(mix_lines(data)),
                  journeys=journey_rows(data, CLIENT_BOUND_MARK), journey_steps=step_rows(data),
                  events=event_rows(data), event_lines=tuple(event_lines(data)), **_time_parts(data))


def _time_parts(data: Results) -> dict[str, Any]:
    """--trace's sections (`timeparts`), parts.parquet read once; nothing for a run that was not traced."""
    parts = timeparts.parts_of(data)
    if parts is None:
        return {}
    return {"time_parts": timeparts.share_rows(data, parts), "time_part_lines": tuple(timeparts.lines(data, parts)),
            "slowest": timeparts.slowest_rows(data, parts)}


def _write(r: Report, out: Path, formats: set[str]) -> dict[str, Path]:
    written: dict[str, Path] = {}

    def put(name: str, data: bytes) -> None:
        p = out / name
        _atomic_write(p, lambda tmp: Path(tmp).write_bytes(data))
        written[name] = p

    for stem, data in r.png.items():
        if "png" in formats or "md" in formats:
            put(f"{stem}.png", data)
    for stem, data in r.svg.items():
        put(f"{stem}.svg", data)
    if "md" in formats:
        put("report.md", documents.markdown(r).encode())
    if "html" in formats:
        put("report.html", documents.html_page(r).encode())
    return written

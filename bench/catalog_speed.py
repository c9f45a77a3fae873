"""The catalog's speed on many stored runs: `history` and `compare` on made-up results folders.

    .venv/bin/python bench/catalog_speed.py [--runs 1000] [--labels 2] [--levels 2] [--keep DIR]

Writes `--runs` made-up runs (`tests/helpers/synthetic.py`, through the store's own writer;
each labels x levels x 3 trials, one step in req/s two thirds of the way) into a temporary
folder, with its own cache folder, then times, each the best of three:

- `history` with a cold index (the index deleted first: every run.json read by DuckDB);
- `history` with a warm index (nothing changed: each folder's run.json only stat'ed);
- `history` after one run changed (that folder alone read again);
- `compare` of two of the runs (it reads their two run.json; no index);
- `regressions` of the newest run against the others (what `smoke --history` asks);
- `loadcmp history` and `loadcmp compare` each in a new process, as a user runs them (imports and the
  table included; the index and its change points warm).

The issue's aim is under 2 s for `history` and `compare` at 1,000 runs. A benchmark, not a
test: it prints the figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def best_of(n: int, f: Callable[[], Any], before: Callable[[], Any] | None = None) -> tuple[float, Any]:
    """The least wall time of `n` calls of `f` (each after `before`, not timed), and its last answer."""
    best, out = float("inf"), None
    for _ in range(n):
        if before is not None:
            before()
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def fresh(*argv: str, n: int = 3) -> float:
    """The least wall time of `n` runs of `loadcmp ARGV` in a new process, its table printed (to nowhere): what
    a command's user waits for."""
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "loadcmp", *argv], check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--labels", type=int, default=2)
    ap.add_argument("--levels", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="write the runs here and keep them (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="loadcmp-catalog-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    root = args.keep or work / "results"

    from loadcmp.catalog.compare import compare
    from loadcmp.catalog.history import history, regressions
    from loadcmp.catalog.index import cache_file
    from loadcmp.catalog.model import HistoryQuery
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))  # the tests' made-up runs
    from synthetic import Plan, make_runs

    try:
        plan = Plan(labels=tuple(["nginx", "apache", "caddy", "lighttpd"][:args.labels]),
                    levels=tuple([10, 50, 100, 500][:args.levels]))
        t0 = time.perf_counter()
        paths = make_runs(root, args.runs, step_at=args.runs * 2 // 3, step=-0.3, plan=plan, broken=2, abandoned=1)
        print(f"{args.runs} runs ({len(plan.labels)} labels x {len(plan.levels)} levels x {plan.trials} trials) "
              f"written in {time.perf_counter() - t0:.1f} s under {root}")
        q = HistoryQuery("rps", label="nginx", level=plan.levels[0])
        cold, h = best_of(3, lambda: history(root, q), lambda: cache_file(root).unlink(missing_ok=True))
        warm, h = best_of(3, lambda: history(root, q))
        every, _ = best_of(3, lambda: history(root, HistoryQuery("p99")))
        touched, _ = best_of(3, lambda: history(root, q), lambda: os.utime(paths[len(paths) // 2] / "run.json"))
        cmp, c = best_of(3, lambda: compare(paths[0], paths[-1]))
        reg, found = best_of(3, lambda: regressions(root, paths[-1]))
        (series,) = h.series
        print(f"history, cold index:            {cold:6.3f} s  ({len(series.points)} points, change points at "
              f"{[cp.run.path.name for cp in series.change_points]})")
        print(f"history, warm index:            {warm:6.3f} s")
        print(f"history, every cell (p99):      {every:6.3f} s")
        print(f"history, one run changed:       {touched:6.3f} s")
        print(f"compare, two runs:              {cmp:6.3f} s  ({len(c.rows)} rows, {len(c.differences)} differences)")
        print(f"regressions of the newest run:  {reg:6.3f} s  ({len(found)} found)")
        print(f"index: {cache_file(root).stat().st_size / 1e6:.1f} MB")
        print("as a command answers, in a new process (imports included, the index warm):")
        one = fresh("history", str(root), "--label", "nginx", "--level", str(plan.levels[0]))
        print(f"  loadcmp history, one series:  {one:6.3f} s  (--label nginx --level {plan.levels[0]})")
        every_cli = fresh("history", str(root))
        print(f"  loadcmp history, every cell:  {every_cli:6.3f} s  ({len(plan.labels) * len(plan.levels)} series, "
              f"{args.runs} rows each printed)")
        print(f"  loadcmp compare:              {fresh('compare', str(paths[0]), str(paths[-1])):6.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

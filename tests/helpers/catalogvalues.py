"""Hand-made answers of the catalog (model.py's dataclasses only): what the faces of compare and history are
tested on without stored folders."""

from __future__ import annotations

from pathlib import Path

from loadcmp.catalog.model import (CellKey, ChangePoint, CompareRow, Comparison, Difference, History, HistoryQuery,
                                   MetricDelta, Point, RunEntry, Series, Value)


def run(i: int, state: str = "complete") -> RunEntry:
    return RunEntry(Path(f"results/2026-11-{i:02d}-smoke"), state, f"2026-11-{i:02d}-smoke", f"id{i}", "smoke",  # type: ignore[arg-type]
                    f"2026-11-{i:02d}T10:00:00+00:00", None if state == "complete" else "its owner died")


CELL = CellKey("nginx", 50, "/index.html", "http")
OTHER = CellKey("apache-event", 50, "/index.html", "http")
SETTING = Difference("setting", "nginx", "fpm.max_children", "40", "8")
CONFIG = Difference("config", "nginx", "php/www.conf", "h1", "h2",
                    diff="\n".join(["--- a/php/www.conf", "+++ b/php/www.conf", "@@ -1,12 +1,12 @@"]
                                   + [f"-pm.line{i} = {i}" for i in range(6)] + [f"+pm.line{i} = {i + 1}"
                                                                                 for i in range(6)]))


def comparison() -> Comparison:
    rps = MetricDelta("rps", Value(1000.0, 950.0, 1050.0, 3), Value(800.0, 780.0, 820.0, 3), 0.8, 0.74, 0.86,
                      "worse")
    p99 = MetricDelta("p99", Value(12.0, 11.0, 13.0, 2), Value(12.5, 11.5, 13.5, 2), 1.04, None, None,
                      "too few trials")
    same = MetricDelta("rps", Value(500.0, 480.0, 520.0, 3), Value(505.0, 485.0, 525.0, 3), 1.01, 0.95, 1.07,
                       "no difference")
    return Comparison(run(1), run(2), [SETTING, CONFIG],
                      [CompareRow(CELL, [rps, p99], True), CompareRow(OTHER, [same], False)],
                      only_a=[CellKey("caddy", 50, "/index.html", "http")], only_b=[])


def history(n: int = 8, step_at: int = 4) -> History:
    pts = [Point(run(i + 1), CELL, Value(1000.0 if i < step_at else 700.0, None, None, 3)) for i in range(n)]
    for i in range(n):  # an interval on each
        v = pts[i].value
        pts[i] = Point(pts[i].run, CELL, Value(v.mean, (v.mean or 0) - 20, (v.mean or 0) + 20, 3))
    cp = ChangePoint(CELL, step_at, pts[step_at].run, 1000.0, 700.0, -0.3, 0.001, "worse", [SETTING])
    return History(HistoryQuery("rps"), [Series(CELL, pts, [cp])],
                   [p.run for p in pts] + [run(20, "abandoned"), RunEntry(Path("results/junk"), "broken",
                                                                          reason="no run.json")])

"""The faces of the catalog, on values made by hand: `compare` and `history` as the terminal shows them, their
JSON, the trend figure and a change point as a failed smoke check (no stored folder, no Docker).

The same faces over synthetic results folders, through the catalog itself: tests/test_catalog_cli.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from loadcmp.catalog import tojson, words
from loadcmp.catalog.model import (METRICS, CellKey, ChangePoint, CompareRow, Comparison, Difference, History,
                                   HistoryQuery, MetricDelta, Point, RunEntry, Series, Value)


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


def test_words_say_values_verdicts_and_changes():
    assert words.plus_minus("rps", Value(1234.0, 1200.0, 1268.0, 3)) == "1,234 req/s ± 34"
    assert words.plus_minus("p99", Value(None, None, None, 0)) == "not measured"
    assert words.number("mem_peak", 200 * 1048576) == "200.0 MiB"
    d = comparison().rows[0].deltas
    assert words.delta_text(d[0]) == "-20.0 % (-26.0 % … -14.0 %)"
    assert words.verdict_text(d[1]) == "too few trials: n=2 vs 2"
    assert words.verdict_text(d[0]) == "worse"
    cp = history().series[0].change_points[0]
    assert words.change_text("rps", cp) == "1,000 req/s → 700 req/s (-30.0 %, worse)"
    assert words.differences_text([SETTING, CONFIG]) == "nginx: fpm.max_children 40 → 8; nginx: php/www.conf changed"
    assert words.differences_text([SETTING] * 5, most=2).endswith("and 3 more")


def test_the_json_is_the_model_with_paths_as_strings():
    doc = json.loads(tojson.dumps(comparison()))
    assert doc["a"]["path"] == "results/2026-11-01-smoke"
    assert doc["differences"][0] == {"kind": "setting", "scope": "nginx", "key": "fpm.max_children", "before": "40",
                                     "after": "8", "diff": ""}
    assert doc["rows"][0]["deltas"][0]["verdict"] == "worse" and doc["rows"][0]["setup_differs"] is True
    assert doc["only_a"] == [{"label": "caddy", "level": 50, "page": "/index.html", "protocol": "http"}]
    h = json.loads(tojson.dumps(history()))
    assert h["series"][0]["change_points"][0]["index"] == 4
    assert tojson.plain(float("nan")) is None


def test_compare_shows_what_differs_first_then_the_cells(capsys):
    from loadcmp.cli.compare import show_comparison

    show_comparison(comparison())
    text = capsys.readouterr().out
    assert text.index("What differs (2)") < text.index("req/s (higher is better)")
    assert "nginx: fpm.max_children 40 → 8" in text
    assert "-pm.line0" in text and "+pm.line5" not in text and "more lines" in text and "--diff" in text
    assert "nginx@50 /index.html (http) *" in text and "apache-event@50 /index.html (http) *" not in text
    assert "too few trials: n=2 vs 2" in text and "no difference" in text
    assert "only in A: caddy@50" in text and "only in B" not in text


def test_compare_diff_shows_the_configs_whole(capsys):
    from loadcmp.cli.compare import show_comparison

    show_comparison(comparison(), full_diff=True)
    text = capsys.readouterr().out
    assert "+pm.line5 = 6" in text and "more lines" not in text


def test_history_shows_each_run_the_change_point_and_the_folders_without_a_point(capsys):
    from loadcmp.cli.history import METRIC_CHOICES, show_history

    assert set(METRIC_CHOICES) == set(METRICS)
    show_history(history())
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("│") and "2026-11-0" in line]
    assert len(rows) == 8 and "1,000 req/s ± 20" in rows[0] and "700 req/s ± 20" in rows[-1]
    assert "▶" in rows[4] and "-30.0 %" in rows[4] and "▶" not in rows[3]
    assert "change point at 2026-11-05-smoke" in text and "fpm.max_children 40 → 8" in text
    assert "abandoned: its owner died" in text and "results/junk  broken: no run.json" in text


def test_the_trend_figure_is_written(tmp_path):
    from loadcmp.catalog.trend import trend_figure, write_trend

    fig = trend_figure(history())
    ax = fig.axes[0]
    assert len(ax.lines) >= 2  # the series and the change point's line
    assert any("fpm.max_children" in t.get_text() for t in ax.texts)
    path = write_trend(history(), tmp_path / "figs" / "trend.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_history_with_nothing_drawn_is_bad_usage():
    from loadcmp.catalog.trend import trend_figure
    from loadcmp.errors import UsageError

    with pytest.raises(UsageError, match="nothing to draw"):
        trend_figure(History(HistoryQuery("rps"), [], [run(1)]))


def test_a_change_point_for_the_worse_is_a_failed_check_in_junit_and_the_summary(tmp_path):
    from loadcmp.catalog.gate import regression_verdict
    from loadcmp.verdicts.smoke import junit_xml

    v = regression_verdict("rps", history().series[0].change_points[0])
    assert not v.passed and v.kind == "history" and v.server == "nginx"
    xml = ET.fromstring(junit_xml([v], 1.0, "results/x"))
    failure = xml.find(".//failure")
    assert failure is not None and failure.get("type") == "change point"
    message = failure.get("message") or ""
    assert "req/s" in message and "1,000 req/s → 700 req/s (-30.0 %, worse)" in message
    assert "fpm.max_children 40 → 8" in message

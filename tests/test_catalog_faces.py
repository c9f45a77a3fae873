"""The faces of the catalog, on values made by hand: `compare` and `history` as the terminal shows them, their
JSON, the trend figure and a change point as a failed smoke check (no stored folder, no Docker).

The same faces over synthetic results folders, through the catalog itself: tests/test_catalog_cli.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
import pytest

from helpers.catalogvalues import CONFIG, SETTING, comparison, history, run
from loadcmp.catalog import tojson, words
from loadcmp.catalog.model import METRICS, History, HistoryQuery, Value


def test_words_say_values_verdicts_and_changes():
    assert set(words.NAMES) == set(METRICS)  # every metric has its heading
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
    assert doc["only_a"] == [{"label": "caddy", "level": 50, "page": "/index.html", "protocol": "http", "streams": 1,
                             "traffic": "", "app": ""}]
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


def test_a_client_bound_side_is_named_and_not_judged(capsys):
    from dataclasses import replace

    from loadcmp.cli.compare import show_comparison

    c = comparison()
    bound = replace(c.rows[0].deltas[0], verdict="client-bound")
    row = replace(c.rows[0], deltas=[bound, c.rows[0].deltas[1]], client_bound="B")
    show_comparison(replace(c, rows=[row, c.rows[1]]))
    text = capsys.readouterr().out
    rps = next(line for line in text.splitlines() if line.startswith("│ nginx@50") and "req/s" in line)
    assert "(client-bound: B)" in rps and "client-bound: no verdict" in rps and "worse" not in rps
    p99 = next(line for line in text.splitlines() if line.startswith("│ nginx@50") and " ms" in line)
    assert "client-bound" not in p99
    assert "judged one-sided" in text

"""`history` and `regressions` on made-up runs: a known step found and named, none where there is none."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from loadcmp.catalog.history import history, regressions
from loadcmp.catalog.model import HistoryQuery
from helpers.synthetic import Plan, make_runs
from loadcmp.errors import LoadcmpError, UsageError


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_the_known_step_is_found_at_its_run_with_the_changed_setting(tmp_path: Path):
    root = tmp_path / "r"
    paths = make_runs(root, 8, step_at=4, step=-0.3, broken=1, abandoned=1, running=1)
    h = history(root, HistoryQuery("rps"))
    (series,) = h.series
    assert [p.run.path for p in series.points] == paths  # oldest first; other states give no points
    assert all(p.value.n == 3 and p.value.low is not None for p in series.points)
    (cp,) = series.change_points
    assert (cp.index, cp.run.path, cp.direction, cp.metric) == (4, paths[4], "worse", "rps")
    assert -0.35 < cp.change < -0.25 and cp.after < cp.before and cp.pvalue < 0.001
    assert [(d.kind, d.key, d.before, d.after) for d in cp.differences if d.kind == "setting"] == [
        ("setting", "fpm.max_children", "8", "4")]
    assert {r.state for r in h.runs} == {"complete", "broken", "abandoned", "running"} and len(h.runs) == 11


def test_a_step_up_in_latency_is_worse_and_down_is_better(tmp_path: Path):
    up = make_runs(tmp_path / "up", 8, step_at=4, step=0.5, plan=Plan(metric="p99"), seed=2)
    (cp,) = history(tmp_path / "up", HistoryQuery("p99")).series[0].change_points
    assert (cp.run.path, cp.direction) == (up[4], "worse")
    make_runs(tmp_path / "down", 8, step_at=4, step=-0.3, plan=Plan(metric="p99"), seed=2)
    (cp,) = history(tmp_path / "down", HistoryQuery("p99")).series[0].change_points
    assert cp.direction == "better"


@pytest.mark.parametrize("seed", range(5))
def test_no_step_no_change_point(tmp_path: Path, seed: int):
    make_runs(tmp_path / "r", 8, seed=seed)
    for metric in ("rps", "p99", "cpu_per_request"):
        (series,) = history(tmp_path / "r", HistoryQuery(metric)).series
        assert series.change_points == [], metric


def test_filters_pick_the_cells(tmp_path: Path):
    root = tmp_path / "r"
    make_runs(root, 4, plan=Plan(labels=("nginx", "apache"), levels=(10, 50)))
    assert len(history(root, HistoryQuery("rps")).series) == 4
    h = history(root, HistoryQuery("p50", label="apache", level=50))
    assert [(s.cell.label, s.cell.level) for s in h.series] == [("apache", 50)]
    assert len(history(root, HistoryQuery("rps", stack="nginx", protocol="http")).series) == 2
    with pytest.raises(UsageError, match="no stored run under .* matches label caddy"):
        history(root, HistoryQuery("rps", label="caddy"))


def test_an_unknown_metric_names_the_metrics(tmp_path: Path):
    make_runs(tmp_path / "r", 2)
    with pytest.raises(UsageError, match="no metric 'speed'; the metrics are rps, p50, p99"):
        history(tmp_path / "r", HistoryQuery("speed"))


def test_a_root_with_no_run_at_all(tmp_path: Path):
    (tmp_path / "r").mkdir()
    with pytest.raises(UsageError, match="no stored run"):
        history(tmp_path / "r", HistoryQuery("rps"))


def test_without_otava_one_line_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    make_runs(tmp_path / "r", 3)
    real = builtins.__import__

    def no_otava(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("otava"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_otava)
    with pytest.raises(LoadcmpError, match="pip install 'apache-otava>=0.8,<0.9'") as e:
        history(tmp_path / "r", HistoryQuery("rps"))
    assert "\n" not in str(e.value)


def test_a_new_run_30_percent_slower_is_a_regression_at_that_run(tmp_path: Path):
    root = tmp_path / "history"
    make_runs(root, 12, seed=1)
    slower = make_runs(tmp_path / "new", 13, step_at=12, step=-0.3, seed=1)[12]
    found = regressions(root, slower)
    assert {(c.metric, c.direction) for c in found} == {("rps", "worse"), ("p99", "worse")}
    assert all(c.run.path == slower and c.index == 12 for c in found)
    assert any(d.key == "fpm.max_children" for d in found[0].differences)
    same = make_runs(tmp_path / "same", 13, seed=1)[12]
    assert regressions(root, same) == []
    faster = make_runs(tmp_path / "faster", 13, step_at=12, step=0.3, seed=1)[12]
    assert regressions(root, faster) == []  # a change for the better is no regression


def test_a_run_inside_the_root_counts_once_as_the_newest(tmp_path: Path):
    root = tmp_path / "history"
    paths = make_runs(root, 13, step_at=12, step=-0.3, seed=1)
    assert {c.metric for c in regressions(root, paths[12])} == {"rps", "p99"}
    assert regressions(root, paths[12], metrics=("mem_peak",)) == []
    # an old step is no regression of the newest run
    old_step = make_runs(tmp_path / "old", 13, step_at=5, step=-0.3, seed=1)
    assert regressions(tmp_path / "old", old_step[12]) == []


def test_a_long_history_keeps_its_one_step_and_no_noise(tmp_path: Path):
    root = tmp_path / "r"
    paths = make_runs(root, 150, step_at=100, step=-0.3, seed=7, plan=Plan(noise=0.03))
    (series,) = history(root, HistoryQuery("rps")).series
    assert [cp.run.path for cp in series.change_points] == [paths[100]]


def test_a_change_from_zero_is_said_from_0_not_plus_0_percent():
    """Failures appearing where there were none: Otava's relative change is 0 there (a division by 0 avoided)."""
    from loadcmp.catalog.history import change_points
    from loadcmp.catalog.model import CellKey, Point, RunEntry, Value
    from loadcmp.catalog.words import change_text

    cell = CellKey("nginx", 10, "/", "http")
    rates = [0.0] * 5 + [5.0, 5.1, 4.9, 5.0, 5.2]
    points = [Point(RunEntry(Path(f"r{i}"), "complete"), cell, Value(v, v, v, 3)) for i, v in enumerate(rates)]
    (cp,) = change_points(cell, points, "failed_rate")
    assert (cp.index, cp.before, cp.direction, cp.change) == (5, 0.0, "worse", None)
    assert "from 0, worse" in change_text("failed_rate", cp)


def test_a_client_bound_run_keeps_its_mark_in_the_history(tmp_path: Path):
    """A run whose client limited a cell is marked in history as compare marks it: in the JSON (`client_bound`),
    the terminal's table (‡ and its legend) and the figure (a hollow mark, named in the legend)."""
    import json

    from click.testing import CliRunner

    from loadcmp.catalog.trend import trend_figure
    from loadcmp.cli import cli

    root = tmp_path / "r"
    paths = make_runs(root, 3)
    doc = json.loads((paths[1] / "run.json").read_text())
    doc["trials"][0]["result"].update(client_bound=True, client_bound_reason="the client's CPU was full")
    (paths[1] / "run.json").write_text(json.dumps(doc))
    h = history(root, HistoryQuery("rps"))
    (series,) = h.series
    assert [p.value.client_bound for p in series.points] == [False, True, False]
    out = CliRunner().invoke(cli, ["history", str(root)]).output
    rows = [line for line in out.splitlines() if "run-0000" in line]
    assert ["‡" in line for line in rows] == [False, True, False], out
    assert "‡ client-bound: the client limited that run's req/s" in out
    listed = json.loads(CliRunner().invoke(cli, ["history", str(root), "--json"]).output)
    assert [p["value"]["client_bound"] for p in listed["series"][0]["points"]] == [False, True, False]
    fig = trend_figure(h)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["‡ client-bound (req/s a lower bound)"]

"""Both sides' figures for Prometheus: the series (`loadcmp.export`), `/metrics` scraped by Debian's real
Prometheus while a load runs, `loadcmp export` loaded by promtool, and the Grafana dashboard's queries."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from loadcmp.cli import cli
from loadcmp.export.families import FAMILIES, LATENCY_EDGES, sample_name
from loadcmp.export.points import Buckets, Series, client_points, server_points
from loadcmp.export.stored import collect, render
from loadcmp.load.record.histogram import BUCKET_BASE, Histogram
from tests.helpers import prom
from tests.test_live import Command, port_is_free

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
DASHBOARD = ROOT / "docs" / "grafana" / "loadcmp.json"


def _samples(text: str) -> list[tuple[str, dict[str, str], float, float | None]]:
    return [(s.name, s.labels, s.value, None if s.timestamp is None else float(s.timestamp))
            for f in text_string_to_metric_families(text) for s in f.samples]


# --- the series -------------------------------------------------------------------------------------------


def test_latency_buckets_count_exactly_at_the_recorders_own_edges():
    rng = np.random.default_rng(7)
    values = rng.lognormal(math.log(0.02), 1.5, 50_000)
    b = Buckets()
    b.add(Histogram.of(values))
    for (k, le), count in zip(LATENCY_EDGES, b.counts, strict=True):
        edge_s = BUCKET_BASE ** k / 1e6
        assert count == int((values < edge_s).sum()), le
        assert float(le) == pytest.approx(edge_s, rel=1e-5)
    rounds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
    assert all(r <= float(le) < r * BUCKET_BASE for (_, le), r in zip(LATENCY_EDGES, rounds, strict=True))
    assert b.total == len(values) and b.sum_s == pytest.approx(values.sum())
    assert b.pairs()[-1] == ("+Inf", float(len(values)))


def test_counters_add_up_and_gauges_take_the_last_value():
    s = Series()
    trial = ("r", "nginx", "h1", "10", "1")
    row = {"second": 0, "ok": 5, "http_5xx": 1, "started": 6, "dropped": 0, "bytes": 100, "inflight": 3,
           "p50_ms": 2.0, "p90_ms": 3.0, "p99_ms": 4.0, "max_ms": 9.0, "client_cpu_pct": 40.0, "loop_lag_ms": None}
    s.take(trial, client_points(row, "/"))
    s.take(trial, client_points({**row, "ok": 7, "inflight": 1, "p99_ms": 8.0}, "/"))
    assert s.values[("loadcmp_requests", (*trial, "/", "ok"))] == 12
    assert s.values[("loadcmp_requests", (*trial, "/", "http_5xx"))] == 2
    assert s.values[("loadcmp_requests_in_flight", (*trial, "/"))] == 1
    assert s.values[("loadcmp_request_latency_quantile_seconds", (*trial, "/", "0.99"))] == pytest.approx(0.008)
    assert ("loadcmp_client_loop_lag_seconds", trial) not in s.values, "a missing value makes no sample"


def test_each_role_and_status_figure_is_its_own_series():
    row = {"server": "wp", "level": 5, "trial": 1, "second": 3, "cpu_pct": 80.0, "mem_bytes": 1e8, "procs": 9,
           "threads": 9, "tcp_estab": 50, "tcp_time_wait": 11000, "tcp_total": 11050, "oom_kills": 0,
           "fpm_queue": 4.0, "busy_workers": float("nan"), "db_cpu_pct": 25.0, "db_mem_bytes": 2e8, "db_procs": 1,
           "db_threads_connected": 12.0}
    got = {(p.family, p.labels): p.value for p in server_points(row)}
    assert got[("loadcmp_server_cpu_percent", ("server",))] == 80.0
    assert got[("loadcmp_server_cpu_percent", ("db",))] == 25.0
    assert got[("loadcmp_server_status", ("db", "threads_connected"))] == 12.0
    assert got[("loadcmp_server_status", ("server", "fpm_queue"))] == 4.0
    assert got[("loadcmp_server_tcp_connections", ("estab",))] == 50
    assert got[("loadcmp_server_tcp_connections", ("time_wait",))] == 11000
    assert not any(f == "loadcmp_server_status" and "busy_workers" in labels for f, labels in got), "NaN: no value"
    assert not any("total" in labels or "db_cpu_pct" in labels for _, labels in got)


# --- loadcmp export ---------------------------------------------------------------------------------------


def test_an_export_ends_each_trial_on_run_jsons_figures():
    run = json.loads((FIXTURES / "run-2x3x2" / "run.json").read_text())
    samples = _samples(render(collect(FIXTURES / "run-2x3x2"), "openmetrics").decode())
    server = pd.read_parquet(FIXTURES / "run-2x3x2" / "server.parquet")
    for t in run["trials"]:
        mine = [s for s in samples if s[1].get("label") == t["server"] and s[1].get("level") == str(t["level"])
                and s[1].get("trial") == str(t["trial"])]
        ok = [s for s in mine if s[0] == "loadcmp_requests_total" and s[1]["outcome"] == "ok"]
        assert ok[-1][2] == t["result"]["ok"] and [s[3] for s in ok] == sorted(s[3] for s in ok)
        (count,) = [s[2] for s in mine if s[0] == "loadcmp_request_latency_seconds_count"]
        assert count == sum(t["latency_hist"]["cnt"])
        cpu = [s for s in mine if s[0] == "loadcmp_server_cpu_percent"]
        rows = server[(server.server == t["server"]) & (server.level == t["level"]) & (server.trial == t["trial"])]
        assert sorted(s[2] for s in cpu) == sorted(rows.cpu_pct.tolist())
    assert {s[1]["run"] for s in samples} == {"run-2x3x2"}


def test_csv_holds_the_same_samples_as_openmetrics(tmp_path):
    ex = collect(FIXTURES / "run-tls")
    om = _samples(render(ex, "openmetrics").decode())
    df = pd.read_csv(io_of(render(ex, "csv")), dtype={"level": str, "trial": str, "le": str}, keep_default_na=False)
    assert len(df) == len(om)
    ok = df[(df.metric == "loadcmp_requests_total") & (df.outcome == "ok")]
    assert ok.value.sum() == sum(s[2] for s in om if s[0] == "loadcmp_requests_total" and s[1]["outcome"] == "ok")
    assert set(df.metric) == {s[0] for s in om}


def io_of(data: bytes):  # type: ignore[no-untyped-def]
    import io

    return io.BytesIO(data)


def test_export_command_writes_atomically_and_says_its_series(tmp_path):
    out = tmp_path / "all.om"
    r = CliRunner().invoke(cli, ["export", str(FIXTURES), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert text.endswith("# EOF\n")
    series = {(s[0], tuple(sorted(s[1].items()))) for s in _samples(text)}
    assert f"{len(series):,} series" in r.output
    assert re.search(r"exported 7 run\(s\)", r.output)
    assert [p.name for p in tmp_path.iterdir()] == ["all.om"], "no temporary file left beside it"


@pytest.mark.parametrize("args, words", [
    (["--format", "xml"], "'xml' is not one of"),
    (["-o", "/nonexistent-dir/x.om"], "--out"),
])
def test_export_bad_input_is_one_line_and_exit_2(args, words):
    r = CliRunner().invoke(cli, ["export", str(FIXTURES / "run-tls"), *args])
    assert r.exit_code == 2 and words in r.output, r.output
    assert "Traceback" not in r.output


def test_export_of_a_folder_without_a_run_is_exit_2(tmp_path):
    (tmp_path / "notes").mkdir()
    r = CliRunner().invoke(cli, ["export", str(tmp_path)])
    assert r.exit_code == 2 and "no stored run here" in r.output, r.output


def _loaded(fixture: str | Path, tmp_path: Path) -> tuple[Path, str]:
    """`loadcmp export` of a stored fixture (or a folder), loaded by promtool into tmp_path/data: the export,
    promtool's words."""
    prom.need("promtool", "prometheus")
    om = tmp_path / "run.om"
    assert CliRunner().invoke(cli, ["export", str(FIXTURES / fixture), "-o", str(om)]).exit_code == 0
    made = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return om, made.stdout


def test_promtool_loads_the_export_and_prometheus_answers_with_the_runs_figures(tmp_path):
    om, said = _loaded("run-2x3x2", tmp_path)
    samples = _samples(om.read_text())
    (block,) = [line.split() for line in said.splitlines() if re.match(r"^[0-9A-Z]{26}\s", line)]
    assert int(block[-2]) == len({(s[0], tuple(sorted(s[1].items()))) for s in samples}), "NUM SERIES"
    run = json.loads((FIXTURES / "run-2x3x2" / "run.json").read_text())
    t = run["trials"][-1]
    sel = (f'run="run-2x3x2",label="{t["server"]}",level="{t["level"]}",trial="{t["trial"]}"')
    end = max(s[3] or 0 for s in samples if s[1].get("label") == t["server"])
    with prom.running(tmp_path) as p:
        (ok,) = p.query(f'last_over_time(loadcmp_requests_total{{{sel},outcome="ok"}}[1h])', at=end)
        assert float(ok["value"][1]) == t["result"]["ok"]
        (mem,) = p.query(f'max_over_time(loadcmp_server_memory_bytes{{{sel},role="server"}}[1h])', at=end)
        server = pd.read_parquet(FIXTURES / "run-2x3x2" / "server.parquet")
        rows = server[(server.server == t["server"]) & (server.level == t["level"]) & (server.trial == t["trial"])]
        assert float(mem["value"][1]) == rows.mem_bytes.max()


def test_every_panel_of_the_dashboard_draws_a_stored_run_loaded_by_promtool(tmp_path):
    """Each query of docs/grafana/loadcmp.json, as Grafana sends it, answers at the end of a stored trial with a
    cause in its logs and a reload 1 s before its end; only the series that run had none of (streams, TLS, journeys,
    causes) stay empty."""
    import shutil

    folder = tmp_path / "run-2x2x3"
    shutil.copytree(FIXTURES / "run-2x2x3", folder)
    run = json.loads((folder / "run.json").read_text())
    t = next(t for t in run["trials"] if t["log_evidence"])
    t["events"] = [_event("reload", t["result"]["duration_s"] - 1.2, t["result"]["duration_s"] - 1.0)]
    (folder / "run.json").write_text(json.dumps(run))
    om, _ = _loaded(folder, tmp_path)
    end = max(s[3] or 0 for s in _samples(om.read_text())
              if s[1].get("label") == t["server"] and s[1].get("level") == str(t["level"])
              and s[1].get("trial") == str(t["trial"]))
    with prom.running(tmp_path) as p:
        empty = [expr for expr in _dashboard_queries() if not p.query(_filled(expr), at=end)]
        (events,) = [e for e in _dashboard_queries() if "loadcmp_events_total" in e]
        later = p.query(_filled(events), at=end + 2)
    assert all(("streams" in e or "journeys" in e or "tls_" in e or "causes" in e) for e in empty), \
        f"the dashboard draws nothing of a stored run with: {empty}"
    assert not later, "an event is marked once, not for the rest of the run"


def _dashboard_queries() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in doc["panels"] for t in panel.get("targets", [])]
    return exprs + [a["expr"] for a in doc["annotations"]["list"] if "expr" in a]


def _filled(expr: str) -> str:
    """A dashboard query as Grafana sends it: every run, label and level, a rate over 4 s."""
    return expr.replace("$__rate_interval", "4s").replace('"$run"', '".*"').replace('"$label"', '".*"') \
        .replace('"$level"', '".*"')


# --- /metrics while a load runs ---------------------------------------------------------------------------


def test_prometheus_scraping_a_bench_keeps_exactly_the_stored_seconds(faulty, tmp_path):
    """Debian's Prometheus scrapes `bench --metrics` twice a second: every value it kept is one of the stored
    timeline's running totals at the end of its second, the last one is the stored total (the command waits for
    that last read), and `rate()` over the window at its end is the stored req/s."""
    port = prom.free_port()
    (tmp_path / "prom").mkdir()
    with prom.running(tmp_path / "prom", scrape=f"127.0.0.1:{port}", interval="500ms") as p:
        p.scraping()
        cmd = Command("bench", faulty.url("/ok"), "-c", "4", "-t", "5s", "--warmup", "1s", "-k", "--metrics",
                      str(port), "--out", str(tmp_path / "out"))
        try:
            assert cmd.url("metrics: ") == f"http://127.0.0.1:{port}/metrics"
            assert cmd.wait() == 0, "".join(cmd.err)
        finally:
            cmd.stop()
        (folder,) = (tmp_path / "out").iterdir()
        trial = json.loads((folder / "run.json").read_text())["trials"][0]
        (kept,) = p.query('loadcmp_requests_total{outcome="ok",job="loadcmp"}[5m]')
        (count,) = p.query('last_over_time(loadcmp_request_latency_seconds_count{job="loadcmp"}[5m])')
        end = float(kept["values"][-1][0])
        window = f'{round(trial["result"]["duration_s"] * 1000)}ms'
        (rate,) = p.query(f'rate(loadcmp_requests_total{{outcome="ok",job="loadcmp"}}[{window}])', at=end)
    timeline = pd.read_parquet(folder / "timeline.parquet")
    totals = dict(zip(timeline.second + 1, timeline.ok.cumsum(), strict=True))
    values = [(round(float(t) - trial["window_start"], 1), float(v)) for t, v in kept["values"]]
    assert values[0] == (0.0, 0.0), "0 at the window's start, laid in the warm-up"
    assert all(totals[int(t)] == v for t, v in values[1:]), (values, totals)
    assert len(values) == len(timeline) + 1, "every second kept, each at its end"
    assert values[-1][1] == timeline.ok.sum() == trial["result"]["ok"]
    assert float(rate["value"][1]) == pytest.approx(trial["result"]["rps"], rel=0.02)
    assert kept["metric"]["proto"] == "h1" and kept["metric"]["page"] == "(all)"
    assert float(count["value"][1]) == sum(trial["latency_hist"]["cnt"]), "the recorder's histogram, whole"
    assert port_is_free(port), "the metrics' socket outlived the command"


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_the_live_page_serves_metrics_and_another_address_needs_the_token(faulty):
    port, mport = prom.free_port(), prom.free_port()
    cmd = Command("bench", faulty.url("/ok"), "-c", "2", "-t", "4s", "--live", str(port), "--metrics", str(mport),
                  "--metrics-host", "0.0.0.0", "--metrics-token", "s3cret")
    try:
        cmd.url("metrics: ")
        deadline = time.monotonic() + 20
        url = f"http://127.0.0.1:{port}/metrics"
        while (got := _get(url))[0] == 200 and not got[1] and time.monotonic() < deadline:
            time.sleep(0.2)  # no series until the window's first second closes
        status, text = got
        assert status == 200 and "# TYPE loadcmp_requests_total counter" in text
        assert _get(f"http://127.0.0.1:{mport}/metrics")[0] == 403
        status, text = _get(f"http://127.0.0.1:{mport}/metrics", {"Authorization": "Bearer s3cret"})
        assert status == 200 and "loadcmp_requests_total" in text
        assert cmd.wait() == 0, "".join(cmd.err)
    finally:
        cmd.stop()


@pytest.mark.parametrize("args, words", [
    (["--metrics", "PORT", "--metrics-host", "0.0.0.0"], "give --metrics-token"),
    (["--metrics-host", "127.0.0.1"], "--metrics-host goes with --metrics"),
    (["--metrics", "BUSY"], "--metrics: port"),
    (["--metrics-token", "x"], "--metrics-token goes with --metrics"),
])
def test_metrics_bad_input_is_one_line_and_exit_2(faulty, args, words):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(prom.free_port()) if "PORT" in args else str(busy.getsockname()[1])
        argv = [port if a in ("PORT", "BUSY") else a for a in args]
        r = subprocess.run([sys.executable, "-m", "loadcmp", "bench", faulty.url("/ok"), "-t", "1s", *argv],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


# --- the Grafana dashboard --------------------------------------------------------------------------------


def test_the_grafana_dashboard_queries_only_series_the_endpoint_serves():
    doc = json.loads(DASHBOARD.read_text())
    assert doc["title"] and doc["schemaVersion"] >= 30 and doc["uid"]
    served = {sample_name(f) for f in FAMILIES.values()}
    served |= {f"{f.name}_{s}" for f in FAMILIES.values() if f.kind == "histogram" for s in ("bucket", "sum", "count")}
    exprs = _dashboard_queries()
    exprs += [v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
              for v in doc["templating"]["list"] if v.get("type") == "query"]
    assert len(exprs) >= 10
    for expr in exprs:
        names = set(re.findall(r"\bloadcmp_[a-z_]+", expr))
        assert names and names <= served, (expr, names - served)
    titles = {panel["title"] for panel in doc["panels"]}
    assert {"Requests/s by outcome", "Server CPU by role", "Server memory by role"} <= titles
    assert {a["name"] for a in doc["annotations"]["list"]} >= {"Causes"}
    for panel in doc["panels"]:
        assert panel["gridPos"]["w"] <= 24 and panel["datasource"]["uid"] == "${datasource}"


# --- the metrics' hooks -----------------------------------------------------------------------------------


def _second(ok: int, pages: int = 0):  # type: ignore[no-untyped-def]
    from loadcmp.load.record.result import PageSecond, Second

    s = Second()
    s.counts[0] = ok
    s.started = ok
    s.lat_h = Histogram.of([0.01] * ok)
    s.pages = [PageSecond() for _ in range(pages)]
    return s


class _Writer:
    def __init__(self, path: Path, run: dict) -> None:  # type: ignore[type-arg]
        self.path = path
        self.run = run


def _writer_of(tmp_path: Path, name: str, *recs: dict) -> _Writer:  # type: ignore[type-arg]
    return _Writer(tmp_path / name, {"servers": {"nginx": {"proto": "h2"}}, "trials": list(recs)})


def test_the_stored_rows_bring_the_seconds_no_live_call_did_and_the_whole_histogram(tmp_path):
    from loadcmp.export.live import Metrics
    from loadcmp.load.spec import Live

    m = Metrics()
    m.begin("nginx", 10, 1, proto="h2")
    m.stored(_writer_of(tmp_path, "20260101-run"))  # the run's folder is there before the trial's load
    m.live(Live(-0.95, 0, 0, 0, 0.0, False))  # a warm-up's tick: nothing stamped after a scrape's time
    assert not m.series.values
    m.live(Live(0.05, 0, 0, 0, 0.0, False))  # the tick just after the window's start
    trial = ("20260101-run", "nginx", "h2", "10", "1")
    ok = ("loadcmp_requests", (*trial, "(all)", "ok"))
    t0 = m.series.stamps[ok]
    assert m.series.values[ok] == 0, "a trial's counters start at 0, at its window's start"
    m.live(Live(1.0, 5, 0, 0, 5.0, True, closed=((0, _second(5)), (1, _second(7)))))
    m.live(Live(2.0, 7, 0, 0, 7.0, True, closed=((1, _second(7)),)))  # a second told twice counts once
    assert m.series.values[ok] == 12 and m.series.stamps[ok] == pytest.approx(t0 + 2), "the end of second 1"
    m.sample({"server": "nginx", "level": 10, "trial": 1, "second": 1, "cpu_pct": 50.0})
    assert m.series.stamps[("loadcmp_server_cpu_percent", (*trial, "server"))] == pytest.approx(t0 + 2)
    rows = [{"second": i, "page": None, "ok": n, "started": n} for i, n in enumerate((5, 7, 4))]
    hist = Histogram.of([0.01] * 16).to_dict()
    rec = {"server": "nginx", "level": 10, "trial": 1, "page": "/x", "latency_hist": hist,
           "result": {"ok": 16, "duration_s": 3.0,
                      "streams": {"connections": 2, "streams": 16, "goaways": 1, "goaway_unprocessed": 0,
                                  "retried": 0, "resets": {"REFUSED_STREAM": 2}}},
           "causes": [{"cause": "fpm.max_children", "phrase": "x"}], "log_evidence": {"fpm.max_children": 3}}
    m.stored(_writer_of(tmp_path, "20260101-run", rec), rows, [])
    assert m.series.values[ok] == 16 and m.series.stamps[ok] == pytest.approx(t0 + 3), "the last second, stored"
    assert m.series.hists[(*trial, "(all)")].total == 16
    assert m.series.values[("loadcmp_streams", (*trial, "resets"))] == 2
    assert m.series.values[("loadcmp_server_log_lines", (*trial, "fpm.max_children"))] == 3
    causes = ("loadcmp_server_causes", (*trial, "fpm.max_children"))
    assert m.series.values[causes] == 1 and m.series.stamps[causes] == pytest.approx(t0 + 3), "at the window's end"


def _event(action: str, start: float, end: float, ok: bool = True) -> dict:  # type: ignore[type-arg]
    return {"asked": f"every 1s {action}", "action": action, "role": "web", "at_s": start, "start_s": start,
            "end_s": end, "ok": ok, "said": None if ok else "exited 1", "evidence": []}


def test_events_are_counted_by_action_and_outcome_live_and_stored_alike(tmp_path):
    """An --event is laid at 0 as it is fired and counted as it ends, stamped at its end on the wall clock; the
    stored export says the same at the same moments, each action laid at 0 at the window's start."""
    import shutil

    from loadcmp.export.live import Metrics
    from loadcmp.load.spec import Live

    m = Metrics()
    m.begin("nginx", 10, 1, proto="h2")
    m.stored(_writer_of(tmp_path, "20260101-run"))
    m.live(Live(0.05, 0, 0, 0, 0.0, False))
    trial = ("20260101-run", "nginx", "h2", "10", "1")
    key = ("loadcmp_events", (*trial, "reload", "ok"))
    t0 = m.series.stamps[("loadcmp_requests", (*trial, "(all)", "ok"))]
    m.event(_event("reload", 1.0, 1.0), True)
    assert m.series.values[key] == 0 and m.series.values[("loadcmp_events", (*trial, "reload", "failed"))] == 0
    assert m.series.stamps[key] == t0, "laid at 0 at the window's start"
    m.event(_event("reload", 1.0, 1.3), False)
    m.event(_event("reload", 2.0, 2.0, ok=False), True)  # the next one fired: what was counted stays as it was
    assert m.series.values[key] == 1 and m.series.stamps[key] == pytest.approx(t0 + 1.3)
    m.event(_event("reload", 2.0, 2.4, ok=False), False)
    assert m.series.values[key] == 1 and m.series.stamps[key] == pytest.approx(t0 + 1.3)
    assert m.series.values[("loadcmp_events", (*trial, "reload", "failed"))] == 1

    folder = tmp_path / "run-events"
    shutil.copytree(FIXTURES / "run-2x3x2", folder)
    run = json.loads((folder / "run.json").read_text())
    # a restart fired before the one before it came back: counted in the order they ended
    events = [_event("restart", 0.5, 3.0), _event("restart", 1.5, 2.0), _event("reload", 1.0, 1.1, ok=False)]
    run["trials"][0]["events"] = events
    (folder / "run.json").write_text(json.dumps(run))
    samples = _samples(render(collect(folder), "openmetrics").decode())
    mine = [s for s in samples if s[1].get("trial") == "1" and s[1].get("level") == "10"
            and s[1].get("label") == run["trials"][0]["server"]]
    start = next(s[3] for s in mine if s[0] == "loadcmp_requests_total" and s[1]["outcome"] == "ok")  # laid at 0
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in mine:
        if s[0] == "loadcmp_events_total":
            series.setdefault((s[1]["action"], s[1]["outcome"]), []).append((s[3] - start, s[2]))
    assert series == {("restart", "ok"): [(0.0, 0.0), (2.0, 1.0), (3.0, 2.0)],
                      ("restart", "failed"): [(0.0, 0.0)],
                      ("reload", "ok"): [(0.0, 0.0)], ("reload", "failed"): [(0.0, 0.0), (pytest.approx(1.1), 1.0)]}
    assert start == min(s[3] for s in mine), "the window's start: the trial's first sample"


def test_two_runs_of_one_command_keep_their_own_series(tmp_path):
    """`seeds` runs one run after another: the same label, level and trial in each is two trials."""
    from loadcmp.export.live import Metrics
    from loadcmp.load.spec import Live

    m = Metrics()
    for run, ok in (("20260101-a", 5), ("20260101-b", 7)):
        m.begin("nginx", 10, 1, proto="h2")
        m.stored(_writer_of(tmp_path, run))
        m.live(Live(1.0, ok, 0, 0, float(ok), True, closed=((0, _second(ok)),)))
        rec = {"server": "nginx", "level": 10, "trial": 1, "result": {"ok": ok, "duration_s": 1.0},
               "log_evidence": {"c": ok}}
        m.stored(_writer_of(tmp_path, run, rec), [{"second": 0, "page": None, "ok": ok}], [])
    for run, ok in (("20260101-a", 5), ("20260101-b", 7)):
        trial = (run, "nginx", "h2", "10", "1")
        assert m.series.values[("loadcmp_requests", (*trial, "(all)", "ok"))] == ok
        assert m.series.values[("loadcmp_server_log_lines", (*trial, "c"))] == ok


@pytest.mark.docker
def test_prometheus_scraping_a_run_gives_its_req_s_and_both_sides_at_the_same_seconds(tmp_path, images, docker_client):
    """`run --live` on nginx at two levels, scraped by Debian's Prometheus: `rate()` over each trial's window at its
    end is the report's req/s within 2 %, and the server's CPU and memory sit at the client's seconds."""
    port = prom.free_port()
    (tmp_path / "prom").mkdir()
    with prom.running(tmp_path / "prom", scrape=f"127.0.0.1:{port}", interval="500ms") as p:
        p.scraping()
        cmd = Command("run", "--server", "nginx", "-c", "5,20", "-t", "5s", "--warmup", "1s", "--page", "/index.html",
                      "--live", str(port), "--out", str(tmp_path / "out"))
        try:
            assert cmd.wait(timeout=300) == 0, "".join(cmd.err)
        finally:
            cmd.stop()
        (folder,) = (tmp_path / "out").iterdir()
        run = json.loads((folder / "run.json").read_text())
        assert len(run["trials"]) == 2
        for t in run["trials"]:
            sel = f'run="{folder.name}",label="nginx",level="{t["level"]}",trial="1"'
            (kept,) = p.query(f'loadcmp_requests_total{{{sel},outcome="ok"}}[10m]')
            window = f'{round(t["result"]["duration_s"] * 1000)}ms'
            (rate,) = p.query(f'rate(loadcmp_requests_total{{{sel},outcome="ok"}}[{window}])',
                              at=float(kept["values"][-1][0]))
            assert float(rate["value"][1]) == pytest.approx(t["result"]["rps"], rel=0.02), (t["level"], rate)
            seconds = {round(float(ts) - t["window_start"], 1) for ts, _ in kept["values"]}
            for metric in ("loadcmp_server_cpu_percent", "loadcmp_server_memory_bytes"):
                (series,) = p.query(f'{metric}{{{sel},role="server"}}[10m]')
                at = {round(float(ts) - t["window_start"], 1) for ts, _ in series["values"]}
                assert len(at) >= 3 and at <= seconds, (metric, sorted(at), sorted(seconds))

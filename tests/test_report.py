"""The report, built from a checked-in results folder of a real run (no Docker)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.report import plots
from loadcmp.errors import StoreError, UsageError
from loadcmp.report.build import build
from loadcmp.report.compare import Ratio, ratio, ratio_table, verdicts
from loadcmp.report.tables import Estimate, summary_doc, table1
from loadcmp.results import load_results

FIXTURE = Path(__file__).parent / "fixtures" / "run-2x3x2"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture()
def fixture_copy(tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(FIXTURE, dst)
    return dst


def test_fixture_is_a_2x3x2_run():
    r = load_results(FIXTURE)
    assert r.status == "complete"
    assert sorted(set(r.summary.server)) == ["apache-prefork", "nginx"]
    assert sorted(set(r.summary.level)) == [10, 50, 200] and sorted(set(r.summary.trial)) == [1, 2]


def test_report_writes_html_md_and_six_figures(fixture_copy, tmp_path):
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(out), "--format", "html,md,png,svg"])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert html.count("<img ") == 6 and html.count("data:image/png;base64,") == 6
    assert "http://" not in html.replace("http://127.0.0.1", "") and "https://" not in html, "self-contained"
    assert "<figcaption>" in html and "nginx" in html and "apache-prefork" in html
    assert "Interrupted" not in html
    md = (out / "report.md").read_text()
    assert len(re.findall(r"!\[[^]]+\]\((\d-[a-z]+)\.png\)", md)) == 6
    assert "| clients" in md and "## Comparison" in md
    for stem in ("1-success", "2-failures", "3-timeline", "4-latency", "5-memory", "6-workers"):
        assert (out / f"{stem}.png").stat().st_size > 10_000
        assert (out / f"{stem}.svg").exists()


def test_table1_and_json_summary_from_stored_results():
    r = load_results(FIXTURE)
    header, rows = table1(r)
    assert header[0] == ("", "clients") and ("nginx", "ok / failed") in header
    assert [row[0] for row in rows] == ["10", "50", "200"]
    doc = summary_doc(r)
    assert len(doc["results"]) == 6
    for item in doc["results"]:
        assert item["trials"] == 2 and "ci95" in item
        trials = [t for t in r.trials if t["server"] == item["server"] and t["level"] == item["level"]]
        assert item["ok"] == pytest.approx(sum(t["result"]["ok"] for t in trials) / 2)


def test_not_run_levels_show_a_slash(fixture_copy):
    run = json.loads((fixture_copy / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "apache-prefork" and t["level"] == 200:
            t.update(status="server_failed", reason="server did not start: test", result=None)
    (fixture_copy / "run.json").write_text(json.dumps(run))
    header, rows = table1(load_results(fixture_copy))
    last = rows[-1]
    assert last[0] == "200" and "/" in last[5:]


def test_interrupted_run_says_so_at_the_top(fixture_copy, tmp_path):
    run = json.loads((fixture_copy / "run.json").read_text())
    run["status"] = "interrupted"
    (fixture_copy / "run.json").write_text(json.dumps(run))
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r" / "report.html").read_text()
    assert html.index("Interrupted run") < html.index("<h2>Set-up")
    assert (tmp_path / "r" / "report.md").read_text().splitlines()[2].startswith("> **Interrupted run**")


def test_older_format_is_a_clear_error(fixture_copy):
    run = json.loads((fixture_copy / "run.json").read_text())
    del run["format"]
    (fixture_copy / "run.json").write_text(json.dumps(run))
    res = CliRunner().invoke(cli, ["report", str(fixture_copy)])
    assert res.exit_code == 1
    assert "format" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["report", str(fixture_copy / "nope")])
    assert res.exit_code == 1 and "not a results folder" in res.output


def test_several_folders_combine_with_distinct_labels(fixture_copy):
    data = load_results(FIXTURE, fixture_copy)
    assert len(data.servers) == 4 and all("(" in s for s in data.servers)
    assert len(data.trials) == 24


def test_verdicts_only_claim_what_intervals_support():
    a = Estimate.of([100.0, 102.0, 98.0])
    b = Estimate.of([210.0, 200.0, 190.0])
    r = ratio(b, a)
    assert r.significant and 1.7 < r.low < 2.0 < r.high < 2.35
    same = ratio(Estimate.of([100.0, 130.0, 70.0]), a)
    assert same.significant is False
    assert Ratio(2.0, None, None).significant is None
    lines = verdicts(load_results(FIXTURE))
    assert len(lines) == 3 and all("clients" in v for v in lines)


def test_every_figure_has_units_and_consistent_colours():
    data = load_results(FIXTURE)
    col = plots.colors(data)
    for stem, fig, caption in plots.figures(data):
        assert caption
        for ax in fig.axes:
            if ax.get_visible() and ax.has_data():
                shared = ax.get_shared_x_axes().get_siblings(ax)
                assert ax.get_ylabel() and any(a.get_xlabel() for a in shared), (stem, ax.get_title())
        for ax in fig.axes:
            for line in ax.get_lines():
                if line.get_label() in col:
                    assert line.get_color() == col[line.get_label()], stem


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make setup installs it)")
def test_report_in_headless_chromium(fixture_copy, tmp_path, artifacts):
    out = tmp_path / "rep"
    assert CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(out)]).exit_code == 0
    page = (out / "report.html").read_text()
    probe = ("<script>window.addEventListener('load',()=>{const i=[...document.images];"
             "document.body.setAttribute('data-check',i.length+':'+i.filter(x=>x.complete&&x.naturalWidth>0).length)})"
             "</script></body>")
    (out / "check.html").write_text(page.replace("</body>", probe))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", (out / "check.html").as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    m = re.search(r'data-check="(\d+):(\d+)"', dom)
    assert m, dom[:500]
    assert m.group(1) == "6" and m.group(2) == "6", "every image must load"
    shot = artifacts / "report-screenshot.png"
    subprocess.run([CHROMIUM, *flags, "--window-size=1200,3000", f"--screenshot={shot}",
                    (out / "report.html").as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 50_000
    phone = artifacts / "report-phone.png"
    subprocess.run([CHROMIUM, *flags, "--window-size=390,2400", f"--screenshot={phone}",
                    (out / "report.html").as_uri()], capture_output=True, timeout=120)
    assert phone.exists()


def _edit_run(folder: Path, **changes: object) -> None:
    run = json.loads((folder / "run.json").read_text())
    for key, value in changes.items():
        if key == "spec_servers":
            run["spec"]["servers"] = value
        else:
            run[key] = value
    (folder / "run.json").write_text(json.dumps(run))


def test_one_server_order_from_the_spec(fixture_copy):
    assert load_results(FIXTURE).servers == ["nginx", "apache-prefork"]
    _edit_run(fixture_copy, spec_servers=["apache-prefork", "nginx"])
    r = load_results(fixture_copy)
    assert r.servers == ["apache-prefork", "nginx"]
    header, _ = table1(r)
    assert [g for g, _ in header[1::4]] == r.servers
    assert list(plots.colors(r)) == r.servers
    assert summary_doc(r)["servers"] == r.servers
    base, rows = ratio_table(r)
    assert base == "apache-prefork" and {row.server for row in rows} == {"nginx"}


def test_folders_relabel_trials_and_per_second_tables_alike(fixture_copy):
    _edit_run(fixture_copy, name="other", status="interrupted")
    data = load_results(FIXTURE, fixture_copy)
    assert data.servers == ["nginx (fixture-2x3x2)", "apache-prefork (fixture-2x3x2)", "nginx (other)",
                            "apache-prefork (other)"]
    assert set(data.timeline.server) == set(data.servers) == set(data.server.server)
    assert data.status == "interrupted" and data.interrupted == [fixture_copy]
    assert data.name == "fixture-2x3x2 + other" and data.path == FIXTURE
    assert len(data.cell("nginx (other)", 50)) == 2


def test_no_folder_is_a_clear_error():
    with pytest.raises(StoreError):
        load_results()


@pytest.mark.parametrize("where", ["file", "under-a-file", "proc"])
def test_unwritable_out_is_one_line(fixture_copy, tmp_path, where):
    afile = tmp_path / "afile"
    afile.write_text("x")
    out = {"file": afile, "under-a-file": afile / "sub", "proc": Path("/proc/nope")}[where]
    with pytest.raises((StoreError, UsageError)):
        build([str(fixture_copy)], out)
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(out)])
    assert res.exit_code in (1, 2) and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1 and str(out) in res.output


def test_a_run_without_trials_is_a_clear_error(fixture_copy):
    _edit_run(fixture_copy, trials=[], status="interrupted")
    with pytest.raises(StoreError, match="no trial was stored"):
        build([str(fixture_copy)], fixture_copy / "rep")


def test_a_bench_folder_builds_a_report(fixture_copy, tmp_path):
    run = json.loads((fixture_copy / "run.json").read_text())
    trial = {k: v for k, v in run["trials"][0].items() if k not in ("stack", "reason", "server_metrics")}
    bench = {"format": run["format"], "kind": "bench", "name": "bench http://127.0.0.1:8080/", "status": "complete",
             "started": run["started"], "loadcmp_version": "0.1.0", "machine": {"python": "3.11"},
             "spec": {"url": "http://127.0.0.1:8080/", "duration": 2.0, "warmup": 0.5, "timeout": 10.0,
                      "schedule": "closed", "engine": "fast", "workers": 1},
             "servers": {"nginx": {"url": "http://127.0.0.1:8080/"}}, "trials": [trial]}
    (fixture_copy / "run.json").write_text(json.dumps(bench))
    written = build([str(fixture_copy)], tmp_path / "rep", {"md"})
    md = written["md"].read_text()
    assert "page http://127.0.0.1:8080/, 2.0 s measured after 0.5 s warm-up, timeout 10.0 s" in md

"""The report, built from a checked-in results folder of a real run (no Docker)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.stored import killed_owner
from loadcmp.cli import cli
from loadcmp.report import plots
from loadcmp.errors import StoreError, UsageError
from loadcmp.report.build import build
from loadcmp.report.compare import Ratio, comparison_lines, ratio, ratio_table
from loadcmp.report.tables import Estimate, legend, summary_doc, table1
from loadcmp.store.reader import load_results

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


def test_report_writes_html_md_and_the_figures_that_have_data(fixture_copy, tmp_path):
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(out), "--format", "html,md,png,svg"])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    # nothing failed in the fixture: figure 2 is one line, not an empty figure
    assert html.count("<img ") == 5 and html.count("data:image/png;base64,") == 5
    assert "Figure 2: No request failed at any level" in html
    assert "http://" not in html.replace("http://127.0.0.1", "") and "https://" not in html, "self-contained"
    assert "<figcaption>" in html and "nginx" in html and "apache-prefork" in html
    assert "Interrupted" not in html
    md = (out / "report.md").read_text()
    assert len(re.findall(r"!\[[^]]+\]\((\d-[a-z]+)\.png\)", md)) == 5
    assert "| clients" in md and "## Comparison" in md
    assert md.index("## Findings") < md.index("## Summary") < md.index("## Figures")
    stems = ("1-success", "3-timeline", "4-latency", "5-memory", "6-workers")
    for stem in stems:
        assert (out / f"{stem}.png").stat().st_size > 10_000
        assert (out / f"{stem}.svg").exists()
    assert not (out / "2-failures.png").exists()
    # every file written is printed, the report first
    printed = res.output.split()
    assert printed[:2] == [str(out / "report.html"), str(out / "report.md")]
    assert set(printed) == {str(out / n) for n in ("report.html", "report.md")} | {
        str(out / f"{stem}.{ext}") for stem in stems for ext in ("png", "svg")}


def test_table1_and_json_summary_from_stored_results():
    r = load_results(FIXTURE)
    header, rows = table1(r)
    assert header[0] == ("", "clients") and ("nginx", "ok / failed") in header
    assert [row[0] for row in rows] == ["10", "50", "200"]
    doc = summary_doc(r)
    assert len(doc["results"]) == 6
    for item in doc["results"]:
        trials = [t for t in r.trials if t["server"] == item["server"] and t["level"] == item["level"]]
        assert item["ok"] == pytest.approx(sum(t["result"]["ok"] for t in trials) / 2)
        # 2 trials: their range, no interval; latency pooled, the same number Table 1 shows
        assert item["trials"] == 2 and "ci95" not in item
        assert item["rps_range"] == [min(t["result"]["rps"] for t in trials), max(t["result"]["rps"] for t in trials)]
        assert item["latency_ms"]["pooled"]
        p99 = r.pooled_latency(item["server"], item["level"]).percentile(99) * 1000
        assert item["latency_ms"]["p99"] == pytest.approx(p99, abs=0.001)
        col = header.index((item["server"], "p99 ms, pooled"))
        assert rows[r.levels.index(item["level"])][col] == f"{p99:,.1f}"


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
    md = (tmp_path / "r" / "report.md").read_text()
    assert md.index("> **Interrupted run**") < md.index("## Findings")


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
    lines = comparison_lines(load_results(FIXTURE))
    assert len(lines) == 3 and all("clients" in v for v in lines)


def test_every_figure_has_units_and_consistent_colours():
    data = load_results(FIXTURE)
    col = plots.colors(data)
    for d in plots.figures(data):
        stem, fig = d.stem, d.figure
        assert d.caption and (fig is not None or d.instead)
        if fig is None:
            continue
        for ax in fig.axes:
            if ax.get_visible() and ax.has_data():
                shared = ax.get_shared_x_axes().get_siblings(ax)
                assert ax.get_ylabel() and any(a.get_xlabel() for a in shared), (stem, ax.get_title())
        for ax in fig.axes:
            for line in ax.get_lines():
                if line.get_label() in col:
                    assert line.get_color() == col[line.get_label()], stem


def test_report_in_headless_chromium(fixture_copy, tmp_path, artifacts):
    # Not a skip: `make setup` installs Chromium, so its absence is a broken set-up to see, not to hide.
    assert CHROMIUM is not None, "Debian's chromium is missing: run `make setup` (scripts/setup.sh installs it)"
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
    assert m.group(1) == "5" and m.group(2) == "5", "every image must load"
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
    assert list(dict.fromkeys(g for g, _ in header[1:])) == r.servers
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


def test_fewer_than_3_trials_show_their_range_and_no_interval():
    two = Estimate.of([100.0, 140.0])
    assert two.interval is None and two.spread == (100.0, 140.0) and two.text() == "120 (100–140)"
    three = Estimate.of([100.0, 140.0, 120.0])
    assert three.interval is not None and three.text().startswith("120 ±")
    assert Estimate.of([5.0]).text() == "5" and Estimate.of([5.0]).spread is None
    # a ratio of 2-trial means has no interval (the t-interval of 2 is 12.7 standard errors wide)
    assert ratio(two, Estimate.of([90.0, 150.0])).low is None
    data = load_results(FIXTURE)  # 2 trials per cell
    header, rows = table1(data)
    rps = [row[header.index(("nginx", "req/s"))] for row in rows]
    assert rps and all(re.fullmatch(r"[\d,]+ \([\d,]+–[\d,]+\)", c) for c in rps), rps
    assert "±" not in "".join(c for row in rows for c in row)
    base, ratios = ratio_table(data)
    assert ratios and all(r.ratios["rps"].low is None for r in ratios), "no interval from 2 trials"
    lines = comparison_lines(data)
    assert lines and all("2 trials each: an interval needs 3 or more" in v for v in lines), lines
    leg = legend(header, rows)
    assert "range of 2 trials" in leg and "95 %" not in leg and "'/'" not in leg and "'*'" not in leg


def test_error_bars_never_go_below_zero():
    import matplotlib.pyplot as plt

    from loadcmp.report.axes import errplot

    fig, ax = plt.subplots()
    errplot(ax, [10, 20], [Estimate.of([1.0, 50.0, 2.0]), Estimate.of([3.0, 4.0])], "#000", "x")
    low = min(seg[:, 1].min() for coll in ax.collections for seg in coll.get_segments())
    plt.close(fig)
    assert low >= 0


def test_findings_open_the_report_with_numbers(fixture_copy, tmp_path):
    written = build([str(fixture_copy)], tmp_path / "rep", {"md"})
    md = written["report.md"].read_text()
    findings = md[md.index("## Findings"):md.index("## Summary")]
    # who handled more, with the ratio and the honest caveat of 2 trials
    assert ("apache-prefork handled more requests/s than nginx at 200 clients (1.40×), from 2 trials on the "
            "smaller side") in findings and "a hint, not a finding" in findings
    assert "nginx peaked at a mean of 1,462 requests/s, at 50 clients" in findings
    # where failures begin (none here), what limited the servers and what they used, from the stored figures
    assert "No request to nginx or apache-prefork failed at any level measured." in findings
    assert "nginx used 99–100 % of its one CPU core: saturated at every level" in findings
    assert "nginx's workers were all busy at every level: busy workers peaked at 4 of fpm.max_children 5" in findings
    assert "nginx: its CPU was saturated at every level" in findings
    assert re.search(r"Per core of server CPU at 200 clients: nginx [\d,]+ \([\d,]+–[\d,]+\) req/s", findings)
    # memory as Table 1 has it: the mean of the trials' peaks at the level where it is highest
    header, rows = table1(load_results(fixture_copy))
    mem = rows[2][header.index(("nginx", "mem peak"))]
    assert f"nginx {mem} (at 200 clients), at most 10 processes" in findings


THREE = Path(__file__).parent / "fixtures" / "run-2x2x3"
PPHC = Path(__file__).parent / "fixtures" / "pphc-2022"


def test_a_3_trial_run_opens_with_intervals_and_says_where_none_is_shown():
    from loadcmp.report.story import story

    data = load_results(THREE)  # nginx and apache-prefork at 50 and 400 clients, 3 trials each, /info.php
    text = dict(story(data))
    served = text["Requests served"]
    assert "apache-prefork handled more requests/s than nginx at 50 clients: 1.24× (1.00–1.53)." in served
    assert ("No difference in requests/s could be shown between apache-prefork and nginx at 400 clients: "
            "apache-prefork/nginx 1.17× (0.99–1.39), each 95 % interval including 1.") in served
    assert any("nginx: php-fpm ran all the workers it may" in x and "(6 of 6 trials)" in x
               for x in text["Why, from the servers' own evidence"])
    header, rows = table1(data)
    assert len(rows) == 2 and all(" ±" in row[header.index(("nginx", "req/s"))] for row in rows)
    doc = summary_doc(data)
    assert doc["results"]
    assert all("ci95" in item and "rps_range" not in item and "p99_ms" not in item["ci95"] for item in doc["results"])


def test_the_pphc_run_opens_with_its_claims_then_what_happened(tmp_path):
    written = build([str(PPHC)], tmp_path / "rep", {"md"})
    md = written["report.md"].read_text()
    top = md[md.index("## Findings"):md.index("## Summary")]
    assert top.index("### The write-up's claims, judged") < top.index("### Requests served")
    assert [top.count(f"**{v}**") for v in ("supported", "not supported", "inconclusive")] == [1, 1, 1]
    # two pages, the app's route and sleep.php: each label's figures, compared page by page
    assert ("proxy-article /sleep handled more requests/s than prefork-article /sleep at 5,000 clients: "
            "2.41× (1.89–3.07).") in top
    assert ("nginx-article /sleep.php?ms=500 handled more requests/s than prefork-article /sleep.php?ms=500 at 5,000 "
            "clients: 6.60× (6.50–6.71).") in top
    assert ("prefork-article /sleep's failures begin at 5,000 clients: 31.2% of its requests failed, mostly "
            "connect_timeout (1,375 per trial).") in top
    assert "prefork-article /sleep: Apache ran all the workers it may" in top and "AH00161" in top
    assert "nginx-article /sleep: nginx had no free connection" in top
    assert "nginx-article /sleep: its CPU was saturated at 5,000 clients" in top
    assert "nginx-article /sleep.php?ms=500: its CPU was saturated" not in top
    # three servers: Table 1 is one row per server and level, so a page holds it
    assert "| clients | server | ok / failed |" in md


def test_a_database_on_the_servers_cpu_counts_toward_its_saturation(fixture_copy):
    from loadcmp.report.story import causes, resources

    run = json.loads((fixture_copy / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "apache-prefork" and t.get("server_metrics"):  # pinned to one CPU: 55% + 40% of it
            t["server_metrics"]["cpu_pct"] = 55.0
            t["server_metrics"]["apart"] = {"db": {"cpu_pct": 40.0, "cpu_pct_max": 41.0, "mem_peak_bytes": 1,
                                                   "peaks": {}}}
    (fixture_copy / "run.json").write_text(json.dumps(run))
    data = load_results(fixture_copy)
    why = [x for x in causes(data) if x.startswith("apache-prefork: its CPU was saturated")]
    assert len(why) == 1 and "counting its db on the same cores" in why[0], causes(data)
    said = resources(data)
    used = [x for x in said if x.startswith("apache-prefork used")]
    # each role's share against the core they share, never the two summed under the server's name
    assert used == ["apache-prefork used 55 % of its one CPU core, and its db 40 % of the same core: together "
                    "saturated at every level."], used
    beside = [x for x in said if x.startswith("Beside apache-prefork")]
    assert beside and beside[0].startswith("Beside apache-prefork, its db (measured apart from the server, on its "
                                           "one CPU core; 100 % = one core): at 10 clients 40 % CPU"), beside


def test_runs_read_together_keep_each_servers_facts(fixture_copy):
    from loadcmp.report.story import causes, resources

    _edit_run(fixture_copy, name="other")
    data = load_results(FIXTURE, fixture_copy)
    assert data.servers[0] == "nginx (fixture-2x3x2)"
    found = data.info("nginx (other)")
    assert found is not None and found[0].path == fixture_copy and found[1]["stack"] == "nginx"
    why = causes(data)
    assert any(x.startswith("nginx (other)'s workers were all busy") for x in why), why
    assert any(x.startswith("nginx (other) used 99–100 % of its one CPU core") for x in resources(data))


def test_a_server_never_measured_and_one_that_served_nothing(fixture_copy, tmp_path):
    from loadcmp.report.story import failures, throughput

    run = json.loads((fixture_copy / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "apache-prefork":
            t.pop("result"), t.pop("latency_hist", None)
            t["status"], t["reason"] = "server_failed", "the container exited (code 1)"
        elif t["level"] == 200:
            r = t["result"]
            r["failures"]["connect_refused"], r["failed"], r["ok"], r["rps"] = r["ok"], r["ok"], 0, 0.0
            r["failed_rate"] = 1.0
    (fixture_copy / "run.json").write_text(json.dumps(run))
    data = load_results(fixture_copy)
    lines = failures(data)
    assert ("apache-prefork could not be measured from 10 to 200 clients: the container exited (code 1).") in lines
    assert any(x.startswith("nginx's failures begin at 200 clients: 100.0%") for x in lines)
    assert throughput(data) == ["nginx peaked at a mean of 1,462 requests/s, at 50 clients (pooled p99 latency "
                                "52.6 ms); at 200 clients, 0 requests/s."]
    written = build([str(fixture_copy)], tmp_path / "rep", {"md", "png"})  # no crash on 0 req/s or no cell
    assert "## Findings" in written["report.md"].read_text()


def test_a_ratio_against_zero_is_no_ratio(fixture_copy):
    run = json.loads((fixture_copy / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "apache-prefork" and t["level"] == 50:
            t["result"]["rps"], t["result"]["ok"] = 0.0, 0
    (fixture_copy / "run.json").write_text(json.dumps(run))
    data = load_results(fixture_copy)
    said = comparison_lines(data)
    assert "At 50 clients apache-prefork served no successful request, so no ratio can be given." in said
    from loadcmp.report.story import throughput

    assert "nginx served requests at 50 clients where apache-prefork served none." in throughput(data)


def test_failures_begin_at_the_knee_with_their_kind(fixture_copy):
    from loadcmp.report.story import failures, knee

    run = json.loads((fixture_copy / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "apache-prefork" and t["level"] >= 50:
            r = t["result"]
            r["failures"]["connect_timeout"] = 100 if t["level"] == 50 else 900
            r["failed"] = r["failures"]["connect_timeout"]
            r["failed_rate"] = r["failed"] / (r["ok"] + r["failed"])
    (fixture_copy / "run.json").write_text(json.dumps(run))
    data = load_results(fixture_copy)
    k = knee(data, "apache-prefork")
    assert k is not None and k.level == 50 and k.kind == "connect_timeout" and k.kind_count == 100
    assert knee(data, "nginx") is None
    lines = failures(data)
    assert lines[0] == "No request to nginx failed at any level measured."
    assert lines[1].startswith("apache-prefork's failures begin at 50 clients: 3.")
    assert "mostly connect_timeout" in lines[1]
    assert "; at 200 clients, 2" in lines[1]
    fig = plots.failures_vs_concurrency(data)
    assert any("failures begin" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_the_same_folder_twice_is_refused(fixture_copy, tmp_path):
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), str(fixture_copy.parent / "." / fixture_copy.name),
                                   "--out", str(tmp_path / "rep")])
    assert res.exit_code == 2 and "given twice" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "rep").exists()


def test_a_figure_that_fails_writes_nothing(fixture_copy, tmp_path, monkeypatch):
    def broken(data):
        raise ValueError("no room for the axes")

    monkeypatch.setattr(plots, "memory_and_processes", broken)
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 1 and "could not be drawn" in res.output and "no room for the axes" in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "rep").exists()
    existing = tmp_path / "old"
    existing.mkdir()
    (existing / "keep.txt").write_text("x")
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(existing)])
    assert res.exit_code == 1 and sorted(p.name for p in existing.iterdir()) == ["keep.txt"]


def test_a_bench_folder_builds_a_report(fixture_copy, tmp_path):
    run = json.loads((fixture_copy / "run.json").read_text())
    trial = {k: v for k, v in run["trials"][0].items() if k not in ("stack", "reason", "server_metrics")}
    bench = {"format": run["format"], "kind": "bench", "name": "bench http://127.0.0.1:8080/", "status": "complete",
             "started": run["started"], "loadcmp_version": "0.1.0", "machine": {"python": "3.11"},
             "spec": {"url": "http://127.0.0.1:8080/", "servers": ["127.0.0.1:8080"], "levels": [10], "page": "/",
                      "duration": 2.0, "warmup": 0.5, "timeout": 10.0, "schedule": "closed", "keepalive": [False],
                      "engine": "fast", "workers": 1, "requests": None},
             "servers": {"nginx": {"url": "http://127.0.0.1:8080/"}}, "trials": [trial]}
    (fixture_copy / "run.json").write_text(json.dumps(bench))
    written = build([str(fixture_copy)], tmp_path / "rep", {"md", "html", "png"})
    md = written["report.md"].read_text()
    assert ("10 concurrent clients, each sending its next request when the last one ends (webbench, ab), to "
            "http://127.0.0.1:8080/, on a new connection per request; measured for 2 s after 0.5 s of warm-up; "
            "timeout 10 s; 1 trial per level; fast engine in 1 client process.") in md
    assert "- **machine**: Python 3.11\n" in md and "- **loadcmp**: 0.1.0\n" in md
    for raw in ("None", "nan", "{", "commit ?", "cores,", "Docker None"):
        assert raw not in md, raw
    # no server was sampled: no memory or worker figures, no server rows in the timeline, said in one line
    assert "Figure 5: No server memory or processes to draw: bench loads a URL" in md
    assert "Figure 6: No server busy workers or sockets to draw" in md
    assert {p.name for p in written.values()} >= {"1-success.png", "3-timeline.png", "4-latency.png"}
    assert "5-memory.png" not in {p.name for p in written.values()}
    assert "server CPU" not in md.split("## Summary")[0], "no server figures in the findings"


def test_a_missing_timeline_is_said_where_figure_3_would_be_and_on_the_console(fixture_copy, tmp_path):
    (fixture_copy / "timeline.parquet").unlink()
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(out), "--format", "md,png"])
    assert res.exit_code == 0, res.output
    said = f"{fixture_copy / 'timeline.parquet'} is missing"
    assert f"warning: figure 3 (3-timeline) not drawn: {said}" in res.stderr
    md = (out / "report.md").read_text()
    assert f"*Figure 3: Second by second at 200 clients, not drawn: {said}: the per-second records" in md
    assert not (out / "3-timeline.png").exists() and (out / "4-latency.png").exists()
    assert "## Comparison" in md, "the rest is reported"


def test_a_truncated_server_table_leaves_the_rest_of_the_report(fixture_copy, tmp_path):
    table = fixture_copy / "server.parquet"
    table.write_bytes(table.read_bytes()[:300])
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["report", str(fixture_copy), "--out", str(out), "--format", "md,png"])
    assert res.exit_code == 0, res.output
    assert f"warning: figure 3 (3-timeline) drawn without the server's rows: {table} is damaged (" in res.stderr
    md = (out / "report.md").read_text()
    assert f"Drawn without the server's rows: {table} is damaged (" in md.split("## Figures")[1]
    assert (out / "3-timeline.png").exists() and (out / "5-memory.png").exists(), "run.json's figures still drawn"
    assert md.count("- **") > 5 and "## Summary (Table 1)" in md


def test_a_run_killed_before_its_first_trial_is_said_abandoned_by_its_process(fixture_copy):
    from loadcmp.lab.provenance import this_host, this_process

    owner = killed_owner()
    _edit_run(fixture_copy, trials=[], status="running", owner=owner, host=this_host())
    res = CliRunner().invoke(cli, ["report", str(fixture_copy)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert (f"{fixture_copy}: the run was abandoned: its process {owner.split(':')[0]} on {platform.node()} "
            "ended before the first trial was stored") in res.stderr
    assert "no trial was stored" not in res.stderr
    _edit_run(fixture_copy, owner=this_process())
    res = CliRunner().invoke(cli, ["report", str(fixture_copy)])
    assert res.exit_code == 1
    assert f"its process {os.getpid()} on {platform.node()} is still running" in res.stderr
    assert not (fixture_copy / "report").exists()

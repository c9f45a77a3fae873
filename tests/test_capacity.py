"""`loadcmp capacity` without Docker: the search driven through the trial machinery on a model server
(`tests/helpers/fakeprobe.py`), its target and evidence, the command's bad inputs and Ctrl-C."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from helpers.fakeprobe import Model, search_folder
from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.experiment.capacity import CapacitySpec, capacity_spec
from loadcmp.experiment.spec import RunSpec, load_experiment
from loadcmp.lab.stacks import configs_dir
from loadcmp.load.record.histogram import Histogram
from loadcmp.load.record.summary import latency_doc
from loadcmp.records import TrialRecord
from loadcmp.store.reader import load_results
from loadcmp.store.writer import RunWriter, new_run_doc
from loadcmp.sweep.trial import Planned, Sweep
from loadcmp.verdicts.slo import confirm_level, edge_cause, judge_probe, parse_slo

SLO = "p99<500ms, failed_rate<1%"


def cap_spec(**kw: Any) -> CapacitySpec:
    return CapacitySpec(parse_slo(SLO), **{"max": 20000, "max_reason": "the open-file limit", **kw})


def test_every_probe_is_a_trial_of_one_folder_with_the_search_path(tmp_path):
    model = Model({"nginx": 300})
    path = search_folder(model, RunSpec(servers=("nginx",), duration=5.0), cap_spec(), tmp_path)
    run = json.loads((path / "run.json").read_text())
    assert run["kind"] == "capacity" and run["status"] == "complete"
    doc = run["capacity"]["servers"]["nginx"]
    assert doc["kind"] in ("capacity", "at_least") and doc["level"] <= 300 < doc["missed"] <= doc["level"] * 1.1
    assert len(run["trials"]) == len(model.runs)  # every probe and confirmation trial is stored
    levels = sorted({t["level"] for t in run["trials"]})
    assert {10, 20, 40, 80, 160, 320} < set(levels) and len(levels) > 6  # irregular once it bisects
    for lv in (doc["level"], doc["missed"]):  # the confirmations: trials 1..3 of one cell, not a new level
        assert sorted(t["trial"] for t in run["trials"] if t["level"] == lv) == [1, 2, 3]
    steps = [s for s in doc["path"] if s["stage"] != "confirm"]
    assert [s["level"] for s in steps][:6] == [10, 20, 40, 80, 160, 320]
    assert doc["path"][-1]["stage"] == "confirm"
    assert "all php-fpm workers were busy" in doc["cause"]  # the evidence at the first level missed
    assert any(e.startswith("the target was missed: p99<500ms") for e in doc["evidence"])
    assert str(doc["missed"]) in doc["confirmed"] and doc["confirmed"][str(doc["missed"])][0]["verdict"] == "missed"
    # the store reads it back whole: Table 1 rows at the irregular levels, the capacity by label
    res = load_results(path)
    assert res.levels == levels and list(res.capacity) == ["nginx"]


def test_by_rate_each_probe_offers_its_level_as_the_rate(tmp_path):
    rates: list[tuple[int, float | None]] = []

    class ByRate(Model):
        def __call__(self, sweep: Sweep, p: Planned, spec: RunSpec) -> Any:
            rates.append((p.level, spec.rate))
            assert spec.schedule_for(p.level).describe()["rate"] == p.level
            assert sweep.spec.rate == 10.0  # the probe's spec is handed over: the sweep's is never swapped
            return super().__call__(sweep, p, spec)

    spec = RunSpec(servers=("nginx",), duration=5.0, schedule="rate", rate=10.0)
    path = search_folder(ByRate({"nginx": 200}), spec, cap_spec(unit="requests/s"), tmp_path)
    assert rates and all(rate == level for level, rate in rates)
    run = json.loads((path / "run.json").read_text())
    assert run["capacity"]["unit"] == "requests/s" and "requests/s" in run["capacity"]["servers"]["nginx"]["text"]


def test_a_kept_server_is_removed_when_its_search_ends(tmp_path):
    stopped: list[tuple[str, int]] = []

    class Kept:
        def __init__(self, label: str) -> None:
            self.label = label

        def stop(self) -> None:
            stopped.append((self.label, len(model.runs)))

    class Keeping(Model):
        def __call__(self, sweep: Sweep, p: Planned, spec: RunSpec) -> Any:
            sweep.reused.setdefault(p.label, Kept(p.label))  # as run_trial keeps a server with --reuse-server
            return super().__call__(sweep, p, spec)

    model = Keeping({"nginx": 300, "apache-prefork": 60})
    search_folder(model, RunSpec(servers=("nginx", "apache-prefork"), reuse_server=True), cap_spec(), tmp_path)
    nginx_runs = sum(p.label == "nginx" for p in model.runs)
    assert stopped == [("nginx", nginx_runs), ("apache-prefork", len(model.runs))]


def test_a_client_bound_edge_is_stored_as_at_least(tmp_path):
    path = search_folder(Model({"nginx": 300}, {"nginx": 250}), RunSpec(servers=("nginx",)), cap_spec(), tmp_path)
    doc = json.loads((path / "run.json").read_text())["capacity"]["servers"]["nginx"]
    assert doc["kind"] == "at_least" and doc["text"].startswith(f"nginx: at least {doc['level']:,} clients")
    assert any(e.startswith("the client was the limit") for e in doc["evidence"])


def test_a_target_never_met_and_one_never_missed(tmp_path):
    never = search_folder(Model({"nginx": 300}), RunSpec(servers=("nginx",)),
                          CapacitySpec(parse_slo("p99<10ms"), max=20000, max_reason="x"), tmp_path / "a")
    doc = json.loads((never / "run.json").read_text())["capacity"]["servers"]["nginx"]
    assert (doc["kind"], doc["level"]) == ("below_start", 10) and "below 10 clients" in doc["text"]
    always = search_folder(Model({"nginx": 10**6}), RunSpec(servers=("nginx",)),
                           cap_spec(max=700, max_reason="the open-file limit (20,000)"), tmp_path / "b")
    doc = json.loads((always / "run.json").read_text())["capacity"]["servers"]["nginx"]
    assert (doc["kind"], doc["level"], doc["missed"]) == ("not_reached", 700, None)
    assert "the open-file limit (20,000)" in doc["text"]


# --- the target and the evidence ----------------------------------------------------------------------


def _trial(level: int, **extra: Any) -> TrialRecord:
    """A trial of the model server of capacity 100 at a level, with fields replaced."""
    rec = Model({"nginx": 100}).trial(Planned(level, 1, "nginx", False, "nginx", "/"))
    return rec | extra  # type: ignore[return-value]


def test_a_probe_meets_the_target_when_every_check_passes():
    target = parse_slo(SLO)
    met = judge_probe(target, _trial(50))
    assert met is not None and met.met and met.text.startswith("met p99<500ms")
    missed = judge_probe(target, _trial(300))
    assert missed is not None and not missed.met
    assert missed.missed[0].startswith("p99<500ms (") and "failed_rate<1%" in missed.missed[1]
    assert judge_probe(target, TrialRecord(server="nginx", level=1, trial=1, stack="nginx", keepalive=False,
                                           status="server_failed", reason="no")) is None


def test_confirmation_decides_by_the_interval_and_says_unsure_when_it_straddles():
    target = parse_slo("p99<500ms")
    model = Model({"nginx": 100})
    at = {lv: [model.trial(Planned(lv, t, "nginx", False, "nginx", "/")) for t in (1, 2, 3)] for lv in (50, 99, 150)}
    assert confirm_level(target, 50, at[50]).verdict == "met"
    assert confirm_level(target, 150, at[150]).verdict == "missed"
    edge = confirm_level(target, 99, at[99])  # p99 495, 500, 505 ms: the interval straddles 500 ms
    assert edge.verdict == "unsure" and edge.checks[0].low < 500 < edge.checks[0].high
    assert confirm_level(target, 50, at[50][:1]).n == 1


def test_the_edge_cause_comes_from_the_stored_evidence_strongest_first():
    judged = [j for j in [judge_probe(parse_slo(SLO), _trial(200))] if j]
    oom = _trial(200, status="oom", reason="3 server process(es) OOM-killed at the memory cap")
    said = edge_cause([oom], {"cpus": "1"}, 2, judged)
    assert said[0] == "3 server process(es) OOM-killed at the memory cap"
    assert said[1].startswith("all php-fpm workers were busy")
    assert any(s.startswith("the server's CPU was saturated: 99% of its 1 CPU") for s in said)
    quiet = _trial(200, server_metrics={"cpu_pct": 40.0})
    quiet.pop("causes", None)
    said = edge_cause([quiet], {"cpus": "0-1"}, 2, judged)  # 40% of 2 CPUs: not saturated; no notes
    assert said == [f"the target was missed: {', '.join(judged[0].missed)}; failures: 200 connect_refused "
                    "(no server evidence names a limit)"]
    # an app's database on the same CPU: 76% + 24% of one CPU is saturated, though neither is alone
    shared = _trial(200, server_metrics={"cpu_pct": 76.0, "apart": {"db": {"cpu_pct": 24.0, "cpu_pct_max": 25.0,
                                                                           "mem_peak_bytes": 1, "peaks": {}}}})
    shared.pop("causes", None)
    said = edge_cause([shared], {"cpus": "1"}, 2, judged)
    assert said[0] == ("the server's CPU was saturated: 100% of its 1 CPU with its db, on the same CPUs (the server "
                       "76%, its db 24%; means over the window)")
    shared["server_metrics"]["apart"]["db"]["cpu_pct"] = 4.0  # type: ignore[index]
    assert not edge_cause([shared], {"cpus": "1"}, 2, judged)[0].startswith("the server's CPU")


@pytest.mark.parametrize("text, needle", [
    ("", "write checks joined by commas"),
    ("p99<", "bad check"),
    ("nginx:p99<1s", "drop the server name"),
    ("p99<1s,,failed_rate<1%", "write checks joined by commas"),
    ("capacity>10", "judged by findings"),
    ("p99<1 fortnight", "unknown unit"),
])
def test_a_bad_target_is_one_line(text, needle):
    with pytest.raises(UsageError, match=needle) as e:
        parse_slo(text)
    assert "\n" not in str(e.value)


def test_the_papers_experiment_has_a_capacity_table():
    fields, extra = load_experiment(configs_dir() / "experiments" / "paper-2013.toml")
    cap = capacity_spec(RunSpec(**{k: v for k, v in fields.items() if k != "findings"}), extra["capacity"], {})
    assert str(cap.target) and cap.confirm >= 3 and cap.unit == "clients"
    assert any("capacity" in f["check"] for f in fields["findings"])
    over = capacity_spec(RunSpec(), extra["capacity"], {"start": 50, "max": 400})
    assert (over.start, over.max, over.max_reason) == (50, 400, "the most asked for")


# --- the command -----------------------------------------------------------------------------------


@pytest.mark.parametrize("args, needle", [
    (["--slo", "p99<1s", "-c", "10"], "-c/--clients: the search finds the level itself"),
    (["--slo", "p99<1s", "-t", "30s"], "a probe lasts --probe-time"),
    (["--slo", "p99<1s", "--schedule", "rate", "--rate", "100"], "the search finds the rate itself"),
    (["--slo", "p99<1s, rps"], "bad check"),
    (["--slo", "p(99)<5 parsecs"], "unknown unit 'parsecs'"),
    (["--slo", "p99<1s", "--resolution", "0%"], "--resolution: must be above 0%"),
    (["--slo", "p99<1s", "--resolution", "lots"], "bad --resolution 'lots'"),
    (["--slo", "p99<1s", "--start", "500", "--max", "100"], "--start 500 is above the most"),
    (["--slo", "p99<1s", "--confirm", "0"], "--confirm"),
    ([], "no target: give --slo"),
])
def test_bad_inputs_are_one_line_and_exit_2(args, needle):
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", *args])
    assert res.exit_code == 2, res.output
    said = [x for x in res.output.strip().splitlines() if x.strip()]
    assert len(said) == 1 and needle in said[0] and said[0].startswith("error: "), res.output


def test_every_problem_is_said_at_once():
    """As `validate` does: the flags the search sets itself, a bad target, a bad resolution and bounds that
    contradict, each a line under one error, exit 2, nothing started."""
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "-c", "10", "-t", "5s", "--slo", "p99<<1s",
                                   "--resolution", "200%", "--start", "500", "--max", "5", "--confirm", "4",
                                   "--max-confirm", "2"])
    assert res.exit_code == 2, res.output
    said = [x.strip() for x in res.output.strip().splitlines() if x.strip()]
    assert said[0] == "error: 6 problems:" and len(said) == 7, res.output
    for needle in ("-c/--clients: the search finds", "-t/--time: a probe lasts", "--slo: bad check 'p99<<1s'",
                   "--resolution: must be above 0%", "--start 500 is above the most", "--max-confirm 2 is below"):
        assert sum(needle in line for line in said[1:]) == 1, (needle, res.output)
    bad_only = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "--slo", "p99<<1s"]).output
    assert "no target" not in bad_only  # a target given and refused is not a target missing


def test_a_bad_capacity_table_is_one_line_and_exit_2(tmp_path):
    f = tmp_path / "cap.toml"
    f.write_text('servers = ["nginx"]\n[capacity]\nslo = "p99<1s"\nstep = 3\n')
    res = CliRunner().invoke(cli, ["capacity", str(f)])
    assert res.exit_code == 2 and res.output.strip() == (
        "error: cap.toml: [capacity] has unknown key(s) step (known: slo, resolution, start, max, probe_time, confirm, "
        "max_confirm)")


@pytest.fixture()
def no_docker(monkeypatch, tmp_path):
    """The command as it is, on the model server: the sweep opens a folder instead of an engine."""
    from loadcmp.sweep import capacity, runner

    def open_sweep(spec: RunSpec, progress: Any, stopper: Any, images: Any, fleet: Any, kind: str) -> Sweep:
        doc = new_run_doc("capacity", spec.name or "cap", spec.to_dict(), {"cores": 2}, "test")
        return Sweep(spec, None, {}, "run-test", RunWriter.create(spec.out, spec.name or "cap", doc), stopper,
                     progress)

    model = Model({"nginx": 300, "apache-prefork": 60})
    monkeypatch.setattr(capacity, "open_sweep", open_sweep)
    monkeypatch.setattr(capacity, "run_trial", model)
    monkeypatch.setattr(runner, "clean_up", lambda sweep: None)
    return model


def test_the_command_searches_each_server_and_prints_json(no_docker, tmp_path):
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "--server", "apache-prefork", "--slo", SLO,
                                   "--out", str(tmp_path), "--json", "--confirm", "3"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    cap = doc["capacity"]
    assert cap["target"] == SLO and cap["unit"] == "clients"
    nginx, apache = cap["servers"]["nginx"], cap["servers"]["apache-prefork"]
    assert nginx["kind"] in ("capacity", "at_least") and apache["kind"] in ("capacity", "at_least")
    assert apache["interval"][0] <= 60 < apache["interval"][1]
    assert nginx["interval"][0] <= 300 < nginx["interval"][1]
    assert {r["server"] for r in doc["results"]} == {"nginx", "apache-prefork"}


def test_ctrl_c_mid_search_keeps_the_probes_and_exits_130(no_docker, tmp_path):
    no_docker.interrupt_at = 4
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "--server", "apache-prefork", "--slo", SLO,
                                   "--out", str(tmp_path)])
    assert res.exit_code == 130, res.output
    assert "interrupted: interrupted" not in res.output and "0.0 ms" not in res.output
    (run_json,) = tmp_path.glob("*/run.json")
    run = json.loads(run_json.read_text())
    assert run["status"] == "interrupted"
    assert [t["level"] for t in run["trials"]] == [10, 20, 40, 80]  # the fourth, cut short, is kept too
    assert run["trials"][-1]["status"] == "interrupted"
    nginx = run["capacity"]["servers"]["nginx"]
    assert nginx["kind"] == "interrupted" and [s["level"] for s in nginx["path"]] == [10, 20, 40]
    assert "apache-prefork" not in run["capacity"]["servers"]  # never started
    assert len(no_docker.runs) == 4
    assert f"kept what was measured in {run_json.parent}" in res.output


class Wobbly(Model):
    """The model with trials 20 % slower and faster by turns: near the edge no confirmation decides."""

    def trial(self, p: Planned, interrupted: bool = False) -> TrialRecord:
        rec = super().trial(p, interrupted)
        h = Histogram.from_dict(rec["latency_hist"])
        scaled = Histogram.of(np.linspace(h.percentile(1), h.percentile(99), 400) * (1 + 0.2 * (-1) ** p.trial))
        rec["latency_hist"] = scaled.to_dict()
        rec["result"]["latency_ms"] = latency_doc(scaled)
        return rec


def test_an_edge_no_confirmation_decides_ends_unsure_on_the_console_in_json_and_in_the_report(no_docker,
                                                                                               monkeypatch, tmp_path):
    from loadcmp.sweep import capacity

    monkeypatch.setattr(capacity, "run_trial", Wobbly({"nginx": 300}))
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "--slo", SLO, "--out", str(tmp_path / "r"),
                                   "--confirm", "2", "--max-confirm", "4"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "nginx: unsure, " in said and "stayed unsure over 4 trials (--max-confirm)" in said
    assert "--max-confirm 4 allows no more trials" in said  # the notes reach the console
    (folder,) = (tmp_path / "r").iterdir()
    doc = json.loads((folder / "run.json").read_text())["capacity"]
    nginx = doc["servers"]["nginx"]
    assert doc["max_confirm"] == 4 and nginx["kind"] == "unsure" and nginx["undecided"]
    for lv in nginx["undecided"]:
        assert len([t for t in json.loads((folder / "run.json").read_text())["trials"] if t["level"] == lv]) == 4
    res = CliRunner().invoke(cli, ["capacity", "--server", "nginx", "--slo", SLO, "--out", str(tmp_path / "j"),
                                   "--confirm", "2", "--max-confirm", "4", "--json"])
    cap = json.loads(res.stdout)["capacity"]["servers"]["nginx"]
    assert cap["kind"] == "unsure" and cap["capacity"] is None and cap["unsure"] == nginx["undecided"]
    assert cap["interval"] == [nginx["level"] or 0, nginx["missed"]]
    rep = CliRunner().invoke(cli, ["report", str(folder), "--out", str(tmp_path / "rep"), "--format", "md"])
    assert rep.exit_code == 0, rep.output
    md = (tmp_path / "rep" / "report.md").read_text()
    assert f"| nginx | unsure ({nginx['level']:,} – {nginx['missed']:,}) |" in md
    assert f"(unsure at {', '.join(f'{lv:,}' for lv in nginx['undecided'])})" in md
    assert f"| {nginx['undecided'][0]:,}: p99<500ms: " in md  # the undecided confirmation's figures
    for line in md.splitlines():  # no latency interval below zero anywhere
        assert not re.search(r"\(-\d[\d.,]*ms", line), line


def test_max_confirm_below_confirm_is_refused():
    with pytest.raises(UsageError, match="--max-confirm 2 is below --confirm 3"):
        capacity_spec(RunSpec(servers=("nginx",)), {}, {"slo": parse_slo(SLO), "confirm": 3, "max_confirm": 2})
    assert capacity_spec(RunSpec(servers=("nginx",)), {"max_confirm": 7}, {"slo": parse_slo(SLO)}).most_trials == 7
    assert capacity_spec(RunSpec(servers=("nginx",)), {}, {"slo": parse_slo(SLO), "confirm": 2}).most_trials == 5
    assert capacity_spec(RunSpec(servers=("nginx",)), {}, {"slo": parse_slo(SLO), "confirm": 7}).most_trials == 7


# --- the report, --json and findings, from a stored search -------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "capacity-2x"
"""nginx (at least 987 clients: client-bound at the edge) and apache-prefork (87, missed at 95), from
`helpers.fakeprobe.make_fixture`."""


def test_the_report_opens_with_capacity_and_draws_the_search(tmp_path):
    res = CliRunner().invoke(cli, ["report", str(FIXTURE), "--out", str(tmp_path), "--format", "html,md,png"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "report.md").read_text()
    assert md.index("## Capacity") < md.index("## Findings") < md.index("## Summary (Table 1)")
    # stored by a search that added no trials while unsure: its figures are shown unsure, and why
    assert "| nginx | ≥ 987 (client-bound), unsure | 987 clients and up |" in md
    assert "| apache-prefork | 87, unsure | 87 – 95 clients |" in md
    assert "apache-prefork: unsure: the confirmation at 87 did not decide" in md
    assert "all php-fpm workers were busy" in md.split("## Findings")[0]  # the cause at the edge
    assert "as many as a capacity search chose (from 10)" in md
    assert "![Figure 1. The capacity search of each server" in md and (tmp_path / "0-capacity.png").stat().st_size
    html = (tmp_path / "report.html").read_text()
    assert html.index("<h2>Capacity</h2>") < html.index("<h2>Findings</h2>")
    # every probe is a row of Table 1, at levels no sweep would have chosen
    table1 = md.split("## Summary (Table 1)")[1].split("\n## ")[0]
    levels = [int(r.split("|")[1].replace(",", "")) for r in table1.splitlines()
              if r.startswith("| ") and r.split("|")[1].strip().replace(",", "").isdigit()]
    assert 87 in levels and 95 in levels and 987 in levels and levels == sorted(levels)


def test_json_carries_each_capacity_with_its_interval():
    from loadcmp.report.tables import summary_doc

    doc = summary_doc(load_results(FIXTURE))
    cap = doc["capacity"]
    assert cap["target"] == "p99<500ms, failed_rate<1%" and cap["unit"] == "clients" and cap["confirm"] == 3
    apache, nginx = cap["servers"]["apache-prefork"], cap["servers"]["nginx"]
    assert (apache["kind"], apache["capacity"], apache["interval"]) == ("capacity", 87, [87, 95])
    assert (nginx["kind"], nginx["capacity"], nginx["at_least"], nginx["interval"]) == ("at_least", None, 987,
                                                                                         [987, None])
    assert apache["cause"].startswith("all php-fpm workers were busy") and apache["path"][0]["level"] == 10
    assert "capacity" not in summary_doc(load_results(Path(__file__).parent / "fixtures" / "run-2x3x2"))


@pytest.mark.parametrize("check, verdict, why", [
    ("nginx:capacity > 2 * apache-prefork:capacity", "supported", None),
    ("apache-prefork:capacity > 200", "not supported", "wrong side"),
    ("apache-prefork:capacity > 90", "inconclusive", "straddles"),  # the edge lies between 87 and 95
    ("nginx:capacity < 500", "not supported", "wrong side"),
    ("nginx:capacity < 5000", "inconclusive", "straddles"),  # at least 987: no upper bound
    ("capacity > 50", "supported", None),  # every server
])
def test_capacity_is_a_metric_findings_judge_on_the_bracketed_edge(check, verdict, why):
    from loadcmp.verdicts.findings import parse_findings
    from loadcmp.verdicts.judge import evaluate

    (got,) = evaluate(load_results(FIXTURE), parse_findings([{"claim": "c", "check": check}]))
    assert got.verdict == verdict, got.text
    assert why is None or why in (got.reason or ""), got.reason


def test_a_capacity_finding_on_a_run_is_inconclusive_and_a_level_is_refused():
    from loadcmp.verdicts.findings import parse_check, parse_findings
    from loadcmp.verdicts.judge import evaluate

    (got,) = evaluate(load_results(Path(__file__).parent / "fixtures" / "run-2x3x2"),
                      parse_findings([{"claim": "c", "check": "nginx:capacity > 2 * apache-prefork:capacity"}]))
    assert got.verdict == "inconclusive" and "no capacity search of nginx" in (got.reason or "")
    with pytest.raises(UsageError, match="at no level"):
        parse_check("nginx:capacity@100 > 3")
    with pytest.raises(UsageError, match="measure different things"):
        parse_check("nginx:capacity > 2 * apache-prefork:rps")
    assert parse_check("nginx:p99@50 < 100ms").left.q == 99  # p99 is p(99) in findings too


def test_table_1_names_the_level_of_a_search_by_rate_the_offered_rate(tmp_path):
    from loadcmp.report.tables import long_form, table1

    spec = RunSpec(servers=("nginx",), duration=5.0, schedule="rate", rate=10.0)
    path = search_folder(Model({"nginx": 300}), spec, cap_spec(unit="requests/s"), tmp_path)
    header, rows = table1(load_results(path))
    assert header[0] == ("", "offered req/s")
    assert long_form(header, rows, ["nginx"])[0][0] == "offered req/s"
    path = search_folder(Model({"nginx": 300}), RunSpec(servers=("nginx",), duration=5.0), cap_spec(), tmp_path)
    assert table1(load_results(path))[0][0] == ("", "clients")

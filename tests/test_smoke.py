"""`loadcmp smoke`: check parsing, evaluation, JUnit, summary, baseline; one real run on all stacks."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.lab import cleanup
from loadcmp.verdicts import smoke as sm
from loadcmp.cli import cli
from loadcmp.errors import UsageError
from loadcmp.store.reader import load_results

FIXTURE = Path(__file__).parent / "fixtures" / "run-2x3x2"


@pytest.mark.parametrize(
    "text, metric, op, value, scope",
    [
        ("failed_rate<1%", "failed_rate", "<", 0.01, None),
        ("rps>200", "rps", ">", 200, None),
        ("p(99)<500ms", "p", "<", 500, None),
        ("p(99.9) <= 2s", "p", "<=", 2000, None),
        ("mem_peak<256MiB", "mem_peak", "<", 256 * 2**20, None),
        ("nginx:rps>500", "rps", ">", 500, "nginx"),
        ("apache:max<1s", "max", "<", 1000, "apache-prefork"),
    ],
)
def test_parse_checks(text, metric, op, value, scope):
    c = sm.parse_check(text)
    assert (c.metric, c.op, c.scope) == (metric, op, scope)
    assert c.value == pytest.approx(value)


@pytest.mark.parametrize("bad", ["rps>>5", "speed>5", "p<5ms", "rps>5ms", "iis:rps>5", "p(0)<3", "mem_peak<3parsecs"])
def test_bad_checks(bad):
    with pytest.raises(UsageError):
        sm.parse_check(bad)


def test_every_bad_check_is_named_at_once():
    with pytest.raises(UsageError) as e:
        sm.parse_checks(["rps>1", "speed>5", "p(0)<3"])
    errs = e.value.messages  # type: ignore[attr-defined]
    assert len(errs) == 2 and "speed" in errs[0] and "p(0)" in errs[1]


def test_bad_check_is_exit_2_before_anything_starts(tmp_path):
    res = CliRunner().invoke(cli, ["smoke", "--check", "speed>5", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "unknown metric" in res.output
    assert not list(tmp_path.iterdir()), "nothing may start"


def test_evaluate_junit_summary_on_stored_run(tmp_path):
    res = load_results(FIXTURE)
    checks = sm.parse_checks(["rps>1", "p(99)<1ms", "nginx:failed_rate<1%"])
    outs = sm.evaluate(res, checks)
    assert len(outs) == 2 * 2 + 1
    rps, p99 = [o for o in outs if o.check == "rps>1"], [o for o in outs if o.check == "p(99)<1ms"]
    assert len(rps) == len(p99) == 2
    assert all(o.passed for o in rps)
    assert not any(o.passed for o in p99)
    xml = sm.junit_xml(outs, 12.5, str(res.path))
    root = ET.fromstring(xml)
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "5" and suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert len(cases) == 5 and sum(c.find("failure") is not None for c in cases) == 2
    failure = next(c.find("failure") for c in cases if c.find("failure") is not None)
    assert "measured" in failure.get("message")
    md = tmp_path / "summary.md"
    md.write_text("# earlier step\n")
    sm.write_outputs(outs, res, False, 12.5, str(tmp_path / "j.xml"), str(md))
    text = md.read_text()
    assert text.startswith("# earlier step\n") and "loadcmp smoke: FAILED" in text and "| nginx" in text
    ET.parse(tmp_path / "j.xml")


def test_baseline_regression(tmp_path):
    base = tmp_path / "base"
    shutil.copytree(FIXTURE, base)
    run = json.loads((base / "run.json").read_text())
    for t in run["trials"]:
        t["result"]["rps"] *= 2
    (base / "run.json").write_text(json.dumps(run))
    outs = sm.compare_baseline(load_results(FIXTURE), load_results(base), 0.2)
    rps = [o for o in outs if o.check.startswith("rps")]
    assert rps and not any(o.passed for o in rps)
    assert "below the baseline" in rps[0].message
    same = sm.compare_baseline(load_results(FIXTURE), load_results(FIXTURE), 0.2)
    same_rps = [o for o in same if o.check.startswith("rps")]
    assert same_rps and all(o.passed for o in same_rps)


def test_a_run_that_served_nothing_fails_its_baseline(tmp_path):
    """The worst regression must not vanish: 0 req/s, no response for a p99, a trial that never ran."""
    now = tmp_path / "now"
    shutil.copytree(FIXTURE, now)
    run = json.loads((now / "run.json").read_text())
    for t in run["trials"]:
        t["result"]["rps"] = 0.0
        t["result"]["ok"] = 0
        t.pop("latency_hist", None)
    del run["trials"][0]["result"]  # one never ran at all
    (now / "run.json").write_text(json.dumps(run))
    outs = sm.compare_baseline(load_results(now), load_results(FIXTURE), 0.2)
    assert len(outs) == 2 * len({(t["server"], t["level"]) for t in run["trials"]}), [o.message for o in outs]
    assert not any(o.passed for o in outs), [o.message for o in outs]
    assert any("nothing was served" in o.message for o in outs)
    # a baseline that measured nothing holds the run to nothing: no verdict, not a pass
    assert sm.compare_baseline(load_results(FIXTURE), load_results(now), 0.2) == []


@pytest.mark.docker
def test_smoke_all_stacks_passes_and_impossible_check_fails(tmp_path, images, docker_client):
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    res = CliRunner().invoke(cli, ["smoke", "--junit", str(junit), "--summary", str(summary),
                                   "--out", str(tmp_path / "results"), "--json"])
    assert res.exit_code == 0, res.output[-2000:]
    doc = json.loads(res.stdout)
    assert doc["passed"] and len(doc["checks"]) == 7 * 2 * 4
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "56" and suite.get("failures") == "0"
    names = {c.get("classname") for c in suite.findall("testcase")}
    assert names == {f"loadcmp.smoke.{s}" for s in
                     ("nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache", "caddy", "lighttpd")}
    assert "loadcmp smoke: passed" in summary.read_text()
    assert cleanup.labelled(docker_client) == []

    base = Path(doc["results_dir"])
    res = CliRunner().invoke(cli, ["smoke", "--server", "nginx", "--page", "/index.html", "-t", "2",
                                   "--check", "rps>1000000", "--check", "failed_rate<1%",
                                   "--baseline", str(base), "--max-regression", "1000%",
                                   "--junit", str(junit), "--out", str(tmp_path / "results")])
    assert res.exit_code == 3, res.output[-2000:]
    assert "rps>1000000" in res.output and "measured" in res.output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1"


def test_evaluate_follows_the_one_server_order_and_reads_server_metrics():
    res = load_results(FIXTURE)
    outs = sm.evaluate(res, sm.parse_checks(["mem_peak<1GiB", "cpu>0", "pids_peak<10000", "ok>0"]))
    assert list(dict.fromkeys(o.server for o in outs)) == res.servers
    assert len(outs) == 4 * len(res.servers) and res.servers
    assert all(o.passed and o.measured is not None for o in outs), [o.message for o in outs]
    nginx = res.of_server("nginx")
    mem = sm.measure(sm.parse_check("mem_peak<1GiB"), nginx)
    assert mem == max(t["server_metrics"]["mem_peak_bytes"] for t in nginx)
    assert sm.measure(sm.parse_check("rps>1"), []) is None


def test_a_server_that_did_not_run_is_not_measured(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    run = json.loads((folder / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "apache-prefork":
            t.update(status="server_failed", reason="server did not start: test", result=None)
    (folder / "run.json").write_text(json.dumps(run))
    outs = sm.evaluate(load_results(folder), sm.parse_checks(["rps>1"]))
    failed = [o for o in outs if not o.passed]
    assert [o.server for o in failed] == ["apache-prefork"] and "server did not start" in failed[0].message


def test_a_level_the_run_lacks_fails_its_baseline_but_a_server_it_did_not_choose_does_not(tmp_path):
    now = tmp_path / "now"
    shutil.copytree(FIXTURE, now)
    run = json.loads((now / "run.json").read_text())
    first = (run["trials"][0]["server"], run["trials"][0]["level"])
    run["trials"] = [t for t in run["trials"] if (t["server"], t["level"]) != first]  # a sweep cut short
    (now / "run.json").write_text(json.dumps(run))
    outs = sm.compare_baseline(load_results(now), load_results(FIXTURE), 10.0)
    lacking = [o for o in outs if not o.passed]
    assert lacking and all("no trial was measured" in o.message and o.server == first[0] for o in lacking)
    run["trials"] = [t for t in run["trials"] if t["server"] != first[0]]  # that server not chosen at all
    (now / "run.json").write_text(json.dumps(run))
    outs = sm.compare_baseline(load_results(now), load_results(FIXTURE), 10.0)
    assert outs and all(o.passed for o in outs) and all(o.server != first[0] for o in outs)

"""Findings (loadcmp.verdicts.findings, loadcmp.verdicts.judge): the check grammar, the verdict rule, and the
three verdicts judged
on stored results made from the checked-in run tests/fixtures/run-2x3x2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loadcmp.verdicts import findings as fd
from loadcmp.verdicts import judge as jd
from loadcmp.errors import ConfigError, UsageError
from loadcmp.verdicts.findings import Levels, Side
from loadcmp.store.reader import Results, load_results
from helpers.stored import client_bound, stored_run

FIXTURE = Path(__file__).parent / "fixtures" / "run-2x3x2"


# --- grammar ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, left, op, value, right",
    [
        ("nginx:failed_rate@6000 < 1%", Side("nginx", "failed_rate", None, Levels(6000, 6000)), "<", 0.01, None),
        ("nginx:rps@1000.. > 1.5 * apache-prefork:rps", Side("nginx", "rps", None, Levels(1000, None)), ">", 1.5,
         Side("apache-prefork", "rps")),
        ("apache-prefork:mem_peak@..1000 > 2 * nginx:mem_peak",
         Side("apache-prefork", "mem_peak", None, Levels(None, 1000)), ">", 2, Side("nginx", "mem_peak")),
        ("rps@100..1000 >= 200", Side(None, "rps", None, Levels(100, 1000)), ">=", 200, None),
        ("p(99) <= 500ms", Side(None, "p", 99), "<=", 500, None),
        ("tuned:mem_peak<256MiB", Side("tuned", "mem_peak"), "<", 256 * 2**20, None),
        ("nginx:p(99)@500 < 10 * p(50)", Side("nginx", "p", 99, Levels(500, 500)), "<", 10, Side(None, "p", 50)),
        ("tuned:rps > nginx:rps", Side("tuned", "rps"), ">", 1, Side("nginx", "rps")),
        ("nginx:rps@1000 > 2*nginx:rps@100", Side("nginx", "rps", None, Levels(1000, 1000)), ">", 2,
         Side("nginx", "rps", None, Levels(100, 100))),
        ("nginx-apache:max @ 50.. < .5 * nginx.v2:max", Side("nginx-apache", "max", None, Levels(50, None)), "<", 0.5,
         Side("nginx.v2", "max")),
    ],
)
def test_good_checks(text: str, left: Side, op: str, value: float, right: Side | None) -> None:
    c = fd.parse_check(text)
    assert (c.left, c.op, c.right) == (left, op, right)
    assert c.value == pytest.approx(value)


@pytest.mark.parametrize(
    "bad, says",
    [
        ("nginx:rps", "exactly one of <"),
        ("rps > 1 > 2", "exactly one of <"),
        ("rps == 500", "cannot be judged from an interval"),
        ("rps => 500", "write '>=', not '=>'"),
        ("rps@1000..500 > 5", "write @500..1000"),
        ("rps@.. > 5", "@1000, @1000.., @..500 or @100..1000"),
        ("rps@1k > 5", "@1000, @1000.., @..500 or @100..1000"),
        ("rps@0 > 5", "1 or more"),
        ("nginx:rps > 1.5 * apache-prefork:mem_peak", "measure different things; compare rps with rps"),
        ("nginx:rps > 2 * apache-prefork:rps@100..200", "one level"),
        ("rps > 1.5 * apache-prefork:rps", "name the left server too, e.g. nginx:rps > 1.5 * apache-prefork:rps"),
        ("nginx:rps > 2 * nginx:rps", "with itself"),
        ("p(99) < 3 * p(99)", "with itself"),
        ("nginx:rps > 0 * apache-prefork:rps", "above 0"),
        ("speed > 5", "unknown metric 'speed'"),
        ("p(99) < 500", "give the time a unit"),
        ("rps > 5ms", "'ms' is not a unit of rps"),
        ("busy_share >= 2", "busy_share is a share, 0..1 (or 0%..100%)"),
        ("failed_rate < 150%", "failed_rate is a share"),
        ("nginx rps > 5", "the left side 'nginx rps' is not a metric"),
        ("nginx:rps > 1.5x apache-prefork:rps", "1.5 * apache-prefork:rps"),
        ("ngi*nx:rps > 5", "the left side"),
    ],
)
def test_bad_checks_say_what_to_write(bad: str, says: str) -> None:
    with pytest.raises(UsageError) as e:
        fd.parse_check(bad)
    msg = str(e.value)
    assert repr(bad) in msg and says in msg and "\n" not in msg, msg


def test_labels_a_check_names() -> None:
    assert fd.labels(fd.parse_check("nginx:rps@1000.. > 1.5 * apache-prefork:rps")) == ("nginx", "apache-prefork")
    assert fd.labels(fd.parse_check("nginx:p(99) < 2 * p(50)")) == ("nginx",)
    assert fd.labels(fd.parse_check("failed_rate < 1%")) == ()
    found = fd.parse_findings([{"claim": "a", "check": "tuned:rps > 2 * nginx:rps"},
                               {"claim": "b", "check": "iis:rps > 1"}])
    fd.check_labels(found[:1], ["nginx", "tuned"])
    with pytest.raises(ConfigError) as e:
        fd.check_labels(found, ["nginx"])
    assert len(e.value.messages) == 2 and "'tuned'" in e.value.messages[0] and "'iis'" in e.value.messages[1]


def test_parse_findings_names_every_problem_at_once() -> None:
    good = fd.parse_findings([{"claim": " Nginx serves more. ", "check": "nginx:rps > apache-prefork:rps"}])
    assert good[0].claim == "Nginx serves more." and good[0].check.right == Side("apache-prefork", "rps")
    with pytest.raises(ConfigError) as e:
        fd.parse_findings([{"claim": "a"}, {"claim": 1, "check": "rps > 1"},
                           {"claim": "b", "check": "speed > 1", "note": "x"}, "table?",  # type: ignore[list-item]
                           {"claim": "ok", "check": "rps>1"}])
    errs = e.value.messages
    assert len(errs) == 5, errs
    assert errs[0] == "finding 1: check must be a non-empty string"
    assert errs[1] == "finding 2: claim must be a non-empty string"
    assert "finding 3: unknown key(s) 'note'" in errs[2] and "finding 3: check 'speed > 1'" in errs[3]
    assert errs[4].startswith("finding 4: must be a table")
    with pytest.raises(ConfigError):
        fd.parse_findings({"claim": "a", "check": "rps>1"})  # type: ignore[arg-type]


# --- the verdict rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, low, high, n, op, target, verdict, says",
    [
        (120, 110, 130, 3, ">", 100, "supported", None),
        (90, 80, 95, 3, ">", 100, "not supported", None),
        (100, 90, 110, 3, ">", 100, "inconclusive", "straddles"),
        (105, 101, 109, 3, ">", 100, "supported", None),  # 3 trials: the interval alone decides
        (0.004, 0.003, 0.005, 5, "<", 0.01, "supported", None),
        (250, None, None, 1, ">", 100, "supported", None),  # one trial, twice the threshold
        (150, None, None, 1, ">", 100, "inconclusive", "only 1 trial"),
        (60, None, None, 1, ">", 100, "inconclusive", "run --trials 3"),
        (40, None, None, 1, ">", 100, "not supported", None),
        (0.004, None, None, 1, "<", 0.01, "supported", None),
        (0.006, None, None, 1, "<", 0.01, "inconclusive", "factor of 2"),
        (250, 220, 280, 2, ">", 100, "supported", None),
        (250, -50, 550, 2, ">", 100, "inconclusive", "its interval clear of it"),
        (105, 101, 109, 2, ">", 100, "inconclusive", "only 2 trials"),  # clear interval, small margin
        (0, None, None, 1, "<=", 0, "inconclusive", "only 1 trial"),  # no margin from 0
        (0, 0, 0, 3, "<=", 0, "supported", None),
        (0.0, None, None, 3, ">", 1.5, "not supported", None),  # a ratio of 0: no interval, far off
    ],
)
def test_the_verdict_rule(value: float, low: float | None, high: float | None, n: int, op: str, target: float,
                          verdict: str, says: str | None) -> None:
    got, reason = jd.decide(value, low, high, n, op, target)
    assert got == verdict, reason
    assert (reason is None) == (says is None) and (says is None or says in (reason or "")), reason


# --- verdicts from stored results -------------------------------------------------------


def _stored(tmp_path: Path, rps: dict[str, list[float]] | None = None,
            edit: Callable[[dict[str, Any]], None] | None = None, name: str = "run") -> Results:
    """The fixture run with each cell's trials replaced: one trial per value in `rps[server]`
    (the same values at every level); `edit` then changes any trial."""
    return load_results(stored_run(tmp_path / name, rps, edit, FIXTURE))


def _one(res: Results, check: str, claim: str = "a claim") -> jd.FindingResult:
    (out,) = jd.evaluate(res, fd.parse_findings([{"claim": claim, "check": check}]))
    json.dumps(out.to_doc(), allow_nan=False)  # JSON as it is
    return out


FAST = {"nginx": [2000.0, 2100.0, 2050.0], "apache-prefork": [1000.0, 1040.0, 1020.0]}


def test_supported_at_every_level(tmp_path: Path) -> None:
    out = _one(_stored(tmp_path, FAST), "nginx:rps > 1.5 * apache-prefork:rps", "Nginx serves 1.5x the requests")
    assert out.verdict == "supported" and out.reason is None
    doc = out.to_doc()
    assert doc == {"claim": "Nginx serves 1.5x the requests", "check": "nginx:rps > 1.5 * apache-prefork:rps",
                   "verdict": "supported", "values": out.values, "reason": None, "text": out.text}
    levels = out.values["levels"]
    assert [lv["level"] for lv in levels] == [10, 50, 200] and out.values["factor"] == 1.5
    first = levels[0]
    assert first["left"]["n"] == first["right"]["n"] == 3 and first["left"]["mean"] == pytest.approx(2050)
    assert first["ratio"]["value"] == pytest.approx(2050 / 1020) and first["ratio"]["low"] > 1.5
    assert out.text.startswith("supported: nginx/apache-prefork rps ratio 2.01× (")
    assert out.text.endswith("at 200 > 1.5")


def test_not_supported_where_one_level_is_on_the_wrong_side(tmp_path: Path) -> None:
    def slower_at_200(t: dict[str, Any]) -> None:
        if t["server"] == "nginx" and t["level"] == 200:
            t["result"]["rps"] -= 1500  # ~ 550 against ~ 1020

    res = _stored(tmp_path, FAST, slower_at_200)
    out = _one(res, "nginx:rps@50.. > 1.5 * apache-prefork:rps")
    assert out.verdict == "not supported"
    assert [(lv["level"], lv["verdict"]) for lv in out.values["levels"]] == [(50, "supported"), (200, "not supported")]
    assert out.reason == "at 200: the 95 % interval lies entirely on the wrong side"
    # only the levels named are judged: below 200 it holds
    assert _one(res, "nginx:rps@..50 > 1.5 * apache-prefork:rps").verdict == "supported"


def test_not_supported_against_a_threshold(tmp_path: Path) -> None:
    def failing(t: dict[str, Any]) -> None:
        r = t["result"]
        r["failed"] = int((r["started"] - r["unfinished"]) * (0.05 + 0.01 * t["trial"]))

    out = _one(_stored(tmp_path, FAST, failing), "nginx:failed_rate@200 < 1%")
    assert out.verdict == "not supported", out.text
    (lv,) = out.values["levels"]
    assert lv["left"]["low"] > 0.01 and out.values["threshold"] == 0.01 and out.values["scale"] == "ratio"
    assert out.text.startswith("not supported: nginx failed_rate 6.98% (") and "at 200 < 1.00% (at 200: " in out.text


def test_inconclusive_when_the_interval_straddles(tmp_path: Path) -> None:
    noisy = {"nginx": [1500.0, 2500.0, 2000.0], "apache-prefork": [1000.0, 1040.0, 1020.0]}
    out = _one(_stored(tmp_path, noisy), "nginx:rps > 1.9 * apache-prefork:rps")
    assert out.verdict == "inconclusive"
    assert out.reason == "at 10, 50, 200: the 95 % interval straddles the threshold"
    ratio = out.values["levels"][0]["ratio"]
    assert ratio["low"] < 1.9 < ratio["high"]


def test_a_client_bound_smaller_side_stays_inconclusive(tmp_path: Path) -> None:
    def bound(t: dict[str, Any]) -> None:
        if t["server"] == "apache-prefork" and t["level"] == 50:
            t["result"].update(client_bound=True, client_bound_reason="the load thread was busy 99% of the time")

    res = _stored(tmp_path, FAST, bound)
    out = _one(res, "nginx:rps > 1.5 * apache-prefork:rps")
    assert out.verdict == "inconclusive"
    assert out.reason == ("at 50: client-bound (apache-prefork: its rate is only a lower bound on what it serves, "
                          "so it cannot be shown the smaller)")
    assert [lv["verdict"] for lv in out.values["levels"]] == ["supported", "inconclusive", "supported"]
    levels = out.values["levels"]
    assert levels[1]["right"]["client_bound"] is True and "client_bound" not in levels[0]["right"]
    # a lower bound above a threshold decides; below one it cannot
    assert _one(res, "apache-prefork:rps@50 > 500").verdict == "supported"
    low = _one(res, "apache-prefork:rps@50 < 5000")
    assert low.verdict == "inconclusive" and "cannot be shown below the threshold" in (low.reason or "")
    assert _one(res, "apache-prefork:rps@50 < 500").verdict == "not supported"  # it served at least ~1,020
    assert _one(res, "apache-prefork:rps@200 > 500").verdict == "supported"


def test_one_wrong_level_outweighs_an_inconclusive_one(tmp_path: Path) -> None:
    def mixed(t: dict[str, Any]) -> None:
        if t["server"] == "nginx" and t["level"] == 10:
            t["result"].update(client_bound=True, client_bound_reason="busy")
        if t["server"] == "nginx" and t["level"] == 200:
            t["result"]["rps"] = 900.0 + t["trial"]

    out = _one(_stored(tmp_path, FAST, mixed), "nginx:rps > 1.5 * apache-prefork:rps")
    assert out.verdict == "not supported" and out.reason is not None and out.reason.startswith("at 200:")


def test_few_trials_decide_only_by_a_large_margin(tmp_path: Path) -> None:
    real = load_results(FIXTURE)  # two trials a cell, nginx at 10: 1722.5 and 1098 req/s
    two = _one(real, "nginx:rps@10 > 100")
    assert two.verdict == "inconclusive" and "only 2 trials" in (two.reason or ""), two.text
    one = _stored(tmp_path, {"nginx": [1722.5], "apache-prefork": [1506.0]})  # one trial a cell
    assert _one(one, "nginx:rps@10 > 500").verdict == "supported"  # 1722.5: more than twice 500
    near = _one(one, "nginx:rps@10 > 1000")
    assert near.verdict == "inconclusive" and "only 1 trial" in (near.reason or "")
    assert "1,722.5 (n=1) at 10" in near.text
    assert _one(one, "nginx:rps@10 > 4000").verdict == "not supported"  # less than half
    uneven = _stored(tmp_path, {"nginx": [2000.0, 2100.0, 2050.0], "apache-prefork": [1020.0]}, name="uneven")
    ratio = _one(uneven, "nginx:rps@10 > 1.5 * apache-prefork:rps")  # 2.0x, but one trial on the right
    assert ratio.verdict == "inconclusive" and "only 1 trial" in (ratio.reason or ""), ratio.text
    assert _one(uneven, "nginx:rps@10 > 0.9 * apache-prefork:rps").verdict == "supported"  # 2.0x against 0.9


def test_every_server_when_no_label_is_given() -> None:
    out = _one(load_results(FIXTURE), "failed_rate < 1%")
    assert out.verdict == "supported"  # no failure in 2 trials: the interval is 0..0, far below 1 %
    assert [(lv["left"]["server"], lv["level"]) for lv in out.values["levels"]] == [
        (s, lv) for s in ("nginx", "apache-prefork") for lv in (10, 50, 200)]
    assert "apache-prefork failed_rate 0.00% (0.00%–0.00%) at 10" in out.text


def test_inconclusive_without_data_or_label() -> None:
    res = load_results(FIXTURE)
    missing = _one(res, "apache-worker:rps > 2 * nginx:rps")
    assert missing.verdict == "inconclusive" and missing.reason is not None
    assert missing.reason.startswith("apache-worker not run (this run has nginx, apache-prefork)")
    level = _one(res, "nginx:rps@1000 > 1")
    assert level.verdict == "inconclusive" and level.reason == "at 1000: no data for nginx"
    none = _one(res, "nginx:rps@5000.. > 1")
    assert none.verdict == "inconclusive" and none.reason == "no level of the run is in @5000.. (it ran 10, 50, 200)"


def test_latency_and_memory_comparisons_read_the_trials(tmp_path: Path) -> None:
    res = load_results(FIXTURE)
    tail = _one(res, "nginx:p(99)@200 < 10 * p(50)")
    (lv,) = tail.values["levels"]
    assert lv["left"]["server"] == lv["right"]["server"] == "nginx" and lv["left"]["mean"] > lv["right"]["mean"] > 0
    mem = _one(res, "apache-prefork:mem_peak > 2 * nginx:mem_peak")
    nginx10 = [float(t["server_metrics"]["mem_peak_bytes"] or 0) for t in res.cell("nginx", 10)]
    assert mem.values["levels"][0]["right"]["mean"] == pytest.approx(sum(nginx10) / 2)
    assert mem.verdict == "not supported"  # 1.0x at 200 with an interval well below 2


def test_parsing_findings_needs_no_heavy_library() -> None:
    """Experiment files are checked when the CLI starts, which must stay quick (test_architecture)."""
    import subprocess
    import sys

    probe = ("import sys, loadcmp.verdicts.findings as f; "
             "f.parse_findings([{'claim': 'a', 'check': 'nginx:p(99)@10.. < 2s'}]); "
             "print([m for m in ('pandas', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# --- wired into experiment files, run.json and `run --json` ---------------------------------


def test_experiment_findings_name_only_servers_the_run_has(tmp_path):
    from loadcmp.experiment.flags import build_spec

    f = tmp_path / "x.toml"
    f.write_text('servers = ["nginx", "tuned"]\npages = ["/a", "/b"]\n[variants.tuned]\nstack = "nginx"\n'
                 '[[findings]]\nclaim = "tuned is faster"\ncheck = "tuned[/a]:rps > nginx[/a]:rps"\n')
    spec = build_spec(str(f), {})
    assert spec.findings == ({"claim": "tuned is faster", "check": "tuned[/a]:rps > nginx[/a]:rps"},)
    # a seed cut with --server: a finding about a server left out is judged inconclusive after the run
    f.write_text('servers = ["nginx", "tuned"]\n[variants.tuned]\nstack = "nginx"\n'
                 'set = { "nginx.worker_processes" = "1" }\n'
                 '[[findings]]\nclaim = "x"\ncheck = "apache-prefork:rps > tuned:rps"\n')
    from loadcmp.experiment.flags import server_fields

    cut = build_spec(str(f), server_fields(("nginx",), ()))
    assert cut.servers == ("nginx",) and cut.variant_settings == {}
    f.write_text('servers = ["nginx"]\n[[findings]]\nclaim = "x"\ncheck = "ngnix:rps > 3"\n')  # a typo
    with pytest.raises(ConfigError) as e:
        build_spec(str(f), {})
    assert "no server is labelled 'ngnix' (known: nginx)" in "\n".join(e.value.messages)
    f.write_text('servers = ["nginx"]\npages = ["/a", "/b"]\n[[findings]]\nclaim = "x"\ncheck = "nginx:rps > 3"\n')
    with pytest.raises(ConfigError) as e:  # with two pages a result is one page's: nginx[/a]
        build_spec(str(f), {})
    assert "known: nginx[/a], nginx[/b]" in "\n".join(e.value.messages)
    f.write_text('servers = ["nginx"]\n[[findings]]\nclaim = "x"\ncheck = "nginx:rps >> 3"\ncolour = 1\n')
    with pytest.raises(ConfigError) as e:
        build_spec(str(f), {})
    assert "findings" in "\n".join(e.value.messages)


def test_judged_findings_are_stored_and_in_the_json_summary(tmp_path):
    import shutil

    from loadcmp.cli.run import judge_findings
    from loadcmp.report.tables import summary_doc
    from loadcmp.experiment.spec import RunSpec

    dst = tmp_path / "run"
    shutil.copytree(FIXTURE, dst)
    spec = RunSpec(servers=("nginx", "apache-prefork"), findings=(
        {"claim": "nginx fails nothing", "check": "nginx:failed_rate < 1%"},
        {"claim": "apache uses 100 times nginx's memory", "check": "apache-prefork:mem_peak > 100 * nginx:mem_peak"},
    ))
    judge_findings(str(dst), spec)
    stored = json.loads((dst / "run.json").read_text())["findings"]
    assert [f["claim"] for f in stored] == ["nginx fails nothing", "apache uses 100 times nginx's memory"]
    assert stored[1]["verdict"] == "not supported" and stored[1]["text"]
    assert all(f["verdict"] in ("supported", "not supported", "inconclusive") for f in stored)
    assert summary_doc(load_results(dst))["findings"] == stored


def test_the_report_shows_the_judged_findings_first(tmp_path):
    import shutil

    from loadcmp.cli.run import judge_findings
    from loadcmp.report.build import build
    from loadcmp.experiment.spec import RunSpec

    dst = tmp_path / "run"
    shutil.copytree(FIXTURE, dst)
    judge_findings(str(dst), RunSpec(servers=("nginx",), findings=(
        {"claim": "apache uses 100 times nginx's memory", "check": "apache-prefork:mem_peak > 100 * nginx:mem_peak"},)))
    written = build([dst], tmp_path / "report", {"md", "html"})
    md = written["report.md"].read_text()
    assert md.index("## Findings") < md.index("### The write-up's claims, judged") < md.index("## Summary")
    assert "**not supported**: apache uses 100 times nginx's memory" in md
    assert "apache uses 100 times nginx&#x27;s memory" in written["report.html"].read_text()


def test_a_page_may_hold_operators():
    c = fd.parse_check("nginx[/sleep.php?ms=500]:rps@100.. > 2 * apache-prefork[/sleep.php?ms=500]:rps")
    assert c.left.label == "nginx /sleep.php?ms=500" and c.op == ">" and c.value == 2.0
    assert c.right is not None and c.right.label == "apache-prefork /sleep.php?ms=500"
    with pytest.raises(UsageError, match="exactly one of"):
        fd.parse_check("nginx[/a?b=<]:rps")


def test_a_level_the_ramp_never_reached_is_inconclusive(tmp_path: Path) -> None:
    def cut(t: dict[str, Any]) -> None:
        if t["server"] == "nginx" and t["level"] == 200:
            t["result"]["users_reached"] = 41

    out = _one(_stored(tmp_path, FAST, cut), "nginx:rps > 1.5 * apache-prefork:rps")
    assert out.verdict == "inconclusive"
    assert out.reason == ("at 200: the ramp never reached 200 users in the window (nginx 41): "
                          "-t is shorter than its ramp-up")


# --- one-sided verdicts: a client-bound rate is a lower bound ----------------------------------

CNBLOGS = {"nginx": [16800.0, 17000.0, 17200.0], "apache-prefork": [8300.0, 8461.0, 8622.0]}
"""The cnblogs-2014 static page as re-measured: nginx at the client's limit, apache-event (here under the
fixture's apache-prefork label) server-bound."""


def test_a_client_bound_larger_side_supports_the_claim(tmp_path: Path) -> None:
    res = _stored(tmp_path, CNBLOGS, client_bound("nginx"))
    out = _one(res, "nginx:rps@50 > apache-prefork:rps", "Nginx serves more static pages per second")
    assert out.verdict == "supported" and out.reason is None, out.text
    (lv,) = out.values["levels"]
    assert lv["left"]["client_bound"] is True and "client_bound" not in lv["right"]
    assert out.text.startswith("supported: nginx ≥ 17,000 req/s (16,503–17,497, client-bound) against "
                               "apache-prefork's 8,061–8,861: nginx/apache-prefork rps ratio ≥ 2.01× ("), out.text
    every = _one(res, "nginx:rps > apache-prefork:rps")  # the same bound at every level is said once
    assert every.text.count("≥ 17,000 req/s") == 1 and "8,061–8,861 at 10, 50, 200:" in every.text
    # the ratio's own lower end decides a factor, as it would without the bound
    assert _one(res, "nginx:rps@50 > 1.5 * apache-prefork:rps").verdict == "supported"
    near = _one(res, "nginx:rps@50 > 2 * apache-prefork:rps")  # 2.01x, its interval reaching below 2
    assert near.verdict == "inconclusive" and "straddles" in (near.reason or "")
    # a lower bound can show a claim of "less" false, never true
    assert _one(res, "nginx:rps@50 < 1.5 * apache-prefork:rps").verdict == "not supported"
    more = _one(res, "nginx:rps@50 < 3 * apache-prefork:rps")
    assert more.verdict == "inconclusive" and "nginx: its rate is only a lower bound" in (more.reason or "")


def test_the_other_way_round_is_not_supported(tmp_path: Path) -> None:
    """apache serves more than nginx, with nginx client-bound above apache: nginx serves at least more."""
    out = _one(_stored(tmp_path, CNBLOGS, client_bound("nginx")), "apache-prefork:rps@50 > nginx:rps")
    assert out.verdict == "not supported", out.text
    assert out.reason == "at 50: the 95 % interval lies entirely on the wrong side"
    assert out.text.startswith("not supported: nginx ≥ 17,000 req/s (16,503–17,497, client-bound) "
                               "against apache-prefork's 8,061–8,861: apache-prefork/nginx rps ratio ≤ 0.50× (")


def test_two_lower_bounds_order_nothing(tmp_path: Path) -> None:
    res = _stored(tmp_path, CNBLOGS, client_bound("nginx", "apache-prefork"))
    for check in ("nginx:rps@50 > apache-prefork:rps", "apache-prefork:rps@50 > nginx:rps",
                  "nginx:rps@50 < apache-prefork:rps"):
        out = _one(res, check)
        assert out.verdict == "inconclusive", (check, out.text)
        assert out.reason is not None and out.reason.startswith("at 50: client-bound (") and out.reason.endswith(
            "): both rates are only lower bounds on what the servers serve, and two lower bounds order nothing")
        assert "≥" not in out.text and "≤" not in out.text, out.text
    assert _one(res, "nginx:rps@50 > 10000").verdict == "supported"  # one side against a number still decides


def test_latency_and_failures_get_no_bound_from_a_client_bound_side(tmp_path: Path) -> None:
    res = _stored(tmp_path, CNBLOGS, client_bound("nginx"))
    for check in ("nginx:p(99)@50 < apache-prefork:p(99)", "nginx:failed_rate@50 < 1%", "nginx:mem_peak@50 < 1GiB"):
        out = _one(res, check)
        assert out.verdict == "inconclusive" and out.reason == "at 50: client-bound (nginx: the client set the pace)"
    # the server-bound side alone is judged as ever
    assert _one(res, "apache-prefork:failed_rate@50 < 1%").verdict == "supported"


def test_one_trial_a_side_decides_by_the_margin_only_the_bounds_way(tmp_path: Path) -> None:
    res = _stored(tmp_path, {"nginx": [17000.0], "apache-prefork": [8000.0]}, client_bound("nginx"))
    assert _one(res, "nginx:rps@50 > apache-prefork:rps").verdict == "supported"  # 2.1x: past the margin of 2
    assert _one(res, "apache-prefork:rps@50 > nginx:rps").verdict == "not supported"  # 0.47x: under half
    small = _one(res, "nginx:rps@50 < 8 * apache-prefork:rps")  # 2.1x against 8: "less" needs nginx's upper end
    assert small.verdict == "inconclusive" and "cannot be shown the smaller" in (small.reason or "")


@pytest.mark.parametrize(
    "value, low, high, n, op, target, open_, verdict",
    [
        (2.0, 1.9, 2.1, 3, ">", 1, "above", "supported"),
        (2.0, 1.9, 2.1, 3, ">", 1, "below", "inconclusive"),  # the smaller side was bound
        (0.5, 0.45, 0.55, 3, ">", 1, "below", "not supported"),
        (0.5, 0.45, 0.55, 3, ">", 1, "above", "inconclusive"),
        (0.5, 0.45, 0.55, 3, "<", 1, "below", "supported"),
        (0.5, 0.45, 0.55, 3, "<", 1, "above", "inconclusive"),
        (2.0, 1.9, 2.1, 3, "<=", 1, "above", "not supported"),
        (1.0, 0.9, 1.1, 3, ">", 1, "above", "inconclusive"),  # straddles, bound or not
    ],
)
def test_the_verdict_rule_with_aclient_bound(value: float, low: float, high: float, n: int, op: str, target: float,
                                       open_: jd.Open, verdict: str) -> None:
    got, reason = jd.decide(value, low, high, n, op, target, open_)
    assert got == verdict, reason
    assert (reason == jd.UNDECIDED) == (verdict == "inconclusive" and jd.decide(value, low, high, n, op, target)[0]
                                        != "inconclusive")

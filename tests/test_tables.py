"""Report table arithmetic (loadcmp.report.tables)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest


def test_ci95_of_estimates():
    from loadcmp.report.tables import Estimate

    e = Estimate.of([10.0, 12.0, 11.0])
    assert e.mean == pytest.approx(11.0)
    assert e.low == pytest.approx(11.0 - 4.303 * 1.0 / math.sqrt(3))
    assert Estimate.of([5.0]).low is None


def test_a_latency_interval_is_taken_on_the_log_scale_and_never_goes_below_zero():
    """The issue's case: p99s of 2 trials far apart gave `23.0ms (-14.6ms–60.6ms)` on the plain scale."""
    from loadcmp.report.tables import Estimate

    plain = Estimate.of([20.0, 26.0])
    assert plain.low is not None and plain.low < 0  # what the plain rule says of a latency
    e = Estimate.of([20.0, 26.0], skewed=True)
    logs = [math.log(20.0), math.log(26.0)]
    m = sum(logs) / 2
    sd = math.sqrt(sum((x - m) ** 2 for x in logs))  # n - 1 = 1
    half = 12.706 * sd / math.sqrt(2)
    assert e.mean == pytest.approx(math.sqrt(20.0 * 26.0))  # the geometric mean
    assert (e.low, e.high) == (pytest.approx(math.exp(m - half)), pytest.approx(math.exp(m + half)))
    assert e.low is not None and e.high is not None and e.mean is not None
    assert e.low > 0 and e.low * e.high == pytest.approx(e.mean ** 2)  # one factor either way: a ratio interval
    three = Estimate.of([10.0, 12.0, 11.0], skewed=True)
    assert three.text("{:.1f}") == f"{three.mean:.1f} ({three.low:.1f}–{three.high:.1f})"  # not ± (not symmetric)


@pytest.mark.parametrize("values", [[0.4, 55.0, 3.0], [1e-3, 900.0], [5.0, 5.0, 5.0], [0.0, 30.0, 60.0]])
def test_no_latency_interval_has_a_negative_bound(values):
    from loadcmp.report.tables import Estimate

    e = Estimate.of(values, skewed=True)
    assert e.low is not None and e.low >= 0 and e.high is not None and e.high >= e.low
    assert e.mean is not None and e.low <= e.mean <= e.high


def test_a_confirmation_judges_latency_on_the_log_scale_and_rate_on_the_plain_one():
    from loadcmp.verdicts.judge import estimate

    assert estimate("p", [20.0, 26.0, 23.0]).skewed and not estimate("rps", [20.0, 26.0, 23.0]).skewed
    assert estimate("mean", [1.0, 9.0]).low > 0  # type: ignore[operator]


def test_a_ratio_of_latencies_uses_their_log_scale_errors():
    from loadcmp.report.compare import ratio
    from loadcmp.report.tables import Estimate

    a, b = Estimate.of([10.0, 12.0, 11.0], skewed=True), Estimate.of([20.0, 25.0, 22.0], skewed=True)
    r = ratio(b, a)
    assert a.log_se is not None and b.log_se is not None
    rel = math.sqrt(a.log_se ** 2 + b.log_se ** 2)
    assert r.value == pytest.approx(b.mean / a.mean)  # type: ignore[operator]
    assert r.low == pytest.approx(r.value * math.exp(-4.303 * rel))  # type: ignore[operator]
    ln = [math.log(x) for x in (10.0, 12.0, 11.0)]
    m = sum(ln) / 3
    assert a.log_se == pytest.approx(math.sqrt(sum((x - m) ** 2 for x in ln) / 2) / math.sqrt(3))


def test_webbench_count_beside_the_strict_one_when_they_differ(tmp_path):
    """A 502 page is a failure to loadcmp and a success to webbench: Table 1 and
    --json show both, so a reader can hold a run against a published webbench table."""
    import json
    import shutil

    from loadcmp.report.tables import WEBBENCH_COLUMN, notes, summary_doc, table1
    from loadcmp.store.reader import load_results

    fixture = Path(__file__).parent / "fixtures" / "run-2x3x2"
    header, _ = table1(load_results(fixture))
    assert (("nginx", WEBBENCH_COLUMN)) not in header  # same count: no column
    dst = tmp_path / "run"
    shutil.copytree(fixture, dst)
    run = json.loads((dst / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "nginx" and t["level"] == 200:
            r = t["result"]
            r["failures"]["http_5xx"] = 1000
            r["failed"] += 1000
            r["webbench"]["susceed"] = r["ok"] + 1000
    (dst / "run.json").write_text(json.dumps(run))
    res = load_results(dst)
    header, rows = table1(res)
    col = header.index(("nginx", WEBBENCH_COLUMN))
    row = next(r for r in rows if r[0] == "200")
    ok = [t["result"]["ok"] for t in run["trials"] if t["server"] == "nginx" and t["level"] == 200]
    assert row[col] == f"{sum(ok) / 2 + 1000:,.0f} / 0"
    assert row[col - 1].endswith("/ 1,000")
    assert any(n.startswith("webbench's count") for n in notes(res))
    doc = next(d for d in summary_doc(res)["results"] if d["server"] == "nginx" and d["level"] == 200)
    assert doc["webbench"] == {"susceed": sum(ok) / 2 + 1000, "failed": 0}


def test_comparisons_pair_servers_on_the_same_page_and_advise_once():
    from types import SimpleNamespace

    from loadcmp.report.compare import comparison_lines

    rps = {"nginx /a": 100.0, "nginx /b": 10.0, "apache /a": 50.0, "apache /b": 20.0}
    bound = SimpleNamespace(reason="busy", advice="use more cores")
    data = SimpleNamespace(
        servers=list(rps), levels=[10, 20],
        cell=lambda s, lv: [{"result": {"rps": rps[s] + i, "failed": 0, "ok": 1}} for i in range(3)],
        client_bound=lambda s, lv: bound if s.endswith("/a") else None,
        info=lambda s: None,  # nothing stored of the labels: one protocol
    )
    out = comparison_lines(data)  # type: ignore[arg-type]
    assert len(out) == 4  # (a, b) pairs x two levels: never nginx /a against nginx /b
    assert not any("nginx /a" in v and "nginx /b" in v for v in out)
    assert sum("use more cores" in v.lower() for v in out) == 1, out
    assert any("apache /b served 1.91×" in v for v in out), out


def test_a_cause_seen_in_several_trials_is_one_note(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from loadcmp.report.tables import notes
    from loadcmp.store.reader import load_results

    folder = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "fixtures" / "run-2x3x2", folder)
    run = json.loads((folder / "run.json").read_text())
    for t in run["trials"]:
        if t["server"] == "nginx" and t["level"] == 10:
            t["log_evidence"] = {}
            t["notes"] = [f"php-fpm ran all its workers — logged {100 * t['trial']:,} times"]
    (folder / "run.json").write_text(json.dumps(run))
    got = [n for n in notes(load_results(folder)) if "php-fpm" in n]
    assert got == ["nginx at 10 clients (2 of 2 trials; figures of trial 1): php-fpm ran all its workers — logged "
                   "100 times"]

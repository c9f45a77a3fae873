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

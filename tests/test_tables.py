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
    from loadcmp.results import load_results

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

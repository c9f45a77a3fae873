"""--trace in the report: "Where the time went", the slowest requests, the figure and `--json`'s `time_parts`,
from a stored run given a parts.parquet joined from lines nginx and php-fpm wrote (tests/fixtures/trace/nginx)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.report.tables import summary_doc
from loadcmp.store import traceparts
from loadcmp.store.reader import load_results
from loadcmp.trace import join

from test_trace_join import lines_of, requests_frame

FIXTURES = Path(__file__).parent / "fixtures"


def traced_run(tmp_path: Path) -> Path:
    """run-2x2x3 with nginx at 50 clients, trial 1, traced: its fixture's requests, every tenth held 40 ms in
    php-fpm's socket queue (nginx's upstream time raised by it)."""
    folder = tmp_path / "run"
    shutil.copytree(FIXTURES / "run-2x2x3", folder)
    req = requests_frame("nginx", tmp_path).assign(label="nginx", level=50, trial=1)
    lines = lines_of("nginx")
    slow = set(join.client_ids(req).iloc[::10])
    lines = [ln if ln.trace_id not in slow or ln.program != "nginx" else
             type(ln)(ln.trace_id, "nginx", "web", ln.at, ln.total_ms + 40, ln.upstream_connect_ms, ln.upstream_ms + 40,
                      ln.status) for ln in lines]
    req.loc[join.client_ids(req).isin(slow), "latency_ms"] += np.float32(40)
    got = join.join(req, lines, (0, 1e12))
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 1, got.parts, got.unmatched), got.parts)
    return folder


def test_where_the_time_went_says_the_fpm_queue_of_p99(tmp_path: Path) -> None:
    folder = traced_run(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(out), "--format", "md,png"])
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    section = md.split("## Where the time went", 1)[1].split("\n## ", 1)[0]
    line = next(x for x in section.splitlines() if x.startswith("- nginx at 50 clients: "))
    assert "of its p99" in line and "waited for a php-fpm worker" in line, line
    assert "## The slowest traced requests" in md
    slowest = md.split("## The slowest traced requests", 1)[1].split("\n## ", 1)[0]
    rows = [r.split(" | ") for r in slowest.splitlines() if r.startswith("| nginx | 50 | 1 |")]
    assert len(rows) == 20
    assert sum(float(r[10]) > 40 for r in rows) >= 15  # the held requests, in php-fpm's queue, are the slowest
    assert (out / "7-timeparts.png").exists()


def test_json_gives_each_traced_cell_its_parts(tmp_path: Path) -> None:
    rows = json.loads(json.dumps(summary_doc(load_results(traced_run(tmp_path)))))["results"]
    cell = next(r for r in rows if r["server"] == "nginx" and r["level"] == 50)
    assert cell["time_parts"]["matched"] == 1.0
    assert max(cell["time_parts"]["p99"], key=cell["time_parts"]["p99"].get) == "upstream_wait"
    assert all("time_parts" not in r for r in rows if (r["server"], r["level"]) != ("nginx", 50))


def test_an_untraced_run_says_nothing_of_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["report", str(FIXTURES / "run-2x2x3"), "--out", str(out), "--format", "md"])
    assert res.exit_code == 0, res.output
    assert "Where the time went" not in (out / "report.md").read_text()

"""--trace's database part: MariaDB's own time per traced request (the wordpress app's trace log, written from
performance_schema after the window) parsed, joined to the request and taken out of PHP's time; an app whose
database logs nothing has its database part unknown, not zero.

tests/fixtures/trace/wordpress-nginx/: the search page's trial (/?s=kestrel+socket) of `loadcmp run --app wordpress
--server nginx --trace -c 10 -t 8s`: the lines each role wrote (nginx, php-fpm, MariaDB's trace log) and the client's
rows of its 75 answered requests as client.csv (the 10 still unanswered at the window's end left out)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.report import timeparts
from loadcmp.report.tables import summary_doc
from loadcmp.store.reader import load_results
from loadcmp.store import traceparts
from loadcmp.trace import breakdown, join, serverlogs

from test_trace_join import FIX, lines_of, requests_frame

WP = "wordpress-nginx"
FIXTURES = Path(__file__).parent / "fixtures"


def test_mariadb_s_trace_log_parses_into_each_request_s_queries_and_their_time() -> None:
    text = (FIX / WP / "db-mariadb.log").read_text().splitlines()
    got = serverlogs.parse("mariadb", "db", text)
    assert got.unreadable == 0 and got.notes == []  # the history's head line is read, and it was not full
    assert got.untraced == 1  # one line sums the statements no request tagged (the site's set-up, the status's)
    assert len(got.lines) >= 20 and {ln.program for ln in got.lines} == {"mariadb"}
    assert all(ln.queries >= 10 and ln.total_ms > 0 for ln in got.lines)  # a search page runs dozens of queries
    assert len({ln.trace_id for ln in got.lines}) == len(got.lines)  # one line per request
    full = serverlogs.parse("mariadb", "db", ["#\t250000\t250000", "-\t9\t1.5\t0.4"])
    assert len(full.notes) == 1 and "full" in full.notes[0] and full.untraced == 1
    assert serverlogs.parse("mariadb", "db", ["#\t12"]).unreadable == 1  # a head line cut short


def test_the_database_part_comes_out_of_php_s_and_the_parts_still_add_up(tmp_path: Path) -> None:
    req = requests_frame(WP, tmp_path)
    lines = lines_of(WP)
    t0 = float(req["t_start"].min())
    with_db = join.join(req, lines, (t0, t0 + 60))
    without = join.join(req, [ln for ln in lines if ln.program != "mariadb"], (t0, t0 + 60))
    assert with_db.matched_share() == 1.0
    p, q = with_db.parts, without.parts
    ok = p["status"] == 200
    assert p.loc[ok, "database_ms"].notna().all() and (p.loc[ok, "db_queries"] >= 10).all()
    # PHP's own time is split, not grown: what was upstream is now upstream + database
    assert np.allclose(p.loc[ok, "upstream_ms"] + p.loc[ok, "database_ms"], q.loc[ok, "upstream_ms"])
    assert (p.loc[ok, "upstream_ms"] >= 0).all()
    total = p[[breakdown.COLUMN[x] for x in breakdown.PARTS]].fillna(0).sum(axis=1)
    assert np.allclose(total, p["latency_ms"].astype(float), atol=1e-3)
    # unknown, not zero: without its database's lines no request has a database part, and no share is given
    assert q["database_ms"].isna().all() and (q["db_queries"] == 0).all()
    lat = q.loc[ok, "latency_ms"].astype(float)
    assert "database" not in breakdown.shares(q[ok], lat, 0.99)
    assert breakdown.shares(p[ok], lat, 0.99)["database"] > 0


def test_a_database_line_never_exceeds_php_s_own_time_and_strangers_are_named(tmp_path: Path) -> None:
    req = requests_frame("nginx", tmp_path).head(1)
    tid = join.client_ids(req).iloc[0]
    lines = [serverlogs.ServerLine(tid, "nginx", "web", 1.0, 31.0, 0.0, 30.0, 200),
             serverlogs.ServerLine(tid, "fpm", "web", 1.0, 20.0, status=200),
             serverlogs.ServerLine(tid, "mariadb", "db", float("nan"), 25.0, queries=7),
             serverlogs.ServerLine("ab" * 16, "mariadb", "db", float("nan"), 3.0, queries=2)]
    got = join.join(req.assign(latency_ms=40.0), lines, (0, 2))
    row = got.parts.iloc[0]
    assert row["database_ms"] == pytest.approx(20.0) and row["upstream_ms"] == pytest.approx(0.0)
    assert row["upstream_wait_ms"] == pytest.approx(10.0) and row["db_queries"] == 7
    assert got.unmatched == {join.DB_ONLY: 1}


def stored(tmp_path: Path, db: bool, app: str) -> Path:
    """run-2x2x3 with nginx at 50 clients, trial 1, traced with the wordpress fixture's lines, its server an app's."""
    folder = tmp_path / "run"
    shutil.copytree(FIXTURES / "run-2x2x3", folder)
    doc = json.loads((folder / "run.json").read_text())
    doc["servers"]["nginx"]["app"] = app
    (folder / "run.json").write_text(json.dumps(doc))
    req = requests_frame(WP, tmp_path).assign(label="nginx", level=50, trial=1)
    lines = [ln for ln in lines_of(WP) if db or ln.program != "mariadb"]
    got = join.join(req, lines, (0, 1e12))
    traceparts.add_parts(folder, traceparts.trial_match("nginx", 50, 1, got.parts, got.unmatched), got.parts)
    return folder


@pytest.mark.parametrize("db", [True, False])
def test_the_report_gives_the_database_s_figures_or_says_they_are_unknown(tmp_path: Path, db: bool) -> None:
    folder = stored(tmp_path, db, "wordpress" if db else "laravel")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(out), "--format", "md"])
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    section = md.split("## Where the time went", 1)[1].split("\n## ", 1)[0]
    head = next(ln for ln in section.splitlines() if ln.startswith("| server"))
    assert ("| database |" in head) == db, head
    if db:
        assert "nginx at 50 clients: the database's own figures: " in section and " a request, " in section
        assert "the database's part is unknown" not in section
    else:
        assert ("nginx at 50 clients: the database's part is unknown (the app laravel logs no database time per "
                "request); it is inside php-fpm's part.") in section
    rows = json.loads(json.dumps(summary_doc(load_results(folder))))["results"]
    row = next(r for r in rows if r.get("time_parts"))
    assert ("database" in row["time_parts"]["p99"]) == db
    assert isinstance(pd.read_parquet(folder / "parts.parquet")["db_queries"].iloc[0], np.integer)


def test_a_traced_app_whose_database_logged_none_of_a_cell_s_requests_is_not_said_to_log_none(tmp_path: Path) -> None:
    folder = stored(tmp_path, False, "wordpress")  # WordPress's data has its trace log: its dump failed, say
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["report", str(folder), "--out", str(out), "--format", "md"])
    assert res.exit_code == 0, res.output
    section = (out / "report.md").read_text().split("## Where the time went", 1)[1].split("\n## ", 1)[0]
    assert ("nginx at 50 clients: the database's part is unknown (the app wordpress's database logged none of "
            "these requests); it is inside php-fpm's part.") in section
    assert "logs no database time" not in section
    assert timeparts.database_logs("wordpress") is True and timeparts.database_logs("laravel") is False
    assert timeparts.database_logs("no-such-app") is None

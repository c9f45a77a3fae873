"""The wordpress app on its MariaDB role in real containers: every request answered 200 with the page,
the database's figures stored beside the server's, and a database that refuses named as the cause."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.lab import cleanup
from loadcmp.report import causes
from loadcmp.store.reader import load_results

pytestmark = pytest.mark.docker


def test_wordpress_on_its_database_answers_every_request_and_the_database_is_measured(tmp_path, docker_client):
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--app", "wordpress", "--server", "nginx", "--page", "/",
                                   "-c", "5", "-t", "2", "--warmup", "0.5",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    stored = load_results(json.loads(res.stdout)["results_dir"])
    assert len(stored.trials) == 1
    for t in stored.trials:  # every request 200 (the primer checked the page's own text first)
        assert t["status"] == "ok" and t["result"]["ok"] > 5, t
        assert t["result"]["status_codes"] == {"200": t["result"]["ok"]}, t
        db = t["server_metrics"]["apart"]["db"]
        assert db["cpu_pct"] and db["mem_peak_bytes"] > 20 * 2**20, db  # MariaDB's own container
        # 5 clients (5 PHP workers), the status's own, and a finished request's that MariaDB has not yet seen closed
        assert 2 <= db["peaks"]["db_connections_peak"] <= 5 + 2, db
        assert t["server_metrics"]["limits"] == {"db_connections_peak": ["db.max_connections", 151]}
    sv = stored.server
    for col in ("db_cpu_pct", "db_mem_bytes", "db_connections", "db_slow_queries", "db_aborted_connects"):
        # read by a command in MariaDB's container each second: on a loaded machine one read may miss its second
        assert col in sv and sv[col].notna().sum() >= max(1, len(sv) - 1), (col, sv[col].tolist())
    assert (sv.db_queries.diff().dropna() > 0).all()  # the database answered queries every second
    info = stored.run["servers"]["nginx"]
    assert info["settings"]["db.max_connections"] == 151 and "db/my.cnf" in info["configs"]
    assert "max_connections = 151" in info["configs"]["db/my.cnf"]
    assert {c.name for c in cleanup.labelled(docker_client)} == before


def test_a_database_out_of_connections_is_the_named_cause_of_the_failures(tmp_path, docker_client):
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--app", "wordpress", "--server", "nginx", "--page", "/?p=1042",
                                   "-c", "20", "-t", "4", "--warmup", "0", "--set", "db.max_connections=2",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    (t,) = load_results(json.loads(res.stdout)["results_dir"]).trials
    assert t["result"]["failures"].get("http_5xx", 0) > 0 and t["result"]["ok"] > 0, t["result"]
    refused = t["log_evidence"].get("db.max_connections", 0)
    assert 1 <= refused <= t["result"]["failures"]["http_5xx"] + 20, t  # one line per refused request
    note = next(said for c in t["causes"]
                if (said := causes.note(c, t["result"]["failures"])).startswith("MariaDB refused connections beyond"))
    assert "(db.max_connections 2)" in note and "Too many connections" in note and "http_5xx" in note, note
    # the status query needs MariaDB's one extra connection, which the refused requests compete for: a window
    # where it never got in has no db_refused sample (the log lines above still name the cause); when it did,
    # it counted the refusals
    peaks = t["server_metrics"]["apart"]["db"]["peaks"]
    assert peaks.get("db_refused", 1) >= 1, peaks
    assert {c.name for c in cleanup.labelled(docker_client)} == before


def test_a_stopped_database_is_a_500_whose_log_line_is_the_named_cause(docker_client):
    from loadcmp.lab import apps, stacks
    from loadcmp.lab.fetch import http_get
    from loadcmp.observe.evidence import tally

    res = CliRunner().invoke(cli, ["up", "--server", "nginx", "--app", "wordpress", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    try:
        port = int(doc["url"].rsplit(":", 1)[1].strip("/"))
        code, body = http_get(port, "/?p=1042", timeout=10)
        assert code == 200 and b"loadcmp post 42" in body
        (db,) = [c for c in cleanup.labelled(docker_client, doc["run_id"]) if c.labels.get("loadcmp.role") == "db"]
        db.stop(timeout=5)
        code, body = http_get(port, "/?p=1042", timeout=10)
        assert code == 500 and b"Error establishing a database connection" in body
        (web,) = [c for c in cleanup.labelled(docker_client, doc["run_id"]) if c.labels.get("loadcmp.role") == "web"]
        causes = apps.on_stack(apps.get_app("wordpress"), stacks.get_stack("nginx")).causes
        counted = tally(web.logs().decode(errors="replace"), causes=causes)
        assert counted.counts.get("db.unreachable") == 1, web.logs()[-500:]
        assert "Connection refused" in counted.quotes["db.unreachable"]
    finally:
        cleanup.down(docker_client, run_id=doc["run_id"])

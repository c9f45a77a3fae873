"""An event under load in real containers: nginx's graceful reload drops no request, and the trial keeps the event,
on time, with nginx's own words about it (docs/events.md)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.facts import events_of
from loadcmp.lab import cleanup
from loadcmp.report.tables import summary_doc
from loadcmp.store.reader import load_results

pytestmark = pytest.mark.docker


def test_a_reload_of_nginx_under_load_fails_no_request_and_is_recorded_with_its_evidence(tmp_path, docker_client):
    # a new connection per request: the old workers finish what they hold, the new ones take the next connects
    # (with keep-alive, a request sent on an idle connection as an old worker closes it is reset: docs/events.md)
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "20", "-t", "5", "--warmup", "0.5",
                                   "--event", "2s reload", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    stored = load_results(json.loads(res.stdout)["results_dir"])
    (t,) = stored.trials
    assert t["status"] == "ok" and t["result"]["ok"] > 50 and t["result"]["failed"] == 0, t["result"]
    (ev,) = events_of(t)
    assert ev["ok"] and ev["action"] == "reload" and ev["said"] is None, ev
    assert 0 <= ev["start_s"] - 2.0 < 0.1 and ev["end_s"] >= ev["start_s"], ev
    assert any("signal process started" in line for line in ev["evidence"]), ev
    (cell,) = summary_doc(stored)["results"]
    (cost,) = cell["events"]
    assert cost["failed"] == 0 and cost["failures"] == {} and cost["recovery_s"] is not None, cost
    assert {c.name for c in cleanup.labelled(docker_client)} == before

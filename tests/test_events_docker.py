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


def test_smoke_holds_nginx_to_reloads_that_fail_no_request(tmp_path, docker_client):
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["smoke", "--server", "nginx", "-c", "10", "-t", "6s", "--warmup", "0.5",
                                   "--event", "every 2s reload", "--check", "reload.failed==0",
                                   "--check", "reload.events==2", "--out", str(tmp_path / "out"),
                                   "--junit", str(tmp_path / "junit.xml")])
    assert res.exit_code == 0 and "all checks passed" in res.output, res.output
    junit = (tmp_path / "junit.xml").read_text()  # every page of the smoke run: its reloads, none failed
    assert junit.count("reload.failed==0: measured 0.0") == junit.count("reload.events==2: measured 2.0") >= 1
    assert {c.name for c in cleanup.labelled(docker_client)} == before


def test_set_renders_the_config_again_and_reloads_and_restart_php_comes_back(tmp_path, docker_client):
    before = {c.name for c in cleanup.labelled(docker_client)}
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "5", "-t", "6s", "--warmup", "0.5",
                                   "--event", "2s set fpm.max_children=7", "--event", "4s restart php",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    (t,) = load_results(json.loads(res.stdout)["results_dir"]).trials
    changed, restarted = events_of(t)
    assert changed["ok"] and changed["action"] == "set fpm.max_children=7", changed
    assert any("Reloading in progress" in line for line in changed["evidence"]), changed
    assert restarted["ok"] and restarted["action"] == "restart php", restarted
    assert any("ready to handle connections" in line or "fpm is running" in line
               for line in restarted["evidence"]), restarted
    assert t["result"]["ok"] > 20  # PHP answered after its restart
    assert {c.name for c in cleanup.labelled(docker_client)} == before


@pytest.mark.parametrize("event,said", [("1s set nginx.no_such_key=1", "nginx has no setting 'nginx.no_such_key'"),
                                        ("1s kill worker", "caddy has no command for 'kill worker'")])
def test_a_bad_event_is_one_line_with_nothing_started(tmp_path, docker_client, event, said):
    before = {c.name for c in cleanup.labelled(docker_client)}
    server = "caddy" if "kill" in event else "nginx"
    res = CliRunner().invoke(cli, ["smoke", "--server", server, "-t", "5s", "--event", event,
                                   "--check", "reload.failed==0", "--out", str(tmp_path)])
    assert res.exit_code == 2 and said in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert {c.name for c in cleanup.labelled(docker_client)} == before and not any(tmp_path.iterdir())


def test_a_container_left_frozen_is_thawed_through_its_cgroup(docker_client):
    # what a pause the engine failed or never answered leaves (cgroup v1's freezer FREEZING or FROZEN): thawed here
    from loadcmp.events import bounded

    c = docker_client.containers.run("loadcmp/base:bookworm", ["sleep", "120"], detach=True, auto_remove=False)
    try:
        files = bounded.freezer_files(c.id)
        assert files, "no freezer cgroup for the container on this machine"
        files[0].write_text("FROZEN" if files[0].name == "freezer.state" else "1")
        assert bounded.thaw(c.id) == "it was left frozen: loadcmp thawed its cgroup"
        assert bounded.call("an exec", lambda: c.exec_run(["true"]), 10).exit_code == 0
        assert bounded.thaw(c.id) == "it was not left frozen"
    finally:
        c.remove(force=True)

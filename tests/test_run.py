"""`loadcmp run` end to end with real containers: sweeps, OOM, Ctrl-C, primer."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.lab import cleanup
from loadcmp.cli import cli
from loadcmp.store.reader import load_results
from loadcmp.sweep.runner import run_sweep
from loadcmp.sweep.trial import Planned, SweepHooks
from loadcmp.experiment.spec import RunSpec
from loadcmp.records import TrialRecord

pytestmark = pytest.mark.docker


def newest(root: Path) -> Path:
    return max(root.iterdir(), key=lambda p: p.stat().st_mtime)


def test_sweep_2_levels_2_servers_2_trials(tmp_path, images, docker_client):
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--server", "apache-prefork", "-c", "5,20", "-t", "2",
                                   "--warmup", "0.5", "--trials", "2", "--page", "/index.html", "--out", str(tmp_path),
                                   "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "complete"
    assert len(doc["results"]) == 4
    for item in doc["results"]:
        assert item["trials"] == 2 and item["ok"] > 0 and item["failed"] == 0
        assert "ci95" not in item and len(item["rps_range"]) == 2, "2 trials give their range, not an interval"
        assert item["latency_ms"]["p99"] is not None and item["latency_ms"]["pooled"]
        assert item["mem_peak_bytes"] > 0 and item["pids_peak"] >= 1
    r = load_results(doc["results_dir"])
    assert len(r.trials) == 8 and set(r.summary.status) == {"ok"}
    # order spreads drift: A B at trial 1, B A at trial 2
    order = [(t["level"], t["trial"], t["server"]) for t in r.trials]
    assert order[:4] == [(5, 1, "nginx"), (5, 1, "apache-prefork"), (5, 2, "apache-prefork"), (5, 2, "nginx")]
    for (server, level, trial), g in r.server.groupby(["server", "level", "trial"]):
        assert sorted(g.second) == [0, 1], (server, level, trial)  # one sample per measured second
        assert g.cpu_pct.notna().all() and (g.mem_bytes > 0).all()
    for key, g in r.timeline.groupby(["server", "level", "trial"]):
        assert sorted(g.second) == [0, 1], key
    assert r.run["servers"]["nginx"]["versions"]["nginx"].startswith("nginx/")
    assert r.run["servers"]["apache-prefork"]["versions"]["apache"].startswith("Apache/")
    assert "php" in r.run["servers"]["nginx"]["versions"]
    assert r.run["machine"]["cores"] and r.run["machine"]["docker_version"]
    assert "apache2.conf" in "".join(r.run["servers"]["apache-prefork"]["configs"])
    assert (Path(doc["results_dir"]) / "summary.csv").read_text().count("\n") == 9
    assert cleanup.labelled(docker_client) == []


@pytest.mark.parametrize("engine_args", [[], ["--docker-host", "unix:///var/run/docker.sock"]],
                         ids=["cgroup files", "docker api"])
def test_memory_capped_prefork_records_oom(tmp_path, images, docker_client, engine_args):
    res = CliRunner().invoke(cli, [
        "run", "--server", "apache-prefork", "-c", "300", "-t", "4", "--warmup", "0", "--server-memory", "64m",
        "--set", "prefork.StartServers=100", "--set", "prefork.MinSpareServers=100",
        "--set", "prefork.MaxSpareServers=300", "--set", "prefork.MaxRequestWorkers=300",
        "--set", "prefork.ServerLimit=300", "--out", str(tmp_path), "--json", *engine_args])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    r = load_results(doc["results_dir"])
    trial = r.trials[0]
    assert trial["status"] == "oom", trial.get("reason")
    assert "memory" in trial["reason"] or "OOM" in trial["reason"]
    if engine_args:  # through the API the kills come from the engine's oom events
        assert trial["server_metrics"]["oom_kills"] > 0, trial["server_metrics"]
    assert r.status == "complete"
    assert cleanup.labelled(docker_client) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupted_run_keeps_results_and_no_container(sig, tmp_path, images, docker_client):
    """Mid-trial: Ctrl-C, `timeout`'s SIGTERM, a closed terminal's SIGHUP end the run alike."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen([sys.executable, "-m", "loadcmp", "run", "--server", "nginx", "-c", "10,20", "-t", "30",
                          "--warmup", "0", "--page", "/index.html", "--out", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 60
    while time.time() < deadline and not cleanup.labelled(docker_client):
        time.sleep(0.2)
    time.sleep(3)
    t = time.time()
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err.decode()[-500:]
    assert time.time() - t < 10
    assert cleanup.labelled(docker_client) == []
    r = load_results(newest(tmp_path))
    assert r.status == "interrupted"
    assert len(r.trials) == 1 and r.summary.iloc[0].status == "interrupted"
    assert 1 <= r.summary.iloc[0].duration_s < 10 and r.summary.iloc[0].ok > 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_while_the_second_trial_starts(sig, tmp_path, images, docker_client):
    """A Ctrl-C or a SIGTERM between trials (the second trial's containers starting) is not lost:
    exit 128 + the signal, nothing left running, the first trial kept."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen([sys.executable, "-m", "loadcmp", "run", "--server", "nginx", "-c", "5,10,20", "-t", "2",
                          "--warmup", "0", "--page", "/index.html", "--out", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.time() + 90
        stored: list = []
        while time.time() < deadline and not stored:  # the first trial is stored once its server is removed
            runs = list(tmp_path.iterdir())
            if runs and (runs[0] / "run.json").exists():
                with contextlib.suppress(json.JSONDecodeError, OSError):
                    stored = json.loads((runs[0] / "run.json").read_text())["trials"]
            time.sleep(0.05)
        assert stored, "the first trial never ended"
        while time.time() < deadline and not cleanup.labelled(docker_client):  # the second trial's server is starting
            time.sleep(0.02)
        assert cleanup.labelled(docker_client), "the second trial never started its server"
        t = time.time()
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 128 + sig, err.decode()[-800:]
    assert time.time() - t < 20
    assert cleanup.labelled(docker_client) == []
    r = load_results(newest(tmp_path))
    assert r.status == "interrupted"
    assert len(r.trials) == 1, r.trials
    first = r.summary.iloc[0]
    assert first.status == "ok" and first.level == 5 and first.ok > 0
    said = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    assert any(f"stopped by {said}" in m for m in r.run["problems"]), r.run["problems"]


def test_a_run_killed_outright_is_cleaned_up_by_the_next_and_reported_abandoned(tmp_path, images, docker_client):
    """SIGKILL leaves the containers and a run.json saying `running`; the next command removes the
    containers (they name their owner process), and the folder reads back as `abandoned`."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen([sys.executable, "-m", "loadcmp", "run", "--server", "nginx", "-c", "2,5", "-t", "2",
                          "--warmup", "0", "--page", "/index.html", "--out", str(tmp_path / "killed")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.time() + 90
        stored: list = []
        while time.time() < deadline and not stored:  # the first trial is stored: the report has a trial
            runs = list((tmp_path / "killed").glob("*/run.json"))
            if runs:
                with contextlib.suppress(json.JSONDecodeError, OSError):
                    stored = json.loads(runs[0].read_text())["trials"]
            time.sleep(0.05)
        while time.time() < deadline and not cleanup.labelled(docker_client):  # the second trial's server
            time.sleep(0.02)
        left = cleanup.labelled(docker_client)
        assert stored and left, "the run never got to its second trial"
        assert left[0].labels["loadcmp.owner"].startswith(f"{p.pid}:")
        p.kill()
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert [c.name for c in cleanup.labelled(docker_client)] == [c.name for c in left], "SIGKILL runs no cleanup"
    killed = newest(tmp_path / "killed")
    assert json.loads((killed / "run.json").read_text())["status"] == "running"
    try:
        # the next command removes them, and says so; a stack of `loadcmp up` has no owner: it
        # outlives its command on purpose and is not reaped by the run after it
        up = subprocess.run([sys.executable, "-m", "loadcmp", "up", "--server", "nginx", "--json"], env=env,
                            capture_output=True, text=True, timeout=120)
        assert up.returncode == 0, up.stderr
        assert "left by runs whose process is gone" in up.stderr and left[0].name in up.stderr, up.stderr
        kept = {c.name for c in cleanup.labelled(docker_client)}
        assert kept and not kept & {c.name for c in left}
        res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "2", "-t", "1", "--warmup", "0",
                                       "--page", "/index.html", "--out", str(tmp_path / "next")])
        assert res.exit_code == 0, res.output
        assert {c.name for c in cleanup.labelled(docker_client)} == kept, "the next run reaped what `up` started"
    finally:
        cleanup.down(docker_client)
    r = load_results(killed)
    assert r.status == "abandoned"
    report = CliRunner().invoke(cli, ["report", str(killed), "--format", "md", "--out", str(tmp_path / "rep")])
    assert report.exit_code == 0, report.output
    assert "was abandoned" in (tmp_path / "rep" / "report.md").read_text()


def test_a_crash_is_failed_not_interrupted(tmp_path, images, docker_client):
    """A bug (here in a progress hook) ends the run `failed` with its cause, and nothing is left running."""
    def broken_hook(p: Planned, rec: TrialRecord) -> None:
        raise RuntimeError("a bug in the display")

    spec = RunSpec(servers=("nginx",), levels=(5, 10), duration=1, warmup=0, page="/index.html", out=str(tmp_path))
    with pytest.raises(RuntimeError):
        run_sweep(spec, SweepHooks(trial_end=broken_hook), images=images)
    assert cleanup.labelled(docker_client) == []
    r = load_results(newest(tmp_path))
    assert r.status == "failed"
    assert r.run["problems"][-1] == "RuntimeError: a bug in the display"
    assert len(r.trials) == 1 and r.summary.iloc[0].status == "ok"  # stored before the hook ran


def test_reuse_server_keeps_one_deployment_across_levels(tmp_path, images, docker_client):
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "5,10", "-t", "1", "--warmup", "0",
                                   "--reuse-server", "--page", "/index.html", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    r = load_results(json.loads(res.stdout)["results_dir"])
    first, second = r.trials
    assert first["status"] == second["status"] == "ok"
    assert first["ready_s"] > 0 and second["ready_s"] is None  # the second trial did not start a server
    assert list(r.run["servers"]) == ["nginx"] and r.run["problems"] == []
    assert cleanup.labelled(docker_client) == []


def test_primer_catches_a_wrong_page(tmp_path, images, docker_client):
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "5", "-t", "2", "--page", "/nope.php",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 1
    assert "HTTP 404" in res.output and "--page" in res.output
    assert load_results(newest(tmp_path)).status == "failed"
    assert cleanup.labelled(docker_client) == []


def test_two_labels_of_one_stack_each_with_its_own_config(tmp_path, images, docker_client):
    """Variants end to end: Debian's nginx and a tuned one in one run, each with
    its own settings and rendered config in run.json, labels everywhere."""
    res = CliRunner().invoke(cli, [
        "run", "--server", "nginx", "--server", "tuned=nginx", "--set", "tuned:nginx.worker_connections=4096",
        "--set", "tuned:fpm.max_children=12", "-c", "5", "-t", "1", "--warmup", "0", "--page", "/index.html",
        "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [item["server"] for item in doc["results"]] == ["nginx", "tuned"]
    assert all(item["ok"] > 0 and "webbench" in item for item in doc["results"])
    r = load_results(doc["results_dir"])
    assert r.servers == ["nginx", "tuned"]
    servers = r.run["servers"]
    assert servers["tuned"]["stack"] == servers["nginx"]["stack"] == "nginx"
    assert servers["tuned"]["settings"]["nginx.worker_connections"] == 4096
    assert servers["nginx"]["settings"]["nginx.worker_connections"] == 768
    assert servers["tuned"]["settings"]["fpm.max_children"] == 12
    tuned_conf = next(v for k, v in servers["tuned"]["configs"].items() if k.endswith("nginx.conf"))
    plain_conf = next(v for k, v in servers["nginx"]["configs"].items() if k.endswith("nginx.conf"))
    assert "worker_connections 4096;" in tuned_conf and "worker_connections 768;" in plain_conf
    assert {t["server"]: t["stack"] for t in r.trials} == {"nginx": "nginx", "tuned": "nginx"}
    assert cleanup.labelled(docker_client) == []


def test_run_with_a_dask_cluster_of_two_workers(tmp_path, images, docker_client):
    """`run --server nginx --cluster local:2`: the load from two Dask workers, the cluster in run.json."""
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-c", "20", "-t", "2", "--warmup", "0.5",
                                   "--page", "/index.html", "--cluster", "local:2", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "complete" and doc["results"][0]["ok"] > 0
    run = json.loads((newest(tmp_path) / "run.json").read_text())
    assert [w["host"] for w in run["cluster"]["workers"]] == ["127.0.0.1", "127.0.0.1"]
    assert run["cluster"]["dashboard"].startswith("http://127.0.0.1:")
    assert all(isinstance(w["clock_offset_s"], float) for w in run["cluster"]["workers"])
    assert len(run["trials"]) == 1
    trial = run["trials"][0]
    assert trial["status"] == "ok" and trial["result"]["workers"] == 2
    assert len(trial["result"]["status_codes"]) == 1 and trial["result"]["status_codes"]["200"] == trial["result"]["ok"]
    left = docker_client.containers.list(all=True, filters={"label": f"loadcmp.run={run['run_id']}"})
    assert not left, [c.name for c in left]


def test_a_stack_on_another_engine_is_measured_through_the_docker_api(tmp_path, images, docker_client):
    """`--docker-host` given explicitly: the local engine measured as a remote one would be (stats, top,
    events, one exec a second); a two-container stack, so the back role is checked from inside too."""
    res = CliRunner().invoke(cli, ["run", "--server", "nginx-apache", "-c", "10", "-t", "3", "--warmup", "0.5",
                                   "--page", "/info.php", "--docker-host", "unix:///var/run/docker.sock",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    run = json.loads((newest(tmp_path) / "run.json").read_text())
    assert run["docker_host"]["measured_through"] == "docker api"
    assert run["docker_host"]["server_address"] == "127.0.0.1" and run["docker_host"]["engine"]["version"]
    trial = run["trials"][0]
    assert trial["status"] == "ok" and trial["result"]["ok"] > 0, trial.get("reason")
    m = trial["server_metrics"]
    assert m["samples"] >= 3, m
    for key in ("cpu_pct", "mem_peak_bytes", "pids_peak", "procs_peak", "tcp_peak", "busy_workers_peak"):
        assert m[key] is not None and m[key] > 0, (key, m)
    # a status page that a busy Apache did not answer within its second is said, and is no failure here; the
    # kernel's counters of another machine cannot be read from this one, and that is said once
    unread = "server sampling: the kernel's TCP counters (listen queue overflows) are not read: the engine runs on " \
             "another machine"
    others = [w for w in trial.get("warnings", []) if "status page answered nothing" not in w]
    assert others == [unread] and "kernel" not in m, others
    left = docker_client.containers.list(all=True, filters={"label": f"loadcmp.run={run['run_id']}"})
    assert not left, [c.name for c in left]

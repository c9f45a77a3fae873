"""Connections by state per level (loadcmp.report.states): from a stored run whose labels name their states, the
report's section and `--json`'s `states`; a run stored without them (older results) says nothing of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from loadcmp.cli import cli

from loadcmp.report.states import cell_states, connection_states
from loadcmp.report.story import story
from loadcmp.report.tables import summary_doc
from loadcmp.store.reader import load_results

from helpers.stored import RUN_2X3X2

PREFORK = {"apache_reading": "reading a request", "apache_writing": "writing a response",
           "apache_keepalive": "idle in keep-alive"}
NGINX = {"nginx_reading": "reading a request", "nginx_waiting": "idle in keep-alive"}


def _stored(folder: Path) -> Path:
    """The 2x3x2 fixture with its labels' states named, and prefork's scoreboard at 200 clients: workers idle in
    keep-alive, then two seconds its page went unanswered."""
    shutil.copytree(RUN_2X3X2, folder)
    run = json.loads((folder / "run.json").read_text())
    run["servers"]["apache-prefork"]["states"] = PREFORK
    run["servers"]["apache-prefork"]["busy_limit"] = "prefork.MaxRequestWorkers"
    run["servers"]["nginx"]["states"] = NGINX
    (folder / "run.json").write_text(json.dumps(run))
    sv = pd.read_parquet(folder / "server.parquet")
    pre = (sv.server == "apache-prefork") & (sv.level == 200)
    sv.loc[pre, "apache_keepalive"] = [100.0, 140.0, float("nan"), float("nan")][:int(pre.sum())]
    sv.loc[pre, "apache_reading"] = [2.0, 4.0, float("nan"), float("nan")][:int(pre.sum())]
    sv.loc[pre, "apache_writing"] = [8.0, 5.0, float("nan"), float("nan")][:int(pre.sum())]
    sv.loc[pre, "busy_workers"] = [110.0, 149.0, float("nan"), float("nan")][:int(pre.sum())]
    sv.loc[pre, "busy_unread"] = [0.0, 0.0, 1.0, 1.0][:int(pre.sum())]
    sv.to_parquet(folder / "server.parquet")
    return folder


def test_each_level_shows_its_states_beside_busy_workers(tmp_path: Path) -> None:
    data = load_results(_stored(tmp_path / "run"))
    c = cell_states(data, "apache-prefork", 200)
    assert c is not None and (c.seconds, c.unanswered, c.busy_peak) == (4, 2, 149.0)
    assert [(s.column, s.mean, s.peak) for s in c.states] == [
        ("apache_reading", 3.0, 4.0), ("apache_writing", 6.5, 8.0), ("apache_keepalive", 120.0, 140.0)]
    lines = connection_states(data)
    prefork = next(line for line in lines if line.startswith("apache-prefork at 200"))
    assert prefork == ("apache-prefork at 200 clients: busy workers peaked at 149 of prefork.MaxRequestWorkers 150; "
                       "reading a request 3 (4), writing a response 6.5 (8), idle in keep-alive 120 (140); its status "
                       "page went unanswered 2 of 4 seconds (every worker held).")
    # prefork's lower levels stored no scoreboard: no line; nginx's stub_status gave its states at every level
    assert not any(line.startswith("apache-prefork at 10 ") for line in lines)
    assert sum(line.startswith("nginx at ") for line in lines) == 3
    assert dict(story(data))["Connections by state"] == lines


def test_json_rows_carry_the_states_of_their_level(tmp_path: Path) -> None:
    doc = summary_doc(load_results(_stored(tmp_path / "run")))
    row = next(r for r in doc["results"] if r["server"] == "apache-prefork" and r["level"] == 200)
    assert row["states"]["columns"]["apache_keepalive"] == {"state": "idle in keep-alive", "mean": 120.0,
                                                            "peak": 140.0}
    assert (row["states"]["seconds"], row["states"]["unanswered"], row["states"]["busy_workers_peak"]) == (4, 2, 149.0)
    assert "states" not in next(r for r in doc["results"] if r["server"] == "apache-prefork" and r["level"] == 10)


def test_a_run_stored_without_states_says_nothing_of_them() -> None:
    data = load_results(RUN_2X3X2)
    assert connection_states(data) == []
    assert all("states" not in r for r in summary_doc(data)["results"])


@pytest.mark.docker
def test_idle_keep_alive_holds_preforks_workers_and_not_nginxs(tmp_path, images, docker_client) -> None:
    """300 kept-alive users, each asking every 2 s (KeepAliveTimeout 5 keeps every connection), started over 12 s:
    prefork's 150 workers (all started at once) end up held, most by idle keep-alive connections, and the cause says
    so; nginx holds its idle connections waiting while its PHP workers stay free."""
    res = CliRunner().invoke(cli, [
        "run", "--server", "apache-prefork", "--server", "nginx", "--schedule", "ramp", "--pace", "2s", "--ramp-up",
        "12s", "-k", "-c", "300", "-t", "10s", "--warmup", "1s", "--set", "prefork.StartServers=150", "--set",
        "prefork.MinSpareServers=150", "--set", "prefork.MaxSpareServers=150", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = {r["server"]: r for r in doc["results"]}
    prefork, nginx = rows["apache-prefork"]["states"], rows["nginx"]["states"]["columns"]
    cols = prefork["columns"]
    assert cols["apache_keepalive"]["peak"] > max(v["peak"] for k, v in cols.items() if k != "apache_keepalive")
    assert prefork["busy_workers_peak"] >= 149 or prefork["unanswered"] > 0, prefork
    r = load_results(doc["results_dir"])
    (t,) = [t for t in r.trials if t["server"] == "apache-prefork"]
    (c,) = [c for c in t["causes"] if c["cause"] == "apache.keepalive_held"]
    assert c["value"] == 150 and c["also"] == {"apache.KeepAliveTimeout": 5} and c["held"] <= c["held_busy"]
    assert nginx["nginx_waiting"]["peak"] >= 150 and nginx["fpm_active"]["peak"] < 5, nginx
    assert not any(c["cause"] == "apache.keepalive_held" for t in r.trials for c in t.get("causes", [])
                   if t["server"] == "nginx")
    assert any(line.startswith("apache-prefork at 300 clients: busy workers peaked at")
               for line in connection_states(r))

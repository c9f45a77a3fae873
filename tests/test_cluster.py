"""Load from a Dask cluster (issue 12): a LocalCluster of two workers on loopback,
against a server that counts what it received."""

from __future__ import annotations

import json
import os
from dataclasses import replace
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from test_accounting import seen, settled  # the counting server's own count, read once it has settled
from loadcmp.load.run.cluster import DaskFleet
from loadcmp.load.driver import Live, LoadSpec
from loadcmp.load.schedules import Closed, Rate
from loadcmp.load.record.summary import check_invariant, result_doc
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import Stopper, run_load

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fleet() -> Iterator[DaskFleet]:
    with DaskFleet("local:2") as f:
        yield f


@pytest.mark.parametrize("keepalive", [False, True])
def test_two_dask_workers_account_for_exactly_what_the_server_saw(fast_server, fleet, keepalive):
    spec = LoadSpec(make_target(f"http://127.0.0.1:{fast_server}/slow", keepalive=keepalive), Closed(40), 1.5,
                    warmup=0.5)
    lines: list[Live] = []
    before = seen(fast_server)
    result = run_load(spec, fleet=fleet, live=lines.append)
    doc = result_doc(result)
    server = settled(fast_server, before)
    assert check_invariant(doc) and doc["ok"] > 0 and doc["unfinished"] > 0, doc
    assert server == doc["warmup_requests"] + doc["ok"] + doc["failed"] + doc["unfinished"], (server, doc)
    assert len(result.client_use) == 2 and not result.lost  # both shares came back
    assert lines and max(lv.ok for lv in lines) > 0  # the live line, summed over the workers


def test_the_rate_schedule_is_split_over_the_workers(fast_server, fleet):
    spec = LoadSpec(make_target(f"http://127.0.0.1:{fast_server}/", keepalive=True), Rate(400.0, 20), 2.0)
    doc = result_doc(run_load(spec, fleet=fleet))
    assert doc["ok"] == pytest.approx(800, rel=0.05), doc  # 200/s each, interleaved


def test_clock_offsets_are_measured_and_described(fleet):
    d = fleet.describe()
    assert d["address"] == "local:2" and d["scheduler"].startswith("tcp://127.0.0.1:")
    assert len(d["workers"]) == 2
    for w in d["workers"]:
        assert w["host"] == "127.0.0.1" and abs(w["clock_offset_s"]) < 0.5  # one machine, one clock


def test_a_worker_killed_mid_load_makes_it_partial_and_names_the_loss(fast_server):
    with DaskFleet("local:2") as fleet:
        pids = fleet.client.run(os.getpid)
        victim = fleet.workers[1]
        spec = LoadSpec(make_target(f"http://127.0.0.1:{fast_server}/", keepalive=True), Closed(10), 3.0)
        threading.Timer(fleet.start_delay + 1.0, os.kill, (pids[victim], signal.SIGKILL)).start()
        result = run_load(spec, fleet=fleet)
        time.sleep(3)  # the nanny starts a new worker under a new address
        again = run_load(replace(spec, duration=1.0), fleet=fleet)  # the same fleet: it adopts what is there now
    assert len(result.lost) == 1 and victim in result.lost[0], result.lost
    assert "left the cluster" in result.lost[0] and "5 clients" in result.lost[0]
    assert any(w.startswith("partial: ") for w in result.warnings)
    doc = result_doc(result)
    assert doc["ok"] > 0 and len(result.client_use) == 1  # the other worker's share is kept
    assert not again.lost and result_doc(again)["ok"] > 0


def test_ctrl_c_stops_every_worker_and_keeps_what_was_measured(fast_server, fleet):
    spec = LoadSpec(make_target(f"http://127.0.0.1:{fast_server}/", keepalive=True), Closed(10), 30.0)
    stopper = Stopper()
    threading.Timer(fleet.start_delay + 1.5, stopper.stop).start()
    t = time.monotonic()
    result = run_load(spec, fleet=fleet, stopper=stopper)
    assert time.monotonic() - t < 10 and result.interrupted
    assert result_doc(result)["ok"] > 0 and len(result.client_use) == 2


def test_bench_through_the_cli_stores_the_cluster(fast_server, tmp_path):
    res = CliRunner().invoke(cli, ["bench", f"http://127.0.0.1:{fast_server}/", "-c", "20", "-t", "1", "-k",
                                   "--cluster", "local:2", "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["workers"] == 2 and len(doc["cluster"]["workers"]) == 2 and doc["ok"] > 0
    assert "dashboard" in res.stderr
    stored = json.loads(next(tmp_path.iterdir()).joinpath("run.json").read_text())
    assert stored["cluster"]["address"] == "local:2" and stored["trials"][0]["result"]["workers"] == 2


@pytest.mark.parametrize("cmd", [["bench", "http://127.0.0.1:9/"], ["run", "--server", "nginx", "-c", "5"]])
def test_an_unreachable_scheduler_fails_fast_in_one_line(cmd):
    t = time.monotonic()
    res = CliRunner().invoke(cli, [*cmd, "--cluster", "tcp://127.0.0.1:9"])
    assert res.exit_code == 1, res.output
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert time.monotonic() - t < 15


@pytest.mark.parametrize("args, needle", [
    (["--cluster", "local:0"], "bad cluster address 'local:0'"),
    (["--cluster", "http://x:1"], "bad cluster address"),
    (["--cluster", "local:2", "--workers", "2"], "--workers is for processes on this machine"),
])
def test_bad_cluster_flags_are_one_line_exit_2(args, needle):
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:9/", *args])
    assert res.exit_code == 2 and needle in res.output, res.output


def test_the_environment_gives_the_cluster(monkeypatch):
    monkeypatch.setenv("LOADCMP_CLUSTER", "nonsense")
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:9/"])
    assert res.exit_code == 2 and "LOADCMP_CLUSTER" in res.output, res.output


def test_an_experiment_file_gives_the_cluster(tmp_path):
    from loadcmp.experiment.flags import build_spec
    from loadcmp.errors import ConfigError

    f = tmp_path / "c.toml"
    f.write_text('servers = ["nginx"]\ncluster = "local:2"\n')
    assert build_spec(str(f), {}).cluster == "local:2"
    f.write_text('servers = ["nginx"]\ncluster = "local:two"\n')
    with pytest.raises(ConfigError) as e:
        build_spec(str(f), {})
    assert any("bad cluster address" in m for m in e.value.messages)


def test_a_loopback_target_is_refused_when_workers_are_elsewhere():
    from loadcmp.errors import UsageError

    fleet = DaskFleet("tcp://10.0.0.9:8786")
    fleet.hosts = {"tcp://10.0.0.7:4000": "10.0.0.7", "tcp://127.0.0.1:4001": "127.0.0.1"}
    with pytest.raises(UsageError, match="which would load their own"):
        fleet.check_reach("127.0.0.1")
    fleet.check_reach("10.0.0.5")  # an address they reach
    fleet.hosts = {"tcp://127.0.0.1:4001": "127.0.0.1"}
    fleet.check_reach("localhost")  # every worker here


class _GoneScheduler:
    """A Dask Event or Queue whose scheduler is gone: every call fails at once, as Dask's do."""

    def __init__(self) -> None:
        self.calls = 0

    def wait(self, timeout: float) -> bool:
        self.calls += 1
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:8786")

    def put(self, value: object) -> None:
        self.calls += 1
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:8786")


def test_a_stop_watch_that_lost_its_scheduler_neither_spins_nor_swallows_the_stop(monkeypatch):
    import queue
    import threading

    from loadcmp.load.run import cluster
    from loadcmp.load.run.workers import Stopper

    monkeypatch.setattr(cluster, "SCHEDULER_GONE_S", 1.0)
    event, stopper, done, gone = _GoneScheduler(), Stopper(), threading.Event(), []
    t0 = time.monotonic()
    cluster.watch_stop(event, stopper, done, gone)
    took = time.monotonic() - t0
    assert stopper.requested and gone and "OSError" in gone[0]
    assert took >= 1.0 and event.calls <= took / 0.2 + 2, (took, event.calls)  # no spin: ~5 tries a second
    lines: queue.SimpleQueue = queue.SimpleQueue()
    for x in range(3):
        lines.put(x)
    lines.put(None)
    dropped: list[str] = []
    assert cluster.forward_live(lines, _GoneScheduler(), dropped) == 3
    assert dropped[0].startswith("OSError") and dropped[1:] == ["3"]

"""-n/--requests N, as ab and hey mean it: exactly N started, then stop.

Against tests/helpers/fastserver.py, whose /count says how many requests it has
seen, so the server side of "exactly N" is checked too, not only the client's.
"""

from __future__ import annotations

import io
import json
import time
import urllib.request
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import ConfigError, UsageError
from loadcmp.load.driver import Live, LoadSpec
from loadcmp.load.record.recorder import Recorder, Result
from loadcmp.load.schedules import Closed, make_schedule, time_cap
from loadcmp.load.record.summary import check_invariant, result_doc, timeline_rows
from loadcmp.load.target import make_target
from loadcmp.load.run.workers import run_load

pytestmark = pytest.mark.usefixtures("loop_path")  # both closed loops (conftest)


def seen(port: int) -> int:
    """How many requests the fast server has answered (its /count is not one of them)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=10) as r:
        return int(r.read())


def load_n(port: int, n: int, clients: int, *, keepalive: bool = False, engine: str = "fast", path: str = "/",
           duration: float | None = None, warmup: float = 0.0, workers: int = 1) -> tuple[dict, Result, int]:
    """One -n load: its summary, its result, and what the server saw meanwhile."""
    sched = make_schedule("closed", clients, requests=n)
    limit = duration if duration is not None else time_cap(n, clients, 10.0)
    spec = LoadSpec(make_target(f"http://127.0.0.1:{port}{path}", keepalive=keepalive), sched, limit, warmup=warmup,
                    engine=engine)
    before = seen(port)
    result = run_load(spec, workers=workers)
    return result_doc(result), result, seen(port) - before


def exact(doc: dict, result: Result, server: int, n: int) -> None:
    """Exactly n started, sent, ended and bucketed; the load ended by its count."""
    assert doc["started"] == n, doc
    assert doc["ok"] + doc["failed"] + doc["unfinished"] == n, doc
    assert doc["ok"] == n and doc["unfinished"] == 0, doc
    assert doc["stopped_by"] == "requests", doc
    assert server == n + doc["warmup_requests"], (server, doc)
    rows = timeline_rows(result)
    assert sum(r["started"] for r in rows) == n and sum(r["completed"] for r in rows) == n, rows
    assert doc["rps"] == round(doc["ok"] / result.duration_s, 3)


# --- the engines --------------------------------------------------------------------------


@pytest.mark.parametrize("engine, keepalive", [("fast", False), ("fast", True), ("aiohttp", False), ("aiohttp", True)])
def test_exactly_n_with_n_not_a_multiple_of_the_clients(fast_server, engine, keepalive):
    n = 1003 if engine == "fast" else 303
    doc, result, server = load_n(fast_server, n, 10, keepalive=keepalive, engine=engine)
    exact(doc, result, server, n)
    assert doc["warmup_requests"] == 0


@pytest.mark.parametrize("keepalive", [False, True])
def test_fewer_requests_than_clients_start_only_that_many(fast_server, keepalive):
    assert Closed(10, requests=3).connections == 3
    doc, result, server = load_n(fast_server, 3, 10, keepalive=keepalive)
    exact(doc, result, server, 3)


@pytest.mark.parametrize("keepalive", [False, True])
def test_warmup_requests_are_not_among_the_n(fast_server, keepalive):
    doc, result, server = load_n(fast_server, 500, 10, keepalive=keepalive, warmup=0.5)
    assert doc["warmup_requests"] > 0
    exact(doc, result, server, 500)


def test_the_measured_time_is_first_start_to_last_answer(fast_server):
    """10 clients, 100 requests of at least 20 ms each: ten rounds, so at least 0.2 s,
    and far less than the time limit it was given."""
    doc, result, _ = load_n(fast_server, 100, 10, keepalive=True, path="/slow", duration=30.0)
    assert doc["stopped_by"] == "requests" and doc["started"] == 100
    assert 0.2 <= doc["duration_s"] < 5.0, doc["duration_s"]
    assert len(result.seconds) == int(doc["duration_s"]) + 1 or len(result.seconds) == int(doc["duration_s"]) + 2


@pytest.mark.parametrize("keepalive", [False, True])
def test_a_short_time_limit_ends_it_first(fast_server, keepalive):
    before = seen(fast_server)
    res = CliRunner().invoke(cli, ["bench", f"http://127.0.0.1:{fast_server}/", "-n", "10000000", "-c", "10",
                                   "-t", "0.5", "--json"] + (["-k"] if keepalive else []))
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["stopped_by"] == "time"
    assert 0 < doc["started"] < 10_000_000
    assert check_invariant(doc), doc
    assert doc["duration_s"] == 0.5
    assert seen(fast_server) - before == doc["started"], "a request went out that was not counted, or after the close"


def test_two_workers_share_n_exactly_through_the_cli(fast_server, tmp_path):
    before = seen(fast_server)
    res = CliRunner().invoke(cli, ["bench", f"http://127.0.0.1:{fast_server}/", "-n", "1001", "-c", "10",
                                   "--workers", "2", "-k", "--json", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["workers"] == 2 and doc["stopped_by"] == "requests"
    assert doc["started"] == doc["ok"] == 1001 and doc["unfinished"] == 0
    assert seen(fast_server) - before == 1001
    assert sum(r["started"] for r in doc["timeline"]) == 1001
    spec = json.loads(next(tmp_path.iterdir()).joinpath("run.json").read_text())["spec"]
    assert spec["requests"] == 1001


def test_two_workers_with_fewer_requests_than_clients(fast_server):
    doc, result, server = load_n(fast_server, 3, 10, workers=2)
    exact(doc, result, server, 3)


def test_a_dead_server_still_ends_the_load(refused_port):
    t = time.monotonic()
    res = CliRunner().invoke(cli, ["bench", f"http://127.0.0.1:{refused_port}/", "-n", "200", "-c", "10", "--json"])
    assert res.exit_code == 1 and "every request failed (200 connect_refused)" in res.stderr, res.output
    doc = json.loads(res.stdout)  # what was measured is printed all the same
    assert doc["started"] == doc["failed"] == doc["failures"]["connect_refused"] == 200
    assert doc["stopped_by"] == "requests"
    assert time.monotonic() - t < 20


def test_a_server_that_never_answers_ends_it_by_timeouts(faulty):
    """Every request runs into its timeout, yet all N are started and the load ends
    by its count, long before the safety cap."""
    sched = make_schedule("closed", 3, requests=6)
    spec = LoadSpec(make_target(faulty.url("/stall"), keepalive=True), sched, time_cap(6, 3, 0.3), timeout=0.3)
    t = time.monotonic()
    doc = result_doc(run_load(spec))
    assert doc["started"] == doc["failures"]["timeout"] == 6 and doc["stopped_by"] == "requests", doc
    assert time.monotonic() - t < spec.duration


# --- refusals, files, splitting ---------------------------------------------------------------


@pytest.mark.parametrize("schedule", [["--schedule", "rate", "--rate", "100"], ["--schedule", "ramp"]])
def test_n_with_another_schedule_is_refused(schedule):
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "-n", "10", *schedule])
    assert res.exit_code == 2, res.output
    assert "-n/--requests needs --schedule closed" in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    with pytest.raises(UsageError):
        make_schedule("rate", 10, rate=5.0, requests=10)


@pytest.mark.parametrize("bad", ["0", "-5", "ten"])
def test_a_bad_count_is_refused(bad):
    res = CliRunner().invoke(cli, ["bench", "http://127.0.0.1:1/", "-n", bad])
    assert res.exit_code == 2 and "-n/--requests" in res.output, res.output


def test_the_experiment_file_key(tmp_path):
    from loadcmp.experiment.flags import build_spec
    from loadcmp.experiment.spec import load_experiment

    f = tmp_path / "n.toml"
    f.write_text('servers = ["nginx"]\nclients = [10, 100]\nrequests = 10000\ntimeout = "5s"\n')
    assert load_experiment(f)[0]["requests"] == 10000
    spec = build_spec(str(f), {})
    assert spec.requests == 10000
    assert spec.duration == time_cap(10000, 10, 5.0)  # no time given: the cap of the fewest clients
    assert spec.schedule_for(100) == Closed(100, requests=10000)
    assert build_spec(str(f), {"duration": 7.0}).duration == 7.0  # -t: whichever ends first
    f.write_text('servers = ["nginx"]\nrequests = 10000\ntime = "20s"\n')
    assert build_spec(str(f), {}).duration == 20.0
    f.write_text('servers = ["nginx"]\nrequests = 0\n')
    with pytest.raises(ConfigError):
        load_experiment(f)
    f.write_text('servers = ["nginx"]\nrequests = 100\nschedule = "ramp"\n')
    with pytest.raises(ConfigError) as e:
        build_spec(str(f), {})
    assert any("-n/--requests" in m for m in e.value.messages)


def test_run_refuses_n_with_the_rate_schedule_before_anything_starts():
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "-n", "10", "--schedule", "rate", "--rate", "5"])
    assert res.exit_code == 2 and "-n/--requests" in res.output, res.output


@pytest.mark.parametrize("clients, n, workers", [(3, 10, 3), (6, 10, 3), (10, 2, 3), (7, 1000, 4), (5, 5, 2),
                                                  (100, 7, 8), (1, 1, 1), (4, 9, 2)])
def test_n_is_split_exactly_and_no_part_has_more_clients_than_requests(clients, n, workers):
    parts = Closed(clients, requests=n).split(workers)
    assert sum(p.requests or 0 for p in parts) == n
    assert sum(p.clients for p in parts) == min(clients, n)
    assert all(1 <= p.clients <= (p.requests or 0) for p in parts), parts
    active = min(clients, n)
    assert all(abs((p.requests or 0) - n * p.clients / active) < 1 for p in parts), parts  # in proportion


def test_ten_over_three_is_four_three_three():
    assert [p.requests for p in Closed(3, requests=10).split(3)] == [4, 3, 3]
    assert [p.requests for p in Closed(30, requests=10).split(3)] == [4, 3, 3]


# --- the recorder's count and its end -----------------------------------------------------------


def test_the_recorder_hands_out_n_tickets_and_says_when_the_last_has_ended():
    rec = Recorder(100.0, 60.0, requests=3)
    ended: list[bool] = []
    rec.on_spent = lambda: ended.append(True)
    assert rec.ticket_left(99.0) and not rec.start(99.0)  # the warm-up needs no ticket, and is not counted
    assert rec.warmup_started == 1
    for t in (100.5, 100.6, 101.2):
        assert rec.ticket_left(t) and rec.start(t)
    assert not rec.ticket_left(101.3) and rec.ticket_left(99.5)
    rec.done(0, 100.5, 100.5, 101.0, 10)
    rec.done(0, 100.6, 100.6, 102.0, 10)
    assert not ended
    rec.done(0, 101.2, 101.2, 103.4, 10)
    assert ended == [True]
    result = rec.close()
    assert result.stopped_by == "requests"
    assert result.duration_s == pytest.approx(3.4 - 0.5)
    assert len(result.seconds) == 4  # seconds 0..3 of the window hold the answers; not the 60 s limit
    assert [s.counts[0] for s in result.seconds] == [0, 1, 1, 1]


def test_a_long_time_cap_costs_no_memory_up_front():
    rec = Recorder(0.0, 10_000_000.0, requests=1)
    assert len(rec.seconds) == 1
    rec.start(0.1)
    rec.done(0, 0.1, 0.1, 2.5, 1)
    assert len(rec.close().seconds) == 3


def test_workers_merge_to_the_span_of_all_their_requests():
    def part(began: float, ended: float, by: str = "requests") -> Result:
        return Result([], 5, 0, 0, ended - began, stopped_by=by, began=began, ended=ended)  # type: ignore[arg-type]

    merged = Result.merge([part(100.01, 102.0), part(100.02, 102.5)])
    assert merged.stopped_by == "requests" and merged.duration_s == pytest.approx(2.49)
    cut = Result.merge([part(100.01, 102.0), Result([], 5, 0, 2, 3.0)])
    assert cut.stopped_by == "time" and cut.duration_s == 3.0


# --- what the user sees while it runs ---------------------------------------------------------


def test_the_live_line_and_the_run_bar_count_requests(monkeypatch):
    from rich.console import Console

    from loadcmp.cli.display import LiveLine
    from loadcmp.cli.run import SweepDisplay

    line = LiveLine(console=Console(file=io.StringIO()))
    line(Live(1.0, 290, 10, 5, 290.0, True, requests=1000))
    assert "300 of 1,000 requests" in line.last
    disp = SweepDisplay()
    monkeypatch.setattr(disp.progress.console, "file", io.StringIO())  # the shared stderr console: put back after
    disp.trial_start(SimpleNamespace(label="nginx", level=10, trial=1), 0, 1, 2000.0)  # type: ignore[arg-type]
    disp.live(Live(1.0, 290, 10, 5, 290.0, True, requests=1000))
    assert disp.current is not None
    task = disp.progress.tasks[disp.current]
    assert (task.total, task.completed) == (1000, 300)


def test_the_trial_line_says_what_ended_a_run_of_n(monkeypatch):
    from loadcmp.cli.run import SweepDisplay

    disp = SweepDisplay()
    out = io.StringIO()
    monkeypatch.setattr(disp.progress.console, "file", out)  # the shared stderr console: put back after
    p = SimpleNamespace(label="nginx", level=10, trial=1)
    base = {"ok": 900, "failed": 0, "rps": 450.0, "latency_ms": {"p99": 3.0}, "failures": {},
            "schedule": {"kind": "closed", "clients": 10, "requests": 1000}}
    disp.trial_end(p, {"status": "ok", "result": {**base, "stopped_by": "time", "started": 910,  # type: ignore[arg-type]
                                                   "duration_s": 2.0}})
    disp.trial_end(p, {"status": "ok", "result": {**base, "ok": 1000, "stopped_by": "requests",  # type: ignore[arg-type]
                                                   "started": 1000, "duration_s": 2.2}})
    text = " ".join(out.getvalue().split())
    assert "stopped by the time limit: 910 of 1,000 requests started" in text
    assert "all 1,000 requests in 2.2 s" in text

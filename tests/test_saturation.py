"""Is the client the bottleneck? The judgement (loadcmp.load.record.saturation), the
engine's own samples, and what users see: Table 1, --json, comparisons, smoke."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadcmp.load.record.recorder import Recorder
from loadcmp.load.record.saturation import ClientSample, ClientUse, Machine, advice, bound_reason


def use(cpu: float | None, wait: float = 0.0, lag: float = 1.0, worker: int = 0) -> ClientUse:
    return ClientUse(worker, cpu, wait, lag, 1.0)


@pytest.mark.parametrize("u, bound, words", [
    (use(97.0), True, ["busy 97%"]),
    (use(85.0), False, []),
    (use(50.0, wait=45.0), True, ["busy 95%", "45% waiting", "something else ran"]),
    (use(40.0, lag=450.0), True, ["lagged 450 ms"]),
    (use(None), False, []),
])
def test_bound_reason_names_the_sign(u, bound, words):
    reason = bound_reason([u])
    assert (reason is not None) == bound
    for w in words:
        assert w in (reason or "")


def test_with_several_processes_the_busiest_is_named():
    reason = bound_reason([use(40.0, worker=0), use(96.0, worker=1)])
    assert reason and "client process 1 (of 2)" in reason


def test_advice_fits_the_machine():
    free = advice(200.0, Machine(cpus=4, server_cpus=1, workers=1, keepalive=False))
    assert "~5,000 req/s" in free and "--workers 3" in free and "--keepalive" in free
    full = advice(35.0, Machine(cpus=2, server_cpus=1, workers=1, keepalive=True))
    assert "no core is free" in full and "--workers" not in full and "--keepalive" not in full
    many = advice(35.0, Machine(cpus=2, server_cpus=1, workers=1, keepalive=True), lagging=True)
    assert "fewer clients" in many
    elsewhere = advice(35.0, Machine(cpus=2, server_cpus=0, workers=1, keepalive=True))  # servers on another engine
    assert "--workers 2" in elsewhere and "no core is free" not in elsewhere


def test_a_late_tick_gives_its_sample_to_every_second_it_covers():
    rec = Recorder(100.0, 5.0)
    rec.tick(101.02, ClientSample(99.0, 0.0, 10.0, 1.0))
    rec.tick(104.5, ClientSample(98.0, 1.0, 3400.0, 3.5))  # the loop was stuck for 3.5 s
    rec.sample_client(ClientSample(97.0, 0.0, 20.0, 0.5), 5)  # the close
    assert [s.loop_lag_ms for s in rec.seconds] == [10.0, 3400.0, 3400.0, 3400.0, 20.0]
    assert ClientUse.of(0, rec.seconds, 5.0).lag_ms == 3400.0


# --- the engine's own samples, against a server faster than the client ------------------


@pytest.fixture(scope="module")
def fast_server(fast_server: int) -> int:
    """conftest's fast server on the last CPU; the clients below run on CPU 0."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs: one for the server, one for the client")
    return fast_server


@contextlib.contextmanager
def hog_on_cpu0() -> Iterator[None]:
    """Another process busy on the client's core: the client gets about half of it."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    try:
        yield
    finally:
        p.kill()
        p.wait()


def bench(port: int, path: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "loadcmp", "bench", f"http://127.0.0.1:{port}{path}", "-c", "20",
                          "-t", "3s", "--client-cpus", "0", "--json", *args],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return json.loads(out)


def test_a_client_without_keepalive_against_a_fast_server_is_client_bound(fast_server, monkeypatch):
    # the pure-Python loop: the compiled one outruns this Python server, which is then the bottleneck
    monkeypatch.setenv("LOADCMP_PURE_PYTHON", "1")
    d = bench(fast_server, "/")
    assert d["client_bound"], d["client_busy_pct"]
    assert "busy" in d["client_bound_reason"]
    assert "--keepalive" in d["client_advice"] and "µs of CPU per request" in d["client_advice"]
    assert d["client_cpu_us"] and d["client_cpu_us"] > 0
    assert d["timeline"] and all(r["client_cpu_pct"] is not None for r in d["timeline"]), "every second has its sample"


def test_a_client_waiting_on_a_slow_server_is_not(fast_server):
    d = bench(fast_server, "/slow")
    assert not d["client_bound"], (d["client_busy_pct"], d["client_lag_ms"])
    assert d["client_bound_reason"] is None and "client_advice" not in d


def test_a_client_starved_of_its_cpu_is_client_bound_though_it_used_half(fast_server, monkeypatch):
    monkeypatch.setenv("LOADCMP_PURE_PYTHON", "1")  # on half a core the compiled loop can still outrun this server
    with hog_on_cpu0():
        d = bench(fast_server, "/")
    assert d["client_bound"]
    assert d["client_wait_pct"] >= 20, d
    assert "waiting for it" in d["client_bound_reason"]


# --- what users see, from stored results ---------------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "run-2x3x2"
REASON = bound_reason([use(98.0)])


@pytest.fixture()
def bound_at_200(tmp_path) -> Path:
    """The checked-in 2 x 3 x 2 run, with apache-prefork's trials at 200 clients client-bound."""
    import shutil

    dst = tmp_path / "run"
    shutil.copytree(FIXTURE, dst)
    run = json.loads((dst / "run.json").read_text())
    for t in run["trials"]:
        t["result"]["client_bound"] = t["server"] == "apache-prefork" and t["level"] == 200
        if t["result"]["client_bound"]:
            t["result"]["client_bound_reason"] = REASON
            t["result"]["client_advice"] = "the client spent 170 µs of CPU per request"
    (dst / "run.json").write_text(json.dumps(run))
    return dst


def test_a_comparison_with_a_client_bound_side_is_inconclusive(bound_at_200):
    from loadcmp.report.compare import comparison_lines
    from loadcmp.store.reader import load_results

    lines = comparison_lines(load_results(bound_at_200))
    at200 = [v for v in lines if "200 clients" in v]
    assert len(at200) == 1 and at200[0].startswith("Inconclusive at 200 clients")
    assert "apache-prefork" in at200[0] and REASON in at200[0] and "170 µs" in at200[0]
    assert " served " not in at200[0]
    others = [v for v in lines if "200 clients" not in v]
    assert others and not any(v.startswith("Inconclusive") for v in others)


def test_table1_marks_client_bound_cells_and_json_says_why(bound_at_200):
    from loadcmp.report.tables import CLIENT_BOUND_MARK, notes, summary_doc, table1
    from loadcmp.store.reader import load_results

    res = load_results(bound_at_200)
    header, rows = table1(res)
    marked = [(row[0], i) for row in rows for i, cell in enumerate(row) if cell.endswith(CLIENT_BOUND_MARK)]
    rps_col = header.index(("apache-prefork", "req/s"))
    assert marked == [("200", rps_col)]
    assert f"‡ apache-prefork at 200 clients was client-bound: {REASON}." in notes(res)
    assert any(n.startswith("‡ these rates are the client's limit") and "170 µs" in n for n in notes(res))
    items = {(i["server"], i["level"]): i for i in summary_doc(res)["results"]}
    assert items[("apache-prefork", 200)]["client_bound"] is True
    assert items[("apache-prefork", 200)]["client_bound_reason"] == REASON
    assert items[("nginx", 200)]["client_bound"] is False


def test_smoke_says_a_check_was_measured_client_bound(bound_at_200):
    from loadcmp.verdicts import smoke as sm
    from loadcmp.store.reader import load_results

    out = {v.server: v for v in sm.evaluate(load_results(bound_at_200), sm.parse_checks(["rps>1"]))}
    assert out["apache-prefork"].client_bound_reason == REASON and "client-bound" in out["apache-prefork"].message
    assert out["nginx"].client_bound_reason is None


def test_older_results_without_the_client_keys_read_as_not_bound():
    from loadcmp.report.compare import comparison_lines
    from loadcmp.store.reader import load_results

    res = load_results(FIXTURE)
    assert res.client_bound("nginx", 10) is None
    found = comparison_lines(res)
    assert found and not any(v.startswith("Inconclusive") for v in found)


def test_5000_clients_every_request_accounted_none_sent_after_the_window(fast_server, loop_path):
    """A closed loop of 5000 clients without keep-alive on one core: the loop is at its
    limit (the pure-Python one lags), yet every request is accounted, the server saw no
    request the client started after the window, and the run takes the window plus what
    starting and closing took."""
    import time
    import urllib.request

    def seen() -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{fast_server}/count", timeout=10) as r:
            return int(r.read())

    def settled() -> int:
        """The count once the server has drained what it holds (the other loop's run leaves a
        backlog of requests this server, on one core, reads after that client has gone)."""
        last, n = -1, seen()
        while n != last:
            time.sleep(0.5)
            last, n = n, seen()
        return n

    before = settled()
    t = time.monotonic()
    d = bench(fast_server, "/", "-c", "5000")
    wall = time.monotonic() - t
    assert d["ok"] + d["failed"] + d["unfinished"] == d["started"]
    assert d["ok"] > 0 and d["unfinished"] <= 5000
    assert settled() - before <= d["started"], "a request went out after the window closed"
    assert d["client_bound"], d
    if loop_path == "python":  # the compiled loop hands the event loop back every 128 events: no lag to speak of
        assert "lagged" in d["client_bound_reason"], d["client_bound_reason"]
        assert "fewer clients" in d["client_advice"]
    assert d["teardown_s"] < 3.0
    # the command: process start-up, the load (its start inside the window), its close
    assert wall < d["duration_s"] + d["teardown_s"] + 8.0, (wall, d["start_s"], d["teardown_s"])
    print(f"5000 clients: wall {wall:.1f} s for a {d['duration_s']} s window, start {d['start_s']} s, "
          f"teardown {d['teardown_s']} s, started {d['started']}, ok {d['ok']}, unfinished {d['unfinished']}, "
          f"failed {d['failed']}, lag {d['client_lag_ms']} ms")


def test_the_live_line_says_when_the_client_is_the_bottleneck():
    from loadcmp.load.driver import Live

    assert Live(1.0, 10, 0, 5, 10.0, True, client_cpu=45.0, lag_ms=2.0).client_text() == ("client busy  45%", False)
    text, hot = Live(1.0, 10, 0, 5, 10.0, True, client_cpu=99.0, lag_ms=2.0).client_text()
    assert hot and "at its limit" in text
    text, hot = Live(1.0, 10, 0, 5, 10.0, True, client_cpu=40.0, lag_ms=900.0).client_text()
    assert hot and "loop lag 900 ms" in text


STATIC = {"nginx": [16800.0, 17000.0, 17200.0], "apache-prefork": [8300.0, 8461.0, 8622.0]}
"""Three trials a cell: nginx ~17,000 req/s, apache ~8,460 (the cnblogs-2014 static page as re-measured)."""


def _static(tmp_path, *bound: str):
    from helpers.stored import client_bound, stored_run
    from loadcmp.store.reader import load_results

    return load_results(stored_run(tmp_path / "run", STATIC, client_bound(*bound, reason=REASON)))


def test_a_client_bound_larger_side_is_served_at_least_in_the_report(tmp_path):
    from loadcmp.report.compare import comparison_lines
    from loadcmp.report.story import throughput
    from loadcmp.report.tables import CLIENT_BOUND_MARK, legend, notes, table1

    res = _static(tmp_path, "nginx")
    lines = comparison_lines(res)
    assert len(lines) == 3 and all(v.startswith("nginx served at least 1.90× the requests of apache-prefork at ")
                                   for v in lines), lines
    assert lines[1].endswith("at 50 clients: nginx ≥ 17,000 req/s (16,503–17,497, client-bound) "
                             "against apache-prefork's 8,061–8,861."), lines[1]
    said = throughput(res)
    assert ("nginx handled at least 1.90× at 10, 1.90× at 50, 1.90× at 200 the requests/s of apache-prefork from 10 "
            "to 200 clients: nginx was client-bound there, so its rate is a lower bound on what it serves.") in said
    header, rows = table1(res)
    ng, ap = header.index(("nginx", "req/s")), header.index(("apache-prefork", "req/s"))
    assert all(r[ng].startswith("≥ 17,000") and r[ng].endswith(CLIENT_BOUND_MARK) for r in rows), rows
    assert not any(r[ap].startswith("≥") or r[ap].endswith(CLIENT_BOUND_MARK) for r in rows)
    assert "the server served at least this" in legend(header, rows, res)
    assert any("lower bound on what its server serves" in n for n in notes(res))


def test_a_client_bound_smaller_side_or_both_stay_inconclusive_in_the_report(tmp_path):
    from loadcmp.report.compare import comparison_lines
    from loadcmp.report.story import throughput

    for bound in (("apache-prefork",), ("nginx", "apache-prefork")):
        res = _static(tmp_path / "-".join(bound), *bound)
        lines = comparison_lines(res)
        assert len(lines) == 3 and all(v.startswith("Inconclusive at ") and " served " not in v for v in lines), lines
        assert not any("at least" in v for v in throughput(res))
